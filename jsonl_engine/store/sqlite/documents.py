"""The SQLite statements over documents, sections and pages. Functions take a connection from the store.

A document goes in (or is replaced, or removed) in one transaction: every row of it, FTS rows included
(written by `save_document` on insert, by the schema's triggers on delete), commits together or not at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from jsonl_engine.errors import InvalidParams, NotFound
from jsonl_engine.store.rows import now, section_rows, word_rows
from jsonl_engine.store.sqlite.driver import Connection, Row
from jsonl_engine.store.types import (
    COVER_PAGES,
    STATUSES,
    Card,
    DocumentInfo,
    OutlineNode,
    PageRow,
    ParsedDocument,
    SectionRow,
    card_title,
    retitled,
    stored_card,
    user_meta,
)

# ---------------------------------------------------------------- documents

_DOC_COLUMNS = ("id, title, path, media_type, sha256, pages, sections, status, ingested_at, warnings, card, meta,"
                " ocr_pages")


def _doc(row: Row) -> DocumentInfo:
    meta = orjson.loads(row["meta"] or "{}")
    card = stored_card(row["card"], row["meta"])
    return DocumentInfo(document_id=row["id"], title=row["title"], path=row["path"], media_type=row["media_type"],
                        pages=row["pages"], sections=row["sections"], status=row["status"],
                        ingested_at=row["ingested_at"], sha256=row["sha256"], warnings=orjson.loads(row["warnings"]),
                        card=card, meta=meta, ocr_pages=orjson.loads(row["ocr_pages"]))


def list_documents(conn: Connection, statuses: Iterable[str] | None = None,
                   document_ids: Sequence[str] | None = None) -> list[DocumentInfo]:
    sql = f"SELECT {_DOC_COLUMNS} FROM documents"
    args: list[Any] = []
    where: list[str] = []
    if statuses is not None:
        wanted = list(statuses)
        where.append(f"status IN ({','.join('?' * len(wanted))})" if wanted else "0")
        args += wanted
    if document_ids is not None:
        where.append(f"id IN ({','.join('?' * len(document_ids))})" if document_ids else "0")
        args += list(document_ids)
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY ingested_at, id"
    return [_doc(row) for row in conn.execute(sql, args)]


def get_document(conn: Connection, document_id: str) -> DocumentInfo:
    row = conn.execute(f"SELECT {_DOC_COLUMNS} FROM documents WHERE id = ?", (document_id,)).fetchone()
    if row is None:
        raise NotFound(f"no document {document_id!r}", {"document_id": document_id})
    return _doc(row)


def find_by_sha(conn: Connection, sha256: str) -> DocumentInfo | None:
    row = conn.execute(f"SELECT {_DOC_COLUMNS} FROM documents WHERE sha256 = ? LIMIT 1", (sha256,)).fetchone()
    return None if row is None else _doc(row)


def find_by_path(conn: Connection, path: str) -> list[DocumentInfo]:
    return [_doc(r) for r in conn.execute(f"SELECT {_DOC_COLUMNS} FROM documents WHERE path = ? ORDER BY id",
                                          (path,))]


def find_by_title(conn: Connection, title: str) -> list[DocumentInfo]:
    return [_doc(r) for r in conn.execute(f"SELECT {_DOC_COLUMNS} FROM documents WHERE title = ? ORDER BY id",
                                          (title,))]


def save_document(conn: Connection, parsed: ParsedDocument, *, document_id: str, sha256: str,
                  path: str | None, status: str = "approved", replace: Iterable[str] = (),
                  meta: dict | None = None) -> DocumentInfo:
    """Insert a parsed document (inside the caller's write transaction), first removing `replace` ids."""
    if status not in STATUSES:
        raise InvalidParams(f"unknown status {status!r}", fields=["status"])
    for old in replace:
        _delete_rows(conn, old)
    meta = user_meta(meta)
    card = parsed.card
    info = DocumentInfo(document_id=document_id, title=card_title(card, meta, parsed.title), path=path,
                        media_type=parsed.media_type, pages=len(parsed.pages), sections=len(parsed.sections),
                        status=status, ingested_at=now(), sha256=sha256, warnings=list(parsed.warnings),
                        card=None if card is None else card.merged(meta), meta=meta,
                        ocr_pages=sorted(parsed.page_words))
    conn.execute(f"INSERT INTO documents ({_DOC_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                 (document_id, info.title, path, info.media_type, sha256, info.pages, info.sections, status,
                  info.ingested_at, orjson.dumps(info.warnings).decode(),
                  None if card is None else orjson.dumps(card.to_dict()).decode(), orjson.dumps(meta).decode(),
                  orjson.dumps(info.ocr_pages).decode()))
    conn.executemany("INSERT INTO pages (document_id, number, text) VALUES (?, ?, ?)",
                     ((document_id, number, text) for number, text in enumerate(parsed.pages, start=1)))
    conn.executemany("INSERT INTO page_words (document_id, number, words) VALUES (?, ?, ?)",
                     word_rows(parsed, document_id))
    conn.executemany(
        "INSERT INTO sections (id, document_id, parent_id, position, depth, ordinal, title, ancestors, page_start,"
        " page_end, is_leaf, text, page_map, summary) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        section_rows(parsed, document_id))
    _index_document(conn, document_id)
    return info


def _index_document(conn: Connection, document_id: str) -> None:
    """FTS rows for a just-inserted document (schema v2: no insert triggers; one statement per index)."""
    conn.execute("INSERT INTO sections_fts (rowid, title, ancestors, text) "
                 "SELECT rowid, title, ancestors, text FROM sections WHERE document_id = ?", (document_id,))
    conn.execute("INSERT INTO pages_fts (rowid, text) SELECT rowid, text FROM pages WHERE document_id = ?",
                 (document_id,))
    conn.execute("INSERT INTO covers_fts (rowid, text) SELECT rowid, text FROM pages "
                 f"WHERE document_id = ? AND number <= {COVER_PAGES}", (document_id,))


def _delete_rows(conn: Connection, document_id: str) -> None:
    # Children before parents is irrelevant here: all of the document's sections go in one statement.
    conn.execute("DELETE FROM sections WHERE document_id = ?", (document_id,))
    conn.execute("DELETE FROM page_words WHERE document_id = ?", (document_id,))
    conn.execute("DELETE FROM pages WHERE document_id = ?", (document_id,))
    conn.execute("DELETE FROM documents WHERE id = ?", (document_id,))


def remove_document(conn: Connection, document_id: str) -> DocumentInfo:
    """Delete a document with its sections, pages and FTS rows (inside the caller's write transaction)."""
    info = get_document(conn, document_id)
    _delete_rows(conn, document_id)
    return info


def set_status(conn: Connection, document_id: str, status: str) -> tuple[DocumentInfo, str]:
    """Set the review status; returns (updated document, previous status)."""
    if status not in STATUSES:
        raise InvalidParams(f"unknown status {status!r}", fields=["status"])
    info = get_document(conn, document_id)
    previous = info.status
    conn.execute("UPDATE documents SET status = ? WHERE id = ?", (status, document_id))
    info.status = status
    return info, previous


def set_card(conn: Connection, document_id: str, card: Card) -> DocumentInfo:
    """Store a derived card; the user's values (meta) still win, the title follows."""
    info = get_document(conn, document_id)
    conn.execute("UPDATE documents SET card = ?, title = ? WHERE id = ?",
                 (orjson.dumps(card.to_dict()).decode(), card_title(card, info.meta, info.title), document_id))
    return get_document(conn, document_id)


def statement_pages(conn: Connection, document_ids: Sequence[str]) -> dict[str, dict[int, str] | None]:
    """document id -> its statement pages (page number -> kind), None when not judged yet; absent ids left out."""
    ids = list(dict.fromkeys(document_ids))
    if not ids:
        return {}
    marks = ", ".join("?" * len(ids))
    rows = conn.execute(f"SELECT id, statements FROM documents WHERE id IN ({marks})", ids).fetchall()
    return {r[0]: None if r[1] is None else {int(n): k for n, k in orjson.loads(r[1]).items()} for r in rows}


def set_statement_pages(conn: Connection, document_id: str, kinds: dict[int, str]) -> None:
    """Store a document's statement pages (page number -> kind); NotFound when the document is absent."""
    value = orjson.dumps({str(n): k for n, k in sorted(kinds.items())}).decode()
    before = conn.total_changes
    conn.execute("UPDATE documents SET statements = ? WHERE id = ?", (value, document_id))
    if conn.total_changes == before:
        raise NotFound(f"no document {document_id!r}", {"document_id": document_id})


def set_meta(conn: Connection, document_id: str, values: dict) -> DocumentInfo:
    """Merge the user's card values (a None value removes the user's value for that field)."""
    info = get_document(conn, document_id)
    row = conn.execute("SELECT card FROM documents WHERE id = ?", (document_id,)).fetchone()
    meta, title = retitled(info, row["card"], values)
    conn.execute("UPDATE documents SET meta = ?, title = ? WHERE id = ?",
                 (orjson.dumps(meta).decode(), title, document_id))
    return get_document(conn, document_id)


# ---------------------------------------------------------------- sections and pages

_SECTION_SQL = (
    "SELECT s.id, s.document_id, d.title AS document_title, s.parent_id, s.position, s.depth, s.ordinal, s.title,"
    " s.ancestors, s.page_start, s.page_end, s.is_leaf, s.text, s.page_map, s.summary, d.status"
    " FROM sections s JOIN documents d ON d.id = s.document_id")


def _section(row: Row) -> SectionRow:
    return SectionRow(section_id=row["id"], document_id=row["document_id"], document_title=row["document_title"],
                      parent_id=row["parent_id"], position=row["position"], depth=row["depth"],
                      ordinal=row["ordinal"], title=row["title"], ancestors=orjson.loads(row["ancestors"]),
                      page_start=row["page_start"], page_end=row["page_end"], is_leaf=bool(row["is_leaf"]),
                      text=row["text"], page_map=[(o, p) for o, p in orjson.loads(row["page_map"])],
                      summary=row["summary"], status=row["status"])


def child_ids(conn: Connection, section_id: str) -> list[str]:
    """A section's children, in document order."""
    return [r[0] for r in conn.execute("SELECT id FROM sections WHERE parent_id = ? ORDER BY position",
                                       (section_id,))]


def get_section(conn: Connection, section_id: str) -> SectionRow:
    row = conn.execute(_SECTION_SQL + " WHERE s.id = ?", (section_id,)).fetchone()
    if row is None:
        raise NotFound(f"no section {section_id!r}", {"section_id": section_id})
    return _section(row)


def document_sections(conn: Connection, document_id: str) -> list[SectionRow]:
    """All sections of a document in tree (pre-)order."""
    return [_section(r) for r in conn.execute(_SECTION_SQL + " WHERE s.document_id = ? ORDER BY s.position",
                                              (document_id,))]


def get_page(conn: Connection, document_id: str, number: int) -> PageRow:
    doc = get_document(conn, document_id)
    row = conn.execute("SELECT text FROM pages WHERE document_id = ? AND number = ?",
                       (document_id, number)).fetchone()
    if row is None:
        raise NotFound(f"document {document_id!r} has no page {number} (it has {doc.pages})",
                       {"document_id": document_id, "page": number})
    return PageRow(document_id, doc.title, number, row["text"], doc.status)


def page_words(conn: Connection, pages: Sequence[tuple[str, int]]) -> dict[tuple[str, int], list[list[float]]]:
    """The OCR words of these pages (pages not read by OCR left out)."""
    out: dict[tuple[str, int], list[list[float]]] = {}
    for document_id, number in dict.fromkeys(pages):
        row = conn.execute("SELECT words FROM page_words WHERE document_id = ? AND number = ?",
                           (document_id, number)).fetchone()
        if row is not None:
            out[(document_id, number)] = orjson.loads(row[0])
    return out


def page_range(conn: Connection, document_id: str, start: int, end: int) -> dict[int, str]:
    return dict(conn.execute("SELECT number, text FROM pages WHERE document_id = ? AND number BETWEEN ? AND ? "
                             "ORDER BY number", (document_id, start, end)).fetchall())


def outline(conn: Connection, document_id: str, max_depth: int | None = None) -> tuple[DocumentInfo,
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


def set_summaries(conn: Connection, summaries: dict[str, str]) -> int:
    conn.executemany("UPDATE sections SET summary = ? WHERE id = ?", [(s, sid) for sid, s in summaries.items() if s])
    return sum(1 for s in summaries.values() if s)
