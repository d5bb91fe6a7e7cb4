"""Typed queries over the KB: documents, sections, pages. Functions take a connection from the Store
(`store.reader()`, `store.snapshot()` or `store.write()`), except `write_parsed`, which takes the Store.

A document goes in (or is replaced, or removed) in one transaction: every row of it, FTS rows included
(written by `save_document` on insert, by the schema's triggers on delete), commits together or not at all.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, BinaryIO

import orjson

from jsonl_engine.errors import Cancelled, EngineError, InvalidParams, NotFound

if TYPE_CHECKING:
    from jsonl_engine.context import CancelFlag
    from jsonl_engine.ingest.model import ParsedDocument
    from jsonl_engine.store.db import Store

STATUSES = ("approved", "draft", "contested", "archived")
# A document's first pages, indexed apart in covers_fts (they name the issuer and period). The covers_fts
# delete trigger (migration 1) says `number <= 2` too: change both together.
COVER_PAGES = 2


@dataclass(slots=True)
class DocumentInfo:
    document_id: str
    title: str
    path: str | None
    media_type: str
    pages: int
    sections: int
    status: str
    ingested_at: str
    sha256: str = ""
    warnings: list[str] = field(default_factory=list)


@dataclass(slots=True)
class SectionRow:
    section_id: str
    document_id: str
    document_title: str
    parent_id: str | None
    position: int
    depth: int
    ordinal: int
    title: str
    ancestors: list[str]
    page_start: int
    page_end: int
    is_leaf: bool
    text: str
    page_map: list[tuple[int, int]]
    summary: str
    status: str


@dataclass(slots=True)
class PageRow:
    document_id: str
    document_title: str
    number: int
    text: str
    status: str


@dataclass(slots=True)
class OutlineNode:
    section_id: str
    title: str
    depth: int
    page_start: int
    page_end: int
    children: list[OutlineNode] = field(default_factory=list)


@dataclass(slots=True)
class IngestOutcome:
    """One entry's outcome: a stored (or skipped) document, or an error with its protocol code."""

    path: str | None
    document_id: str | None = None
    title: str | None = None
    media_type: str | None = None
    pages: int = 0
    sections: int = 0
    status: str | None = None
    skipped: bool = False
    reason: str | None = None
    warnings: list[str] = field(default_factory=list)
    error: dict[str, Any] | None = None


# ---------------------------------------------------------------- ids and hashing

def content_id(data: bytes) -> tuple[str, str]:
    """(sha256 hex, document id): the id is the first 16 hex chars of the content hash."""
    digest = hashlib.sha256(data).hexdigest()
    return digest, digest[:16]


def file_digest(file: str | BinaryIO) -> tuple[str, str]:
    """`content_id` of a file's bytes, read in blocks: `file` is a path, or a binary file open for reading (the
    ingest opens files itself, refusing anything but a regular file)."""
    if isinstance(file, str):
        with open(file, "rb") as fh:
            return file_digest(fh)
    digest = hashlib.file_digest(file, "sha256").hexdigest()
    return digest, digest[:16]


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------- documents

_DOC_COLUMNS = "id, title, path, media_type, sha256, pages, sections, status, ingested_at, warnings"


def _doc(row: sqlite3.Row) -> DocumentInfo:
    return DocumentInfo(document_id=row["id"], title=row["title"], path=row["path"], media_type=row["media_type"],
                        pages=row["pages"], sections=row["sections"], status=row["status"],
                        ingested_at=row["ingested_at"], sha256=row["sha256"], warnings=orjson.loads(row["warnings"]))


def list_documents(conn: sqlite3.Connection, statuses: Iterable[str] | None = None) -> list[DocumentInfo]:
    sql = f"SELECT {_DOC_COLUMNS} FROM documents"
    args: list[Any] = []
    if statuses is not None:
        wanted = list(statuses)
        sql += f" WHERE status IN ({','.join('?' * len(wanted))})" if wanted else " WHERE 0"
        args = wanted
    sql += " ORDER BY ingested_at, id"
    return [_doc(row) for row in conn.execute(sql, args)]


def get_document(conn: sqlite3.Connection, document_id: str) -> DocumentInfo:
    row = conn.execute(f"SELECT {_DOC_COLUMNS} FROM documents WHERE id = ?", (document_id,)).fetchone()
    if row is None:
        raise NotFound(f"no document {document_id!r}", {"document_id": document_id})
    return _doc(row)


def find_by_sha(conn: sqlite3.Connection, sha256: str) -> DocumentInfo | None:
    row = conn.execute(f"SELECT {_DOC_COLUMNS} FROM documents WHERE sha256 = ? LIMIT 1", (sha256,)).fetchone()
    return None if row is None else _doc(row)


def find_by_path(conn: sqlite3.Connection, path: str) -> list[DocumentInfo]:
    return [_doc(r) for r in conn.execute(f"SELECT {_DOC_COLUMNS} FROM documents WHERE path = ? ORDER BY id",
                                          (path,))]


def save_document(conn: sqlite3.Connection, parsed: ParsedDocument, *, document_id: str, sha256: str,
                  path: str | None, status: str = "approved", replace: Iterable[str] = (),
                  before_commit: Callable[[], None] | None = None) -> DocumentInfo:
    """Insert a parsed document (inside the caller's write transaction), first removing `replace` ids.

    `before_commit` runs last, still inside the transaction (a cancel check raising there rolls it all back).
    """
    if status not in STATUSES:
        raise InvalidParams(f"unknown status {status!r}", fields=["status"])
    for old in replace:
        _delete_rows(conn, old)
    info = DocumentInfo(document_id=document_id, title=parsed.title, path=path, media_type=parsed.media_type,
                        pages=len(parsed.pages), sections=len(parsed.sections), status=status,
                        ingested_at=_now(), sha256=sha256, warnings=list(parsed.warnings))
    conn.execute(f"INSERT INTO documents ({_DOC_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                 (document_id, info.title, path, info.media_type, sha256, info.pages, info.sections, status,
                  info.ingested_at, orjson.dumps(info.warnings).decode()))
    conn.executemany("INSERT INTO pages (document_id, number, text) VALUES (?, ?, ?)",
                     ((document_id, number, text) for number, text in enumerate(parsed.pages, start=1)))
    conn.executemany(
        "INSERT INTO sections (id, document_id, parent_id, position, depth, ordinal, title, ancestors, page_start,"
        " page_end, is_leaf, text, page_map, summary) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        _section_rows(parsed, document_id))
    _index_document(conn, document_id)
    if before_commit is not None:
        before_commit()
    return info


def _index_document(conn: sqlite3.Connection, document_id: str) -> None:
    """FTS rows for a just-inserted document (schema v2: no insert triggers; one statement per index)."""
    conn.execute("INSERT INTO sections_fts (rowid, title, ancestors, text) "
                 "SELECT rowid, title, ancestors, text FROM sections WHERE document_id = ?", (document_id,))
    conn.execute("INSERT INTO pages_fts (rowid, text) SELECT rowid, text FROM pages WHERE document_id = ?",
                 (document_id,))
    conn.execute("INSERT INTO covers_fts (rowid, text) SELECT rowid, text FROM pages "
                 f"WHERE document_id = ? AND number <= {COVER_PAGES}", (document_id,))


def _section_rows(parsed: ParsedDocument, document_id: str) -> Iterator[tuple]:
    sections = parsed.sections
    has_children = {s.parent for s in sections if s.parent is not None}
    ids = [f"{document_id}:{s.key}" for s in sections]
    for position, s in enumerate(sections):
        ancestors: list[str] = []
        parent = s.parent
        while parent is not None:
            ancestors.append(sections[parent].title)
            parent = sections[parent].parent
        ancestors.reverse()
        yield (ids[position], document_id, None if s.parent is None else ids[s.parent], position, s.depth,
               s.ordinal, s.title, orjson.dumps(ancestors).decode(), s.page_start, s.page_end,
               int(position not in has_children), s.text, orjson.dumps(s.page_map).decode(), s.summary)


def _delete_rows(conn: sqlite3.Connection, document_id: str) -> None:
    # Children before parents is irrelevant here: all of the document's sections go in one statement.
    conn.execute("DELETE FROM sections WHERE document_id = ?", (document_id,))
    conn.execute("DELETE FROM pages WHERE document_id = ?", (document_id,))
    conn.execute("DELETE FROM documents WHERE id = ?", (document_id,))


def remove_document(conn: sqlite3.Connection, document_id: str) -> DocumentInfo:
    """Delete a document with its sections, pages and FTS rows (inside the caller's write transaction)."""
    info = get_document(conn, document_id)
    _delete_rows(conn, document_id)
    return info


def set_status(conn: sqlite3.Connection, document_id: str, status: str) -> tuple[DocumentInfo, str]:
    """Set the review status; returns (updated document, previous status)."""
    if status not in STATUSES:
        raise InvalidParams(f"unknown status {status!r}", fields=["status"])
    info = get_document(conn, document_id)
    previous = info.status
    conn.execute("UPDATE documents SET status = ? WHERE id = ?", (status, document_id))
    info.status = status
    return info, previous


# ---------------------------------------------------------------- sections and pages

_SECTION_SQL = (
    "SELECT s.id, s.document_id, d.title AS document_title, s.parent_id, s.position, s.depth, s.ordinal, s.title,"
    " s.ancestors, s.page_start, s.page_end, s.is_leaf, s.text, s.page_map, s.summary, d.status"
    " FROM sections s JOIN documents d ON d.id = s.document_id")


def _section(row: sqlite3.Row) -> SectionRow:
    return SectionRow(section_id=row["id"], document_id=row["document_id"], document_title=row["document_title"],
                      parent_id=row["parent_id"], position=row["position"], depth=row["depth"],
                      ordinal=row["ordinal"], title=row["title"], ancestors=orjson.loads(row["ancestors"]),
                      page_start=row["page_start"], page_end=row["page_end"], is_leaf=bool(row["is_leaf"]),
                      text=row["text"], page_map=[(o, p) for o, p in orjson.loads(row["page_map"])],
                      summary=row["summary"], status=row["status"])


def child_ids(conn: sqlite3.Connection, section_id: str) -> list[str]:
    """A section's children, in document order."""
    return [r[0] for r in conn.execute("SELECT id FROM sections WHERE parent_id = ? ORDER BY position",
                                       (section_id,))]


def get_section(conn: sqlite3.Connection, section_id: str) -> SectionRow:
    row = conn.execute(_SECTION_SQL + " WHERE s.id = ?", (section_id,)).fetchone()
    if row is None:
        raise NotFound(f"no section {section_id!r}", {"section_id": section_id})
    return _section(row)


def document_sections(conn: sqlite3.Connection, document_id: str) -> list[SectionRow]:
    """All sections of a document in tree (pre-)order."""
    return [_section(r) for r in conn.execute(_SECTION_SQL + " WHERE s.document_id = ? ORDER BY s.position",
                                              (document_id,))]


def get_page(conn: sqlite3.Connection, document_id: str, number: int) -> PageRow:
    doc = get_document(conn, document_id)
    row = conn.execute("SELECT text FROM pages WHERE document_id = ? AND number = ?",
                       (document_id, number)).fetchone()
    if row is None:
        raise NotFound(f"document {document_id!r} has no page {number} (it has {doc.pages})",
                       {"document_id": document_id, "page": number})
    return PageRow(document_id, doc.title, number, row["text"], doc.status)


def outline(conn: sqlite3.Connection, document_id: str, max_depth: int | None = None) -> tuple[DocumentInfo,
                                                                                               list[OutlineNode]]:
    """The section tree (titles and page ranges) down to `max_depth` (1 = top-level sections only)."""
    doc = get_document(conn, document_id)
    sql = ("SELECT id, parent_id, title, depth, page_start, page_end FROM sections WHERE document_id = ?"
           + (" AND depth <= ?" if max_depth is not None else "") + " ORDER BY position")
    args: tuple = (document_id, max_depth) if max_depth is not None else (document_id,)
    roots: list[OutlineNode] = []
    nodes: dict[str, OutlineNode] = {}
    for row in conn.execute(sql, args):
        node = OutlineNode(row["id"], row["title"], row["depth"], row["page_start"], row["page_end"])
        nodes[row["id"]] = node
        parent = nodes.get(row["parent_id"]) if row["parent_id"] else None
        (parent.children if parent is not None else roots).append(node)
    return doc, roots


# ---------------------------------------------------------------- ingest writes (the flows are in jsonl_engine.ingest)

def precheck(conn: sqlite3.Connection, sha256: str, path: str | None) -> tuple[IngestOutcome | None, list[str]]:
    """(skip outcome if these exact bytes are already in, ids of older versions at the same path to replace).

    The skip outcome names `path`, the entry asked for now; its reason names the copy already in."""
    existing = find_by_sha(conn, sha256)
    if existing is not None:
        reason = "already ingested (same content)"
        if existing.path and existing.path != path:
            reason = f"same content already ingested from {existing.path}"
        skip = outcome_for(existing, skipped=True, reason=reason)
        skip.path = path
        return skip, []
    older = [d.document_id for d in find_by_path(conn, path)] if path else []
    return None, older


def outcome_for(info: DocumentInfo, *, skipped: bool = False, reason: str | None = None) -> IngestOutcome:
    return IngestOutcome(path=info.path, document_id=info.document_id, title=info.title, media_type=info.media_type,
                         pages=info.pages, sections=info.sections, status=info.status, skipped=skipped,
                         reason=reason, warnings=list(info.warnings))


def error_outcome(path: str | None, exc: EngineError) -> IngestOutcome:
    error: dict[str, Any] = {"code": exc.code, "message": exc.message}
    if exc.data and "reason" in exc.data:
        error["reason"] = exc.data["reason"]
    return IngestOutcome(path=path, error=error)


def write_parsed(store: Store, parsed: ParsedDocument, *, document_id: str, sha256: str, path: str | None,
                 status: str, cancel: CancelFlag | None = None) -> IngestOutcome:
    """One transaction: re-check for a concurrent duplicate, replace older versions at `path`, insert."""

    def check_cancel() -> None:
        if cancel is not None and cancel.is_set():
            raise Cancelled("ingest cancelled")

    with store.write() as conn:
        skip, older = precheck(conn, sha256, path)
        if skip is not None:
            return skip
        info = save_document(conn, parsed, document_id=document_id, sha256=sha256, path=path, status=status,
                             replace=older, before_commit=check_cancel)
    reason = f"replaced previous version {', '.join(older)}" if older else None
    return outcome_for(info, reason=reason)
