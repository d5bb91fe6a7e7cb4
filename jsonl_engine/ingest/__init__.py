"""Extraction: files and inline text -> ParsedDocument (pages plus a section tree), picklable for the pool."""

from __future__ import annotations

from pathlib import Path

from jsonl_engine.errors import UnsupportedMedia
from jsonl_engine.ingest.model import ParsedDocument, ParsedSection

PDF = "application/pdf"
MARKDOWN = "text/markdown"
PLAIN = "text/plain"
MEDIA_TYPES: dict[str, str] = {".pdf": PDF, ".md": MARKDOWN, ".markdown": MARKDOWN, ".txt": PLAIN, ".text": PLAIN}
SUPPORTED = ", ".join(sorted(MEDIA_TYPES))  # for messages: ".markdown, .md, .pdf, .text, .txt"

__all__ = ["MEDIA_TYPES", "SUPPORTED", "ParsedDocument", "ParsedSection", "media_type_for", "parse_file",
           "parse_text", "require_media_type"]


def media_type_for(path: str | Path) -> str | None:
    return MEDIA_TYPES.get(Path(path).suffix.lower())


def require_media_type(path: str | Path) -> str:
    """The file's media type by its extension, or UnsupportedMedia(unknown_type): check before reading it."""
    media_type = media_type_for(path)
    if media_type is None:
        raise UnsupportedMedia(f"{Path(path).name}: unsupported file type (supported: {SUPPORTED})",
                               reason="unknown_type")
    return media_type


def parse_file(path: str) -> ParsedDocument:
    """Parse one file by its extension; raises UnsupportedMedia (encrypted|corrupt|not_pdf|no_text|unknown_type|
    not_regular|too_large)."""
    media_type = require_media_type(path)
    if media_type == PDF:
        from jsonl_engine.ingest.pdf import parse_pdf

        return parse_pdf(path)
    from jsonl_engine.ingest.files import read_text

    if media_type == MARKDOWN:
        from jsonl_engine.ingest.text import parse_markdown

        return parse_markdown(read_text(path), Path(path).stem, title_from_h1=True)
    return parse_text(read_text(path), Path(path).stem, media_type)


def parse_text(text: str, title: str, media_type: str = PLAIN) -> ParsedDocument:
    """Inline text: `title` names the document."""
    from jsonl_engine.ingest.text import parse_markdown, parse_plain

    if media_type == MARKDOWN:
        return parse_markdown(text, title)
    if media_type == PLAIN:
        return parse_plain(text, title)
    raise UnsupportedMedia(f"unsupported media type {media_type!r} for inline text", reason="unknown_type")
