"""SqliteStore: the Store interface over one SQLite file (WAL, FTS5). The only code that knows SQL, FTS5 syntax,
rowids and sqlite3 exceptions; those are translated into EngineErrors here."""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from jsonl_engine.errors import Internal
from jsonl_engine.store.memo import Memo
from jsonl_engine.store.sqlite import documents as docs
from jsonl_engine.store.sqlite import search
from jsonl_engine.store.sqlite.db import Connections
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


def translated(fn: F) -> F:
    """sqlite3 errors raised by `fn` become Internal errors naming the operation."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except sqlite3.Error as exc:
            raise Internal(f"the KB store failed ({fn.__name__}): {exc}") from exc

    return wrapper  # type: ignore[return-value]


class SqliteTransaction:
    """The writes of one transaction on the writer connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

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


class SqliteStore:
    def __init__(self, kb_dir: Path) -> None:
        self._db = Connections(kb_dir)
        self.kb_dir = self._db.kb_dir
        self.path = self._db.path
        self._memo = Memo()
        self._local = threading.local()  # per thread: snapshot depth, and the KB generation seen inside it

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
        if getattr(local, "depth", 0):  # nested: the outer snapshot holds
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
        except sqlite3.Error as exc:
            raise Internal(f"the KB store failed (snapshot): {exc}") from exc
        finally:
            local.depth, local.generation = 0, None

    def _conn(self) -> sqlite3.Connection:
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

    def _frequencies(self, kind: str, phrases: Sequence[Phrase]) -> dict[Phrase, int]:
        conn, gen = self._conn(), self._generation()
        return {p: self._memo.get(f"df:{kind}", (gen, p), lambda p=p: search.frequency(conn, kind, p))
                for p in phrases}

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
        conn = self._conn()
        return self._memo.get("count", (self._generation(), "pages"), lambda: search.count(conn, "pages"))

    @translated
    def cover_count(self) -> int:
        conn = self._conn()
        return self._memo.get("count", (self._generation(), "covers"), lambda: search.count(conn, "covers"))

    @translated
    def document_count(self) -> int:
        return self._generation()[0]

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

    # ---- writes

    @contextmanager
    def transaction(self) -> Iterator[SqliteTransaction]:
        try:
            with self._db.write() as conn:
                yield SqliteTransaction(conn)
        except sqlite3.Error as exc:
            raise Internal(f"the KB store failed (write): {exc}") from exc

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
