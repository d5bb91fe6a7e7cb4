"""PostgresStore: the Store interface over one PostgreSQL database (psycopg 3). The only code that knows its
SQL, tsvector/tsquery syntax and psycopg exceptions; those become EngineErrors here, with the connection
string redacted."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from jsonl_engine.errors import EngineError, Internal, KBUnavailable
from jsonl_engine.store.memo import Memo
from jsonl_engine.store.postgres import documents as docs
from jsonl_engine.store.postgres import search
from jsonl_engine.store.postgres.db import Connections, failure, psycopg  # db raises KBUnavailable without it
from jsonl_engine.store.types import (
    Card,
    DocumentInfo,
    OutlineNode,
    PageHit,
    PageKey,
    PageRow,
    ParsedDocument,
    Phrase,
    Scope,
    SectionHit,
    SectionRef,
    SectionRow,
    SectionWeights,
    TreeRow,
)

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)
F = TypeVar("F", bound=Callable[..., Any])


def _translate(store_url: str, what: str, exc: psycopg.Error) -> EngineError:
    text = failure(store_url, exc)
    if isinstance(exc, psycopg.OperationalError) and not isinstance(exc, psycopg.errors.QueryCanceled):
        return KBUnavailable(f"the KB database is unreachable ({what}): {text}")
    return Internal(f"the KB store failed ({what}): {text}")


def translated(fn: F) -> F:
    """psycopg errors raised by `fn` become EngineErrors naming the operation (never the password)."""

    @functools.wraps(fn)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(self, *args, **kwargs)
        except psycopg.Error as exc:
            raise _translate(self._url, fn.__name__, exc) from exc

    return wrapper  # type: ignore[return-value]


class PostgresTransaction:
    """The writes of one transaction on a writer connection."""

    def __init__(self, conn: Any, url: str) -> None:
        self._conn = conn
        self._url = url

    @translated
    def find_by_sha256(self, sha256: str) -> DocumentInfo | None:
        return docs.find_by_sha(self._conn, sha256)

    @translated
    def find_by_path(self, path: str) -> list[DocumentInfo]:
        return docs.find_by_path(self._conn, path)

    @translated
    def find_by_title(self, title: str) -> list[DocumentInfo]:
        return docs.find_by_title(self._conn, title)

    @translated
    def insert(self, parsed: ParsedDocument, *, document_id: str, sha256: str, path: str | None,
               status: str = "approved", replace: Iterable[str] = (), meta: dict | None = None) -> DocumentInfo:
        return docs.save_document(self._conn, parsed, document_id=document_id, sha256=sha256, path=path,
                                  status=status, replace=replace, meta=meta)


class PostgresStore:
    backend = "postgresql"

    def __init__(self, url: str) -> None:
        self._url = url
        self._db = Connections(url)
        self.url = url
        self.location = self._db.shown  # the URL without its password
        self._memo = Memo()
        self._local = threading.local()

    def close(self) -> None:
        self._db.close()

    def memo(self, kind: str, key: Hashable, compute: Callable[[], T]) -> T:
        return self._memo.get(kind, key, compute)

    def memo_many(self, kind: str, keys: Sequence[K], compute: Callable[[list[K]], dict[K, T]]) -> dict[K, T]:
        return self._memo.get_many(kind, keys, compute)

    # ---- reads

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        local = self._local
        if getattr(local, "depth", 0):
            local.depth += 1
            try:
                yield
            finally:
                local.depth -= 1
            return
        local.depth, local.generation = 1, None
        try:
            with self._db.snapshot():
                yield
        except psycopg.Error as exc:
            raise _translate(self._url, "snapshot", exc) from exc
        finally:
            local.depth, local.generation = 0, None

    def _conn(self) -> Any:
        return self._db.reader()

    def _generation(self) -> tuple:
        if getattr(self._local, "depth", 0):
            if self._local.generation is None:
                self._local.generation = search.generation(self._conn())
            return self._local.generation
        return search.generation(self._conn())

    @translated
    def scope(self, document_ids: Sequence[str] | None, statuses: Sequence[str]) -> Scope:
        return search.resolve_scope(self._conn(), document_ids, statuses)

    @translated
    def documents(self, statuses: Iterable[str] | None = None,
                  document_ids: Sequence[str] | None = None) -> list[DocumentInfo]:
        return docs.list_documents(self._conn(), statuses, document_ids)

    @translated
    def document(self, document_id: str) -> DocumentInfo:
        return docs.get_document(self._conn(), document_id)

    @translated
    def page_counts(self, document_ids: Sequence[str]) -> dict[str, int]:
        return search.page_counts(self._conn(), document_ids)

    @translated
    def find_by_sha256(self, sha256: str) -> DocumentInfo | None:
        return docs.find_by_sha(self._conn(), sha256)

    @translated
    def find_by_path(self, path: str) -> list[DocumentInfo]:
        return docs.find_by_path(self._conn(), path)

    @translated
    def find_by_title(self, title: str) -> list[DocumentInfo]:
        return docs.find_by_title(self._conn(), title)

    @translated
    def section(self, section_id: str) -> SectionRow:
        return docs.get_section(self._conn(), section_id)

    @translated
    def child_ids(self, section_id: str) -> list[str]:
        return docs.child_ids(self._conn(), section_id)

    @translated
    def document_sections(self, document_id: str) -> list[SectionRow]:
        return docs.document_sections(self._conn(), document_id)

    @translated
    def outline(self, document_id: str, max_depth: int | None = None) -> tuple[DocumentInfo, list[OutlineNode]]:
        with self.snapshot():
            return docs.outline(self._conn(), document_id, max_depth)

    @translated
    def tree(self, document_ids: Sequence[str], head_chars: int) -> list[TreeRow]:
        return search.tree_rows(self._conn(), document_ids, head_chars)

    @translated
    def section_texts(self, section_ids: Sequence[str]) -> dict[str, tuple[str, list[tuple[int, int]]]]:
        return search.section_texts(self._conn(), section_ids)

    @translated
    def sections_on_pages(self, pages: Sequence[PageKey], back: int) -> list[SectionRef]:
        return search.sections_on_pages(self._conn(), pages, back)

    @translated
    def page(self, document_id: str, number: int) -> PageRow:
        return docs.get_page(self._conn(), document_id, number)

    @translated
    def page_texts(self, pages: Sequence[PageKey]) -> dict[PageKey, str]:
        return search.load_pages(self._conn(), pages)

    @translated
    def page_range(self, document_id: str, start: int, end: int) -> dict[int, str]:
        return docs.page_range(self._conn(), document_id, start, end)

    @translated
    def page_heads(self, pages: Sequence[PageKey], chars: int) -> dict[PageKey, str]:
        return search.load_pages(self._conn(), pages, chars)

    @translated
    def cover_texts(self, document_ids: Sequence[str]) -> dict[str, list[str]]:
        return search.cover_texts(self._conn(), document_ids)

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
    def page_frequencies(self, phrases: Sequence[Phrase]) -> dict[Phrase, int]:
        return self._frequencies("pages", phrases)

    @translated
    def cover_frequencies(self, phrases: Sequence[Phrase]) -> dict[Phrase, int]:
        return self._frequencies("covers", phrases)

    @translated
    def document_frequencies(self, phrases: Sequence[Phrase]) -> dict[Phrase, int]:
        return self._frequencies("documents", phrases)

    @translated
    def page_count(self) -> int:
        return self._stats("pages")[0]

    @translated
    def cover_count(self) -> int:
        return self._stats("covers")[0]

    @translated
    def document_count(self) -> int:
        return self._generation()[0]

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

    # ---- writes

    @contextmanager
    def transaction(self) -> Iterator[PostgresTransaction]:
        try:
            with self._db.write() as conn:
                yield PostgresTransaction(conn, self._url)
        except psycopg.Error as exc:
            raise _translate(self._url, "write", exc) from exc

    def remove(self, document_id: str) -> DocumentInfo:
        with self.transaction() as tx:
            return docs.remove_document(tx._conn, document_id)

    def review(self, document_id: str, status: str) -> tuple[DocumentInfo, str]:
        with self.transaction() as tx:
            return docs.set_status(tx._conn, document_id, status)

    def set_summaries(self, summaries: dict[str, str]) -> int:
        with self.transaction() as tx:
            return docs.set_summaries(tx._conn, summaries)

    def set_card(self, document_id: str, card: Card) -> DocumentInfo:
        with self.transaction() as tx:
            return docs.set_card(tx._conn, document_id, card)

    def set_meta(self, document_id: str, values: dict) -> DocumentInfo:
        with self.transaction() as tx:
            return docs.set_meta(tx._conn, document_id, values)
