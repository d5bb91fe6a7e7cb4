"""The qualifier a question puts on its item (answer/qualifier.py): read from the question's wording, and on real
filings the segment's, region's or product's figure leads over the consolidated one."""

from __future__ import annotations

import pytest

from jsonl_engine.answer import qualifier
from jsonl_engine.answer.synthesize import asks_for_amount
from jsonl_engine.store import Store, open_store
from tests.support.answer_lines import answered
from tests.support.kb import ingest_named
from tests.test_answer_first import MORE

ACME = ["Acme Widgets, Inc., 10-K, fiscal year 2023 (period ended 2023-05-28)"]


def _texts(query: str, titles: list[str] = ACME) -> list[str]:
    return [q.text for q in qualifier.asked(query, titles)]


def test_the_qualifier_is_a_name_the_question_capitalises_that_is_not_the_issuer():
    assert _texts("How much operating profit did Acme Widgets' Pet segment earn in fiscal 2023?") == ["Pet"]
    assert _texts("What net income did Acme's Asset & Wealth Management segment earn in Q1 2022?") == \
        ["Asset & Wealth Management"]
    assert _texts("What were Acme's net sales in Freedonia in fiscal 2022?") == ["Freedonia"]
    # the issuer's name, a shortening of it, periods, statements and accounting items are no qualifier
    assert _texts("What was Acme's FY2022 Net Income on the Consolidated Balance Sheet in June 2022?") == []
    assert _texts("Does AWI have an improving operating margin profile as of FY2022?") == []
    assert _texts("What is the EBITDA reported in Item 7 of the Form 10-K?") == []
    # a question written in title case names nothing by its capitals
    assert _texts("What Was The Operating Income Of The Company In 2022?") == []
    # a name of initials alone is read with the issuer's name printed before it
    assert _texts("How much did Acme U.S. generate in net sales in Q1 of FY2024?") == ["Acme U.S."]
    # a capital inside a word names ("iPhone"); two abbreviations joined by "and" are two names; an accounting
    # standard is none
    assert _texts("What were the sales of the iPhone product line in 2022?") == ["iPhone"]
    assert _texts("What was Acme's revenue in the EMEA and APAC regions in 2021?") == ["EMEA", "APAC"]
    assert _texts("What was Acme's U.S. GAAP net income in 2022?") == []


def test_a_lower_case_word_before_the_asked_item_is_a_qualifier_but_not_how_it_went():
    assert _texts("How much did Acme generate in grocery net sales in Q1 of FY2024?") == ["grocery"]
    assert _texts("How much online revenue did Acme's Domestic segment generate?") == ["Domestic", "online"]
    assert _texts("Does Acme have an improving gross margin profile as of FY2023?") == []
    assert _texts("What drove operating margin change as of FY2022 for Acme?") == []
    assert _texts("What was Acme's highest quarterly revenue in 2022?") == []


def test_a_unit_names_the_qualifier_as_a_name_not_the_common_word_nor_excluded():
    quals = qualifier.asked("What were Acme's net sales in the United States in 2016?", ACME)
    assert qualifier.named_in(quals, "Net sales in the United States increased 4%")
    assert not qualifier.named_in(quals, "Stores outside the United States: 588")
    pet = qualifier.asked("How much operating profit did Acme's Pet segment earn in 2023?", ACME)
    assert qualifier.named_in(pet, "PET SEGMENT") and qualifier.named_in(pet, "Pet 445.5 470.6 415.0")
    assert not qualifier.named_in(pet, "sales of pet food increased")
    assert qualifier.strip(pet, "Pet segment operating profit 445.5") == "operating profit 445.5"
    domestic = qualifier.asked("How much online revenue did Acme's Domestic segment generate?", ACME)
    assert qualifier.strip(domestic, "Domestic online revenue of $5.14 billion") == "revenue of $5.14 billion"
    assert qualifier.item_tokens(["how", "much", "operating", "profit", "did", "acme", "s", "pet", "segment", "earn"],
                                 pet) == ["how", "much", "operating", "profit", "did", "acme", "s", ",", ",", "earn"]


def test_how_large_asks_for_an_amount():
    assert asks_for_amount("How large was the backlog of the Widgets segment at the end of 2019?")
    assert asks_for_amount("What portion of the backlog is expected to be recognized in 2020?")
    assert not asks_for_amount("Who are the primary customers of Acme as of FY2016?")


@pytest.fixture(scope="module")
def filings(tmp_path_factory):
    """A KB of three annual reports and a quarterly one of the FinanceBench filings (shared/financebench-more): name -> document id."""
    if MORE is None:
        pytest.skip("the FinanceBench filings (shared/financebench-more) are absent")
    names = ["GENERALMILLS_2023_annualreport", "BOEING_2019_10K", "WALMART_2022_10K", "WALMART_2024Q1_10Q"]
    store = ingest_named(open_store(tmp_path_factory.mktemp("qualifier") / "kb"), MORE, names)
    yield store
    store.close()


def _first(store: Store, name: str, query: str) -> tuple[str, str]:
    """(the first claim's text, why it leads), every line of the answer checked verbatim."""
    out = answered(store, name, query)
    return out.claims[0].text, out.first_claim["why"]


def test_a_segments_row_leads_over_the_consolidated_one(filings: Store):
    """The segment table prints "Pet 445.5" under "Operating profit:"; the consolidated statement "Operating profit
    $ 3,433.8" names the item in its own words and leads when no segment is asked."""
    text, why = _first(filings, "GENERALMILLS_2023_annualreport",
                       "How much operating profit did General Mills' Pet segment earn in fiscal 2023?")
    assert "445.5" in text or "$446 million" in text, text
    assert "qualifier" in why
    text, _ = _first(filings, "GENERALMILLS_2023_annualreport",
                     "How much operating profit did General Mills earn in fiscal 2023?")
    assert "3,433.8" in text, text


def test_a_row_labelled_by_the_segment_under_a_title_naming_the_item(filings: Store):
    """"Commercial Airplanes $376,593" under the title "Backlog", not "Commercial Airplanes $32,255" under
    "Revenues:"; "How large" asks for an amount."""
    text, why = _first(filings, "BOEING_2019_10K",
                       "How large was the backlog of Boeing's Commercial Airplanes segment at the end of 2019?")
    assert "376,593" in text, text
    assert "qualifier" in why


def test_a_regions_row_leads_over_the_statements_total(filings: Store):
    text, why = _first(filings, "WALMART_2022_10K", "What were Walmart's net sales in China in fiscal 2022?")
    assert "13,852" in text, text
    assert "qualifier" in why


def test_a_product_lines_row_under_a_table_naming_the_segment_and_the_item(filings: Store):
    """"Grocery $ 63,407" under "Walmart U.S. net sales by merchandise category" names both qualifiers (the
    segment and the lower-case product line) and the item; the statement's "Net sales" names none, and a sentence on
    the segment's eCommerce sales one."""
    text, why = _first(filings, "WALMART_2024Q1_10Q",
                       "How much did Walmart U.S. generate in grocery net sales in Q1 of FY2024?")
    assert "63,407" in text, text
    assert "qualifier" in why
