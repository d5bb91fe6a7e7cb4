"""The first claim answers on documents that are not filings (issue 24): accident reports, trial protocols, agency
reports from shared/library-kinds, read as a reader of each kind asks. Units asked vs printed (answer/units.py), the
words documents print for a question's (answer/wording.py), a form's fields, the numbers a question itself writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from jsonl_engine.answer import units, wording
from jsonl_engine.answer.direct import answer_first as synthesize
from jsonl_engine.answer.order import label_of
from jsonl_engine.answer.sentences import Segment
from jsonl_engine.answer.synthesize import _candidate, stem
from jsonl_engine.store import Store, open_store
from tests.support.answer_lines import check_lines
from tests.support.kb import ingest_named

NAMES = ("20080115X00053", "20080111X00040", "20080116X00055", "20080109X00035", "NCT06158269_Prot_000",
         "NCT06151600_Prot_000", "NCT06152900_Prot_SAP_000", "2015-annual-performance-report")


def _kinds_dir() -> Path | None:
    from tests.conftest import DEV_DIR

    return next((p for p in (DEV_DIR.parent / "library-kinds" / "pdfs", Path("/work/shared/library-kinds/pdfs"))
                 if p.is_dir()), None)


@pytest.fixture(scope="module")
def kinds(tmp_path_factory) -> Store:
    """One KB of eight real documents of three kinds (skipped when shared/library-kinds is absent)."""
    folder = _kinds_dir()
    if folder is None:
        pytest.skip("library-kinds not present")
    store = ingest_named(open_store(tmp_path_factory.mktemp("kinds") / "kb"), folder, NAMES)
    yield store
    store.close()


def ask(store: Store, name: str, query: str):
    out = synthesize(store, query, document_ids=[store.doc_ids[name]])
    check_lines(out, lambda sid: store.section(sid).text, lambda doc, page: store.page(doc, page).text)  # verbatim, cited
    assert out.claims, f"no claim for {query!r}"
    return out


def test_a_forms_field_before_an_empty_one_is_a_claim(kinds: Store):
    """An accident report's form prints two fields a line, the second one's value empty ("Lowest Ceiling: Overcast /
    200 ft agl Visibility (RVR):"): the first is a labelled statement, and a ceiling is measured in feet."""
    out = ask(kinds, "20080115X00053", "What was the ceiling at the accident site?")
    assert out.claims[0].text.startswith("Lowest Ceiling: Overcast / 200 ft agl")


def test_a_measure_asked_leads_with_a_figure_in_its_unit(kinds: Store):
    """"What was the temperature" is answered in degrees ("13°C"), not by the line naming the airplane the question
    names ("Aircraft: Cessna 152 ...": the question's own number is no figure)."""
    out = ask(kinds, "20080111X00040", "What was the temperature reported for the Cessna 152 accident?")
    assert "13°C" in out.claims[0].text
    assert not out.claims[0].text.startswith("Aircraft:")


def test_a_names_number_is_no_figure(kinds: Store):
    """"AT-401" names the airplane: the line "Aircraft Make: Air Tractor ..." holds no figure asked, and "how old"
    is read as the form's "Age"."""
    out = ask(kinds, "20080116X00055", "How old was the pilot of the Air Tractor AT-401?")
    assert "Age: 40" in out.claims[0].text


def test_how_long_and_how_wide_read_the_forms_length_and_width(kinds: Store):
    """"How long and how wide" asks for lengths, which the form prints "Runway Length/Width: 8500 ft / 100 ft" (not
    the runway's number, "Runway Used: 23")."""
    out = ask(kinds, "20080109X00035", "How long and how wide is the runway?")
    assert out.claims[0].text.startswith("Runway Length/Width: 8500 ft / 100 ft")


def test_a_count_asked_in_the_protocols_words(kinds: Store):
    """A protocol "enrolled a total of 40 patients": the question's British "enrol" is the document's word, and the
    question's other words are the protocol's title's, which alone used to give no answer at all."""
    out = ask(kinds, "NCT06158269_Prot_000", "How many patients will the study enrol?")
    assert "a total of 40 patients" in out.claims[0].text


def test_participants_are_the_protocols_subjects(kinds: Store):
    """"How many participants" is printed "20 subjects" ("We plan to enroll 20 subjects of any age ...")."""
    out = ask(kinds, "NCT06151600_Prot_000", "How many participants will the natural history study enrol?")
    assert "enroll 20 subjects" in out.claims[0].text


def test_a_protocols_plan_is_its_answer(kinds: Store):
    """A protocol states what will be done ("Each subject will receive up to 8 study treatments over a 4-week
    period."): that is no "plan, not what was" (a filing's rule), and "treatment sessions" are counted as printed."""
    out = ask(kinds, "NCT06152900_Prot_SAP_000", "How many treatment sessions will each subject have?")
    assert out.claims[0].text.startswith("Each subject will receive up to 8 study treatments")


def test_the_issuers_initials_and_a_planned_variance(kinds: Store):
    """A report of the "United States Office of Personnel Management" whose title is "Annual Performance Report":
    "OPM's" names its issuer (no part of it the answer must name), and "planned" is the document's "plan"."""
    out = ask(kinds, "2015-annual-performance-report",
              "What was the variance between OPM's planned and actual resources in FY 2015?")
    assert "The variance from the $310,653,518 plan was $1,781,559." in out.claims[0].text


def test_units_asked():
    assert units.asked("What was the total flying experience, in hours, of the pilot?").units == {"hour"}
    assert units.asked("How many hours had the pilot flown?").units == {"hour"}
    assert {"foot", "day"} <= units.asked("How long is the runway?").units  # a length or a duration
    assert units.asked("What wind speed was reported?").units == {"knot", "speed"}
    assert units.asked("What ages are eligible?").units == {"year"}
    assert units.asked("What dose do patients get?").units == {"dose"}
    assert units.asked("How many trials will each participant complete?").nouns == {"trial"}
    assert {"participant", "subject", "patient"} <= units.asked("What is the number of participants?").nouns
    assert not units.asked("What was the FY2018 capital expenditure of Acme?")
    assert not units.asked("How far did actual spending differ from the plan?").units  # no distance


def test_units_printed():
    hours = units.asked("How many hours had the pilot flown?")
    assert units.carries(hours, "Flight Time: 119 hours (Total, all aircraft)")
    assert not units.carries(hours, "The 28-day review found 3 defects.")
    length = units.asked("How long is the runway?")
    assert units.carries(length, "a 13,110-foot-long, 321-foot-wide, asphalt runway")
    assert units.carries(length, "Runway Length/Width: 8500 ft / 100 ft")
    assert not units.carries(length, "Page 3 of 4")
    days = units.asked("Over what period are the cycles given?")
    assert units.carries(days, "Follow up visits planned for 30- and 90-days post treatment.")
    trials = units.asked("How many trials will each participant complete?")
    assert units.carries(trials, "This will create a total of 12 trials for each ADL and 24 trials total.")
    assert not units.carries(trials, "In 2019, trials were paused.")  # a year is no count
    buildings = units.asked("How many buildings are eligible?")
    assert not units.carries(buildings, "Target 50% of eligible buildings")  # a share of them, not their count
    assert units.carries(buildings, "all 968 eligible federally owned agency-controlled facilities")
    stores = units.asked("What was the number of stores?")
    assert units.names_in(stores, "Stores open at the end of the quarter were as follows:")


def test_the_word_framing_the_asked_figure():
    after = units.asked("After how many interviews will the study assess saturation?")
    assert after.frame == "after" and after.nouns == {"interview"}
    assert units.framed(after, "Saturation is assessed after 15 interviews.")
    assert not units.framed(after, "Every 3 interviews a further analysis is made.")
    assert units.asked("Over what period are the cycles given?").frame == "over"
    assert not units.asked("What happened after the merger?").frame  # no figure asked


def test_a_count_of_things_is_no_amount_of_money():
    assert units.asked("How much did the program pay improperly in FY 2014?").money
    assert units.asked("What was the agency's budget?").money
    assert not units.asked("How many calls did the agency handle?").money
    assert units.counts_only("In FY 2014, the agency received approximately 1.7 million customer service calls, in "
                             "addition to more than 1,000 e-mail inquiries each day.")
    assert not units.counts_only("Of more than $82.6 billion in payments, $313.81 million, or 0.38 percent were improper.")
    assert not units.counts_only("The overpayment rate was 0.31 percent.")


def test_numbers_that_are_no_answer():
    assert units.unnamed("Aircraft: Cessna 152 Aircraft Damage: 3 Fatal", frozenset({"152"})) == \
        "Aircraft: Cessna # Aircraft Damage: 3 Fatal"
    assert units.unnamed("Air Tractor AT-401, COVID-19", frozenset()) == "Air Tractor AT-###, COVID-##"
    assert units.unnamed("EBSA 2.3.2. Compliance; $12.9 trillion", frozenset()) == "EBSA #.#.#. Compliance; $12.9 trillion"


def test_labels_of_forms_and_lists():
    assert label_of("Lowest Ceiling: Overcast / 200 ft agl Visibility (RVR):") == "Lowest Ceiling"
    assert label_of("Observation Time: 1453 EST Direction from Accident Site:") == "Observation Time"
    assert label_of("2. Age: ≥ 18 years old and < 70 years old.") == "Age"
    assert label_of("Pilot: Last Flight Review:") is None
    assert label_of("Occupational Pilot: Last Flight Review or Equivalent:") is None


def test_wording():
    assert "subjects" in wording.alternates("participants")
    assert "length" in wording.alternates("long") and "improper" in wording.alternates("improperly")
    assert "quarter" not in wording.alternates("quarterly")  # a period's word
    assert "payment" in wording.alternates("pay")
    assert wording.initials_of("OPM", ["United States Office of Personnel Management"])
    assert wording.initials_of("EPA", ["U.S. Environmental Protection Agency"])
    assert not wording.initials_of("USA", ["Acme Widgets Corporation"])
    assert wording.asked_item("What are the assets of the plans EBSA oversees estimated at?") == ("assets",)
    assert wording.asked_item("What altimeter setting was reported?") == ("altimeter", "setting")
    assert wording.asked_item("What dose of the drug do patients get?") == ("dose",)
    assert stem("planned") == stem("plan") and stem("committed") == stem("commit") and stem("added") == stem("add")


def test_contents_entries_with_dot_leaders_are_no_claim():
    text = "Retirement, Health & Benefits..........................26 EBSA 2.3."
    assert not _candidate(Segment(0, len(text), "sentence"), text)
