"""The SQLite library the store talks to: APSW when it is installed (the `fast` extra), else Python's `sqlite3`.

Every connection of the process to a KB file comes from here, so one library opens it: two SQLite libraries in
one process do not share their POSIX locks (closing a descriptor in one drops the other's locks). With APSW the
store registers FTS5 ranking functions of its own (`bm25.py`); with `sqlite3` it keeps FTS5's bm25().

What the store uses of a connection is the subset both offer, `sqlite3`'s spelling: `execute(sql, args)` returning
a cursor (`fetchone`, `fetchall`, iteration; rows read by position or by column name), `executemany`,
`total_changes`, `in_transaction`, `close`. APSW connections are wrapped (`ApswConnection`); `sqlite3` ones are
returned as they are (rows are `sqlite3.Row`). Errors: `Error` (every error of the library), `IntegrityError`,
`primary_code(exc)`, `error_name(exc)`.

The `[kb] sqlite` setting (JSONL_ENGINE_SQLITE) = "stdlib" picks `sqlite3` even when APSW is installed (to
compare the two): the app calls `choose` before the process's first connection.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

try:
    import apsw
except ImportError:
    apsw = None  # type: ignore[assignment]

APSW = apsw is not None
NAME = "apsw" if APSW else "sqlite3"

# Primary result codes (SQLite's own numbers, the same in both libraries).
SQLITE_CORRUPT = 11
SQLITE_NOTADB = 26
SQLITE_CANTOPEN = 14
SQLITE_PERM = 3
SQLITE_READONLY = 8
SQLITE_IOERR = 10
SQLITE_FULL = 13
SQLITE_BUSY = 5

if APSW:
    Error: type[Exception] = apsw.Error
    IntegrityError: type[Exception] = apsw.ConstraintError
else:
    Error = sqlite3.Error
    IntegrityError = sqlite3.IntegrityError
ERRORS: tuple[type[Exception], ...] = (sqlite3.Error, *((apsw.Error,) if apsw is not None else ()))  # either's
_connected = False


def choose(library: str) -> None:
    """"auto" (APSW when installed, else `sqlite3`) or "stdlib" (`sqlite3`); before the process's first connection (two
    libraries must not open one file in one process)."""
    global APSW, NAME, Error, IntegrityError
    use_apsw = apsw is not None and library != "stdlib"
    if use_apsw == APSW:
        return
    if _connected:
        raise RuntimeError(f"the SQLite library is {NAME} already: choose it before the first connection")
    APSW, NAME = use_apsw, "apsw" if use_apsw else "sqlite3"
    Error, IntegrityError = (apsw.Error, apsw.ConstraintError) if use_apsw else (sqlite3.Error, sqlite3.IntegrityError)


def primary_code(exc: BaseException) -> int:
    """The primary SQLite result code of an error of the library (0 when it has none)."""
    if APSW:
        return int(getattr(exc, "result", 0) or 0) & 0xFF
    return int(getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF


def error_name(exc: BaseException) -> str | None:
    """The (extended) result code's name, e.g. SQLITE_NOTADB, as `sqlite3` names it."""
    if APSW:
        code = getattr(exc, "extendedresult", None)
        if code is None:
            return None
        return apsw.mapping_extended_result_codes.get(code) or apsw.mapping_result_codes.get(code & 0xFF)
    return getattr(exc, "sqlite_errorname", None)


def complete_statement(sql: str) -> bool:
    return apsw.complete(sql) if APSW else sqlite3.complete_statement(sql)


class _Row(tuple):
    """A result row (a tuple) also readable by column name, as `sqlite3.Row`; one subclass per column list."""

    __slots__ = ()
    _index: dict[str, int] = {}

    def __getitem__(self, key: Any) -> Any:
        if key.__class__ is str:
            return tuple.__getitem__(self, self._index[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._index)


_row_tracers: dict[tuple, Callable[[Any, tuple], _Row]] = {}


def _row_tracer(description: tuple) -> Callable[[Any, tuple], _Row]:
    tracer = _row_tracers.get(description)
    if tracer is None:
        row_type = type("Row", (_Row,), {"__slots__": (), "_index": {d[0]: i for i, d in enumerate(description)}})
        tracer = _row_tracers.setdefault(description, lambda _cursor, values: row_type(values))
    return tracer


class ApswConnection:
    """An APSW connection with the part of `sqlite3.Connection` the store uses (autocommit: isolation_level=None)."""

    __slots__ = ("raw",)

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def execute(self, sql: str, args: Sequence[Any] | dict = ()) -> Any:
        cursor = self.raw.execute(sql, args)
        try:
            description = cursor.get_description()
        except apsw.ExecutionCompleteError:  # no rows to come (a write, a pragma that returns nothing)
            return cursor
        cursor.row_trace = _row_tracer(description)
        return cursor

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Any:
        return self.raw.executemany(sql, rows)

    @property
    def total_changes(self) -> int:
        return self.raw.total_changes()

    @property
    def in_transaction(self) -> bool:
        return self.raw.in_transaction

    def close(self) -> None:
        self.raw.close()


Connection = Any  # ApswConnection or sqlite3.Connection: the subset above
Row = Any  # a result row: a tuple also readable by column name (`_Row` or sqlite3.Row)


def connect(path: Path | str, timeout_s: float = 30.0) -> Connection:
    """A connection to the file (created if absent), autocommit, waiting up to `timeout_s` on locks."""
    global _connected
    _connected = True
    if APSW:
        raw = apsw.Connection(str(path))
        raw.set_busy_timeout(int(timeout_s * 1000))
        return ApswConnection(raw)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=timeout_s)
    conn.row_factory = sqlite3.Row
    return conn


def tuples(conn: Connection, sql: str, args: Sequence[Any] = ()) -> Iterable[tuple]:
    """The statement's rows as plain tuples (read by position only): without the per-row Python wrapper that makes
    them readable by name, for the statements a query reads many rows of (a search's, the section refs')."""
    if isinstance(conn, ApswConnection):
        return conn.raw.execute(sql, args)
    cursor = conn.cursor()
    cursor.row_factory = None
    return cursor.execute(sql, args)


def register_fts5_function(conn: Connection, name: str, function: Callable[..., Any]) -> None:
    """An FTS5 auxiliary function on this connection (APSW only)."""
    conn.raw.register_fts5_function(name, function)
