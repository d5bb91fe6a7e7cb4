"""SQLite connections to the KB file: one writer (serialised by a lock), one reader connection per thread.

WAL mode lets readers run while a long ingest writes; every write is one transaction, so a kill at any
moment leaves each document fully in or fully out.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from jsonl_engine.errors import Internal
from jsonl_engine.store.sqlite.migrations import migrate

DB_FILENAME = "kb.sqlite3"


def connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    conn.row_factory = sqlite3.Row
    _enable_wal(conn)
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA busy_timeout=30000")
    conn.execute("PRAGMA cache_size=-32000")
    return conn


def _enable_wal(conn: sqlite3.Connection, wait_s: float = 30.0) -> None:
    """Switch to WAL. While another process creates or converts the file, SQLite answers "database is locked"
    at once, without its busy handler: retry (two daemons started together on a new KB both get in)."""
    deadline = time.monotonic() + wait_s
    delay = 0.005
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.2)


class Connections:
    def __init__(self, kb_dir: Path) -> None:
        self.kb_dir = Path(kb_dir)
        try:
            self.kb_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise Internal(f"cannot create KB directory {self.kb_dir}: {exc.strerror}") from exc
        self.path = self.kb_dir / DB_FILENAME
        self._writer = connect(self.path)
        try:
            migrate(self._writer)
        except BaseException:
            self._writer.close()
            raise
        self._write_lock = threading.Lock()
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()

    def reader(self) -> sqlite3.Connection:
        """This thread's read connection (autocommit; each statement sees the latest committed state)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.path)
            conn.execute("PRAGMA query_only=ON")
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: several queries that see one consistent state."""
        conn = self.reader()
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """The single writer, inside one IMMEDIATE transaction; rolled back on any exception."""
        with self._write_lock:
            conn = self._writer
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")  # inside the try: a failed COMMIT must not leave the writer mid-transaction
            except BaseException:
                if conn.in_transaction:  # SQLite may already have rolled back (disk full, I/O error)
                    conn.execute("ROLLBACK")
                raise

    def close(self) -> None:
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
        with self._write_lock:
            self._writer.close()
