"""Reads from a streaming replica (`[kb] read_url`), writes to the primary (`[kb] url`).

`Routed` stands where the store's `Connections` stands (reader(), snapshot(), write(), lost(), url_of(), close()):
every read (a store verb outside a write transaction, a `snapshot()`) runs on the replica's connections, every
write transaction on the primary's. Migrations run on the primary only; each new replica connection checks that
the replica has the schema version the primary was migrated to, waiting up to SCHEMA_WAIT_S for it to replay a
migration just made, else kb_unavailable (reason `replica_behind`).

Read-your-writes: after this store commits a write it notes the primary's WAL insert position (past the commit
record); until the replica has replayed that far (`pg_last_wal_replay_lsn()`, asked at most every RECHECK_S),
this store's reads go to the primary. A daemon sees its own writes at once, another daemon's once the replica has
replayed them (the replica's lag, usually milliseconds).

A replica that cannot be reached makes every read kb_unavailable naming the read URL (the primary is not read in
its place: the replica is there to spare it); writes still go to the primary; the next read connects again.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from jsonl_engine.errors import EngineError, Internal, KBUnavailable
from jsonl_engine.store.location import describe
from jsonl_engine.store.postgres.db import APPLICATION_NAME, CONNECT_TIMEOUT_S, Connections, failure, psycopg
from jsonl_engine.store.postgres.migrations import MIGRATIONS

SCHEMA_WAIT_S = 10.0  # a new replica connection waits this long for the replica to replay the primary's migrations
RECHECK_S = 0.05  # while the replica has not replayed this store's last write, its position is asked this often
WRITTEN = "SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn"  # bytes of WAL; past the commit just made
REPLAYED = "SELECT NOT pg_is_in_recovery() OR pg_last_wal_replay_lsn() - '0/0'::pg_lsn >= %s"  # promoted: all


class Replica(Connections):
    """A replica's connections: a reader per thread, as the primary's (no migrations; never written)."""

    defer_rollback = False  # an open transaction on a hot standby can hold back (or be cancelled by) the replay

    def __init__(self, url: str) -> None:  # not super().__init__(): it migrates, which a replica cannot
        self.url, self.shown = url, describe(url)
        self._local = threading.local()
        self._all: list[Any] = []
        self._idle: list[Any] = []
        self._open: dict[int, float] = {}
        self._janitor: threading.Thread | None = None
        self._lock = threading.Lock()
        self.reader()  # reachable, at the primary's schema version

    def _connect(self) -> Any:
        try:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S,
                                   application_name=APPLICATION_NAME)
        except psycopg.Error as exc:
            raise KBUnavailable(f"cannot connect to the KB read replica {self.shown} (kb.read_url): "
                                f"{failure(self.url, exc)}", {"kb": self.shown, "reason": "unreachable"}) from exc
        try:
            self._wait_for_schema(conn)
        except psycopg.Error as exc:
            conn.close()
            raise KBUnavailable(f"cannot use the KB read replica {self.shown} (kb.read_url): "
                                f"{failure(self.url, exc)}", {"kb": self.shown, "reason": "unreachable"}) from exc
        except BaseException:
            conn.close()
            raise
        return conn

    def _wait_for_schema(self, conn: Any) -> None:
        want = MIGRATIONS[-1][0]  # the primary's: `Connections` migrated it, or refused a newer one
        deadline = time.monotonic() + SCHEMA_WAIT_S
        while (have := _version(conn)) < want and time.monotonic() < deadline:
            time.sleep(0.1)
        if have > want:
            raise Internal(f"the KB read replica {self.shown} has schema version {have}, newer than this "
                           f"jsonl-engine knows ({want}): is it a replica of the KB database?")
        if have < want:
            raise KBUnavailable(f"the KB read replica {self.shown} (kb.read_url) has schema version {have}, the "
                                f"primary {want}: it has not replayed the primary's migrations (is it replicating?)",
                                {"kb": self.shown, "reason": "replica_behind"})


def _version(conn: Any) -> int:
    try:
        return int(conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()[0])
    except psycopg.errors.UndefinedTable:  # the replica has not replayed the first migration yet
        return 0


class Routed:
    """The store's connections with a read replica: reads there, writes on the primary (module docstring)."""

    def __init__(self, primary: Connections, read_url: str) -> None:
        try:
            self.replica = Replica(read_url)
        except BaseException:
            primary.close()
            raise
        self.primary = primary
        self.url, self.shown = primary.url, primary.shown
        self._local = threading.local()  # per thread: the connections a snapshot is on, the last read from
        self._lock = threading.Lock()
        self._behind = 0  # the WAL position the replica must replay to show this store's writes (0: none pending)
        self._recheck_at = 0.0

    def _source(self) -> Connections:
        source = getattr(self._local, "pinned", None)
        if source is None:
            source = self.primary if self._waiting() else self.replica
            self._local.last = source
        return source

    def _waiting(self) -> bool:
        """Whether the replica has yet to replay this store's last write (reads then go to the primary)."""
        if not self._behind:  # no write pending (read without the lock: an int)
            return False
        with self._lock:
            behind = self._behind
            if not behind:
                return False
            if time.monotonic() < self._recheck_at:
                return True
        self._local.last = self.replica
        replayed = self.replica.reader().execute(REPLAYED, (behind,)).fetchone()[0]  # an unreachable one raises
        with self._lock:
            if not replayed:
                self._recheck_at = time.monotonic() + RECHECK_S
            elif self._behind == behind:
                self._behind = 0
        return not replayed

    def reader(self) -> Any:
        return self._source().reader()

    @contextmanager
    def snapshot(self) -> Iterator[Any]:
        """A read transaction on one server: the reads inside stay on it."""
        source = self._source()
        self._local.pinned = source
        try:
            with source.snapshot() as conn:
                yield conn
        finally:
            self._local.pinned = None

    def begun(self) -> Any:
        """The row read with the BEGIN of this thread's snapshot, on the server it is on (Connections.begun)."""
        source = getattr(self._local, "pinned", None)
        return None if source is None else source.begun()

    def version(self) -> str | None:
        """What this thread's snapshot sees, on the server it is on (Connections.version)."""
        source = getattr(self._local, "pinned", None)
        return None if source is None else source.version()

    @contextmanager
    def write(self) -> Iterator[Any]:
        self._local.last = self.primary
        with self.primary.write() as conn:
            yield conn
        try:  # committed: where the WAL is now is past the commit
            written = int(self.primary.reader().execute(WRITTEN).fetchone()[0])
        except (psycopg.Error, EngineError):  # the primary gone right after the commit: the replica has the rest
            return
        with self._lock:
            self._behind = max(self._behind, written)
            self._recheck_at = 0.0

    def lost(self, exc: BaseException) -> bool:
        return self.primary.lost(exc) or self.replica.lost(exc)

    def url_of(self, exc: BaseException) -> str:
        """The URL of the server `exc` came from: the replica when this thread's connection there died or it was
        the last this thread read from."""
        on_replica = self.replica.lost(exc) or getattr(self._local, "last", None) is self.replica
        return self.replica.url if on_replica else self.primary.url

    def close(self) -> None:
        with contextlib.suppress(psycopg.Error):
            self.replica.close()
        self.primary.close()
