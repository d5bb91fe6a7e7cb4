"""What extraction produces: plain data that pickles across the process pool and maps 1:1 onto the store."""

from __future__ import annotations

from dataclasses import dataclass, field


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
