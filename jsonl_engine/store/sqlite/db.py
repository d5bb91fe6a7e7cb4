"""SQLite connections to the KB file: one writer (serialised by a lock), one reader connection per thread.

WAL mode lets readers run while a long ingest writes; every write is one transaction, so a kill at any
moment leaves each document fully in or fully out.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from jsonl_engine.errors import KBUnavailable
from jsonl_engine.store.sqlite import bm25, driver, terms
from jsonl_engine.store.sqlite.driver import Connection
from jsonl_engine.store.sqlite.migrations import migrate

log = logging.getLogger(__name__)

DB_FILENAME = "kb.sqlite3"
# Reads do not map the file (mmap_size 0): a file truncated or replaced under a running daemon would kill it with
# SIGBUS at the next read of a mapped page, which no handler can answer; read() returns SQLite an error instead
# (kb_unavailable). Each connection reads through its own page cache (cache_size). The cost, bench/kb_mmap.py on a
# 166-filing library KB (330 MB), in process, best of 3: corpus-wide kb.context p50 18.9 -> 21.7 ms (CPU 17.8 ->
# 19.5 ms), scoped p50 8.3 -> 9.1 ms; a 128 MiB cache per connection does not win it back.
MMAP_BYTES = 0
CACHE_KIB = 32000  # each connection's page cache
REOPEN_WAL_WAIT_S = 1.0  # a writer reopened on a file emptied under the daemon does not wait the full 30 s

# SQLite's primary result codes that mean the KB file itself is unusable (anything else is a bug: `internal`):
# what is wrong, and the `reason` kb_unavailable carries.
UNUSABLE_FILE = {
    driver.SQLITE_NOTADB: ("is not a valid SQLite database", "corrupt"),
    driver.SQLITE_CORRUPT: ("is not a valid SQLite database", "corrupt"),
    driver.SQLITE_CANTOPEN: ("cannot be opened", "cannot_open"),
    driver.SQLITE_PERM: ("cannot be opened", "cannot_open"),
    driver.SQLITE_READONLY: ("is read-only", "read_only"),
    driver.SQLITE_IOERR: ("cannot be read or written", "io_error"),
    driver.SQLITE_FULL: ("cannot grow: the disk is full", "disk_full"),
    # Past the busy timeout, or at once while another connection creates or converts the file (a file truncated
    # to nothing is a new, empty database being made).
    driver.SQLITE_BUSY: ("is locked", "locked"),
}


def unusable(path: Path, exc: BaseException) -> KBUnavailable | None:
    """kb_unavailable naming the file and the problem when a SQLite error says the KB file is unusable, else None.
    A table missing from a KB that was migrated is a file truncated or replaced under the daemon (SQLite reads an
    empty file as an empty database)."""
    found = UNUSABLE_FILE.get(driver.primary_code(exc))
    if found is None and "no such table" in str(exc):
        found = ("has lost its tables (truncated or replaced?)", "corrupt")
    if found is None:
        return None
    problem, reason = found
    return KBUnavailable(f"the KB file {path} {problem} ({exc})",
                         {"path": str(path), "reason": reason, "sqlite_error": driver.error_name(exc)})


def connect(path: Path, wal_wait_s: float | None = 30.0) -> Connection:
    """A connection with the store's settings. `wal_wait_s`: how long to retry switching the file to WAL while
    another connection creates or converts it; None: no switch (readers: the writer, opened first, switched the
    file, and WAL mode is kept in the file)."""
    conn = driver.connect(path, timeout_s=30.0)
    try:
        if wal_wait_s is not None:
            _enable_wal(conn, wal_wait_s)
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=30000")
        conn.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
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
        error = unusable(path, exc)
        if error is None:
            raise
        raise error from exc


class Connections:
    """The writer and the readers of one KB file. When the file proves unusable (`discard`: damaged, truncated, an
    I/O error, a full disk), every connection is closed and opened again at its next use, by the thread that uses
    it: a file restored, or space freed, under a running daemon serves again from the next request."""

    def __init__(self, kb_dir: Path) -> None:
        self.kb_dir = Path(kb_dir)
        _prepare_dir(self.kb_dir)
        self.path = self.kb_dir / DB_FILENAME
        self._writer: Connection | None = self._open_writer()
        self._version = self._schema(self._writer)
        self._epoch = 0  # bumped by discard(); a connection opened under an older epoch is reopened at its next use
        self._writer_epoch = 0
        self._write_lock = threading.Lock()
        self._local = threading.local()
        self._readers: list[Connection] = []
        self._readers_lock = threading.Lock()

    def _open_writer(self) -> Connection:
        with _opening(self.path):
            conn = connect(self.path)
            try:
                migrate(conn)
                terms.keep_vocabulary(conn)  # a KB made before the vocabulary's phrases were kept, or before some
                version = conn.execute("SELECT sqlite_version()").fetchone()[0]
            except BaseException:
                conn.close()
                raise
        log.info("KB %s: SQLite %s through %s", self.path, version, driver.NAME)
        return conn

    @staticmethod
    def _schema(conn: Connection) -> int:
        return conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] or 0

    def _reopen_writer(self) -> Connection:
        """The writer opened again after `discard`, without creating or migrating anything: a file emptied under
        the daemon stays kb_unavailable (SQLite would read it as a new, empty KB) until restored or restarted."""
        with _opening(self.path):
            conn = connect(self.path, wal_wait_s=REOPEN_WAL_WAIT_S)
            try:
                version = self._schema(conn)
            except BaseException:
                conn.close()
                raise
        if version < self._version:  # emptied (0) or replaced by an older KB
            conn.close()
            raise KBUnavailable(f"the KB file {self.path} has lost its tables (truncated or replaced?)",
                                {"path": str(self.path), "reason": "corrupt"})
        return conn

    def discard(self) -> None:
        """The file proved unusable: every connection is reopened at its next use."""
        self._epoch += 1
        log.warning("KB %s is unusable: its connections will be opened again", self.path)

    def lost(self, exc: BaseException) -> bool:
        """Whether `exc` came from a connection that is gone (never with a file: see `discard`)."""
        return False

    def reader(self) -> Connection:
        """This thread's read connection (autocommit; each statement sees the latest committed state)."""
        local = self._local
        conn = getattr(local, "conn", None)
        if conn is not None and local.epoch != self._epoch and not getattr(local, "pinned", False):
            local.conn = None
            with self._readers_lock:
                if conn in self._readers:
                    self._readers.remove(conn)
            with contextlib.suppress(driver.Error):
                conn.close()
            conn = None
        if conn is None:
            epoch = self._epoch
            with _opening(self.path):
                conn = connect(self.path, wal_wait_s=None)
                try:
                    conn.execute("PRAGMA query_only=ON")
                except BaseException:
                    conn.close()
                    raise
            local.conn, local.epoch = conn, epoch
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    @contextmanager
    def snapshot(self) -> Iterator[Connection]:
        """A read transaction: several queries that see one consistent state."""
        conn = self.reader()
        conn.execute("BEGIN")
        self._local.pinned = True  # the thread's reader is not reopened under its open transaction
        try:
            yield conn
        except BaseException:
            with contextlib.suppress(driver.Error):  # the body's error is the one to report
                conn.execute("COMMIT")
            raise
        finally:
            self._local.pinned = False
        conn.execute("COMMIT")

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """The single writer, inside one IMMEDIATE transaction; rolled back on any exception."""
        with self._write_lock:
            if self._writer is None or self._writer_epoch != self._epoch:
                epoch = self._epoch
                if self._writer is not None:
                    with contextlib.suppress(driver.Error):
                        self._writer.close()
                    self._writer = None
                self._writer = self._reopen_writer()  # kb_unavailable while the file is still unusable
                self._writer_epoch = epoch
            conn = self._writer
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")  # inside the try: a failed COMMIT must not leave the writer mid-transaction
            except BaseException:
                with contextlib.suppress(driver.Error):  # the first error is the one to report
                    if conn.in_transaction:  # SQLite may already have rolled back (disk full, I/O error)
                        conn.execute("ROLLBACK")
                raise

    def close(self) -> None:
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
        with self._write_lock:
            if self._writer is not None:
                self._writer.close()
