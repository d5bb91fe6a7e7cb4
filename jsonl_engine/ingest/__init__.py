"""Extraction: files and inline text -> ParsedDocument (pages plus a section tree), picklable for the pool.
Which parser reads which file type is the table in parsers.py. Importing this package loads neither the parsers nor
the store (the wire models read the table)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from jsonl_engine.errors import UnsupportedMedia
from jsonl_engine.ingest.media import MARKDOWN, PDF, PLAIN
from jsonl_engine.ingest.parsers import (
    BY_MEDIA_TYPE,
    MEDIA_TYPES,
    SUPPORTED,
    media_type_for,
    require_media_type,
)

if TYPE_CHECKING:
    from jsonl_engine.ingest.model import ParsedDocument

__all__ = ["MARKDOWN", "MEDIA_TYPES", "PDF", "PLAIN", "SUPPORTED", "media_type_for", "parse_file", "parse_text",
           "require_media_type"]


def parse_file(path: str) -> ParsedDocument:
    """Parse one file by its extension; raises UnsupportedMedia (encrypted|corrupt|not_pdf|no_text|unknown_type|
    not_regular|too_large)."""
    return BY_MEDIA_TYPE[require_media_type(path)].parse_file(path)


def parse_text(text: str, title: str, media_type: str = PLAIN) -> ParsedDocument:
    """Inline text: `title` names the document."""
    parser = BY_MEDIA_TYPE.get(media_type)
    parse = parser.parse_text if parser is not None else None
    if parse is None:
        raise UnsupportedMedia(f"unsupported media type {media_type!r} for inline text", reason="unknown_type")
    return parse(text, title)
