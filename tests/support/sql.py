"""Raw SQL on a SQLite KB, for the tests that check the SQLite backend itself (the engine never does this
outside jsonl_engine/store/sqlite)."""

from __future__ import annotations

import sqlite3
from typing import Any


def sql(store: Any, query: str, args: tuple | list = ()) -> list[tuple]:
    """Rows of `query` on the store's SQLite file, through a connection of its own."""
    conn = sqlite3.connect(store.path)
    try:
        return conn.execute(query, args).fetchall()
    finally:
        conn.close()
