"""Pure helpers both backends share: the rows a parsed document becomes, timestamps, stored JSON pairs. No SQL,
no driver: `store/sqlite/` and `store/postgres/` each write these rows with their own statements."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import orjson

from jsonl_engine.store.types import ParsedDocument


def now() -> str:
    """The `ingested_at` timestamp: UTC, to the second."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def section_rows(parsed: ParsedDocument, document_id: str) -> Iterator[tuple]:
    """One tuple per section, in document order: (id, document_id, parent_id, position, depth, ordinal, title,
    ancestors JSON, page_start, page_end, is_leaf 0/1, text, page_map JSON, summary)."""
    sections = parsed.sections
    has_children = {s.parent for s in sections if s.parent is not None}
    ids = [f"{document_id}:{s.key}" for s in sections]
    for position, s in enumerate(sections):
        ancestors: list[str] = []
        parent = s.parent
        while parent is not None:
            ancestors.append(sections[parent].title)
            parent = sections[parent].parent
        ancestors.reverse()
        yield (ids[position], document_id, None if s.parent is None else ids[s.parent], position, s.depth,
               s.ordinal, s.title, orjson.dumps(ancestors).decode(), s.page_start, s.page_end,
               int(position not in has_children), s.text, orjson.dumps(s.page_map).decode(), s.summary)


def word_rows(parsed: ParsedDocument, document_id: str) -> Iterator[tuple[str, int, str]]:
    """One (document_id, page number, words JSON) per page read by OCR."""
    for number, words in sorted(parsed.page_words.items()):
        yield document_id, number, orjson.dumps(words).decode()


def json_pairs(raw: str | None) -> list[tuple[int, int]]:
    """A stored page map ("[[offset, page], ...]"); [] when absent or malformed."""
    try:
        return [(int(a), int(b)) for a, b in orjson.loads(raw or "[]")]
    except (ValueError, TypeError):
        return []
