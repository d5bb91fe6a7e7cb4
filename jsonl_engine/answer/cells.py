"""kb.answer's citations point at the table cell when the figure came from a table: for a verified quote holding
table rows, the first cell (rows in quote order, cells left to right) whose number the answer states, read with
its row's headers on the page (answer/tables.py; a table continued from the page before read with that page's
headers, as kb.synthesize reads it: pages.read_table_row), with its offsets into the page's text and its boxes."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from jsonl_engine.answer.pages import PageTexts, page_spans_boxes, read_table_row, table_row_on_page
from jsonl_engine.answer.sentences import segment
from jsonl_engine.answer.tables import TableRow, number
from jsonl_engine.errors import NotFound

if TYPE_CHECKING:
    from jsonl_engine.store import Store

_PAGE_ID = re.compile(r":p(\d+)$")
_FIGURE = re.compile(r"\(?\$?\d(?:[\d,]*\d)?(?:\.\d+)?\)?")  # "July 13, 2023,": a day, a year


def stated_numbers(text: str) -> set[Decimal]:
    """The magnitudes of the figures a text states ("(1,749)", "$1,749", "1749.0" -> 1749), years left out."""
    out = set()
    for m in _FIGURE.finditer(text):
        value = number(m.group(0))
        if value is None or (value == value.to_integral() and 1900 <= value <= 2100 and "," not in m.group(0)):
            continue
        out.add(abs(value).normalize())
    return out


def _rows(store: Store, document_id: str, passage_id: str, start: int, end: int,
          texts: PageTexts) -> list[tuple[int, TableRow]]:
    """The table rows overlapping [start, end) of a cited passage, each read on its page (`texts`: the answer's
    pages read so far): a section's text, or a page's (a strategy citing whole pages names them "<document>:p<N>")."""
    m = _PAGE_ID.search(passage_id)
    if m:
        number_ = int(m.group(1))
        try:
            text = store.page(document_id, number_).text
        except NotFound:
            return []
        return [(number_, read_table_row(store, document_id, number_, text, seg.start, seg.end, texts))
                for seg in segment(text) if seg.kind == "row" and seg.start < end and seg.end > start]
    try:
        section = store.section(passage_id)
    except NotFound:
        return []
    out = []
    for seg in segment(section.text):
        if seg.kind == "row" and seg.start < end and seg.end > start:
            found = table_row_on_page(store, section, seg.start, seg.end, texts)  # type: ignore[arg-type]
            if found is not None:
                out.append(found)
    return out


def place_cells(store: Store, citations: list[dict[str, Any]], answer: str) -> None:
    """Add `cell` to kb.answer's citation dicts: the table cell of a verified quote whose figure `answer` states."""
    texts = PageTexts(store)  # the answer's pages, each read once for all its citations' rows
    for c in citations:
        c["cell"] = cited_cell(store, c, answer, texts) if c.get("verified") and answer else None


def cited_cell(store: Store, citation: dict[str, Any], answer: str, texts: PageTexts) -> dict[str, Any] | None:
    """The table cell of the citation's quote whose figure the answer states, as kb.answer's `cell`, or None
    (`texts`: the answer's pages read so far)."""
    wanted = stated_numbers(answer)
    if not wanted:
        return None
    start, end = citation["quote_start"], citation["quote_end"]
    for page, row in _rows(store, citation["document_id"], citation["section_id"], start, end, texts):
        for cell in row.cells:
            value = number(cell.text)
            if value is not None and not cell.empty and abs(value).normalize() in wanted:
                boxes = page_spans_boxes(store, citation["document_id"], page, [(cell.start, cell.end)])[0]
                return {"text": cell.text, "page": page, "start": cell.start, "end": cell.end, "boxes": boxes,
                        "column": cell.column_text or None, "empty": False, "asked": False,
                        "label": row.label.text if row.label else None,
                        "unit": row.unit.text if row.unit else None}
    return None
