"""kb.answer's citations point at the table cell when the figure came from a table: for a verified quote holding
table rows, the first cell (rows in quote order, cells left to right) whose number the answer states, read with
its row's headers on the page (answer/tables.py), with its offsets into the page's text and its boxes."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from jsonl_engine.answer.pages import page_spans_boxes, row_on_page
from jsonl_engine.answer.sentences import segment
from jsonl_engine.answer.tables import number, read_row

if TYPE_CHECKING:
    from jsonl_engine.store import Store

_FIGURE = re.compile(r"\(?\$?\d[\d,]*(?:\.\d+)?\)?")


def stated_numbers(text: str) -> set[Decimal]:
    """The magnitudes of the figures a text states ("(1,749)", "$1,749", "1749.0" -> 1749), years left out."""
    out = set()
    for m in _FIGURE.finditer(text):
        value = number(m.group(0))
        if value is None or (value == value.to_integral() and 1900 <= value <= 2100 and "," not in m.group(0)):
            continue
        out.add(abs(value).normalize())
    return out


def place_cells(store: Store, citations: list[dict[str, Any]], answer: str) -> None:
    """Add `cell` to kb.answer's citation dicts: the table cell of a verified quote whose figure `answer` states."""
    for c in citations:
        c["cell"] = cited_cell(store, c, answer) if c.get("verified") and answer else None


def cited_cell(store: Store, citation: dict[str, Any], answer: str) -> dict[str, Any] | None:
    """The table cell of the citation's quote whose figure the answer states, as kb.answer's `cell`, or None."""
    wanted = stated_numbers(answer)
    if not wanted:
        return None
    section = store.section(citation["section_id"])
    start, end = citation["quote_start"], citation["quote_end"]
    for seg in segment(section.text):
        if seg.kind != "row" or seg.end <= start or seg.start >= end:
            continue
        found = row_on_page(store, section, seg.start, seg.end, read_row)
        if found is None:
            continue
        page, row = found
        for cell in row.cells:
            value = number(cell.text)
            if value is not None and not cell.empty and abs(value).normalize() in wanted:
                boxes = page_spans_boxes(store, section.document_id, page, [(cell.start, cell.end)])[0]
                return {"text": cell.text, "page": page, "start": cell.start, "end": cell.end, "boxes": boxes,
                        "column": cell.column_text or None, "empty": False, "asked": False,
                        "label": row.label.text if row.label else None,
                        "unit": row.unit.text if row.unit else None}
    return None
