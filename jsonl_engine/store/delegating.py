"""What both store backends share: every Store / Transaction verb that is a plain call of the backend's
`documents` or `search` module on a connection, with the snapshot depth, the memo and the KB generation.

A backend subclasses `DelegatingStore` (and `DelegatingTransaction`), names its modules (`_docs`, `_search`), the
exceptions its driver raises (`_errors`) and how they become EngineErrors (`_translate`), and implements what
really differs: its connections (`_db`), its transaction class (`_begin`) and the search verbs (scoring)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any, ClassVar, TypeVar

from jsonl_engine.errors import EngineError
from jsonl_engine.store import types as t
from jsonl_engine.store.memo import Memo

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)
F = TypeVar("F", bound=Callable[..., Any])


def translated(fn: F) -> F:
    """The driver's errors (`self._errors`) raised by the method `fn` become `self._translate(<its name>, exc)`;
    a call that failed on a connection found dead (`self._retryable(exc)`) runs once more, on a fresh one."""

    @functools.wraps(fn)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(self, *args, **kwargs)
        except self._errors as exc:
            if not self._retryable(exc):
                raise self._translate(fn.__name__, exc) from exc
        try:
            return fn(self, *args, **kwargs)
        except self._errors as exc:
            raise self._translate(fn.__name__, exc) from exc

    return wrapper  # type: ignore[return-value]


class Translating:
    _errors: ClassVar[tuple[type[BaseException], ...]]

    def _translate(self, what: str, exc: BaseException) -> EngineError:
        raise NotImplementedError

    def _retryable(self, exc: BaseException) -> bool:
        """Whether the call that raised `exc` may run again as it is (writes inside a transaction never do)."""
        return False


class DelegatingTransaction(Translating):
    """The writes of one transaction on a writer connection."""

    _docs: ClassVar[ModuleType]

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    @translated
    def find_by_sha256(self, sha256: str) -> t.DocumentInfo | None:
        return self._docs.find_by_sha(self._conn, sha256)

    @translated
    def find_by_path(self, path: str) -> list[t.DocumentInfo]:
        return self._docs.find_by_path(self._conn, path)

    @translated
    def find_by_title(self, title: str) -> list[t.DocumentInfo]:
        return self._docs.find_by_title(self._conn, title)

    @translated
    def insert(self, parsed: t.ParsedDocument, *, document_id: str, sha256: str, path: str | None,
               status: str = "approved", replace: Iterable[str] = (), meta: dict | None = None) -> t.DocumentInfo:
        return self._docs.save_document(self._conn, parsed, document_id=document_id, sha256=sha256, path=path,
                                        status=status, replace=replace, meta=meta)


class DelegatingStore(Translating):
    _docs: ClassVar[ModuleType]
    _search: ClassVar[ModuleType]
    _db: Any  # the backend's Connections: reader(), snapshot(), write(), lost(exc), close()

    def __init__(self) -> None:
        self._memo = Memo()
        self._local = threading.local()  # per thread: snapshot depth, and the KB generation seen inside it

    def _begin(self, conn: Any) -> DelegatingTransaction:
        raise NotImplementedError

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
        except self._errors as exc:
            raise self._translate("snapshot", exc) from exc
        finally:
            local.depth, local.generation = 0, None

    def _conn(self) -> Any:
        return self._db.reader()

    def _retryable(self, exc: BaseException) -> bool:
        """A read outside a snapshot whose connection was found dead (the server restarted, the backend was
        terminated) runs again on a fresh one; inside a snapshot its transaction is gone with the connection."""
        return not getattr(self._local, "depth", 0) and self._db.lost(exc)

    def _generation(self) -> tuple:
        if getattr(self._local, "depth", 0):
            if self._local.generation is None:
                self._local.generation = self._search.generation(self._conn())
            return self._local.generation
        return self._search.generation(self._conn())

    @translated
    def scope(self, document_ids: Sequence[str] | None, statuses: Sequence[str]) -> t.Scope:
        return self._search.resolve_scope(self._conn(), document_ids, statuses)

    @translated
    def documents(self, statuses: Iterable[str] | None = None,
                  document_ids: Sequence[str] | None = None) -> list[t.DocumentInfo]:
        return self._docs.list_documents(self._conn(), statuses, document_ids)

    @translated
    def document(self, document_id: str) -> t.DocumentInfo:
        return self._docs.get_document(self._conn(), document_id)

    @translated
    def page_counts(self, document_ids: Sequence[str]) -> dict[str, int]:
        return self._search.page_counts(self._conn(), document_ids)

    @translated
    def find_by_sha256(self, sha256: str) -> t.DocumentInfo | None:
        return self._docs.find_by_sha(self._conn(), sha256)

    @translated
    def find_by_path(self, path: str) -> list[t.DocumentInfo]:
        return self._docs.find_by_path(self._conn(), path)

    @translated
    def find_by_title(self, title: str) -> list[t.DocumentInfo]:
        return self._docs.find_by_title(self._conn(), title)

    @translated
    def section(self, section_id: str) -> t.SectionRow:
        return self._docs.get_section(self._conn(), section_id)

    @translated
    def child_ids(self, section_id: str) -> list[str]:
        return self._docs.child_ids(self._conn(), section_id)

    @translated
    def document_sections(self, document_id: str) -> list[t.SectionRow]:
        return self._docs.document_sections(self._conn(), document_id)

    @translated
    def outline(self, document_id: str, max_depth: int | None = None) -> tuple[t.DocumentInfo, list[t.OutlineNode]]:
        with self.snapshot():
            return self._docs.outline(self._conn(), document_id, max_depth)

    @translated
    def tree(self, document_ids: Sequence[str], head_chars: int) -> list[t.TreeRow]:
        return self._search.tree_rows(self._conn(), document_ids, head_chars)

    @translated
    def section_texts(self, section_ids: Sequence[str]) -> dict[str, tuple[str, list[tuple[int, int]]]]:
        return self._search.section_texts(self._conn(), section_ids)

    @translated
    def sections_on_pages(self, pages: Sequence[t.PageKey], back: int) -> list[t.SectionRef]:
        return self._search.sections_on_pages(self._conn(), pages, back)

    @translated
    def statement_pages(self, document_ids: Sequence[str]) -> dict[str, dict[int, str] | None]:
        return self._docs.statement_pages(self._conn(), document_ids)

    @translated
    def page(self, document_id: str, number: int) -> t.PageRow:
        return self._docs.get_page(self._conn(), document_id, number)

    @translated
    def page_texts(self, pages: Sequence[t.PageKey]) -> dict[t.PageKey, str]:
        return self._search.load_pages(self._conn(), pages)

    @translated
    def page_words(self, pages: Sequence[t.PageKey]) -> dict[t.PageKey, list[list[float]]]:
        return self._docs.page_words(self._conn(), pages)

    @translated
    def page_range(self, document_id: str, start: int, end: int) -> dict[int, str]:
        return self._docs.page_range(self._conn(), document_id, start, end)

    @translated
    def page_heads(self, pages: Sequence[t.PageKey], chars: int) -> dict[t.PageKey, str]:
        return self._search.load_pages(self._conn(), pages, chars)

    @translated
    def cover_texts(self, document_ids: Sequence[str]) -> dict[str, list[str]]:
        return self._search.cover_texts(self._conn(), document_ids)

    # ---- search: the backend's `_frequencies(kind, phrases)`, counts and ranked searches

    def _frequencies(self, kind: str, phrases: Sequence[t.Phrase]) -> dict[t.Phrase, int]:
        raise NotImplementedError

    @translated
    def page_frequencies(self, phrases: Sequence[t.Phrase]) -> dict[t.Phrase, int]:
        return self._frequencies("pages", phrases)

    @translated
    def cover_frequencies(self, phrases: Sequence[t.Phrase]) -> dict[t.Phrase, int]:
        return self._frequencies("covers", phrases)

    @translated
    def document_frequencies(self, phrases: Sequence[t.Phrase]) -> dict[t.Phrase, int]:
        return self._frequencies("documents", phrases)

    @translated
    def document_count(self) -> int:
        return self._generation()[0]

    # ---- writes

    @contextmanager
    def transaction(self) -> Iterator[DelegatingTransaction]:
        try:
            with self._db.write() as conn:
                yield self._begin(conn)
        except self._errors as exc:
            raise self._translate("write", exc) from exc

    def remove(self, document_id: str) -> t.DocumentInfo:
        with self.transaction() as tx:
            return self._docs.remove_document(tx._conn, document_id)

    def review(self, document_id: str, status: str) -> tuple[t.DocumentInfo, str]:
        with self.transaction() as tx:
            return self._docs.set_status(tx._conn, document_id, status)

    def set_summaries(self, summaries: dict[str, str]) -> int:
        with self.transaction() as tx:
            return self._docs.set_summaries(tx._conn, summaries)

    def set_card(self, document_id: str, card: t.Card) -> t.DocumentInfo:
        with self.transaction() as tx:
            return self._docs.set_card(tx._conn, document_id, card)

    def set_statement_pages(self, document_id: str, kinds: dict[int, str]) -> None:
        with self.transaction() as tx:
            self._docs.set_statement_pages(tx._conn, document_id, kinds)

    def set_meta(self, document_id: str, values: dict) -> t.DocumentInfo:
        with self.transaction() as tx:
            return self._docs.set_meta(tx._conn, document_id, values)
