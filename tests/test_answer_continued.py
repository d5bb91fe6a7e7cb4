"""A table continued across a page break (answer/tables.py read_continued): a page's leading rows printed under no
column line of their own take the column headers printed last on the page before, each part cited on its own
page and offsets."""

from __future__ import annotations

from pathlib import Path

import pytest

from jsonl_engine.answer.tables import read_continued, read_row, table_line
from jsonl_engine.ingest import parse_file
from tests.support.shared import MORE

pytestmark = pytest.mark.skipif(MORE is None, reason="the FinanceBench filings (shared/financebench-more) are absent")
FILING = "LOCKHEEDMARTIN_2023Q2_10Q.pdf"  # a news release printed from HTML: tables break across its pages


def _span(text: str, starts: str) -> tuple[int, int]:
    i = text.index(starts)
    end = text.find("\n", i)
    return i, end if end >= 0 else len(text)


@pytest.fixture(scope="module")
def pages() -> list[str]:
    return parse_file(str(MORE / FILING)).pages


def _continued_page(pages: list[str], row: str) -> int:
    """The page whose rows include `row` but print no column line above it (the table began a page before)."""
    return next(i for i, t in enumerate(pages) if row in t and "Quarters Ended" not in t[:t.index(row)])


def test_leading_rows_take_the_column_headers_at_the_foot_of_the_page_before(pages):
    i = _continued_page(pages, "Total net sales $")
    previous, text = pages[i - 1], pages[i]
    start, end = _span(text, "Total net sales $")
    alone = read_row(text, start, end)
    assert not alone.mapped and table_line(alone, ()) is None  # on its own page, the row has no columns
    row = read_continued(previous, text, start, end)
    assert row is not None and row.mapped
    assert [c.text for c in row.cells] == ["$ 16,693", "$ 15,446", "$ 31,819", "$ 30,410"]
    assert [c.column_text for c in row.cells] == [
        "Quarters Ended June 25, 2023", "Quarters Ended June 26, 2022",
        "Six Months Ended June 25, 2023", "Six Months Ended June 26, 2022"]
    # every part verbatim at its own page's offsets: the headers and the unit on the page before, the row on its own
    for part in [row.label, *row.cells]:
        assert part.pages_back == 0 and text[part.start:part.end] == part.text
    assert row.headers and all(h.pages_back == 1 and previous[h.start:h.end] == h.text for h in row.headers)
    assert row.unit is not None and row.unit.pages_back == 1 and previous[row.unit.start:row.unit.end] == "(in millions)"
    for cell in row.cells:
        assert all(p.pages_back == 1 and previous[p.start:p.end] == p.text for p in cell.column)
    line = table_line(row, (2,), page=i + 1)
    assert line == f"Total net sales, Six Months Ended June 25, 2023: $ 31,819 (in millions) (column headers on page {i})"


def test_a_row_under_its_own_headers_or_after_prose_is_not_continued(pages):
    # statements printing their own column lines above their rows: nothing is read from the page before (the
    # segment summary's rows, with a change column, stay unread)
    j = next(i for i, t in enumerate(pages) if "Consolidated Statements of Earnings" in t)
    start, end = _span(pages[j], "Net sales $")
    assert read_row(pages[j], start, end).mapped
    assert read_continued(pages[j - 1], pages[j], start, end) is None
    j = next(i for i, t in enumerate(pages) if "Business Segment Summary Operating Results" in t)
    start, end = _span(pages[j], "Total net sales $")
    assert read_continued(pages[j - 1], pages[j], start, end) is None
    # a row below a prose paragraph of its own page starts no continuation, whatever the page before ends with
    i = _continued_page(pages, "Total net sales $")
    text = "Net sales rose in every segment this quarter, as described below.\n" + pages[i]
    start, end = _span(text, "Total net sales $")
    assert read_continued(pages[i - 1], text, start, end) is None
    # counts that do not match: a row of three cells under the page before's four columns
    text = pages[i].replace("Total net sales $ 16,693 $ 15,446 $ 31,819 $ 30,410", "Total net sales $ 16,693 $ 15,446 $ 31,819")
    start, end = _span(text, "Total net sales $")
    assert read_continued(pages[i - 1], text, start, end) is None


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    from jsonl_engine.ingest.sync import ingest_paths
    from jsonl_engine.store import open_store

    store = open_store(tmp_path_factory.mktemp("continued") / "kb")
    doc = ingest_paths(store, [str(MORE / FILING)])[0].document_id
    yield store, doc
    store.close()


def test_synthesize_reads_the_continued_row_with_the_page_befores_headers(kb):
    from jsonl_engine.answer.pages import locate_with_tables
    from jsonl_engine.answer.synthesize import synthesize

    store, doc = kb
    out = synthesize(store, "What did Lockheed Martin's Aeronautics segment earn in operating profit in the first "
                            "half of 2023?", document_ids=[doc])
    found = [(c, r) for c in out.claims if (r := out.tables.get(c.id)) is not None
             and any(h.pages_back for h in r.row.headers)]
    assert found, out.answer
    claim, reading = found[0]
    assert f"(column headers on page {reading.page - 1}) [{claim.id}]" in out.answer
    _located, (parts,) = locate_with_tables(store, [], [(doc, reading)])
    texts = {n: store.page(doc, n).text for n in (reading.page - 1, reading.page)}
    for part in [parts["label"], parts["unit"], *parts["headers"], *parts["cells"]]:
        assert texts[part["page"]][part["start"]:part["end"]] == part["text"]
    assert {h["page"] for h in parts["headers"]} == {reading.page - 1}


DEV = next((p / "pdfs" for p in (Path(__file__).resolve().parents[2] / "shared" / "financebench-dev",
                                 Path("/work/shared/financebench-dev")) if (p / "pdfs").is_dir()), None)


@pytest.mark.skipif(DEV is None, reason="the FinanceBench dev filings (shared/financebench-dev) are absent")
def test_the_whole_leads_over_the_segments_rows_when_no_segment_is_asked(tmp_path):
    """Each segment's table prints its own "Total net revenue" row, and the consolidated results print the firm's,
    in a passage ranked below them: a question naming no segment leads with the firm's figure (the largest of the
    rows alike, found among the deeper passages too, since it says it is the whole: a statement's page or a
    consolidated table's title); one naming a segment leads with the segment's."""
    from jsonl_engine.answer.synthesize import synthesize
    from jsonl_engine.ingest.sync import ingest_paths
    from jsonl_engine.store import open_store

    store = open_store(tmp_path / "kb")
    doc = ingest_paths(store, [str(DEV / "JPMORGAN_2023Q2_10Q.pdf")])[0].document_id

    def first(question: str) -> str:
        return synthesize(store, question, document_ids=[doc]).answer.split("\n")[0]

    try:
        line = first("What was JPMorgan's total net revenue in the first half of 2023?")
        assert "79,656" in line and "Six months ended June 30 2023" in line
        assert "26,119" in first("What was the Corporate & Investment Bank's total net revenue in the first half of 2023?")
    finally:
        store.close()


def test_a_superlative_compares_the_rows_on_both_sides_of_the_page_break(pages):
    """"Which segment ... the most": the rows of a table continued across a page break are one table, compared
    whole (the member above the break included), read under the same headers on the page before."""
    from jsonl_engine.answer import extreme

    i = _continued_page(pages, "Total net sales $")
    previous, text = pages[i - 1], pages[i]
    start, end = _span(text, "Space 3,166")
    lead = read_continued(previous, text, start, end)
    assert lead is not None
    before = [read_row(previous, *_span(previous, label)) for label in ("Aeronautics $",)]
    after = [read_continued(previous, text, *_span(text, label)) for label in
             ("Missiles and Fire Control", "Rotary and Mission Systems", "Space 3,166")]
    assert all(r is not None and r.mapped for r in before + after)
    ask = extreme.asked("Which segment had the most net sales in the second quarter of 2023?")
    alone = extreme.pick(ask, lead, 0, after, " ".join)
    whole = extreme.pick(ask, lead, 0, before + after, " ".join)
    assert alone is not None and after[alone.index].label.text == "Rotary and Mission Systems"
    assert whole is not None and (before + after)[whole.index].label.text == "Aeronautics" and whole.members == 4


def test_kb_answer_cites_the_continued_rows_cell_with_the_page_befores_columns(kb, pages):
    """kb.answer's cited cell reads a row the way kb.synthesize does: a page's leading row of a table continued from
    the page before takes that page's column headers, whether the citation names a section or a whole page."""
    from jsonl_engine.answer.cells import place_cells

    store, doc = kb
    i = _continued_page(pages, "Total net sales $")
    text = store.page(doc, i + 1).text
    start, end = _span(text, "Total net sales $")
    section = next(s for s in store.document_sections(doc) if s.text and text[start:end] in s.text
                   and s.page_start <= i + 1 <= s.page_end)
    at = section.text.index(text[start:end])
    by_section = {"section_id": section.section_id, "document_id": doc, "quote_start": at,
                  "quote_end": at + end - start, "verified": True}
    by_page = {"section_id": f"{doc}:p{i + 1}", "document_id": doc, "quote_start": start, "quote_end": end,
               "verified": True}
    citations = [by_section, by_page]
    place_cells(store, citations, "Net sales were $31,819 million in the first half of 2023.")
    for c in citations:
        cell = c["cell"]
        assert cell is not None and (cell["text"], cell["page"]) == ("$ 31,819", i + 1)
        assert cell["column"] == "Six Months Ended June 25, 2023"
        assert text[cell["start"]:cell["end"]] == cell["text"]
        assert cell["unit"] == "(in millions)"


def test_one_answers_rows_read_each_page_once(kb, pages):
    """An answer's table rows share its pages (pages.PageTexts): the leading rows of a page, continued from the page
    before, ask the store for that page once, not once a row, and read as they do without the cache."""
    from jsonl_engine.answer.pages import PageTexts, read_table_row

    store, doc = kb

    class Counting:  # the store, counting the pages asked for
        def __init__(self) -> None:
            self.asked: list[tuple[str, int]] = []

        def __getattr__(self, name: str):
            return getattr(store, name)

        def page_texts(self, keys, chars=None):
            self.asked.extend(keys)
            return store.page_texts(keys, chars)

    i = _continued_page(pages, "Total net sales $")
    text = store.page(doc, i + 1).text
    labels = ("Total net sales $", "Missiles and Fire Control", "Rotary and Mission Systems", "Space 3,166")
    counting = Counting()
    texts = PageTexts(counting)
    shared = [read_table_row(counting, doc, i + 1, text, *_span(text, label), texts) for label in labels]
    assert counting.asked == [(doc, i)]  # the page before, once for the four rows
    alone = [read_table_row(store, doc, i + 1, text, *_span(text, label)) for label in labels]
    assert shared == alone and all(any(h.pages_back for h in r.headers) for r in shared)
