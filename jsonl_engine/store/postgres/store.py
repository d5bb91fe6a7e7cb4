"""PostgresStore: the Store interface over one PostgreSQL database (psycopg 3). The only code that knows its
SQL, tsvector/tsquery syntax and psycopg exceptions; those become EngineErrors here, with the connection
string redacted. The verbs that only call documents.py / search.py on a connection live in
store/delegating.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jsonl_engine.errors import EngineError, Internal, KBUnavailable
from jsonl_engine.store.delegating import DelegatingStore, DelegatingTransaction, translated
from jsonl_engine.store.location import describe
from jsonl_engine.store.postgres import documents as docs
from jsonl_engine.store.postgres import search
from jsonl_engine.store.postgres.db import Connections, failure, psycopg  # db raises KBUnavailable without it
from jsonl_engine.store.types import PageHit, PageKey, Phrase, Scope, SectionHit, SectionWeights


class _PostgresErrors:
    """psycopg errors become EngineErrors naming the operation (never the password)."""

    _errors = (psycopg.Error,)
    _url: str

    def _translate(self, what: str, exc: BaseException) -> EngineError:
        text = failure(self._url, exc)
        reason = _unusable(exc)
        if reason is None:
            return Internal(f"the KB store failed ({what}): {text}")
        problem = "is unreachable" if reason == "unreachable" else f"cannot be used ({reason})"
        return KBUnavailable(f"the KB database {problem} ({what}): {text}",
                             {"kb": describe(self._url), "reason": reason})


def _unusable(exc: BaseException) -> str | None:
    """kb_unavailable's reason for a server error that says the database cannot be used, else None (a bug)."""
    state = getattr(exc, "sqlstate", None) or ""
    if state == "53100":
        return "disk_full"
    if state in ("XX001", "XX002"):  # data_corrupted, index_corrupted
        return "corrupt"
    if state.startswith("58"):  # system errors: I/O, undefined or duplicate files
        return "io_error"
    if state.startswith("53"):  # insufficient resources: out of memory, too many connections
        return "resources"
    if isinstance(exc, psycopg.OperationalError) and not isinstance(exc, psycopg.errors.QueryCanceled):
        return "unreachable"  # the connection failed or was closed, the server is shutting down
    return None


class PostgresTransaction(_PostgresErrors, DelegatingTransaction):
    """The writes of one transaction on a writer connection."""

    _docs = docs

    def __init__(self, conn: Any, url: str) -> None:
        super().__init__(conn)
        self._url = url


class PostgresStore(_PostgresErrors, DelegatingStore):
    backend = "postgresql"
    _docs = docs
    _search = search

    def __init__(self, url: str) -> None:
        super().__init__()
        self._url = url
        self._db = Connections(url)
        self.url = url
        self.location = self._db.shown  # the URL without its password

    def _begin(self, conn: Any) -> PostgresTransaction:
        return PostgresTransaction(conn, self._url)

    # ---- search

    def _tsqueries(self, phrases: Sequence[Phrase]) -> dict[Phrase, str]:
        conn = self._conn()
        return self._memo.get_many("tsquery", list(dict.fromkeys(phrases)), lambda ps: search.tsqueries(conn, ps))

    def _frequencies(self, kind: str, phrases: Sequence[Phrase]) -> dict[Phrase, int]:
        conn, gen = self._conn(), self._generation()
        tsqs = self._tsqueries(phrases)

        def count(keys: list[tuple[tuple, Phrase]]) -> dict[tuple[tuple, Phrase], int]:
            return dict(zip(keys, search.frequencies(conn, kind, [tsqs[p] for _, p in keys]), strict=True))

        df = self._memo.get_many(f"df:{kind}", list(dict.fromkeys((gen, p) for p in phrases)), count)
        return {p: df[(gen, p)] for p in phrases}

    def _stats(self, kind: str) -> tuple[int, float]:
        conn = self._conn()
        return self._memo.get("bm25-stats", self._generation(), lambda: search.stats(conn))[kind]

    def _score(self, kind: str, phrases: Sequence[Phrase], rank_weights: list[float] = search.UNWEIGHTED,
               scale: float = 1.0) -> search.Score:
        rows, avgdl = self._stats(kind)
        df = self._frequencies(kind, phrases)
        tsqs = self._tsqueries(phrases)
        return search.Score([tsqs[p] for p in phrases], [search.idf(rows, df[p]) for p in phrases], avgdl,
                            rank_weights, scale)

    @translated
    def page_count(self) -> int:
        return self._stats("pages")[0]

    @translated
    def cover_count(self) -> int:
        return self._stats("covers")[0]

    @translated
    def search_pages(self, phrases: Sequence[Phrase], scope: Scope, limit: int,
                     within: Sequence[str] | None = None) -> list[PageHit]:
        if not phrases:
            return []
        rows = search.search_pages(self._conn(), self._score("pages", phrases), scope, limit, within)
        return [PageHit(d, n, s) for d, n, s in rows]

    @translated
    def search_sections(self, phrases: Sequence[Phrase], weights: SectionWeights, scope: Scope, limit: int,
                        within: Sequence[str]) -> list[SectionHit]:
        if not phrases or not within:
            return []
        rank_weights, scale = search.section_rank_weights(weights)
        conn = self._conn()
        hits = search.search_sections(conn, self._score("sections", phrases, rank_weights, scale), scope, limit,
                                      within)
        refs = search.load_sections(conn, [r for r, _ in hits])
        return [SectionHit(refs[r], s) for r, s in hits if r in refs]

    @translated
    def search_covers(self, phrases: Sequence[Phrase], scope: Scope) -> dict[str, float]:
        if not phrases:
            return {}
        best: dict[str, float] = {}
        for doc, _n, score in search.search_pages(self._conn(), self._score("covers", phrases), scope, None,
                                                  covers=True):
            best[doc] = max(score, best.get(doc, score))
        return best

    @translated
    def pages_holding(self, phrases: Sequence[Phrase], document_ids: Sequence[str]) -> list[PageKey]:
        if not phrases or not document_ids:
            return []
        tsqs = self._tsqueries(phrases)
        return search.pages_holding(self._conn(), [tsqs[p] for p in phrases], document_ids)

    # ---- upkeep

    @translated
    def tidy_indexes(self) -> None:
        with self._db.write() as conn:
            search.flush_pending(conn)
