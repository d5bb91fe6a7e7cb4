"""kb.synthesize's first claim on real filings: rows labelled alike compared by the asked period's cell, a date's
day is no figure, and the rules for questions not in a statement's words (a count, a quarter, a forecast)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jsonl_engine.answer.order import asked_cells
from jsonl_engine.answer.synthesize import Reading, _figure_near, _largest_alike, _part_unasked, _terms
from jsonl_engine.answer.tables import read_row
from jsonl_engine.retrieval import answer_terms
from jsonl_engine.store import Store, open_store
from tests.support.shared import MORE, needs_more
from tests.test_answer_items import first_line

PRESS_RELEASE = "JOHNSON_JOHNSON_2023_8K_dated-2023-08-30"


def filing_kb(tmp_path: Path, *filings: str) -> Store:
    """A SQLite Store of whole filings of financebench-more (`doc_ids` by file stem)."""
    from jsonl_engine.ingest.sync import ingest_paths

    assert MORE is not None
    store = open_store(tmp_path / "kb")
    outcomes = ingest_paths(store, [str(MORE / f"{name}.pdf") for name in filings])
    assert not [o for o in outcomes if o.error]
    store.doc_ids = {Path(o.path).stem: o.document_id for o in outcomes}  # type: ignore[attr-defined]
    return store


@pytest.fixture(scope="module")
def filings(dev_pdfs: Path, tmp_path_factory: pytest.TempPathFactory):
    """A SQLite Store of a few short dev filings (press releases, 8-Ks): seconds to ingest."""
    from jsonl_engine.ingest.sync import ingest_paths

    store = open_store(tmp_path_factory.mktemp("rules_kb"))
    outcomes = ingest_paths(store, [str(dev_pdfs / f"{name}.pdf") for name in (PRESS_RELEASE,)])
    assert not [o for o in outcomes if o.error]
    store.doc_ids = {Path(o.path).stem: o.document_id for o in outcomes}  # type: ignore[attr-defined]
    yield store
    store.close()


def test_the_day_of_a_date_is_no_figure_next_to_the_terms(filings: Store):
    # "(August 30, 2023)" in a dividend bullet once counted as a figure next to the question's "August"
    query = ("What is the amount of the cash proceeds that JnJ realised from the separation of Kenvue (formerly "
             "Consumer Health business segment), as of August 30, 2023?")
    line, out = first_line(filings, PRESS_RELEASE, query)
    assert "$13.2 billion in cash proceeds" in line
    tk = _terms(query, answer_terms(query))
    content = {i for i, t in enumerate(tk) if not all(k[0].isdigit() for k in t.keys)}
    doc = filings.doc_ids[PRESS_RELEASE]  # type: ignore[attr-defined]
    page = next(filings.page(doc, n).text for n in range(1, filings.document(doc).pages + 1)
                if "quarterly dividend of $1.19" in filings.page(doc, n).text)
    bullet = page[page.index("• Company maintains its quarterly dividend"):page.index("MedTech.") + 8]
    assert "(August 30, 2023)" in bullet
    assert not _figure_near(tk, content, bullet)
    assert _figure_near(tk, content, "Company secured $13.2 billion in cash proceeds from the Kenvue debt offering")


def _row(store: Store, doc: str, page: int, starts: str) -> Reading:
    text = store.page(doc, page).text
    at = text.index(starts)
    row = read_row(text, at, text.index("\n", at))
    return Reading(page, row, asked_cells(row, ("2023",)), "")


def test_rows_alike_are_compared_by_the_asked_periods_cell(dev_kb: Store):
    # Amcor's FY2023 gross profit: the income statement's row (2,725 in the 2023 column), a guarantor group's (58) and
    # the MD&A's "Gross profit 2,725 18.5 2,820 19.4" whose columns are not read; its 2022 figure (2,820) once made
    # it "the largest", so neither statement row was the whole
    doc = dev_kb.doc_ids["AMCOR_2023_10K"]  # type: ignore[attr-defined]
    statement, part, mdna = object(), object(), object()
    readings = {id(statement): _row(dev_kb, doc, 50, "Gross profit 2,725"),
                id(part): _row(dev_kb, doc, 105, "Gross profit 58"),
                id(mdna): _row(dev_kb, doc, 29, "Gross profit 2,725 18.5")}
    assert readings[id(statement)].asked and readings[id(part)].asked and not readings[id(mdna)].asked
    assert _largest_alike([statement, part, mdna], readings) == {id(statement): 3}  # type: ignore[list-item]
    # a row whose columns are not read and prints a larger figure than the asked row's largest: no whole is known
    readings[id(part)] = Reading(None, read_row("Gross profit 9,999 1", 0, 20), (), "")
    assert _largest_alike([statement, part], readings) == {}  # type: ignore[list-item]


@needs_more
def test_a_sentence_opening_with_the_asked_item_leads(tmp_path):
    # "Approximately 57,000 employees, which constitute 35% of our total workforce, ..." holds a figure next to
    # "total workforce"; the sentence whose subject is the total workforce states it
    store = filing_kb(tmp_path, "BOEING_2019_10K")
    line, out = first_line(store, "BOEING_2019_10K", "What was Boeing's total workforce at the end of FY2019?")
    assert line.startswith("Total workforce level at December 31, 2019 was approximately 161,100.")
    assert "it opens with the asked item" in out.first_claim["why"]
    store.close()
    query = "What was Boeing's total workforce at the end of FY2019?"
    tk = _terms(query, answer_terms(query))
    share = "Approximately 57,000 employees, which constitute 35% of our total workforce, were union represented"
    query_keys = {k for t in tk for k in t.keys} | {k for t in tk for alt in (*t.alts, *t.items) for k in alt.split()}
    assert _part_unasked(share, query_keys)  # a share of the workforce, not its figure


@needs_more
def test_the_document_the_question_names_is_where_to_read(tmp_path):
    # "in its 8-K dated February 21, 2023" names the filing: its signature line "Date: February 21, 2023 By: ..."
    # once led, holding the date the question gives
    store = filing_kb(tmp_path, "FOOTLOCKER_2022_8K_dated_2023-02-21")
    line, out = first_line(store, "FOOTLOCKER_2022_8K_dated_2023-02-21", "Who did Foot Locker appoint as interim CFO "
                           "in its 8-K dated February 21, 2023, and how old was he?")
    assert "appointed Robert Higginbotham, age 46" in line
    store.close()
