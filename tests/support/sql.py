"""Raw SQL on a KB (SQLite file or PostgreSQL database), for the tests that check a backend itself (the engine
never does this outside jsonl_engine/store/). Placeholders are the backend's own (`?` or `%s`)."""

from __future__ import annotations

import sqlite3
from typing import Any


def sql(store: Any, query: str, args: tuple | list = ()) -> list[tuple]:
    """Rows of `query` on the store's SQLite file or database, through a connection of its own."""
    if getattr(store, "backend", "sqlite") == "postgresql":
        import psycopg

        with psycopg.connect(store.url, autocommit=True) as conn:
            cur = conn.execute(query, args)
            return cur.fetchall() if cur.description else []
    conn = sqlite3.connect(store.path)
    try:
        return conn.execute(query, args).fetchall()
    finally:
        conn.close()


def fts_hits(store: Any, term: str) -> int:
    """Sections whose index holds `term`."""
    if getattr(store, "backend", "sqlite") == "postgresql":
        return sql(store, "SELECT COUNT(*) FROM sections WHERE tsv @@ phraseto_tsquery('jsonl_english', %s)",
                   (term,))[0][0]
    return sql(store, "SELECT COUNT(*) FROM sections_fts WHERE sections_fts MATCH ?", (term,))[0][0]
