"""What extraction produces: plain data that pickles across the process pool. The parsed document itself is the
store's input type (`jsonl_engine.store.types`), re-exported here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from jsonl_engine.ingest.media import MARKDOWN, PDF, PLAIN
from jsonl_engine.store.types import ParsedDocument, ParsedSection

__all__ = ["MARKDOWN", "PDF", "PLAIN", "Line", "OutlineEntry", "PageData", "ParsedDocument", "ParsedSection", "PdfInfo"]



class Line(NamedTuple):
    """One text line of a PDF page: offsets into the normalised page text and the look of its glyphs.

    `size` is the effective font size of the first glyph (font size times the text matrix scale), `bold`
    is true when both the first and the last glyph are bold, `top` is the first glyph's distance from the
    top edge of the page in points. (A NamedTuple: pages of lines cross the process pool, and tuples pickle
    several times faster than dataclasses.)
    """

    start: int
    end: int
    size: float
    bold: bool
    top: float
    collapsed: str | None = None  # a letter-spaced line ("U N I T E D  S T A T E S") with its words rejoined


class PageData(NamedTuple):
    number: int
    text: str
    lines: list[Line]
    height: float = 792.0
    words: Sequence[tuple] = ()  # a page read by OCR: its words (ingest/ocr.py's Word), else empty
    ocr: str = ""  # what OCR did with a page without text that shows an image (ingest/ocr.py), else ""


@dataclass(slots=True)
class OutlineEntry:
    level: int
    title: str
    page: int  # 1-based
    top: float | None  # distance from the top edge in points, when the bookmark says


@dataclass(slots=True)
class PdfInfo:
    page_count: int
    meta_title: str
    outline: list[OutlineEntry]
    # the pages a first pass found to read by OCR (`pdf.parse_small_pdf`): the daemon reads each in a task of its own
    scanned: list[int] = field(default_factory=list)
