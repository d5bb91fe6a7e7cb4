"""The parser table: one row per file type (media type, file extensions, parse functions). Ingest, the
`capabilities` result and the kb.ingest params description all read it; a new file type is one parser module
plus a row here (and its two small loader functions).

The loaders import their parser module when first called (pdfium loads only when a PDF is parsed); they run in
the process pool, so they take and return plain picklable data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from jsonl_engine.errors import UnsupportedMedia
from jsonl_engine.ingest.media import MARKDOWN, PDF, PLAIN

if TYPE_CHECKING:
    from jsonl_engine.store import ParsedDocument


@dataclass(frozen=True, slots=True)
class Parser:
    media_type: str
    extensions: tuple[str, ...]  # lowercase, with the dot
    parse_file: Callable[[str], ParsedDocument]  # (path) -> ParsedDocument
    parse_text: Callable[[str, str], ParsedDocument] | None = None  # (text, title), for inline text


def _pdf_file(path: str) -> ParsedDocument:
    from jsonl_engine.ingest.pdf import parse_pdf

    return parse_pdf(path)


def _markdown_file(path: str) -> ParsedDocument:
    from jsonl_engine.ingest.text import parse_markdown_file

    return parse_markdown_file(path)


def _markdown(text: str, title: str) -> ParsedDocument:
    from jsonl_engine.ingest.text import parse_markdown

    return parse_markdown(text, title)


def _plain_file(path: str) -> ParsedDocument:
    from jsonl_engine.ingest.text import parse_plain_file

    return parse_plain_file(path)


def _plain(text: str, title: str) -> ParsedDocument:
    from jsonl_engine.ingest.text import parse_plain

    return parse_plain(text, title)


PARSERS: tuple[Parser, ...] = (
    Parser(PDF, (".pdf",), _pdf_file),
    Parser(MARKDOWN, (".md", ".markdown"), _markdown_file, _markdown),
    Parser(PLAIN, (".txt", ".text"), _plain_file, _plain),
)

BY_MEDIA_TYPE = {p.media_type: p for p in PARSERS}
MEDIA_TYPES: dict[str, str] = {ext: p.media_type for p in PARSERS for ext in p.extensions}  # extension -> type
SUPPORTED = ", ".join(sorted(MEDIA_TYPES))  # for messages: ".markdown, .md, .pdf, .text, .txt"
EXTENSIONS = ", ".join(MEDIA_TYPES)  # in registry order, for descriptions: ".pdf, .md, .markdown, .txt, .text"


def media_type_for(path: str | Path) -> str | None:
    return MEDIA_TYPES.get(Path(path).suffix.lower())


def require_media_type(path: str | Path) -> str:
    """The file's media type by its extension, or UnsupportedMedia(unknown_type): check before reading it."""
    media_type = media_type_for(path)
    if media_type is None:
        raise UnsupportedMedia(f"{Path(path).name}: unsupported file type (supported: {SUPPORTED})",
                               reason="unknown_type")
    return media_type
