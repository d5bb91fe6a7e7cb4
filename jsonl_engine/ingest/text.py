"""Markdown (ATX and setext headings) and plain text (paragraphs, chunked) into a section tree on page 1."""

from __future__ import annotations

import re
from pathlib import Path

from jsonl_engine.errors import UnsupportedMedia
from jsonl_engine.ingest.files import read_text
from jsonl_engine.ingest.headings import Heading
from jsonl_engine.ingest.model import MARKDOWN, PLAIN, ParsedDocument
from jsonl_engine.ingest.normalize import collapse_ws, normalize_text
from jsonl_engine.ingest.tree import build_tree

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LIST_OR_QUOTE = re.compile(r"^ {0,3}(?:[-*+>]|\d{1,9}[.)])(?:\s|$)")


def markdown_headings(text: str) -> list[Heading]:
    headings: list[Heading] = []
    offset = 0
    fence: str | None = None
    prev: tuple[int, str] | None = None  # (offset, line) of a paragraph line that may carry a setext underline
    for line in text.split("\n"):
        start, offset = offset, offset + len(line) + 1
        if m := _FENCE.match(line):
            marker = m.group(1)[0] * 3
            fence = None if fence and marker == fence else (fence or marker)
            prev = None
            continue
        if fence:
            continue
        if m := _ATX.match(line):
            title = collapse_ws(m.group(2) or "")
            if title:
                headings.append(Heading(1, start, title, float(len(m.group(1))), "markdown"))
            prev = None
            continue
        if (m := _SETEXT.match(line)) and prev is not None:
            headings.append(Heading(1, prev[0], collapse_ws(prev[1]), 1.0 if m.group(1)[0] == "=" else 2.0,
                                    "markdown"))
            prev = None
            continue
        prev = (start, line) if line.strip() and not _LIST_OR_QUOTE.match(line) and not line.startswith(
            ("    ", "\t")) else None
    return headings


def parse_markdown(text: str, title: str, *, title_from_h1: bool = False) -> ParsedDocument:
    """`title_from_h1`: a file's first level-1 heading names it (else `title`, the file stem)."""
    text = normalize_text(text)
    if not text.strip():
        raise UnsupportedMedia("the document has no text", reason="no_text")
    heads = markdown_headings(text)
    h1 = next((h.title for h in heads if h.rank == 1.0), None) if title_from_h1 else None
    doc_title = h1 or title
    return ParsedDocument(title=doc_title, media_type=MARKDOWN, pages=[text],
                          sections=build_tree([(1, text)], heads, doc_title))


def parse_plain(text: str, title: str) -> ParsedDocument:
    text = normalize_text(text)
    if not text.strip():
        raise UnsupportedMedia("the document has no text", reason="no_text")
    return ParsedDocument(title=title, media_type=PLAIN, pages=[text], sections=build_tree([(1, text)], [], title))


def parse_markdown_file(path: str) -> ParsedDocument:
    """A Markdown file: its first level-1 heading names it, else its file name."""
    return parse_markdown(read_text(path), Path(path).stem, title_from_h1=True)


def parse_plain_file(path: str) -> ParsedDocument:
    return parse_plain(read_text(path), Path(path).stem)
