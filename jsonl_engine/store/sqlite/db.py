"""SQLite connections to the KB file: one writer (serialised by a lock), one reader connection per thread.

WAL mode lets readers run while a long ingest writes; every write is one transaction, so a kill at any
moment leaves each document fully in or fully out.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from jsonl_engine.errors import KBUnavailable
from jsonl_engine.store.sqlite import bm25, driver
from jsonl_engine.store.sqlite.driver import Connection
from jsonl_engine.store.sqlite.migrations import migrate

log = logging.getLogger(__name__)

DB_FILENAME = "kb.sqlite3"
# Reads map the file rather than copy its pages into each connection's cache: every thread's reader shares the
# pages the OS holds (SQLite caps this at its compile-time maximum, 2 GiB by default).
MMAP_BYTES = 1 << 31

# SQLite's primary result codes that mean the KB file itself is unusable (anything else is a bug: `internal`).
UNUSABLE_FILE = {
    driver.SQLITE_NOTADB: "is not a valid SQLite database",
    driver.SQLITE_CORRUPT: "is not a valid SQLite database",
    driver.SQLITE_CANTOPEN: "cannot be opened",
    driver.SQLITE_PERM: "cannot be opened",
    driver.SQLITE_READONLY: "is read-only",
    driver.SQLITE_IOERR: "cannot be read or written",
    driver.SQLITE_FULL: "cannot be read or written",
}


def connect(path: Path) -> Connection:
    conn = driver.connect(path, timeout_s=30.0)
    try:
        _enable_wal(conn)
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=30000")
        conn.execute("PRAGMA cache_size=-32000")
        conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
        # A removed or replaced document's text is overwritten in the file, whichever library: Debian's SQLite (the
        # stdlib's) is built with this on, APSW's own SQLite with it off.
        conn.execute("PRAGMA secure_delete=ON")
        if driver.APSW:
            # Last: APSW looks FTS5 up with a statement of its own, holding the GIL; it reads the schema, so a KB
            # another process holds locked (being created) would stall every thread until it is released.
            # Once in WAL mode, reading never waits on a writer.
            bm25.register(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _enable_wal(conn: Connection, wait_s: float = 30.0) -> None:
    """Switch to WAL. While another process creates or converts the file, SQLite answers "database is locked"
    at once, without its busy handler: retry (two daemons started together on a new KB both get in)."""
    deadline = time.monotonic() + wait_s
    delay = 0.005
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except driver.Error as exc:
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
    except driver.Error as exc:
        problem = UNUSABLE_FILE.get(driver.primary_code(exc))
        if problem is None:
            raise
        raise KBUnavailable(f"the KB file {path} {problem} ({exc})",
                            {"path": str(path), "sqlite_error": driver.error_name(exc)}) from exc


class Connections:
    def __init__(self, kb_dir: Path) -> None:
        self.kb_dir = Path(kb_dir)
        _prepare_dir(self.kb_dir)
        self.path = self.kb_dir / DB_FILENAME
        with _opening(self.path):
            self._writer = connect(self.path)
            try:
                migrate(self._writer)
                version = self._writer.execute("SELECT sqlite_version()").fetchone()[0]
            except BaseException:
                self._writer.close()
                raise
        log.info("KB %s: SQLite %s through %s", self.path, version, driver.NAME)
        self._write_lock = threading.Lock()
        self._local = threading.local()
        self._readers: list[Connection] = []
        self._readers_lock = threading.Lock()

    def reader(self) -> Connection:
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
    def snapshot(self) -> Iterator[Connection]:
        """A read transaction: several queries that see one consistent state."""
        conn = self.reader()
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    @contextmanager
    def write(self) -> Iterator[Connection]:
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
