"""SqliteStore: the Store interface over one SQLite file (WAL, FTS5). The only code that knows SQL, FTS5 syntax,
rowids and sqlite3 exceptions; those are translated into EngineErrors here. The verbs that only call
documents.py / search.py on a connection live in store/delegating.py."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from jsonl_engine.errors import Internal
from jsonl_engine.store.delegating import DelegatingStore, DelegatingTransaction, translated
from jsonl_engine.store.sqlite import documents as docs
from jsonl_engine.store.sqlite import search
from jsonl_engine.store.sqlite.db import Connections
from jsonl_engine.store.types import PageHit, PageKey, Phrase, Scope, SectionHit, SectionWeights


class _SqliteErrors:
    """sqlite3 errors become Internal errors naming the operation."""

    _errors = (sqlite3.Error,)

    def _translate(self, what: str, exc: BaseException) -> Internal:
        return Internal(f"the KB store failed ({what}): {exc}")


class SqliteTransaction(_SqliteErrors, DelegatingTransaction):
    """The writes of one transaction on the writer connection."""

    _docs = docs


class SqliteStore(_SqliteErrors, DelegatingStore):
    _docs = docs
    _search = search

    def __init__(self, kb_dir: Path) -> None:
        super().__init__()
        self._db = Connections(kb_dir)
        self.kb_dir = self._db.kb_dir
        self.path = self._db.path

    def _begin(self, conn: sqlite3.Connection) -> SqliteTransaction:
        return SqliteTransaction(conn)

    # ---- search

    def _frequencies(self, kind: str, phrases: Sequence[Phrase]) -> dict[Phrase, int]:
        conn, gen = self._conn(), self._generation()
        return {p: self._memo.get(f"df:{kind}", (gen, p), lambda p=p: search.frequency(conn, kind, p))
                for p in phrases}

    @translated
    def page_count(self) -> int:
        conn = self._conn()
        return self._memo.get("count", (self._generation(), "pages"), lambda: search.count(conn, "pages"))

    @translated
    def cover_count(self) -> int:
        conn = self._conn()
        return self._memo.get("count", (self._generation(), "covers"), lambda: search.count(conn, "covers"))

    @translated
    def search_pages(self, phrases: Sequence[Phrase], scope: Scope, limit: int,
                     within: Sequence[str] | None = None) -> list[PageHit]:
        conn, expr = self._conn(), search.match(phrases)
        if within is None:
            rows = search.search_pages(conn, expr, scope, limit)
        else:
            wins = search.windows(conn, "pages", within)
            rows = search.search_pages_in(conn, expr, scope, limit, wins) if wins else []
            rows.sort(key=lambda p: (-p[2], p[0], p[1]))
        return [PageHit(d, n, s) for d, n, s in rows]

    @translated
    def search_sections(self, phrases: Sequence[Phrase], weights: SectionWeights, scope: Scope, limit: int,
                        within: Sequence[str]) -> list[SectionHit]:
        conn, expr = self._conn(), search.match(phrases)
        wins = search.windows(conn, "sections", within)
        hits = search.search_sections_in(conn, expr, scope, limit, weights, wins) if wins else []
        refs = search.load_sections(conn, [r for r, _ in hits])
        return [SectionHit(refs[r], s) for r, s in hits if r in refs]

    @translated
    def search_covers(self, phrases: Sequence[Phrase], scope: Scope) -> dict[str, float]:
        return search.search_covers(self._conn(), search.match(phrases), scope)

    @translated
    def pages_holding(self, phrases: Sequence[Phrase], document_ids: Sequence[str]) -> list[PageKey]:
        if not phrases or not document_ids:
            return []
        return search.pages_holding(self._conn(), search.match(phrases), document_ids)

    # ---- upkeep

    @translated
    def tidy_indexes(self) -> None:
        search.merge_segments(self._db.write)
