"""The store interface: every read, search and write the engine makes, as domain verbs over domain types.

Callers never see a connection, a query language or a backend exception: an implementation translates its
own failures into EngineErrors (NotFound for a missing document/section/page, Internal otherwise). The SQLite
implementation is `jsonl_engine.store.sqlite`, the PostgreSQL one `jsonl_engine.store.postgres`: each is the shared
repository (store/repository.py) with its dialect and its SearchIndex; `jsonl_engine.store.open_store` picks one.

Reads see the latest committed state, each on its own; inside `snapshot()` every read of the calling thread
sees one consistent state. Writes are atomic: a document goes in (or is replaced, or removed) whole.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Protocol, TypeVar

from jsonl_engine.store.types import (
    Card,
    CardMap,
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


class DuplicateContent(Exception):
    """`Transaction.insert` found these exact bytes already stored (another writer committed them first, e.g. a
    second daemon on a shared database); the transaction rolls back and ingest reports a skip."""

    def __init__(self, existing: DocumentInfo) -> None:
        super().__init__(f"document {existing.document_id} is already stored")
        self.existing = existing


class Transaction(Protocol):
    """The writes of one atomic transaction (`Store.transaction()`): all commit together, or none."""

    def find_by_sha256(self, sha256: str) -> DocumentInfo | None: ...

    def find_by_path(self, path: str) -> list[DocumentInfo]: ...

    def insert(self, parsed: ParsedDocument, *, document_id: str, sha256: str, path: str | None,
               status: str = "approved", replace: Iterable[str] = (), meta: dict | None = None) -> DocumentInfo:
        """Insert a parsed document, its pages and sections, and index them; first delete the `replace` ids.
        `parsed.card` is the derived card; `meta` the user's card values (CARD_FIELDS), which win over it; the
        document's title is the user's title, else the card's, else `parsed.title`. Raises DuplicateContent when
        the same content is already stored (by a concurrent writer)."""
        ...


class SearchIndex(Protocol):
    """A backend's text index: the searches (phrases are OR-ed; scores are higher-is-better, BM25 as FTS5's
    bm25() computes it on every backend), counted in `kind`s: "pages", "covers" (the first COVER_PAGES pages of
    each document), "sections", "documents" (documents with a page holding the phrase)."""

    # Whether the section search runs on a side thread beside the page search when the documents it searches are
    # known, more than one document (SQLite: each statement a pass over its FTS5 index; PostgreSQL: the side
    # thread's snapshot costs a round trip of its own, more than running the search after the page search saves)
    side_searches: bool

    def frequencies(self, kind: str, phrases: Sequence[Phrase]) -> dict[Phrase, int]:
        """phrase -> number of rows of `kind` holding it (cached per KB generation)."""
        ...

    def costly_counts(self, kind: str, phrases: Sequence[Phrase]) -> list[Phrase]:
        """The phrases `frequencies` may count with a pass over the index (no statistics kept for them): where
        two threads counting them at once pays (SQLite); [] where every phrase is counted in one statement
        (PostgreSQL: a second thread costs its own snapshot's round trips)."""
        ...

    def count(self, kind: str) -> int:
        """The rows of `kind` ("pages", "covers" or "documents")."""
        ...

    def search_pages(self, phrases: Sequence[Phrase], scope: Scope, limit: int,
                     within: Sequence[str] | None = None) -> list[PageHit]:
        """The best `limit` pages of the scope (of the `within` documents, when given: the best of them all, not
        per document) by BM25, best first, ties in the order the rows were written."""
        ...

    def search_sections(self, phrases: Sequence[Phrase], weights: SectionWeights, scope: Scope, limit: int,
                        within: Sequence[str]) -> list[SectionHit]:
        """The best `limit` sections of the `within` documents (of them all, not per document) by field-weighted
        BM25, best first, ties in the order the rows were written."""
        ...

    def search_covers(self, phrases: Sequence[Phrase], scope: Scope) -> dict[str, float]:
        """document id -> the best BM25 score of its cover pages, for the documents in scope that match."""
        ...

    def pages_holding(self, phrases: Sequence[Phrase], document_ids: Sequence[str]) -> list[PageKey]:
        """The pages of these documents holding any of the phrases, unranked, by document id and page number
        (a cheap filter: no score, so no corpus-wide statistics)."""
        ...

    def tidy_indexes(self) -> None:
        """Bring the search indexes into their fastest form after a batch of writes (SQLite merges FTS5 segments,
        PostgreSQL folds its collection statistics' deltas). Search results do not change; an ingest calls it when it has
        written documents."""
        ...


class Store(SearchIndex, Protocol):
    """Documents, sections and pages (written once for every backend: store/repository.py) and the backend's
    SearchIndex."""

    # ---- lifecycle and consistency
    def snapshot(self) -> AbstractContextManager[None]:
        """Reads of this thread inside the block see one consistent state."""
        ...

    def close(self) -> None: ...

    def memo(self, kind: str, key: Hashable, compute: Callable[[], T]) -> T:
        """A value derived from immutable KB content (keyed by a document or section id, or by text), computed
        once and kept in this store's bounded cache."""
        ...

    def memo_many(self, kind: str, keys: Sequence[K], compute: Callable[[list[K]], dict[K, T]]) -> dict[K, T]:
        """`memo` for many keys: the missing ones computed together by `compute(missing keys)`."""
        ...

    # ---- documents
    def scope(self, document_ids: Sequence[str] | None, statuses: Sequence[str]) -> Scope:
        """Documents in scope with one of `statuses`; unknown ids in `document_ids` raise NotFound."""
        ...

    def documents(self, statuses: Iterable[str] | None = None,
                  document_ids: Sequence[str] | None = None) -> list[DocumentInfo]:
        """Documents (with one of `statuses`, among `document_ids`, when given), oldest ingest first."""
        ...

    def cards(self, document_ids: Sequence[str] | None = None) -> CardMap:
        """Document id -> its card (the user's values applied), for the documents (all, or among `document_ids`)
        that have one, in no order: what routing reads of every document per query, without building each
        DocumentInfo. The Cards are shared between calls (one per stored value): read them, never change them.
        The whole library's map is the same object from call to call while the KB does not change (SQLite: its
        `data_version`), so values derived from it can be kept in its `derived`."""
        ...

    def document(self, document_id: str) -> DocumentInfo: ...

    def find_by_sha256(self, sha256: str) -> DocumentInfo | None: ...

    def find_by_path(self, path: str) -> list[DocumentInfo]: ...

    # ---- sections and pages
    def section(self, section_id: str) -> SectionRow: ...

    def child_ids(self, section_id: str) -> list[str]:
        """A section's children, in document order."""
        ...

    def document_sections(self, document_id: str) -> list[SectionRow]:
        """All sections of a document in tree (pre-)order."""
        ...

    def outline(self, document_id: str, max_depth: int | None = None) -> tuple[DocumentInfo, list[OutlineNode]]:
        """The section tree (titles and page ranges) down to `max_depth` (1 = top-level sections only)."""
        ...

    def tree(self, document_ids: Sequence[str], head_chars: int) -> list[TreeRow]:
        """Every section of these documents without its text, by document id then tree order; `head` is the
        first `head_chars` characters of the text of a section stored without a summary."""
        ...

    def section_texts(self, section_ids: Sequence[str]) -> dict[str, tuple[str, list[tuple[int, int]]]]:
        """section id -> (text, page map)."""
        ...

    def sections_on_pages(self, pages: Sequence[PageKey], back: int) -> list[SectionRef]:
        """Sections that start on, or at most `back` pages before, each given page and reach it."""
        ...

    def page(self, document_id: str, number: int) -> PageRow: ...

    def page_texts(self, pages: Sequence[PageKey], chars: int | None = None) -> dict[PageKey, str]:
        """The texts of these pages (their first `chars` characters, when given; missing pages left out)."""
        ...

    def page_words(self, pages: Sequence[PageKey]) -> dict[PageKey, list[list[float]]]:
        """The words of these pages as OCR read them, each [start, end, line, left, bottom, right, top]
        (`ParsedDocument.page_words`); pages not read by OCR (`DocumentInfo.ocr_pages`) left out."""
        ...

    def page_range(self, document_id: str, start: int, end: int) -> dict[int, str]:
        """page number -> text for the document's pages from `start` to `end`."""
        ...

    def statement_pages(self, document_ids: Sequence[str]) -> dict[str, dict[int, str] | None]:
        """document id -> the pages holding a primary financial statement (page number -> kind, as
        identity/statements.py judges them), None when not judged yet (`update_document`); absent ids left out."""
        ...

    def cover_texts(self, document_ids: Sequence[str]) -> dict[str, list[str]]:
        """document id -> the texts of its cover pages (the first COVER_PAGES), in page order."""
        ...

    # ---- writes
    def transaction(self) -> AbstractContextManager[Transaction]:
        """One atomic write transaction; an exception inside rolls it all back."""
        ...

    def remove(self, document_id: str) -> DocumentInfo:
        """Delete a document with its sections, pages and index entries; NotFound when absent."""
        ...

    def set_summaries(self, summaries: dict[str, str]) -> int:
        """Store section summaries (empty ones skipped), atomically; returns how many were written."""
        ...

    def update_document(self, document_id: str, *, status: str | None = None, card: Card | None = None,
                        meta: dict | None = None, statement_pages: dict[int, str] | None = None
                        ) -> tuple[DocumentInfo, DocumentInfo]:
        """Set what is given, atomically; returns the document (before, after). NotFound when absent.
        - `status`: the review status (InvalidParams for another, checked first);
        - `card`: the derived card (the user's values still win; the title follows); documents written before cards
          existed come back from `documents()` with `card` None until this is done;
        - `meta`: the user's card values (CARD_FIELDS) merged in, a None value removing one; the title follows;
          InvalidParams for another field;
        - `statement_pages`: page number -> kind (every other page holds none); done at ingest, documents written
          before are judged on open (identity/statements.fill_missing)."""
        ...
