"""The PostgreSQL statements over documents, sections and pages (the counterpart of sqlite/documents.py).

A document goes in (or is replaced, or removed) in one transaction. Its content hash is UNIQUE: when another
daemon committed the same content first, the insert conflicts (`ON CONFLICT DO NOTHING`) and raises
DuplicateContent naming that copy, and the caller's transaction rolls back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from jsonl_engine.errors import InvalidParams, NotFound
from jsonl_engine.store.port import DuplicateContent
from jsonl_engine.store.postgres.text import CONFIG, tokens, words
from jsonl_engine.store.rows import now, section_rows, word_rows
from jsonl_engine.store.types import (
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

_DOC_COLUMNS = ("id, title, path, media_type, sha256, pages, sections, status, ingested_at, warnings, card, meta,"
                " ocr_pages")


def clean(text: str) -> str:
    """PostgreSQL text cannot hold NUL: U+FFFD instead (same length, so offsets and page maps hold)."""
    return text.replace("\x00", "\ufffd") if "\x00" in text else text


def _doc(r: Sequence[Any]) -> DocumentInfo:
    meta = orjson.loads(r[11] or "{}")
    card = stored_card(r[10], r[11])
    return DocumentInfo(document_id=r[0], title=r[1], path=r[2], media_type=r[3], sha256=r[4], pages=r[5],
                        sections=r[6], status=r[7], ingested_at=r[8], warnings=orjson.loads(r[9]), card=card,
                        meta=meta, ocr_pages=orjson.loads(r[12]))


def _card_json(card: Card | None) -> str | None:
    return None if card is None else clean(orjson.dumps(card.to_dict()).decode())


def list_documents(conn: Any, statuses: Iterable[str] | None = None,
                   document_ids: Sequence[str] | None = None) -> list[DocumentInfo]:
    sql = f"SELECT {_DOC_COLUMNS} FROM documents"
    args: list[Any] = []
    where: list[str] = []
    if statuses is not None:
        where.append("status = ANY(%s)")
        args.append(list(statuses))
    if document_ids is not None:
        where.append("id = ANY(%s)")
        args.append(list(document_ids))
    if where:
        sql += " WHERE " + " AND ".join(where)
    return [_doc(r) for r in conn.execute(sql + " ORDER BY ingested_at, id", args)]


def get_document(conn: Any, document_id: str) -> DocumentInfo:
    row = conn.execute(f"SELECT {_DOC_COLUMNS} FROM documents WHERE id = %s", (document_id,)).fetchone()
    if row is None:
        raise NotFound(f"no document {document_id!r}", {"document_id": document_id})
    return _doc(row)


def find_by_sha(conn: Any, sha256: str) -> DocumentInfo | None:
    row = conn.execute(f"SELECT {_DOC_COLUMNS} FROM documents WHERE sha256 = %s", (sha256,)).fetchone()
    return None if row is None else _doc(row)


def find_by_path(conn: Any, path: str) -> list[DocumentInfo]:
    return [_doc(r) for r in conn.execute(f"SELECT {_DOC_COLUMNS} FROM documents WHERE path = %s ORDER BY id",
                                          (path,))]


_PAGE_INSERT = (f"INSERT INTO pages (document_id, number, text, ntok, tsv) "
                f"VALUES (%s, %s, %s, %s, to_tsvector('{CONFIG}', %s))")
_SECTION_INSERT = (
    "INSERT INTO sections (id, document_id, parent_id, position, depth, ordinal, title, ancestors, page_start,"
    " page_end, is_leaf, text, page_map, summary, ntok, tsv) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
    f" %s, %s, %s, %s, setweight(to_tsvector('{CONFIG}', %s), 'A') || setweight(to_tsvector('{CONFIG}', %s), 'B')"
    f" || setweight(to_tsvector('{CONFIG}', %s), 'C'))")
# A token that no query phrase holds, after the title and ancestor fields: PostgreSQL numbers the positions of
# concatenated fields on, so without it a phrase could match across two fields (FTS5 matches within one).
FIELD_END = " zzjsonlfieldend"


def find_by_title(conn: Any, title: str) -> list[DocumentInfo]:
    return [_doc(r) for r in conn.execute(f"SELECT {_DOC_COLUMNS} FROM documents WHERE title = %s ORDER BY id",
                                          (clean(title),))]


def save_document(conn: Any, parsed: ParsedDocument, *, document_id: str, sha256: str, path: str | None,
                  status: str = "approved", replace: Iterable[str] = (), meta: dict | None = None) -> DocumentInfo:
    """Insert a parsed document (inside the caller's transaction), first removing `replace` ids."""
    if status not in STATUSES:
        raise InvalidParams(f"unknown status {status!r}", fields=["status"])
    for old in replace:
        conn.execute("DELETE FROM documents WHERE id = %s", (old,))  # sections and pages cascade
    meta = user_meta(meta)
    card = parsed.card
    info = DocumentInfo(document_id=document_id, title=clean(card_title(card, meta, parsed.title)), path=path,
                        media_type=parsed.media_type, pages=len(parsed.pages), sections=len(parsed.sections),
                        status=status, ingested_at=now(), sha256=sha256, warnings=list(parsed.warnings),
                        card=None if card is None else card.merged(meta), meta=meta,
                        ocr_pages=sorted(parsed.page_words))
    inserted = conn.execute(
        f"INSERT INTO documents ({_DOC_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
        "ON CONFLICT DO NOTHING RETURNING id",
        (document_id, info.title, path and clean(path), info.media_type, sha256, info.pages, info.sections, status,
         info.ingested_at, orjson.dumps(info.warnings).decode(), _card_json(card),
         clean(orjson.dumps(meta).decode()), orjson.dumps(info.ocr_pages).decode())).fetchone()
    if inserted is None:  # the same content committed by another writer (or still in: the caller re-checked)
        existing = find_by_sha(conn, sha256) or get_document(conn, document_id)
        raise DuplicateContent(existing)
    with conn.cursor() as cur:
        pages = [clean(t) for t in parsed.pages]
        cur.executemany(_PAGE_INSERT, [(document_id, n, text, len(tokens(text)), words(text))
                                       for n, text in enumerate(pages, start=1)])
        rows = []
        for r in section_rows(parsed, document_id):
            title, ancestors, text = clean(r[6]), clean(r[7]), clean(r[11])
            t_title, t_anc, t_text = tokens(title), tokens(ancestors), tokens(text)
            rows.append((*r[:6], title, ancestors, r[8], r[9], bool(r[10]), text, r[12], clean(r[13]),
                         len(t_title) + len(t_anc) + len(t_text), " ".join(t_title) + FIELD_END,
                         " ".join(t_anc) + FIELD_END, " ".join(t_text)))
        cur.executemany(_SECTION_INSERT, rows)
        cur.executemany("INSERT INTO page_words (document_id, number, words) VALUES (%s, %s, %s)",
                        [(d, n, clean(w)) for d, n, w in word_rows(parsed, document_id)])
    return info


def remove_document(conn: Any, document_id: str) -> DocumentInfo:
    info = get_document(conn, document_id)
    conn.execute("DELETE FROM documents WHERE id = %s", (document_id,))
    return info


def set_status(conn: Any, document_id: str, status: str) -> tuple[DocumentInfo, str]:
    if status not in STATUSES:
        raise InvalidParams(f"unknown status {status!r}", fields=["status"])
    info = get_document(conn, document_id)
    previous = info.status
    conn.execute("UPDATE documents SET status = %s WHERE id = %s", (status, document_id))
    info.status = status
    return info, previous


def set_card(conn: Any, document_id: str, card: Card) -> DocumentInfo:
    """Store a derived card; the user's values (meta) still win, the title follows."""
    info = get_document(conn, document_id)
    conn.execute("UPDATE documents SET card = %s, title = %s WHERE id = %s",
                 (_card_json(card), clean(card_title(card, info.meta, info.title)), document_id))
    return get_document(conn, document_id)


def statement_pages(conn: Any, document_ids: Sequence[str]) -> dict[str, dict[int, str] | None]:
    """document id -> its statement pages (page number -> kind), None when not judged yet; absent ids left out."""
    ids = list(dict.fromkeys(document_ids))
    if not ids:
        return {}
    rows = conn.execute("SELECT id, statements FROM documents WHERE id = ANY(%s)", (ids,)).fetchall()
    return {r[0]: None if r[1] is None else {int(n): k for n, k in orjson.loads(r[1]).items()} for r in rows}


def set_statement_pages(conn: Any, document_id: str, kinds: dict[int, str]) -> None:
    """Store a document's statement pages (page number -> kind); NotFound when the document is absent."""
    value = orjson.dumps({str(n): k for n, k in sorted(kinds.items())}).decode()
    if conn.execute("UPDATE documents SET statements = %s WHERE id = %s", (value, document_id)).rowcount == 0:
        raise NotFound(f"no document {document_id!r}", {"document_id": document_id})


def set_meta(conn: Any, document_id: str, values: dict) -> DocumentInfo:
    """Merge the user's card values (a None value removes the user's value for that field)."""
    info = get_document(conn, document_id)
    row = conn.execute("SELECT card FROM documents WHERE id = %s", (document_id,)).fetchone()
    meta, title = retitled(info, row[0], values)
    conn.execute("UPDATE documents SET meta = %s, title = %s WHERE id = %s",
                 (clean(orjson.dumps(meta).decode()), clean(title), document_id))
    return get_document(conn, document_id)


def set_summaries(conn: Any, summaries: dict[str, str]) -> int:
    rows = [(clean(s), sid) for sid, s in summaries.items() if s]
    with conn.cursor() as cur:
        cur.executemany("UPDATE sections SET summary = %s WHERE id = %s", rows)
    return len(rows)


# ---------------------------------------------------------------- sections and pages

_SECTION_SQL = (
    "SELECT s.id, s.document_id, d.title, s.parent_id, s.position, s.depth, s.ordinal, s.title,"
    " s.ancestors, s.page_start, s.page_end, s.is_leaf, s.text, s.page_map, s.summary, d.status"
    " FROM sections s JOIN documents d ON d.id = s.document_id")


def _section(r: Sequence[Any]) -> SectionRow:
    return SectionRow(section_id=r[0], document_id=r[1], document_title=r[2], parent_id=r[3], position=r[4],
                      depth=r[5], ordinal=r[6], title=r[7], ancestors=orjson.loads(r[8]), page_start=r[9],
                      page_end=r[10], is_leaf=bool(r[11]), text=r[12],
                      page_map=[(o, p) for o, p in orjson.loads(r[13])], summary=r[14], status=r[15])


def child_ids(conn: Any, section_id: str) -> list[str]:
    return [r[0] for r in conn.execute("SELECT id FROM sections WHERE parent_id = %s ORDER BY position",
                                       (section_id,))]


def get_section(conn: Any, section_id: str) -> SectionRow:
    row = conn.execute(_SECTION_SQL + " WHERE s.id = %s", (section_id,)).fetchone()
    if row is None:
        raise NotFound(f"no section {section_id!r}", {"section_id": section_id})
    return _section(row)


def document_sections(conn: Any, document_id: str) -> list[SectionRow]:
    return [_section(r) for r in conn.execute(_SECTION_SQL + " WHERE s.document_id = %s ORDER BY s.position",
                                              (document_id,))]


def get_page(conn: Any, document_id: str, number: int) -> PageRow:
    doc = get_document(conn, document_id)
    row = conn.execute("SELECT text FROM pages WHERE document_id = %s AND number = %s",
                       (document_id, number)).fetchone()
    if row is None:
        raise NotFound(f"document {document_id!r} has no page {number} (it has {doc.pages})",
                       {"document_id": document_id, "page": number})
    return PageRow(document_id, doc.title, number, row[0], doc.status)


def page_words(conn: Any, pages: Sequence[tuple[str, int]]) -> dict[tuple[str, int], list[list[float]]]:
    """The OCR words of these pages (pages not read by OCR left out)."""
    if not pages:
        return {}
    docs, nums = [d for d, _ in pages], [n for _, n in pages]
    return {(d, n): orjson.loads(w) for d, n, w in conn.execute(
        "SELECT w.document_id, w.number, w.words FROM page_words w "
        "JOIN unnest(%s::text[], %s::int[]) AS k(d, n) ON w.document_id = k.d AND w.number = k.n", (docs, nums))}


def page_range(conn: Any, document_id: str, start: int, end: int) -> dict[int, str]:
    return dict(conn.execute("SELECT number, text FROM pages WHERE document_id = %s AND number BETWEEN %s AND %s "
                             "ORDER BY number", (document_id, start, end)).fetchall())


def outline(conn: Any, document_id: str, max_depth: int | None = None) -> tuple[DocumentInfo, list[OutlineNode]]:
    doc = get_document(conn, document_id)
    sql = ("SELECT id, parent_id, title, depth, page_start, page_end FROM sections WHERE document_id = %s"
           + (" AND depth <= %s" if max_depth is not None else "") + " ORDER BY position")
    args: tuple = (document_id, max_depth) if max_depth is not None else (document_id,)
    roots: list[OutlineNode] = []
    nodes: dict[str, OutlineNode] = {}
    for sid, parent_id, title, depth, start, end in conn.execute(sql, args):
        node = OutlineNode(sid, title, depth, start, end)
        nodes[sid] = node
        parent = nodes.get(parent_id) if parent_id else None
        (parent.children if parent is not None else roots).append(node)
    return doc, roots
