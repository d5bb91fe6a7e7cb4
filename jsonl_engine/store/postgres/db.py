"""PostgreSQL connections to the KB database: one autocommit reader per thread, writers from a small pool.

Each write is one transaction on a writer connection (READ COMMITTED): a daemon killed mid-ingest leaves its
open transaction to be rolled back by the server, so every document is fully in or fully out. Connection
strings are redacted from every error (`location.redact`).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from jsonl_engine.errors import Internal, KBUnavailable
from jsonl_engine.store.location import describe, redact, url_password

try:
    import psycopg
except ImportError as exc:  # the optional extra is missing
    raise KBUnavailable("the PostgreSQL KB backend needs the psycopg driver: "
                        "pip install 'jsonl-engine[postgres]'", {"backend": "postgresql"}) from exc

from jsonl_engine.store.postgres.migrations import migrate

CONNECT_TIMEOUT_S = 10
MAX_IDLE_WRITERS = 4
APPLICATION_NAME = "jsonl-engine"
IDLE = psycopg.pq.TransactionStatus.IDLE
INTRANS = psycopg.pq.TransactionStatus.INTRANS
JANITOR_LINGER_S = 1.0  # the janitor thread stops after this long with no reader's transaction left open
ROLLBACK_AFTER_S = 0.1  # an idle reader's open read-only transaction is rolled back after this long (Connections._end)
# Every read is an index lookup; a sequential scan under a `tsv @@` filter would read (detoast) the tsvector of
# every row, a cost the planner does not model (and, before autovacuum analyses a new KB, it has no statistics
# to see that a phrase is rare). Sequential scans stay possible where no index serves (the BM25 totals). JIT
# off: compiling costs tens of milliseconds, more than any of these statements takes to run. Generic plans for the
# statements psycopg prepares (a reader's, at their first run: READER_PREPARE_THRESHOLD): planned once per connection, not at
# every run. Left to choose, the server keeps custom plans for a statement reading `= ANY(%s)` arrays that are
# often empty (the counts' read ahead: search._COUNTS), replanning it every run; its generic plan (index lookups,
# sequential scans being off) runs as fast. Measured on the dev questions' statements: 0.3 ms (scoped) and 0.5 ms
# (corpus-wide) of the server's CPU a query less.
# A reader prepares a statement at its first run (psycopg's default: its fifth), in the same round trip: a
# fresh daemon's first queries (each of a document new to it) planned every statement again, the counts one
# (search._COUNTS, a UNION ALL of 7 reads) costing the server more to plan than to run. The statements a reader
# runs have fixed texts (lists are sent as arrays); those whose text varies (a snapshot's BEGIN) say prepare=False.
READER_PREPARE_THRESHOLD = 0
READER_SETTINGS = "SET enable_seqscan = off; SET jit = off; SET plan_cache_mode = force_generic_plan"
# Values over ~2 kB (a page's text and tsvector, a common word's postings) are compressed when written: with pglz,
# the default, that took a third of the time of writing a document's postings; lz4 takes a tenth of that for 1%
# more bytes, and decompresses several times faster for the reads. A session setting, not the columns': nothing
# in the schema changes (values written with either are read alike). A server built without lz4 keeps pglz.
WRITER_SETTINGS = "SET default_toast_compression = lz4"
BEGIN_SNAPSHOT = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
# How a snapshot's transaction ends: COMMIT, which for a READ ONLY transaction is what a ROLLBACK does. Not
# ROLLBACK: psycopg drops every statement it prepared on a connection when it sees a ROLLBACK's result (and sends
# DEALLOCATE ALL, one more round trip), so a reader ending each snapshot with one would never keep a prepared
# statement past its snapshot. A transaction in error still ends with ROLLBACK (`_rollback`).
END_SNAPSHOT = "COMMIT"
# What a snapshot sees, read with its BEGIN: two snapshots with the same text see the same committed transactions,
# so the same data (the xids are 64-bit, never reused; the start time tells a restarted or replaced server apart).
# Cluster-wide: any commit anywhere changes it, which is safe (values kept per version are read again).
VERSION_OF_SNAPSHOT = "pg_current_snapshot()::text || ' ' || pg_postmaster_start_time()::text"
SNAPSHOT_VERSION = f"SELECT {VERSION_OF_SNAPSHOT}"


def failure(url: str, exc: BaseException) -> str:
    """The text of a driver error, without the URL's password."""
    return redact(" ".join(str(exc).split()), url_password(url))


def _writer_settings(conn: Any) -> None:
    with contextlib.suppress(psycopg.errors.InvalidParameterValue):  # built without lz4: pglz stays
        conn.execute(WRITER_SETTINGS)


class Connections:
    # A statement sent with each snapshot's BEGIN, in the same round trip (its row: begun()). Where it says
    # {changed}, `_begin` writes a condition false when the snapshot's version is the last snapshot's: the same
    # data, so its row is that snapshot's, kept, and the statement need not read anything (a condition of no column
    # gates the whole statement: the server runs none of it).
    snapshot_query = ""
    _last: tuple[str, Any] | None = None  # the last snapshot's version and snapshot_query row (_begin)
    defer_rollback = True  # a snapshot's ROLLBACK sent with the next BEGIN on its reader (_end)

    def __init__(self, url: str) -> None:
        self.url = url
        self.shown = describe(url)
        conn = self._connect()
        try:
            migrate(conn)
        except psycopg.Error as exc:
            conn.close()
            raise Internal(f"cannot migrate the KB database {self.shown}: {failure(url, exc)}") from exc
        except BaseException:
            conn.close()
            raise
        _writer_settings(conn)  # the first writer
        self._local = threading.local()
        self._all: list[Any] = [conn]
        self._idle: list[Any] = [conn]
        self._open: dict[int, float] = {}  # idle readers whose last snapshot's transaction is open: since when (_end)
        self._janitor: threading.Thread | None = None
        self._lock = threading.Lock()

    def _connect(self) -> Any:
        try:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S,
                                   application_name=APPLICATION_NAME)
        except psycopg.Error as exc:
            raise KBUnavailable(f"cannot connect to the KB database {self.shown}: {failure(self.url, exc)}",
                                {"kb": self.shown, "reason": "unreachable"}) from exc
        return conn

    def lost(self, exc: BaseException) -> bool:
        """Whether `exc` is this thread's reader found dead (the server restarted, its backend was terminated):
        the connection is closed now, and `reader()` opens a fresh one."""
        conn = getattr(self._local, "conn", None)
        return isinstance(exc, psycopg.OperationalError) and conn is not None and conn.closed

    def url_of(self, exc: BaseException) -> str:
        """The URL of the server `exc` came from (a store with a read replica has two: replica.Routed)."""
        return self.url

    def reader(self, snapshot: bool = False) -> Any:
        """This thread's read connection (autocommit: each statement sees the latest committed state): the one it
        holds, else the idle reader used last (its statements prepared, its server process warm), else a new one.
        A thread gives its reader back when a snapshot ends, so a daemon holds as many readers as it has threads
        reading at once, not one per thread it ever ran. An idle reader whose last snapshot's transaction is still
        open (`_end`) is rolled back first: with the BEGIN of the `snapshot` it is taken for (one round trip), else
        now."""
        conn = getattr(self._local, "conn", None)
        if conn is None or conn.closed:
            if conn is not None:  # found dead (a restart, a terminated backend): the idle ones likely are too
                self._forget(conn)
                with self._lock:
                    idle, self._readers = self.__dict__.get("_readers", []), []
                for old in idle:
                    self._forget(old)
            conn = None
            while conn is None:
                with self._lock:
                    idle = self.__dict__.setdefault("_readers", [])
                    if not idle:
                        break
                    conn = idle.pop()
                    open_since = self._open.pop(id(conn), None)
                if conn.closed:
                    self._forget(conn)
                    conn = None
                elif open_since is not None:
                    if snapshot:
                        self._local.rollback = True  # sent with the BEGIN
                    elif not self._rollback(conn):
                        conn = None
            if conn is None:
                conn = self._connect()
                conn.execute(READER_SETTINGS)
                conn.prepare_threshold = READER_PREPARE_THRESHOLD
                with self._lock:
                    self._all.append(conn)
            self._local.conn = conn
        return conn

    def _rollback(self, conn: Any) -> bool:
        """End an idle reader's open transaction now (END_SNAPSHOT, ROLLBACK when failed); False (the reader
        closed) when it cannot."""
        try:
            conn.execute(END_SNAPSHOT if conn.info.transaction_status == INTRANS else "ROLLBACK", prepare=False)
            return True
        except psycopg.Error:
            self._forget(conn)
            return False

    def _give_back(self) -> None:
        """This thread's reader back to the idle readers (closed instead when unusable)."""
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is None:
            return
        if conn.closed or conn.info.transaction_status != IDLE and id(conn) not in self._open:
            self._forget(conn)
            return
        with self._lock:
            self.__dict__.setdefault("_readers", []).append(conn)

    def _end(self, conn: Any) -> None:
        """End a snapshot's read-only transaction. Not now: its ROLLBACK goes with the next BEGIN on the reader
        (a round trip fewer per snapshot), or, when the reader stays idle ROLLBACK_AFTER_S, from the janitor thread
        (so an idle daemon holds no snapshot: vacuum and DDL are not held back). A replica's readers end theirs at
        once (an open transaction there can hold back the replay of the primary's WAL)."""
        status = conn.info.transaction_status if not conn.closed else None
        if status is None or status == IDLE:
            return
        if status != INTRANS or not self.defer_rollback:
            self._rollback(conn)
            return
        with self._lock:
            self._open[id(conn)] = time.monotonic()
            if self._janitor is None:
                self._janitor = threading.Thread(target=self._roll_back_idle, name="kb-reader-janitor", daemon=True)
                self._janitor.start()

    def _roll_back_idle(self) -> None:
        """The janitor: every ROLLBACK_AFTER_S, the idle readers whose transaction has been open that long rolled
        back (out of the pool meanwhile); it stops when none has been left open for JANITOR_LINGER_S (a daemon
        answering one query after another, its reader taken by each, starts it once, not once every other query)."""
        quiet = 0.0
        while True:
            time.sleep(ROLLBACK_AFTER_S)
            now = time.monotonic()
            with self._lock:
                readers = self.__dict__.setdefault("_readers", [])
                due = [c for c in readers if now - self._open.get(id(c), now) >= ROLLBACK_AFTER_S]
                for conn in due:
                    readers.remove(conn)
                    del self._open[id(conn)]
                quiet = quiet + ROLLBACK_AFTER_S if not due and not self._open else 0.0
                if quiet >= JANITOR_LINGER_S:
                    self._janitor = None
                    return
            for conn in due:
                if self._rollback(conn):
                    with self._lock:
                        self.__dict__.setdefault("_readers", []).append(conn)

    def _forget(self, conn: Any) -> None:
        with self._lock:
            self._open.pop(id(conn), None)
            if conn in self._all:
                self._all.remove(conn)
            if conn in self._idle:
                self._idle.remove(conn)
        with contextlib.suppress(psycopg.Error):
            conn.close()

    def begun(self) -> Any:
        """The row `snapshot_query` gave at the BEGIN of this thread's snapshot (None without one)."""
        return getattr(self._local, "begun", None)

    def version(self) -> str | None:
        """What this thread's snapshot sees (SNAPSHOT_VERSION: equal versions, equal data), None outside one."""
        return getattr(self._local, "version", None)

    def _begin(self, conn: Any) -> None:
        """BEGIN the snapshot, with `snapshot_query` and SNAPSHOT_VERSION in the same round trip."""
        self._local.begun = self._local.version = None
        last = self._last
        seen = "NULL" if last is None else "'" + last[0].replace("'", "''") + "'"
        changed = f"{VERSION_OF_SNAPSHOT} IS DISTINCT FROM {seen}"
        extra = f"{self.snapshot_query.replace('{changed}', changed)}; " if self.snapshot_query else ""
        rollback = self._local.__dict__.pop("rollback", False)  # the reader's last snapshot's, not ended yet
        cur = conn.execute(f"{END_SNAPSHOT + '; ' if rollback else ''}{BEGIN_SNAPSHOT}; {extra}{SNAPSHOT_VERSION}",
                           prepare=False)
        if rollback:
            cur.nextset()
        cur.nextset()
        begun = None
        if extra:
            begun = cur.fetchone()
            cur.nextset()
        version = cur.fetchone()[0]
        if extra and last is not None and last[0] == version:
            begun = last[1]  # not read: the same data as the last snapshot's
        elif extra:
            self._last = (version, begun)
        self._local.begun, self._local.version = begun, version

    @contextmanager
    def snapshot(self) -> Iterator[Any]:
        """A read transaction: several queries that see one consistent state (begun on a fresh connection when
        the thread's reader is found dead at its BEGIN)."""
        conn = self.reader(snapshot=True)
        try:
            self._begin(conn)
        except psycopg.OperationalError:
            if not conn.closed:
                raise
            conn = self.reader(snapshot=True)
            self._begin(conn)
        try:
            yield conn
        finally:
            try:
                self._end(conn)
            finally:
                self._local.version = None
                self._give_back()

    @contextmanager
    def write(self) -> Iterator[Any]:
        """A writer connection inside one transaction; committed at the end, rolled back on any exception. A
        pooled writer found dead at BEGIN (nothing sent yet) is replaced by a fresh connection, and the other idle
        writers, likely dead with it (a server restart), are dropped."""
        with self._lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None or conn.closed:
            conn = self._new_writer(conn)
        try:
            with contextlib.ExitStack() as stack:
                try:
                    stack.enter_context(conn.transaction())
                except psycopg.OperationalError:
                    if not conn.closed:
                        raise
                    with self._lock:
                        idle, self._idle = self._idle, []
                    for old in idle:
                        self._forget(old)
                    conn = self._new_writer(conn)
                    stack.enter_context(conn.transaction())
                yield conn
        finally:
            keep = not conn.closed and conn.info.transaction_status == IDLE
            with self._lock:
                keep = keep and len(self._idle) < MAX_IDLE_WRITERS
                if keep:
                    self._idle.append(conn)
                elif conn in self._all:
                    self._all.remove(conn)
            if not keep:
                conn.close()

    def _new_writer(self, dead: Any) -> Any:
        if dead is not None:
            self._forget(dead)
        conn = self._connect()
        with self._lock:
            self._all.append(conn)
        _writer_settings(conn)
        return conn

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
            self._idle.clear()
            self.__dict__.get("_readers", []).clear()
            self._open.clear()  # the janitor stops
