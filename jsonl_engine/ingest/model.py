"""What extraction produces: plain data that pickles across the process pool and maps 1:1 onto the store."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple


@dataclass(slots=True)
class ParsedSection:
    """One node of the section tree, in pre-order.

    `key` is the position in the tree ("0", "0.2", "0.2.1"); with the document id it makes the stable section id.
    `text` is the node's own text (leaves; an internal node may carry the preamble before its first child).
    `page_map` lists (offset into `text`, page number) at every point where a new page begins, ascending,
    starting at offset 0, so any quote offset maps back to its page.
    """

    key: str
    parent: int | None
    depth: int
    ordinal: int
    title: str
    page_start: int
    page_end: int
    text: str = ""
    page_map: list[tuple[int, int]] = field(default_factory=list)
    summary: str = ""


@dataclass(slots=True)
class ParsedDocument:
    title: str
    media_type: str
    pages: list[str]
    sections: list[ParsedSection]
    warnings: list[str] = field(default_factory=list)


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
