"""The KB store: the interface (`Store`, port.py), its domain types (types.py), and the one place that picks
an implementation (`open_store`). Today the only backend is SQLite (store/sqlite/)."""

from __future__ import annotations

from pathlib import Path

from jsonl_engine.store.port import Store, Transaction
from jsonl_engine.store.sqlite import SqliteStore
from jsonl_engine.store.types import (
    CARD_FIELDS,
    COVER_PAGES,
    STATUSES,
    Card,
    DocumentInfo,
    OutlineNode,
    PageHit,
    PageRow,
    ParsedDocument,
    ParsedSection,
    Phrase,
    Scope,
    SectionHit,
    SectionRef,
    SectionRow,
    SectionWeights,
    TreeRow,
)

__all__ = ["CARD_FIELDS", "COVER_PAGES", "STATUSES", "Card", "DocumentInfo", "OutlineNode", "PageHit", "PageRow", "ParsedDocument",
           "ParsedSection", "Phrase", "Scope", "SectionHit", "SectionRef", "SectionRow", "SectionWeights", "Store",
           "Transaction", "TreeRow", "open_store"]


def open_store(kb_dir: Path | str) -> Store:
    """The KB in `kb_dir`, created (and migrated) when needed. The one place a backend is chosen."""
    return SqliteStore(Path(kb_dir))
