"""The KB store: the interface (`Store`, port.py), its domain types (types.py), and the one place that picks
an implementation (`open_store`): a directory is a SQLite KB (store/sqlite/), a `postgresql://` URL a
PostgreSQL database (store/postgres/, needs the optional psycopg driver, imported only then).

The interface and the types load on first use (`__getattr__`): `capabilities` reads only `location.py`."""

# ruff: noqa: F405
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from jsonl_engine.store.location import backend_of, describe, is_url, redact

if TYPE_CHECKING:  # the names __getattr__ gives, for type checkers
    from jsonl_engine.store.port import DuplicateContent, Store, Transaction  # noqa: F401
    from jsonl_engine.store.types import *  # noqa: F403 (the names of __all__: F405 below)

__all__ = ["CARD_FIELDS", "COVER_PAGES", "STATUSES", "Card", "CardMap", "DocumentInfo", "DuplicateContent", "backend_of",
           "describe", "is_url", "redact", "OutlineNode", "PageHit", "PageRow", "ParsedDocument",
           "ParsedSection", "Phrase", "Scope", "SectionHit", "SectionRef", "SectionRow", "SectionWeights", "Store",
           "Transaction", "TreeRow", "open_store"]


def open_store(kb: Path | str, *, sqlite: str = "auto", read_url: str | None = None) -> Store:
    """The KB at `kb` (a directory, or a postgresql:// URL), created (and migrated) when needed. The one place
    a backend is chosen (each imported only then); `sqlite`: the SQLite library, "auto" (APSW when installed) or
    "stdlib" (`driver.choose`); `read_url`: a streaming replica of a PostgreSQL KB, read instead of `kb`."""
    if is_url(kb):  # without psycopg this import raises KBUnavailable naming the extra to install
        from jsonl_engine.store.postgres import PostgresStore

        return PostgresStore(str(kb).strip(), read_url=read_url and read_url.strip())
    from jsonl_engine.store.sqlite import SqliteStore, driver

    driver.choose(sqlite)
    return SqliteStore(Path(kb))


_PORT = frozenset({"DuplicateContent", "Store", "Transaction"})
_TYPES = frozenset(__all__) - _PORT - {"backend_of", "describe", "is_url", "redact", "open_store"}


def __getattr__(name: str) -> object:
    """`Store`, `Card`, ...: port.py and types.py, imported when first named (any other name, a submodule's
    included, is not here)."""
    if name in _PORT:
        from jsonl_engine.store import port

        return getattr(port, name)
    if name in _TYPES:
        from jsonl_engine.store import types

        return getattr(types, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
