"""The parser registry: one row per file type (media type, file extensions, parse functions). Ingest, the
`capabilities` result and the kb.ingest params description all read it; a new file type is one parser module
plus one row here.

Parse functions are named "module:function" and imported on first use (pdfium loads only when a PDF is parsed);
they run in the process pool, so they take and return plain picklable data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module

from jsonl_engine.ingest.model import MARKDOWN, PDF, PLAIN
from jsonl_engine.store import ParsedDocument


@dataclass(frozen=True, slots=True)
class Parser:
    media_type: str
    extensions: tuple[str, ...]  # lowercase, with the dot
    parse_file: str  # "module:function", (path) -> ParsedDocument
    parse_text: str | None = None  # "module:function", (text, title) -> ParsedDocument, for inline text

    def file_parser(self) -> Callable[[str], ParsedDocument]:
        return _load(self.parse_file)

    def text_parser(self) -> Callable[[str, str], ParsedDocument] | None:
        return _load(self.parse_text) if self.parse_text else None


PARSERS: tuple[Parser, ...] = (
    Parser(PDF, (".pdf",), "jsonl_engine.ingest.pdf:parse_pdf"),
    Parser(MARKDOWN, (".md", ".markdown"), "jsonl_engine.ingest.text:parse_markdown_file",
           "jsonl_engine.ingest.text:parse_markdown"),
    Parser(PLAIN, (".txt", ".text"), "jsonl_engine.ingest.text:parse_plain_file", "jsonl_engine.ingest.text:parse_plain"),
)

BY_MEDIA_TYPE = {p.media_type: p for p in PARSERS}
MEDIA_TYPES: dict[str, str] = {ext: p.media_type for p in PARSERS for ext in p.extensions}  # extension -> type
SUPPORTED = ", ".join(sorted(MEDIA_TYPES))  # for messages: ".markdown, .md, .pdf, .text, .txt"
EXTENSIONS = ", ".join(MEDIA_TYPES)  # in registry order, for descriptions: ".pdf, .md, .markdown, .txt, .text"


def _load(ref: str) -> Callable:
    module, _, name = ref.partition(":")
    return getattr(import_module(module), name)
