"""The SQLite store: one file in the KB directory (WAL, FTS5, ordered migrations)."""

from jsonl_engine.store.sqlite.store import SqliteStore

__all__ = ["SqliteStore"]
