"""SQLite connections to the KB file: one writer (serialised by a lock), one reader connection per thread.

WAL mode lets readers run while a long ingest writes; every write is one transaction, so a kill at any
moment leaves each document fully in or fully out.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from jsonl_engine.errors import KBUnavailable
from jsonl_engine.store.sqlite.migrations import migrate

DB_FILENAME = "kb.sqlite3"
# Reads map the file rather than copy its pages into each connection's cache: every thread's reader shares the
# pages the OS holds (SQLite caps this at its compile-time maximum, 2 GiB by default).
MMAP_BYTES = 1 << 31

# SQLite's primary result codes that mean the KB file itself is unusable (anything else is a bug: `internal`).
UNUSABLE_FILE = {
    sqlite3.SQLITE_NOTADB: "is not a valid SQLite database",
    sqlite3.SQLITE_CORRUPT: "is not a valid SQLite database",
    sqlite3.SQLITE_CANTOPEN: "cannot be opened",
    sqlite3.SQLITE_PERM: "cannot be opened",
    sqlite3.SQLITE_READONLY: "is read-only",
    sqlite3.SQLITE_IOERR: "cannot be read or written",
    sqlite3.SQLITE_FULL: "cannot be read or written",
}


def connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    try:
        conn.row_factory = sqlite3.Row
        _enable_wal(conn)
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=30000")
        conn.execute("PRAGMA cache_size=-32000")
        conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
    except BaseException:
        conn.close()
        raise
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


def _prepare_dir(kb_dir: Path) -> None:
    """The KB directory exists (made if need be) and is writable, else kb_unavailable."""
    where = {"path": str(kb_dir)}
    try:
        kb_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError as exc:
        raise KBUnavailable(f"the KB directory {kb_dir} exists and is not a directory", where) from exc
    except OSError as exc:
        raise KBUnavailable(f"cannot create the KB directory {kb_dir} ({exc.strerror})", where) from exc
    if not os.access(kb_dir, os.W_OK | os.X_OK):
        raise KBUnavailable(f"the KB directory {kb_dir} is not writable", where)


@contextmanager
def _opening(path: Path) -> Iterator[None]:
    """SQLite errors that say the KB file is unusable become kb_unavailable, naming the file and the problem."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        problem = UNUSABLE_FILE.get((getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF)
        if problem is None:
            raise
        raise KBUnavailable(f"the KB file {path} {problem} ({exc})",
                            {"path": str(path), "sqlite_error": exc.sqlite_errorname}) from exc


class Connections:
    def __init__(self, kb_dir: Path) -> None:
        self.kb_dir = Path(kb_dir)
        _prepare_dir(self.kb_dir)
        self.path = self.kb_dir / DB_FILENAME
        with _opening(self.path):
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
            with _opening(self.path):
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
