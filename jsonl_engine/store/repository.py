"""The document repository, written once for every backend: documents, sections, pages, OCR words, cards, status,
summaries and statement pages, as the Store verbs (port.py) over a `Sql` connection and the backend's `Dialect`.

A backend subclasses `Repository` with its connections (`_db`: reader(), snapshot(), write(), close()), its
dialect, and its text index: the `SearchIndex` verbs (port.py) plus `_generation` and `_write_text` (the page
and section rows with whatever its index needs). Errors are translated at one edge: every public verb of a
subclass runs inside `_edge` (wrapped once, by `__init_subclass__`), which maps the driver's errors with the
dialect's `translate` and runs a read again, once, when its connection was found dead.

A document goes in (or is replaced, or removed) in one transaction: every row of it, index rows included, commits
together or not at all.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import orjson

from jsonl_engine.errors import InvalidParams, NotFound
from jsonl_engine.store.dialect import Dialect, Sql
from jsonl_engine.store.memo import Memo
from jsonl_engine.store.port import DuplicateContent, K, T
from jsonl_engine.store.rows import json_pairs, now, section_rows, word_rows
from jsonl_engine.store.types import (
    COVER_PAGES,
    STATUSES,
    Card,
    CardMap,
    DocumentInfo,
    OutlineNode,
    PageKey,
    PageRow,
    ParsedDocument,
    Scope,
    SectionRef,
    SectionRow,
    TreeRow,
    card_title,
    retitled,
    shared_card,
    stored_card,
    user_meta,
)

NOT_AT_THE_EDGE = frozenset({"snapshot", "transaction", "close", "memo", "memo_many"})  # they translate themselves

_DOC_COLUMNS = ("id, title, path, media_type, sha256, pages, sections, status, ingested_at, warnings, card, meta,"
                " ocr_pages")
_SECTION_SQL = (
    "SELECT s.id, s.document_id, d.title, s.parent_id, s.position, s.depth, s.ordinal, s.title, s.ancestors,"
    " s.page_start, s.page_end, s.is_leaf, s.text, s.page_map, s.summary, d.status"
    " FROM sections s JOIN documents d ON d.id = s.document_id")
# Internal nodes may hold text of their own (a preamble); their page range is the subtree's, so their own page
# map comes along to place them.
PAGES_PER_STATEMENT = 40  # sections_on_pages: pages looked up per statement
REF_COLUMNS = ("rowid, id, document_id, title, ancestors, page_start, page_end, length(text), "
               "CASE WHEN is_leaf THEN NULL ELSE page_map END")


def _doc(r: Sequence[Any]) -> DocumentInfo:
    return DocumentInfo(document_id=r[0], title=r[1], path=r[2], media_type=r[3], sha256=r[4], pages=r[5],
                        sections=r[6], status=r[7], ingested_at=r[8], warnings=orjson.loads(r[9]),
                        card=stored_card(r[10], r[11]), meta=orjson.loads(r[11] or "{}"),
                        ocr_pages=orjson.loads(r[12]))


def _section(r: Sequence[Any]) -> SectionRow:
    return SectionRow(section_id=r[0], document_id=r[1], document_title=r[2], parent_id=r[3], position=r[4],
                      depth=r[5], ordinal=r[6], title=r[7], ancestors=orjson.loads(r[8]), page_start=r[9],
                      page_end=r[10], is_leaf=bool(r[11]), text=r[12],
                      page_map=[(o, p) for o, p in orjson.loads(r[13])], summary=r[14], status=r[15])


PATHS_KEPT = 50_000  # distinct ancestor lists kept by section_ref (a document's sections share a few hundred)
_paths: dict[Any, list[str]] = {}


def _path(ancestors: Any) -> list[str]:
    """The titles of a stored ancestors list, one list per distinct value (the sections of a part share it): a
    ref's path is read, never changed, as the refs kept in the stores' memos already share theirs."""
    path = _paths.get(ancestors)
    if path is None:
        try:
            path = [str(t) for t in orjson.loads(ancestors or "[]")]
        except (ValueError, TypeError):
            path = []
        if len(_paths) >= PATHS_KEPT:
            _paths.clear()
        _paths[ancestors] = path
    return path


def section_ref(r: Sequence[Any]) -> SectionRef:
    """A SectionRef from a row of REF_COLUMNS."""
    return SectionRef(r[1], r[2], r[3], _path(r[4]), r[5], r[6], r[7] or 0, None if r[8] is None else json_pairs(r[8]))


def statements_of(stored: str | None) -> dict[int, str] | None:
    """A document's stored statement pages (the `statements` column): page number -> kind, None when not judged."""
    return None if stored is None else {int(n): k for n, k in orjson.loads(stored).items()}


def _checked(status: str) -> str:
    if status not in STATUSES:
        raise InvalidParams(f"unknown status {status!r}", fields=["status"])
    return status


def _edge(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` (a store verb) with the driver's errors translated by the dialect, run once more when it was a read
    outside a snapshot whose connection was found dead."""

    @functools.wraps(fn)
    def verb(self: Any, *args: Any, **kwargs: Any) -> Any:
        dialect = self.dialect
        try:
            return fn(self, *args, **kwargs)
        except dialect.errors as exc:
            if not self._retryable(exc):
                raise dialect.translate(fn.__name__, exc) from exc
        try:
            return fn(self, *args, **kwargs)
        except dialect.errors as exc:
            raise dialect.translate(fn.__name__, exc) from exc

    verb.at_the_edge = True  # type: ignore[attr-defined]
    return verb


class _AtTheEdge:
    dialect: Dialect

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in dir(cls):
            fn = getattr(cls, name)
            if not name.startswith("_") and name not in NOT_AT_THE_EDGE and callable(fn) \
                    and not isinstance(fn, type) and not getattr(fn, "at_the_edge", False):
                setattr(cls, name, _edge(fn))

    def _retryable(self, exc: BaseException) -> bool:
        return False

    def _sql(self) -> Sql:
        raise NotImplementedError

    # ---- reads a transaction makes too

    def find_by_sha256(self, sha256: str) -> DocumentInfo | None:
        row = self._sql().one(f"SELECT {_DOC_COLUMNS} FROM documents WHERE sha256 = ? LIMIT 1", (sha256,))
        return None if row is None else _doc(row)

    def find_by_path(self, path: str) -> list[DocumentInfo]:
        return [_doc(r) for r in self._sql().rows(f"SELECT {_DOC_COLUMNS} FROM documents WHERE path = ? ORDER BY id",
                                                  (path,))]

    def document(self, document_id: str) -> DocumentInfo:
        row = self._sql().one(f"SELECT {_DOC_COLUMNS} FROM documents WHERE id = ?", (document_id,))
        if row is None:
            raise NotFound(f"no document {document_id!r}", {"document_id": document_id})
        return _doc(row)


class Transaction(_AtTheEdge):
    """The writes of one transaction on a writer connection (port.Transaction)."""

    def __init__(self, store: Repository, conn: Any) -> None:
        self._store, self.dialect = store, store.dialect
        self._conn = Sql(conn, store.dialect)

    def _sql(self) -> Sql:
        return self._conn

    def insert(self, parsed: ParsedDocument, *, document_id: str, sha256: str, path: str | None,
               status: str = "approved", replace: Iterable[str] = (), meta: dict | None = None) -> DocumentInfo:
        sql, text = self._conn, self.dialect.text
        _checked(status)
        for old in replace:
            self._delete(old)
        meta = user_meta(meta)
        card = parsed.card
        info = DocumentInfo(document_id=document_id, title=text(card_title(card, meta, parsed.title)), path=path,
                            media_type=parsed.media_type, pages=len(parsed.pages), sections=len(parsed.sections),
                            status=status, ingested_at=now(), sha256=sha256, warnings=list(parsed.warnings),
                            card=None if card is None else card.merged(meta), meta=meta,
                            ocr_pages=sorted(parsed.page_words))
        row = (document_id, info.title, path and text(path), info.media_type, sha256, info.pages, info.sections,
               status, info.ingested_at, orjson.dumps(info.warnings).decode(), self._card_json(card),
               text(orjson.dumps(meta).decode()), orjson.dumps(info.ocr_pages).decode())
        if not self.dialect.insert_new(sql.conn, "documents", _DOC_COLUMNS, row):
            raise DuplicateContent(self.find_by_sha256(sha256) or self.document(document_id))
        pages = [(document_id, n, text(t)) for n, t in enumerate(parsed.pages, start=1)]
        sections = [(*r[:6], text(r[6]), text(r[7]), *r[8:11], text(r[11]), r[12], text(r[13]))
                    for r in section_rows(parsed, document_id)]
        self._store._write_text(sql, document_id, pages, sections)
        sql.many("INSERT INTO page_words (document_id, number, words) VALUES (?, ?, ?)",
                 [(d, n, text(w)) for d, n, w in word_rows(parsed, document_id)])
        return info

    def _card_json(self, card: Card | None) -> str | None:
        return None if card is None else self.dialect.text(orjson.dumps(card.to_dict()).decode())

    def _delete(self, document_id: str) -> None:
        """A document's rows, index rows with them (children first: one statement per table)."""
        self._store._delete_text(self._conn, document_id)
        for table in ("sections", "page_words", "pages"):
            self._conn.run(f"DELETE FROM {table} WHERE document_id = ?", (document_id,))
        self._conn.run("DELETE FROM documents WHERE id = ?", (document_id,))

    def _set(self, document_id: str, **columns: Any) -> None:
        """Set columns of a document's row."""
        names = list(columns)
        self._conn.run(f"UPDATE documents SET {', '.join(f'{n} = ?' for n in names)} WHERE id = ?",
                       [*columns.values(), document_id])


class Repository(_AtTheEdge):
    """The Store verbs on documents, sections and pages, and the store's lifecycle (port.Store); the backend's
    subclass adds its text index (port.SearchIndex)."""

    _db: Any  # the backend's Connections: reader(), snapshot(), write(), close()

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self._memo = Memo()
        self._local = threading.local()  # per thread: snapshot depth, and the KB generation seen inside it

    # ---- the text index's hooks (the SearchIndex verbs are the subclass's public methods)

    def _generation(self) -> tuple:
        """Changes whenever a document is added or removed (the same value throughout a snapshot)."""
        if getattr(self._local, "depth", 0):
            if self._local.generation is None:
                self._local.generation = self._index_generation(self._sql())
            return self._local.generation
        return self._index_generation(self._sql())

    def _index_generation(self, sql: Sql) -> tuple:
        raise NotImplementedError

    def _write_text(self, sql: Sql, document_id: str, pages: list[tuple], sections: list[tuple]) -> None:
        """Insert a document's pages (document_id, number, text) and sections (`rows.section_rows`, text made
        storable) and index them."""
        raise NotImplementedError

    def _delete_text(self, sql: Sql, document_id: str) -> None:
        """Before a document's rows are deleted (in the same transaction): what its text index keeps beside the
        rows (term statistics) subtracted."""

    # ---- lifecycle and consistency

    def close(self) -> None:
        self._db.close()

    def memo(self, kind: str, key: Hashable, compute: Callable[[], T]) -> T:
        return self._memo.get(kind, key, compute)

    def memo_many(self, kind: str, keys: Sequence[K], compute: Callable[[list[K]], dict[K, T]]) -> dict[K, T]:
        return self._memo.get_many(kind, keys, compute)

    def _conn(self) -> Any:
        return self._db.reader()

    def _sql(self) -> Sql:
        return Sql(self._db.reader(), self.dialect)

    def _retryable(self, exc: BaseException) -> bool:
        """A read outside a snapshot whose connection was found dead (the server restarted, the backend was
        terminated) runs again on a fresh one; inside a snapshot its transaction is gone with the connection."""
        return not getattr(self._local, "depth", 0) and self.dialect.lost(exc)

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
        except self.dialect.errors as exc:
            raise self.dialect.translate("snapshot", exc) from exc
        finally:
            local.depth, local.generation = 0, None

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        try:
            with self._db.write() as conn:
                yield Transaction(self, conn)
        except self.dialect.errors as exc:
            raise self.dialect.translate("write", exc) from exc

    # ---- documents

    def scope(self, document_ids: Sequence[str] | None, statuses: Sequence[str]) -> Scope:
        sql = self._sql()
        if document_ids is None:
            def whole() -> Scope:
                rows = self._library(sql) or {}
                docs = {d: row for d, row in rows.items() if row[1] in statuses}
                return Scope(documents=docs, complete=len(docs) == len(rows))

            return self._per_version("scope", sql, tuple(statuses), whole)
        wanted = sorted(set(document_ids))
        library = self._library(sql, known=False)  # None without a version: then the rows asked for are read
        if library is not None:
            found = {d: library[d] for d in wanted if d in library}
            total = len(library)
        else:
            where, args = sql.any_of("id", wanted)
            rows = sql.rows(f"SELECT id, title, status FROM documents WHERE {where}", args) if wanted else []
            found = {r[0]: (r[1], r[2]) for r in rows}
            total = sql.one("SELECT COUNT(*) FROM documents")[0]  # type: ignore[index]
        missing = [d for d in wanted if d not in found]
        if missing:
            raise NotFound(f"unknown document id(s): {', '.join(missing[:5])}", {"document_ids": missing[:20]})
        docs = {d: row for d, row in found.items() if row[1] in statuses}
        return Scope(documents=docs, complete=len(docs) == total)

    def _library(self, sql: Sql, known: bool = True) -> dict[str, tuple[str, str]] | None:
        """Every document's (title, status), by id: read once per state of the KB (inside a snapshot that has a
        version), so a query scoped to some documents reads no row of them (`known` False: None without a
        version)."""
        return self._per_version("library", sql, None, lambda: {
            r[0]: (r[1], r[2]) for r in sql.rows("SELECT id, title, status FROM documents")}, known=known)

    def documents(self, statuses: Iterable[str] | None = None,
                  document_ids: Sequence[str] | None = None) -> list[DocumentInfo]:
        sql = self._sql()
        where: list[str] = []
        args: list[Any] = []
        for column, values in (("status", statuses), ("id", document_ids)):
            if values is not None:
                test, more = sql.any_of(column, list(values))
                where.append(test)
                args += more
        clause = " WHERE " + " AND ".join(where) if where else ""
        return [_doc(r) for r in sql.rows(f"SELECT {_DOC_COLUMNS} FROM documents{clause} ORDER BY ingested_at, id",
                                          args)]

    def cards(self, document_ids: Sequence[str] | None = None) -> CardMap:
        sql = self._sql()
        library = self._per_version("cards", sql, None, lambda: CardMap(
            (r[0], shared_card(r[1], r[2])) for r in sql.rows("SELECT id, card, meta FROM documents WHERE card IS NOT NULL")),
            known=document_ids is None)
        if document_ids is None:
            return library
        wanted = sorted(set(document_ids))
        if library is not None:  # this state's library holds them: no statement
            return CardMap((d, library[d]) for d in wanted if d in library)
        where, args = sql.any_of("id", wanted)
        rows = sql.rows(f"SELECT id, card, meta FROM documents WHERE card IS NOT NULL AND {where}", args) \
            if args else []
        return CardMap((r[0], shared_card(r[1], r[2])) for r in rows)

    def _per_version(self, name: str, sql: Sql, key: Hashable, read: Callable[[], T] | None,
                     known: bool = True) -> Any:
        """`read()`, kept per thread while this reader's `_library_version` holds (the same `key` asked): a value
        over the whole library (its scope, its cards) read once per state of the KB, not per query. Without a
        version (outside a snapshot, or a backend without one) `read()` runs every time. With `read` None (or
        `known` False: the value is wanted only when already held), the value held for this state, else None."""
        version = self._library_version(sql)  # before the read: a change after it makes the next call read again
        if version is None:
            return read() if read is not None and known else None
        held = getattr(self._local, name, None)
        if held is not None and (held[0] is sql.conn or not self.version_per_connection) and held[1] == (version, key):
            return held[2]
        if read is None:
            return None
        value = read()
        setattr(self._local, name, (sql.conn, (version, key), value))
        return value

    version_per_connection = True  # a `_library_version` compares only on the connection it was read on

    def _library_version(self, sql: Sql) -> Hashable | None:
        """A value of this reader connection that changes whenever the KB does (any commit), read inside the
        caller's snapshot; None: the backend has none (the whole library is read every time)."""
        return None

    def statement_pages(self, document_ids: Sequence[str]) -> dict[str, dict[int, str] | None]:
        ids = list(dict.fromkeys(document_ids))
        if not ids:
            return {}
        sql = self._sql()
        where, args = sql.any_of("id", ids)
        return {r[0]: statements_of(r[1]) for r in sql.rows(f"SELECT id, statements FROM documents WHERE {where}", args)}

    # ---- sections

    def section(self, section_id: str) -> SectionRow:
        row = self._sql().one(_SECTION_SQL + " WHERE s.id = ?", (section_id,))
        if row is None:
            raise NotFound(f"no section {section_id!r}", {"section_id": section_id})
        return _section(row)

    def child_ids(self, section_id: str) -> list[str]:
        return [r[0] for r in self._sql().rows("SELECT id FROM sections WHERE parent_id = ? ORDER BY position",
                                               (section_id,))]

    def document_sections(self, document_id: str) -> list[SectionRow]:
        return [_section(r) for r in self._sql().rows(_SECTION_SQL + " WHERE s.document_id = ? ORDER BY s.position",
                                                      (document_id,))]

    def outline(self, document_id: str, max_depth: int | None = None) -> tuple[DocumentInfo, list[OutlineNode]]:
        with self.snapshot():
            doc = self.document(document_id)
            deep = " AND depth <= ?" if max_depth is not None else ""
            args: tuple = (document_id, max_depth) if max_depth is not None else (document_id,)
            rows = self._sql().rows("SELECT id, parent_id, title, depth, page_start, page_end FROM sections "
                                    f"WHERE document_id = ?{deep} ORDER BY position", args)
        roots: list[OutlineNode] = []
        nodes: dict[str, OutlineNode] = {}
        for sid, parent_id, title, depth, start, end in rows:
            node = nodes[sid] = OutlineNode(sid, title, depth, start, end)
            parent = nodes.get(parent_id) if parent_id else None
            (parent.children if parent is not None else roots).append(node)
        return doc, roots

    def tree(self, document_ids: Sequence[str], head_chars: int) -> list[TreeRow]:
        if not document_ids:
            return []
        sql = self._sql()
        where, args = sql.any_of("document_id", list(document_ids))
        rows = sql.rows(
            "SELECT id, document_id, parent_id, depth, title, page_start, page_end, is_leaf, summary, length(text),"
            f" CASE WHEN summary = '' THEN substr(text, 1, {int(head_chars)}) END FROM sections WHERE {where}"
            " ORDER BY document_id, position", args)
        return [TreeRow(section_id=r[0], document_id=r[1], parent_id=r[2], depth=int(r[3]), title=r[4],
                        page_start=int(r[5]), page_end=int(r[6]), is_leaf=bool(r[7]), summary=r[8],
                        text_len=int(r[9]), head=r[10]) for r in rows]

    def section_texts(self, section_ids: Sequence[str]) -> dict[str, tuple[str, list[tuple[int, int]]]]:
        sql, out = self._sql(), {}
        ids = list(dict.fromkeys(section_ids))
        for i in range(0, len(ids), 500):
            where, args = sql.any_of("id", ids[i:i + 500])
            for sid, text, page_map in sql.rows(f"SELECT id, text, page_map FROM sections WHERE {where}", args):
                out[sid] = (text, json_pairs(page_map))
        return out

    def sections_on_pages(self, pages: Sequence[PageKey], back: int) -> list[SectionRef]:
        """The sections starting at most `back` pages before each page and reaching it, page by page in order,
        each once: one statement per chunk of pages (a round trip per page costs a client-server store more
        than the lookup), ordered by the page's place, then page_start and rowid."""
        out, seen = [], set()
        for rowid, ref in self._page_refs(self._sql(), pages, back):
            if rowid not in seen:
                seen.add(rowid)
                out.append(ref)
        return out

    def _page_refs(self, sql: Sql, pages: Sequence[PageKey], back: int) -> Iterator[tuple[int, SectionRef]]:
        """`_page_sections`' rows as (rowid, ref)."""
        return ((row[0], section_ref(row)) for row in self._page_sections(sql, pages, back))

    def _page_sections(self, sql: Sql, pages: Sequence[PageKey], back: int) -> Iterator[Sequence[Any]]:
        """The REF_COLUMNS rows of `sections_on_pages`, page by page in order (a section once per page reaching
        it), then by page_start and rowid."""
        return (row for _, row in self._page_rows(sql, pages, back))

    def _page_rows(self, sql: Sql, pages: Sequence[PageKey], back: int) -> Iterator[tuple[int, Sequence[Any]]]:
        """`_page_sections`' rows, each with the place of its page in `pages`: a UNION ALL of one lookup per
        page, per chunk of pages."""
        one = (f"SELECT CAST(? AS INTEGER), {REF_COLUMNS} FROM sections WHERE document_id = ? AND page_start "
               "BETWEEN ? AND ? AND page_end >= ?")
        for start in range(0, len(pages), PAGES_PER_STATEMENT):
            chunk = pages[start:start + PAGES_PER_STATEMENT]
            args = [a for i, (doc, page) in enumerate(chunk) for a in (start + i, doc, page - back, page, page)]
            for row in sql.rows(" UNION ALL ".join([one] * len(chunk)) + " ORDER BY 1, 7, 2", args):
                yield row[0], row[1:]

    def _section_refs(self, sql: Sql, rowids: Sequence[int]) -> dict[int, SectionRef]:
        """The SectionRefs of these section rowids (a text index's hits)."""
        if not rowids:
            return {}
        where, args = sql.any_of("rowid", list(rowids))
        return {r[0]: section_ref(r) for r in sql.rows(f"SELECT {REF_COLUMNS} FROM sections WHERE {where}", args)}

    # ---- pages

    def page(self, document_id: str, number: int) -> PageRow:
        doc = self.document(document_id)
        row = self._sql().one("SELECT text FROM pages WHERE document_id = ? AND number = ?", (document_id, number))
        if row is None:
            raise NotFound(f"document {document_id!r} has no page {number} (it has {doc.pages})",
                           {"document_id": document_id, "page": number})
        return PageRow(document_id, doc.title, number, row[0], doc.status)

    def _by_document(self, table: str, column: str, pages: Sequence[PageKey]) -> dict[PageKey, Any]:
        """`column` of these pages' rows in `table`, in the order asked (rows missing left out)."""
        sql, found = self._sql(), {}
        by_doc: dict[str, list[int]] = {}
        for doc, num in pages:
            by_doc.setdefault(doc, []).append(num)
        for doc, nums in by_doc.items():
            where, args = sql.any_of("number", nums)
            for num, value in sql.rows(f"SELECT number, {column} FROM {table} WHERE document_id = ? AND {where}",
                                       [doc, *args]):
                found[(doc, num)] = value
        return found

    def page_texts(self, pages: Sequence[PageKey], chars: int | None = None) -> dict[PageKey, str]:
        return self._by_document("pages", "text" if chars is None else f"substr(text, 1, {int(chars)})", pages)

    def page_words(self, pages: Sequence[PageKey]) -> dict[PageKey, list[list[float]]]:
        found = self._by_document("page_words", "words", pages)
        return {key: orjson.loads(found[key]) for key in dict.fromkeys(pages) if key in found}

    def page_range(self, document_id: str, start: int, end: int) -> dict[int, str]:
        return dict(self._sql().rows("SELECT number, text FROM pages WHERE document_id = ? AND number BETWEEN ? AND ?"
                                     " ORDER BY number", (document_id, start, end)))

    def cover_texts(self, document_ids: Sequence[str]) -> dict[str, list[str]]:
        parts: dict[str, list[str]] = {d: [] for d in document_ids}
        if not document_ids:
            return parts
        sql = self._sql()
        where, args = sql.any_of("document_id", list(document_ids))
        for doc, text in sql.rows(f"SELECT document_id, text FROM pages WHERE number <= {COVER_PAGES} AND {where}"
                                  " ORDER BY document_id, number", args):
            parts[doc].append(text)
        return parts

    # ---- writes: each one transaction

    def remove(self, document_id: str) -> DocumentInfo:
        with self.transaction() as tx:
            info = tx.document(document_id)
            tx._delete(document_id)
            return info

    def set_summaries(self, summaries: dict[str, str]) -> int:
        rows = [(self.dialect.text(s), sid) for sid, s in summaries.items() if s]
        with self.transaction() as tx:
            tx._conn.many("UPDATE sections SET summary = ? WHERE id = ?", rows)
        return len(rows)

    def update_document(self, document_id: str, *, status: str | None = None, card: Card | None = None,
                        meta: dict | None = None, statement_pages: dict[int, str] | None = None
                        ) -> tuple[DocumentInfo, DocumentInfo]:
        if status is not None:
            _checked(status)
        text = self.dialect.text
        with self.transaction() as tx:
            before = tx.document(document_id)  # NotFound when absent
            columns: dict[str, Any] = {}
            if status is not None:
                columns["status"] = status
            if statement_pages is not None:
                columns["statements"] = orjson.dumps({str(n): k for n, k in sorted(statement_pages.items())}).decode()
            if card is not None:
                columns["card"] = tx._card_json(card)
                columns["title"] = text(card_title(card, before.meta, before.title))
            if meta is not None:
                card_json = columns["card"] if card is not None else \
                    tx._conn.one("SELECT card FROM documents WHERE id = ?", (document_id,))[0]  # type: ignore[index]
                new_meta, title = retitled(before, card_json, meta)
                columns.update(meta=text(orjson.dumps(new_meta).decode()), title=text(title))
            if columns:
                tx._set(document_id, **columns)
            return before, tx.document(document_id)
