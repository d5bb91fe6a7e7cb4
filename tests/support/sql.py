"""Raw SQL on a KB (SQLite file or PostgreSQL database), for the tests that check a backend itself (the engine
never does this outside jsonl_engine/store/). Placeholders are the backend's own (`?` or `%s`).

A SQLite file is opened through the store's own library (`sqlite_connect`: APSW when installed, else sqlite3):
two SQLite libraries in one process must not open the same file (they do not share their POSIX locks)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jsonl_engine.store.sqlite import driver


def sqlite_connect(path: Path | str, timeout_s: float = 5.0) -> Any:
    """A connection to a KB file through the store's SQLite library (autocommit; rows are tuples readable by
    column name). `.execute`, `.executemany`, `.close` as sqlite3's."""
    return driver.connect(path, timeout_s=timeout_s)


def sqlite_script(conn: Any, script: str) -> None:
    """Run each statement of `script` (sqlite3's executescript, for either library)."""
    from jsonl_engine.store.sqlite.migrations import _statements

    for statement in _statements(script):
        conn.execute(statement)


def sql(store: Any, query: str, args: tuple | list = ()) -> list[tuple]:
    """Rows of `query` on the store's SQLite file or database, through a connection of its own."""
    if getattr(store, "backend", "sqlite") == "postgresql":
        import psycopg

        with psycopg.connect(store.url, autocommit=True) as conn:
            cur = conn.execute(query, args)
            return cur.fetchall() if cur.description else []
    conn = sqlite_connect(store.path)
    try:
        return [tuple(r) for r in conn.execute(query, args).fetchall()]
    finally:
        conn.close()


def fts_hits(store: Any, term: str) -> int:
    """Sections whose index holds `term`."""
    if getattr(store, "backend", "sqlite") == "postgresql":
        return sql(store, "SELECT COUNT(*) FROM sections WHERE tsv @@ phraseto_tsquery('jsonl_english', %s)",
                   (term,))[0][0]
    return sql(store, "SELECT COUNT(*) FROM sections_fts WHERE sections_fts MATCH ?", (term,))[0][0]
