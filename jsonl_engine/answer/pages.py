"""Where a quote is: the pages it spans, offsets into each page's stored text, and (PDFs) boxes on the page.

A section's text is its pages' texts sliced and joined with "\\n" (`ingest.tree.slice_pages`): every page after
its first starts at offset 0 of that page's text, the first at the section's start on its page. That start is
not stored; the sections of a document, in tree order, tile its pages in order, so one pass over them finds
each start (searching each section's first-page text from where the previous one ended) and the store's memo
keeps the result per document. Every offset handed out is checked: the page text there equals the quote.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from jsonl_engine.ingest import pdfgeom
from jsonl_engine.ingest.model import PDF

if TYPE_CHECKING:
    from jsonl_engine.retrieval import Passage
    from jsonl_engine.store import DocumentInfo, Store

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Quote:
    """A quote as claims and citations name it: offsets into a section's text."""

    document_id: str
    section_id: str
    start: int
    end: int


@dataclass(slots=True)
class QuotePage:
    page: int
    start: int  # offset into the page's stored text (kb.read with page)
    end: int
    boxes: list[list[float]] | None = None
    rotation: int | None = None
    width: float | None = None
    height: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"page": self.page, "start": self.start, "end": self.end, "boxes": self.boxes,
                "rotation": self.rotation, "width": self.width, "height": self.height}


@dataclass(slots=True)
class Location:
    pages: list[QuotePage] = field(default_factory=list)
    boxes_status: str = "ok"

    def as_dict(self) -> dict[str, Any]:
        return {"pages": [p.as_dict() for p in self.pages], "boxes_status": self.boxes_status}


def section_starts(store: Store, document_id: str) -> dict[str, int]:
    """section id -> offset into its first page's text where the section's text begins (sections whose start
    cannot be found are left out)."""
    return store.memo("section_starts", document_id, lambda: _tile(store, document_id))


def _tile(store: Store, document_id: str) -> dict[str, int]:
    sections = store.document_sections(document_id)
    pages = store.page_range(document_id, 1, store.document(document_id).pages)
    out: dict[str, int] = {}
    cursor = (0, 0)  # (page, offset) where the previous section's text ended
    for s in sections:
        if not s.text:
            continue
        pmap = s.page_map or [(0, s.page_start)]
        first = pmap[0][1]
        seg = s.text[: pmap[1][0] - 1] if len(pmap) > 1 else s.text
        at = pages.get(first, "").find(seg, cursor[1] if first == cursor[0] else 0)
        if at < 0:
            continue
        out[s.section_id] = at
        cursor = (pmap[-1][1], len(s.text) - pmap[-1][0]) if len(pmap) > 1 else (first, at + len(seg))
    return out


def page_pieces(text: str, page_map: Sequence[Sequence[int]], page_start: int, first_offset: int,
                start: int, end: int) -> list[tuple[int, int, int, int, int]]:
    """The quote [start, end) of a section's text cut at its page breaks: (page, page start, page end, section
    start, section end) per page, the page offsets into that page's text; whitespace-only pieces left out."""
    pmap = [(int(o), int(p)) for o, p in page_map] or [(0, page_start)]
    out = []
    for i, (offset, page) in enumerate(pmap):
        seg_end = pmap[i + 1][0] - 1 if i + 1 < len(pmap) else len(text)  # the "\n" joining two pages is neither's
        s, e = max(start, offset), min(end, seg_end)
        if s >= e or text[s:e].isspace():
            continue
        base = (first_offset if i == 0 else 0) - offset
        out.append((page, s + base, e + base, s, e))
    return out


def locate(store: Store, quotes: Sequence[Quote]) -> list[Location]:
    """The location of each quote; boxes for PDF pages (recomputed from the file, see `ingest.pdfgeom`)."""
    return locate_with_tables(store, quotes, [])[0]


def locate_with_tables(store: Store, quotes: Sequence[Quote], tables: Sequence[tuple[str, Any]],
                       ) -> tuple[list[Location], list[dict[str, Any]]]:
    """`locate` of the quotes and `table_parts` of the (document id, reading) `tables`, each PDF page's boxes
    found in one pass for all of them (a table claim's parts sit on the page of its quote)."""
    texts = store.section_texts(list(dict.fromkeys(q.section_id for q in quotes))) if quotes else {}
    doc_ids = list(dict.fromkeys([q.document_id for q in quotes] + [d for d, _r in tables]))
    docs = {d.document_id: d for d in store.documents(document_ids=doc_ids)} if doc_ids else {}
    out: list[Location] = []
    wanted: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for q in quotes:
        loc = _place(store, q, docs.get(q.document_id), texts.get(q.section_id))
        out.append(loc)
        if loc.boxes_status != "ok":
            continue
        for qp in loc.pages:
            wanted.setdefault((q.document_id, qp.page), []).append((qp.start, qp.end))
    for document_id, reading in tables:
        doc = docs.get(document_id)
        if reading.page is not None and doc is not None and doc.media_type == PDF:
            for p in _parts(reading.row):
                wanted.setdefault((document_id, reading.page - p.pages_back), []).append((p.start, p.end))
    found = _find_boxes(store, docs, wanted)
    _put_boxes(quotes, out, found)
    return out, [_table_dict(reading, {back: found.get((document_id, reading.page - back)) for back in (0, 1)}
                             if reading.page is not None else {}) for document_id, reading in tables]


def _put_boxes(quotes: Sequence[Quote], located: list[Location], found: dict[tuple[str, int], Any]) -> None:
    """Each located quote's pieces get their page's boxes; a quote with a page whose boxes failed carries none
    (never half its boxes) and that page's status."""
    for q, loc in zip(quotes, located, strict=True):
        if loc.boxes_status != "ok":
            continue
        for qp in loc.pages:
            geometry, boxes, status = found[(q.document_id, qp.page)]
            if geometry is None:
                loc.boxes_status = status
                continue
            qp.boxes, qp.rotation, qp.width, qp.height = boxes[(qp.start, qp.end)], geometry.rotation, \
                geometry.width, geometry.height
    for loc in located:
        if loc.boxes_status != "ok":
            for qp in loc.pages:
                qp.boxes = qp.rotation = qp.width = qp.height = None


def _place(store: Store, q: Quote, doc: DocumentInfo | None,
           found: tuple[str, list[tuple[int, int]]] | None) -> Location:
    """The quote's pages with offsets checked against each page's text; its boxes_status is UNMAPPED when it
    cannot be placed, NOT_PDF for a text document, "ok" while its boxes are still to be found (a PDF)."""
    loc = Location()
    first = section_starts(store, q.document_id).get(q.section_id) if doc is not None else None
    if doc is None or found is None or first is None:
        loc.boxes_status = pdfgeom.UNMAPPED
        return loc
    text, pmap = found
    pieces = page_pieces(text, pmap, pmap[0][1] if pmap else 1, first, q.start, q.end)
    page_texts = store.page_texts([(q.document_id, p[0]) for p in pieces])
    if not pieces or any(page_texts.get((q.document_id, page), "")[a:b] != text[s:e]
                         for page, a, b, s, e in pieces):
        loc.boxes_status = pdfgeom.UNMAPPED
        return loc
    loc.pages = [QuotePage(page, a, b) for page, a, b, _s, _e in pieces]
    if doc.media_type != PDF:
        loc.boxes_status = pdfgeom.NOT_PDF
    return loc


def _find_boxes(store: Store, docs: dict[str, DocumentInfo], wanted: dict[tuple[str, int], list[tuple[int, int]]],
                ) -> dict[tuple[str, int], tuple[pdfgeom.PageGeometry | None, dict[tuple[int, int], Any], str]]:
    """(page geometry or None, boxes per span, status) of each wanted PDF page's spans, a page at a time (each
    page read once, its spans deduplicated)."""
    words = ocr_words(store, docs, wanted)
    texts = store.page_texts(list(wanted)) if wanted else {}
    out = {}
    for (document_id, number), spans in wanted.items():
        doc = docs[document_id]
        spans = list(dict.fromkeys(spans))
        geometry, boxes, status = pdfgeom.page_boxes(doc.path, doc.sha256, number, texts.get((document_id, number), ""),
                                                     spans, words.get((document_id, number)))
        out[(document_id, number)] = (geometry, dict(zip(spans, boxes, strict=True)), status)
    return out


class PageTexts:
    """A store's page texts, each read once: one answer's (its table rows each read their page, and a row of a
    table continued from the page before reads that page too, `read_table_row`)."""

    __slots__ = ("store", "_texts")

    def __init__(self, store: Store) -> None:
        self.store = store
        self._texts: dict[tuple[str, int], str | None] = {}

    def get(self, document_id: str, page: int) -> str | None:
        """The page's stored text, None when it has none."""
        key = (document_id, page)
        if key not in self._texts:
            self._texts[key] = self.store.page_texts([key]).get(key)
        return self._texts[key]


def row_on_page(store: Store, passage: Passage, start: int, end: int,
                read: Callable[[str, int, int], T], texts: PageTexts | None = None) -> tuple[int, T] | None:
    """`read(page_text, page_start, page_end)` of the span [start, end) of a passage's section text, read on the
    one page holding it (so what the page prints above it, outside the section, is in reach); None when the
    span is not on one page or cannot be placed. `texts`: the answer's pages read so far."""
    first = section_starts(store, passage.document_id).get(passage.section_id)
    if first is None:
        return None
    pieces = page_pieces(passage.text, passage.page_map, passage.page_start, first, start, end)
    if len(pieces) != 1:
        return None
    page, a, b, s, e = pieces[0]
    text = (texts or PageTexts(store)).get(passage.document_id, page) or ""
    if text[a:b] != passage.text[s:e] or (s, e) != (start, end):
        return None
    return page, read(text, a, b)


def table_row_on_page(store: Store, passage: Passage, start: int, end: int,
                      texts: PageTexts | None = None) -> tuple[int, Any] | None:
    """The table row [start, end) of a passage's section text read on its page (`row_on_page`, then
    `read_table_row`); `texts`: the answer's pages read so far (one answer reads many rows of a page)."""
    texts = texts or PageTexts(store)
    placed = row_on_page(store, passage, start, end, lambda text, a, b: (text, a, b), texts)
    if placed is None:
        return None
    page, (text, a, b) = placed
    return page, read_table_row(store, passage.document_id, page, text, a, b, texts)


def read_table_row(store: Store, document_id: str, page: int, text: str, start: int, end: int,
                   texts: PageTexts | None = None) -> Any:
    """The row text[start:end] of a document's page `page` read as a table (`tables.read_row`); one of the page's
    leading rows printed under no column line of its own read with the column headers printed last on the page
    before (`tables.continued_row`: a table continued across a page break), those parts at their offsets on that
    page (pages_back=1). kb.synthesize's claims and kb.answer's cited cells read rows through it alike; `texts`:
    the answer's pages read so far (each leading row of a page asks for the page before)."""
    from jsonl_engine.answer.tables import continued_row, headerless, read_row

    row = read_row(text, start, end)
    if not headerless(text, start, end, row):
        return row
    previous = (texts or PageTexts(store)).get(document_id, page - 1)
    continued = continued_row(previous, text, start, end) if previous else None
    return continued or row


def page_spans_boxes(store: Store, document_id: str, page: int,
                     spans: Sequence[tuple[int, int]]) -> list[list[list[float]] | None]:
    """Boxes of spans of one page's text (PDFs; None per span when the page's geometry is not available)."""
    doc = store.document(document_id)
    if doc.media_type != PDF or not spans:
        return [None] * len(spans)
    text = store.page_texts([(document_id, page)]).get((document_id, page), "")
    words = ocr_words(store, {document_id: doc}, [(document_id, page)]).get((document_id, page))
    geometry, boxes, _status = pdfgeom.page_boxes(doc.path, doc.sha256, page, text, list(spans), words)
    if geometry is None:
        return [None] * len(spans)
    return list(boxes)


def table_parts(store: Store, document_id: str, reading: Any) -> dict[str, Any]:
    """A table row read as a table (an `answer.synthesize.Reading`) as kb.synthesize's `table`: each part with
    its page, offsets and, for a PDF page, its boxes."""
    return locate_with_tables(store, [], [(document_id, reading)])[1][0]


def _parts(row: Any) -> list[Any]:
    return [p for p in (row.label, row.unit) if p is not None] + list(row.headers) + list(row.cells)


def _table_dict(reading: Any,
                found: dict[int, tuple[pdfgeom.PageGeometry | None, dict[tuple[int, int], Any], str] | None],
                ) -> dict[str, Any]:
    """`table_parts`' dict of a reading, its parts' boxes from `_find_boxes` (None without the page's geometry),
    keyed by how many pages before the row's a part is printed (0: the row's page; 1: column headers printed on
    the page before, `tables.read_continued`)."""
    row = reading.row
    boxes = {back: f[1] if f is not None and f[0] is not None else {} for back, f in found.items()}

    def part(p: Any) -> dict[str, Any] | None:
        if p is None:
            return None
        page = reading.page - p.pages_back if reading.page is not None else None
        return {"text": p.text, "page": page, "start": p.start, "end": p.end,
                "boxes": boxes.get(p.pages_back, {}).get((p.start, p.end))}

    return {"label": part(row.label), "unit": part(row.unit), "headers": [part(h) for h in row.headers],
            "cells": [{**part(c), "column": c.column_text or None, "empty": c.empty, "asked": i in reading.asked}
                      for i, c in enumerate(row.cells)]}


def ocr_words(store: Store, docs: dict[str, DocumentInfo], pages: Iterable[tuple[str, int]]) -> dict[
        tuple[str, int], list[list[float]]]:
    """The stored OCR words of those of `pages` that were read by OCR (their boxes come from them)."""
    keys = [(d, n) for d, n in pages if d in docs and n in docs[d].ocr_pages]
    return store.page_words(keys) if keys else {}


def place_citations(store: Store, citations: list[dict[str, Any]]) -> None:
    """Add `pages` and `boxes_status` to kb.answer's citation dicts (unverified ones: no pages)."""
    verified = [c for c in citations if c.get("verified")]
    located = locate(store, [Quote(c["document_id"], c["section_id"], c["quote_start"], c["quote_end"])
                             for c in verified])
    for c in citations:
        c.update(pages=[], boxes_status="unverified")
    for c, where in zip(verified, located, strict=True):
        c.update(where.as_dict())
