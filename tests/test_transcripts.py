"""Earnings-call transcripts (issue 23): recognised from how they are written (identity/transcript.py), their
speaker turns as sections, their cards, and routing by company and quarter.

The transcripts are ours (tests/support/transcripts.py: invented companies and people, four layouts seen in
published transcripts); the documents that must NOT read as transcripts are a generated 10-K cover, a shared
accident report (its "Operator:" fields) and shared filings (an earnings release announcing its conference call).
"""

from __future__ import annotations

import hashlib
from datetime import date
from pathlib import Path

import pytest

from jsonl_engine.identity import transcript
from jsonl_engine.identity.card import derive
from jsonl_engine.identity.route import parse_periods, period_fit
from jsonl_engine.ingest.pdf import parse_pdf
from jsonl_engine.store import Card
from tests.support import transcripts as gen
from tests.support.daemon import Daemon
from tests.test_cards import SEC_COVER, _cover_pdf

COMPANIES = gen.staff()
KINDS_DIR = Path(__file__).resolve().parents[2] / "shared" / "library-kinds" / "pdfs"


def _call(layout: str, company: int = 0, quarter: int = 3, year: int = 2024) -> gen.Call:
    return gen.make_call(COMPANIES[company], quarter, year, layout)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[gen.Call, list[str], object]]:
    """layout -> (call, page texts, parsed document) for one call per layout (companies taken in turn)."""
    folder = tmp_path_factory.mktemp("calls")
    out = {}
    for k, layout in enumerate(gen.LAYOUTS):
        call = _call(layout, k % len(COMPANIES), quarter=k % 4 + 1, year=2023 + k % 2)
        parsed = parse_pdf(str(gen.write(call, folder / f"{layout}.pdf")))
        out[layout] = (call, parsed.pages, parsed)
    return out


@pytest.mark.parametrize("layout", gen.LAYOUTS)
def test_a_transcript_is_recognised_in_each_layout(written, layout: str) -> None:
    call, pages, _parsed = written[layout]
    c = call.company
    found = transcript.read(pages)
    assert found.recognised and found.confidence >= 0.8
    assert found.company is not None and found.company.startswith(c.short)
    assert (found.fiscal_quarter, found.fiscal_year, found.call_date) == (call.quarter, call.fiscal_year, call.day)
    speakers = {t.speaker for t in found.turns}
    assert {"Operator", c.ir, c.ceo, c.cfo, *(name for name, _bank in call.analysts)} <= speakers
    assert speakers <= {"Operator", c.ir, c.ceo, c.cfo, *(name for name, _bank in c.analysts)}
    for turn in found.turns:  # each turn opens at its label: the name as written (in capitals in one layout)
        assert pages[turn.page][turn.start:].lower().startswith(turn.speaker.lower()), turn
    cfo = [t for t in found.turns if t.speaker == c.cfo]
    assert cfo[0].part == transcript.PREPARED and cfo[0].role == "Chief Financial Officer"
    said = transcript._said(pages, cfo[0])
    assert call.facts["gross_margin"] in said and call.facts["guide_low"] in said
    for name, bank in call.analysts:  # analysts speak in the questions and answers, their bank as their role
        turns = [t for t in found.turns if t.speaker == name]
        assert turns and all(t.part == transcript.QA for t in turns) and bank in (turns[0].role or "")
    assert [p for p, _page, _offset in found.parts] == [transcript.PREPARED, transcript.QA]
    # the turns cover the calls' text in order, without overlaps
    spans = [((t.page, t.start), (t.end_page, t.end)) for t in found.turns]
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))


# Two more layouts, as text (invented names): speaker alone on a line after "Name - Role" participant lists with the
# call's title and date on one line; and "Name, Firm - Role [n]" labels under PRESENTATION / QUESTIONS AND ANSWERS
# with the title "Q3 2022 <Company> Earnings Call".
LISTED = """Halvorsen Dynamics, Inc. (NASDAQ:HVDY) Q4 2023 Earnings Conference Call July 25, 2023 5:30 PM ET
Company Participants
Maren Solberg - General Manager, Investor Relations
Tobias Achterberg - Chairman and Chief Executive Officer
Ingrid Feldmann - Executive Vice President and Chief Financial Officer
Conference Call Participants
Caspar Lund - Harbor Street Securities
Odile Marchetti - Aldgate Brothers
Operator
Greetings, and welcome to the Halvorsen Dynamics Fiscal Year 2023 Fourth Quarter Earnings Conference Call. At this time, all participants are in a listen-only mode. A question-and-answer session will follow the formal presentation.
Maren Solberg
Good afternoon, and thank you for joining us today. On the call with me are Tobias Achterberg and Ingrid Feldmann. Our remarks include forward-looking statements.
Tobias Achterberg
Thank you, Maren. We delivered a strong finish to our fiscal year, with revenue of $5.2 billion, and our cloud business grew faster than the market again this quarter.
Ingrid Feldmann
Thanks, Tobias. Revenue was $5.2 billion, up 8%. Gross margin was 41.3%, and operating expenses grew 3%. We expect revenue next quarter of $5.3 billion to $5.4 billion.
Question-and-Answer Session
Operator
[Operator Instructions] Our first question comes from the line of Caspar Lund with Harbor Street Securities. Please proceed.
Caspar Lund
Excellent. Thank you for taking the question. Could you talk about the demand environment and how the pipeline looks heading into the new fiscal year?
Tobias Achterberg
Thanks, Caspar. The pipeline is the largest we have had, and our customers are committing to longer contracts than a year ago.
Operator
Our next question comes from the line of Odile Marchetti with Aldgate Brothers. Please proceed.
Odile Marchetti
Thanks. Ingrid, how should we think about operating margins for the full year, given the investments you described today?
Ingrid Feldmann
We expect operating margins to be roughly flat for the full year, as efficiencies offset the investments we described.
"""
NUMBERED = """EDITED TRANSCRIPT
Q3 2022 Vossberg Logistics Corp Earnings Call
EVENT DATE/TIME: OCTOBER 27, 2022 / 9:00PM GMT
CORPORATE PARTICIPANTS
Maren Solberg Vossberg Logistics Corp - VP of IR
Tobias Achterberg Vossberg Logistics Corp - CEO
CONFERENCE CALL PARTICIPANTS
Caspar Lund Harbor Street Securities, Research Division - Analyst
PRESENTATION
Operator
Good day, and welcome to the Vossberg Logistics Third Quarter 2022 Earnings Conference Call. Today's conference is being recorded. I would now like to turn the call over to Maren Solberg. Please go ahead.
Maren Solberg, Vossberg Logistics Corp - VP of IR [2]
Thank you, and good afternoon. With me today is Tobias Achterberg, our CEO. Our remarks today include forward-looking statements about our business.
Tobias Achterberg, Vossberg Logistics Corp - CEO [3]
Thanks, Maren. Volumes grew 6% in the quarter and our operating ratio improved to 84.1%, our best third quarter ever. We added 12 new terminals.
QUESTIONS AND ANSWERS
Operator [1]
Our first question comes from Caspar Lund with Harbor Street Securities.
Caspar Lund, Harbor Street Securities, Research Division - Analyst [2]
Thanks. Can you talk about pricing in the truckload market and what you are seeing so far in the fourth quarter?
Tobias Achterberg, Vossberg Logistics Corp - CEO [3]
Pricing has been stable. We are seeing contract renewals in the low single digits, and the fourth quarter started in line with our plan.
"""


def test_other_published_layouts() -> None:
    listed = transcript.read([LISTED])
    assert listed.recognised and listed.company == "Halvorsen Dynamics, Inc."
    assert (listed.fiscal_quarter, listed.fiscal_year, listed.call_date) == (4, 2023, date(2023, 7, 25))
    assert [(t.speaker, t.part) for t in listed.turns][:5] == [
        ("Operator", transcript.PREPARED), ("Maren Solberg", transcript.PREPARED),
        ("Tobias Achterberg", transcript.PREPARED), ("Ingrid Feldmann", transcript.PREPARED),
        ("Operator", transcript.QA)]
    assert listed.turns[5].title == "Caspar Lund (Harbor Street Securities)"
    numbered = transcript.read([NUMBERED])
    assert numbered.recognised and numbered.company == "Vossberg Logistics Corp"
    assert (numbered.fiscal_quarter, numbered.fiscal_year, numbered.call_date) == (3, 2022, date(2022, 10, 27))
    assert [t.title for t in numbered.turns] == [
        "Operator", "Maren Solberg (Vossberg Logistics Corp, VP of IR)", "Tobias Achterberg (Vossberg Logistics Corp, CEO)",
        "Operator", "Caspar Lund (Harbor Street Securities, Research Division, Analyst)",
        "Tobias Achterberg (Vossberg Logistics Corp, CEO)"]
    assert [t.part for t in numbered.turns] == [transcript.PREPARED] * 3 + [transcript.QA] * 3
    card = derive([NUMBERED])
    assert card.title == "Vossberg Logistics Corp, earnings call transcript, Q3 fiscal 2022"


def test_documents_that_are_not_transcripts(tmp_path: Path, dev_pdfs: Path) -> None:
    cover = tmp_path / "cover.pdf"
    _cover_pdf(cover, SEC_COVER, pages=3)
    paths = [cover, dev_pdfs / "AMCOR_2023Q4_EARNINGS.pdf", dev_pdfs / "MGMRESORTS_2023Q2_10Q.pdf"]
    report = KINDS_DIR / "20080117X00064.pdf"  # an accident report: "Operator" and other "Label: value" fields
    if report.exists():
        paths.append(report)
    for path in paths:
        parsed = parse_pdf(str(path))
        found = transcript.read(parsed.pages)
        assert not found.recognised and found.confidence < transcript.MIN_CONFIDENCE, (path.name, found.confidence)
        assert derive(parsed.pages[:8], parsed.title).kind != transcript.KIND
        assert not any(s.title in ("Prepared remarks", "Questions and answers") for s in parsed.sections)
    prose = "Operator: the aircraft operator held a certificate. " * 3 + "\n" + "Flight Time: 1,200 hours\n" * 4
    assert not transcript.read([prose]).recognised


def test_speaker_turns_are_the_sections(written) -> None:
    call, pages, parsed = written["caps"]
    c = call.company
    sections = parsed.sections
    parts = [s for s in sections if s.depth == 1 and s.title in ("Prepared remarks", "Questions and answers")]
    assert [s.title for s in parts] == ["Prepared remarks", "Questions and answers"]
    prepared = [s.title for s in sections if s.parent == sections.index(parts[0])]
    assert prepared == ["Operator", f"{c.ir} (Vice President, Investor Relations)",
                        f"{c.ceo} (Chief Executive Officer)", f"{c.cfo} (Chief Financial Officer)"]
    answers = [s for s in sections if s.parent == sections.index(parts[1])]
    analyst, bank = call.analysts[0]
    assert f"{analyst} ({bank})" in [s.title for s in answers]
    assert not any(s.text.split(":", 1)[-1].strip() == "Thank you." for s in answers)  # short turns folded in
    assert all(s.title != s.title.upper() for s in sections if s.depth == 2)  # "Name (Role)", not "NAME:"
    # texts are slices of the pages: every run of a section's text between page breaks is on its page
    for _call, layout_pages, layout_parsed in written.values():
        for section in layout_parsed.sections:
            marks = section.page_map + [(len(section.text), None)]
            for (start, page), (stop, _next) in zip(marks, marks[1:], strict=False):
                assert section.text[start:stop].strip() in layout_pages[page - 1], (section.title, page)
    cfo = next(s for s in sections if s.title.startswith(c.cfo) and call.facts["gross_margin"] in s.text)
    assert cfo.page_start <= cfo.page_end and call.facts["gross_margin"] in "".join(
        pages[p - 1] for p in range(cfo.page_start, cfo.page_end + 1))


def test_transcript_cards(written) -> None:
    for layout, (call, pages, parsed) in written.items():
        card = derive(pages[:8], parsed.title)
        c = call.company
        assert card.kind == "earnings call transcript", layout
        assert card.entities and card.entities[0].startswith(c.short)
        assert (card.fiscal_quarter, card.fiscal_year) == (call.quarter, call.fiscal_year)
        assert card.report_date == call.day.isoformat()
        assert card.title == f"{card.entities[0]}, earnings call transcript, Q{call.quarter} fiscal {call.fiscal_year}"
        assert not any(name.lower() in card.title.lower() for name in (c.ceo, c.cfo, c.ir, "operator"))


def test_call_questions_route_like_quarterly_documents() -> None:
    periods = parse_periods("What did Northwind's CFO say about gross margin on the Q2 2023 call?")
    assert periods.quarter == 2 and periods.years == (2023,) and periods.kinds == ("earnings call transcript",)
    assert parse_periods("the Q3 2024 earnings call transcript").kinds == ("earnings call transcript",)
    assert parse_periods("Northwind's third quarter conference call").kinds == ("earnings call transcript",)
    assert parse_periods("call options written in 2023").kinds == ()
    call = Card(kind="earnings call transcript", fiscal_year=2023, fiscal_quarter=2)
    assert period_fit(call, periods, 2023)[0] == 1.0
    assert period_fit(Card(kind="earnings call transcript", fiscal_year=2023, fiscal_quarter=3), periods, 2023)[0] < 0.5


@pytest.mark.parametrize("company", [0, 1])
def test_the_most_recent_call_whichever_way_each_call_writes_the_name(tmp_path: Path, company: int) -> None:
    """Routing "most recent" ranks one issuer's calls by date even when one call's title writes the legal name
    ("Northwind Robotics, Inc.", "Meridian Orchard Foods Corporation") and the others' welcome a short one: a call's
    card carries both names, and the issuer is the words of its name the question carries."""
    from jsonl_engine.identity.route import route
    from jsonl_engine.ingest.sync import ingest_paths
    from jsonl_engine.store import open_store

    c = COMPANIES[company]
    calls = [gen.make_call(c, q, 2023, layout) for q, layout in ((1, "dash"), (2, "comma"), (3, "own_line"),
                                                                 (4, "caps"))]
    store = open_store(tmp_path / "kb")
    outcomes = ingest_paths(store, [str(gen.write(call, tmp_path / f"c{k}.pdf")) for k, call in enumerate(calls)])
    ids = [o.document_id for o in outcomes]
    entities = [store.document(d).card.entities for d in ids]
    assert entities[2] == [c.name, c.short] and all(e == [c.short] for k, e in enumerate(entities) if k != 2)
    for question in (f"What gross margin did {c.short} report on its most recent earnings call?",
                     f"What did {c.short} say on its latest call?"):
        routed = route(store, question, store.scope(None, ("approved",)))
        assert routed.top(4) == ids[::-1], [store.document(d).title for d in routed.top(4)]
        assert "most recent" in routed.why[ids[3]]
    store.close()


def test_words_naming_the_call_are_not_evidence_inside_it() -> None:
    words = ["gross", "margin", "northwind", "cfo", "q2", "2023", "earnings", "call", "fy24", "quarter"]
    assert transcript.call_words(words) == {"q2", "2023", "earnings", "call", "fy24"}


def test_a_library_of_calls_routes_company_and_quarter(tmp_path: Path) -> None:
    """Calls of two companies over three quarters and one annual filing, through the daemon: a question naming a
    company and a quarter is answered first from that call; scoped to it, the answer's turn is in the top 3."""
    folder = tmp_path / "docs"
    calls = gen.library(COMPANIES[:2], [(1, 2023), (2, 2023), (3, 2023)])
    paths = [gen.write(call, folder / f"d{k:02d}.pdf") for k, call in enumerate(calls)]  # neutral names
    _cover_pdf(folder / "d99.pdf", [COMPANIES[0].name.upper() if line.startswith("ACME") else line
                                    for line in SEC_COVER], pages=3)
    with Daemon(tmp_path / "kb", timeout=120) as d:
        events = d.request("kb.ingest", {"paths": [str(folder)]}, timeout=120)
        assert not [e for e in events if e["event"] == "result" and e["data"].get("error")]
        titles = {x["document_id"]: x["title"] for x in d.result("kb.documents", {})["documents"]}
        assert len(set(titles.values())) == len(calls) + 1
        for call, path in zip(calls, paths, strict=True):
            want = hashlib.sha256(path.read_bytes()).hexdigest()[:16]  # a document's id is its content hash
            assert titles[want].endswith(f", earnings call transcript, Q{call.quarter} fiscal {call.fiscal_year}")
            for q in gen.questions(call):
                items = d.result("kb.context", {"query": q["question"], "limit": 5})["items"]
                assert items[0]["document_id"] == want, (q["question"], items[0]["document_title"])
                scoped = d.result("kb.context", {"query": q["question"], "limit": 3, "document_ids": [want]})["items"]
                assert any(q["answer"] in " ".join(i["text"].split()) and q["speaker"] in i["title"]
                           for i in scoped), (q["question"], [i["title"] for i in scoped])
