"""What differs between the SQL backends, as one object per backend (Django's `DatabaseOperations`): the shared
document repository (repository.py) writes every statement once, with `?` marks, and asks its `Dialect` for the
rest: placeholders, lists, what a text column can hold, the insert that skips a duplicate, executemany, and how
the driver's errors become EngineErrors (`translate`: the backend's one error mapping).

`Sql` is the small connection interface the repository (and each text index) runs statements through: one
driver connection and its dialect; rows come back as tuples (read by position)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from jsonl_engine.errors import EngineError


class Dialect:
    """The SQL of SQLite, which the repository's statements are written in; a backend overrides what differs."""

    errors: ClassVar[tuple[type[BaseException], ...]]  # what the driver raises

    def translate(self, what: str, exc: BaseException) -> EngineError:
        """The EngineError for a driver error raised by the store verb `what`."""
        raise NotImplementedError

    def lost(self, exc: BaseException) -> bool:
        """Whether `exc` says the thread's read connection is gone (a read outside a snapshot then runs again)."""
        return False

    def statement(self, sql: str) -> str:
        """A statement written with `?` marks, in the driver's placeholder style."""
        return sql

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """A condition that `column` is one of `values` (false for none), and its arguments."""
        if not values:
            return "0", []
        return f"{column} IN ({','.join('?' * len(values))})", list(values)

    def text(self, value: str) -> str:
        """`value` as a text column can hold it."""
        return value

    def execute(self, conn: Any, sql: str, args: Sequence[Any] = ()) -> Any:
        return conn.execute(self.statement(sql), args)

    def executemany(self, conn: Any, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        conn.executemany(self.statement(sql), rows)

    def insert_new(self, conn: Any, table: str, columns: str, row: Sequence[Any]) -> bool:
        """Insert `row`; False when it conflicts with a UNIQUE row already there (on backends whose schema has
        one for it: another writer committed the same content), True when inserted."""
        self.execute(conn, f"INSERT INTO {table} ({columns}) VALUES ({','.join('?' * len(row))})", row)
        return True


class Sql:
    """One connection as the repository and the text indexes use it: statements with `?` marks, tuple rows."""

    def __init__(self, conn: Any, dialect: Dialect) -> None:
        self.conn, self.dialect = conn, dialect

    def rows(self, sql: str, args: Sequence[Any] = ()) -> list[Sequence[Any]]:
        return self.dialect.execute(self.conn, sql, args).fetchall()

    def one(self, sql: str, args: Sequence[Any] = ()) -> Sequence[Any] | None:
        return self.dialect.execute(self.conn, sql, args).fetchone()

    def run(self, sql: str, args: Sequence[Any] = ()) -> None:
        self.dialect.execute(self.conn, sql, args)

    def many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self.dialect.executemany(self.conn, sql, rows)

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        return self.dialect.any_of(column, values)
