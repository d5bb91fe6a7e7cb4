"""The FTS5 statements: scope resolution, BM25 over leaf sections and over pages, row loading.

Each search is one statement returning at most `limit` rows ordered by score; Python re-ranks only those.
Scores are returned positive (FTS5's bm25() is negative, lower is better).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from jsonl_engine.errors import NotFound

# bm25() column weights for sections_fts(title, ancestors, text).
SECTION_WEIGHTS = (4.0, 1.5, 1.0)


@dataclass(frozen=True, slots=True)
class Scope:
    """The documents a search may touch: id -> (title, status), plus the rowid windows that bound them."""

    documents: dict[str, tuple[str, str]]
    scoped: bool  # True when the caller named documents
    page_rows: tuple[int, int] | None
    section_rows: tuple[int, int] | None

    def sql(self, column: str) -> tuple[str, list[str]]:
        ids = sorted(self.documents)
        return f"{column} IN ({','.join('?' * len(ids))})", ids


def resolve_scope(conn: sqlite3.Connection, document_ids: Sequence[str] | None,
                  statuses: Sequence[str]) -> Scope:
    """Documents in scope with one of `statuses`; unknown ids in `document_ids` raise NotFound."""
    if document_ids is not None:
        wanted = sorted(set(document_ids))
        rows = conn.execute(f"SELECT id, title, status FROM documents WHERE id IN ({','.join('?' * len(wanted))})",
                            wanted).fetchall() if wanted else []
        found = {r[0] for r in rows}
        missing = [d for d in wanted if d not in found]
        if missing:
            raise NotFound(f"unknown document id(s): {', '.join(missing[:5])}", {"document_ids": missing[:20]})
    else:
        rows = conn.execute(f"SELECT id, title, status FROM documents WHERE status IN "
                            f"({','.join('?' * len(statuses))})", list(statuses)).fetchall() if statuses else []
    docs = {r[0]: (r[1], r[2]) for r in rows if r[2] in statuses}
    page_rows = section_rows = None
    if docs and document_ids is not None:
        ids = sorted(docs)
        marks = ",".join("?" * len(ids))
        lo, hi = conn.execute(f"SELECT MIN(rowid), MAX(rowid) FROM pages WHERE document_id IN ({marks})", ids).fetchone()
        page_rows = (lo, hi) if lo is not None else (0, -1)
        lo, hi = conn.execute(f"SELECT MIN(rowid), MAX(rowid) FROM sections WHERE document_id IN ({marks})",
                              ids).fetchone()
        section_rows = (lo, hi) if lo is not None else (0, -1)
    return Scope(documents=docs, scoped=document_ids is not None, page_rows=page_rows, section_rows=section_rows)


def _window(rows: tuple[int, int] | None, column: str) -> tuple[str, list[int]]:
    if rows is None:
        return "", []
    return f" AND {column} BETWEEN ? AND ?", [rows[0], rows[1]]


def search_pages(conn: sqlite3.Connection, match: str, scope: Scope, limit: int) -> list[tuple[str, int, float]]:
    """Top pages by BM25: (document_id, page number, score)."""
    where, ids = scope.sql("p.document_id")
    window, bounds = _window(scope.page_rows, "pages_fts.rowid")
    sql = ("SELECT p.document_id, p.number, -bm25(pages_fts) AS s FROM pages_fts "
           "JOIN pages p ON p.rowid = pages_fts.rowid "
           f"WHERE pages_fts MATCH ?{window} AND {where} ORDER BY s DESC, p.rowid LIMIT ?")
    return [(r[0], r[1], r[2]) for r in conn.execute(sql, [match, *bounds, *ids, limit])]


def search_sections(conn: sqlite3.Connection, match: str, scope: Scope, limit: int) -> list[tuple[int, float]]:
    """Top leaf sections by column-weighted BM25: (section rowid, score)."""
    where, ids = scope.sql("s.document_id")
    window, bounds = _window(scope.section_rows, "sections_fts.rowid")
    w = ", ".join(str(x) for x in SECTION_WEIGHTS)
    sql = (f"SELECT s.rowid, -bm25(sections_fts, {w}) AS sc FROM sections_fts "
           "JOIN sections s ON s.rowid = sections_fts.rowid "
           f"WHERE sections_fts MATCH ?{window} AND s.is_leaf = 1 AND {where} ORDER BY sc DESC, s.rowid LIMIT ?")
    return [(r[0], r[1]) for r in conn.execute(sql, [match, *bounds, *ids, limit])]


SECTION_COLUMNS = "rowid, id, document_id, title, ancestors, page_start, page_end"


def load_sections(conn: sqlite3.Connection, rowids: Sequence[int]) -> list[sqlite3.Row]:
    if not rowids:
        return []
    marks = ",".join("?" * len(rowids))
    return conn.execute(f"SELECT {SECTION_COLUMNS} FROM sections WHERE rowid IN ({marks})", list(rowids)).fetchall()


def leaves_on_pages(conn: sqlite3.Connection, pages: Sequence[tuple[str, int]]) -> list[sqlite3.Row]:
    """Leaf sections of each document that overlap the given pages."""
    by_doc: dict[str, list[int]] = {}
    for doc, page in pages:
        by_doc.setdefault(doc, []).append(page)
    rows: list[sqlite3.Row] = []
    for doc, nums in sorted(by_doc.items()):
        lo, hi = min(nums), max(nums)
        wanted = set(nums)
        for row in conn.execute(f"SELECT {SECTION_COLUMNS} FROM sections WHERE document_id = ? AND is_leaf = 1 "
                                "AND page_start <= ? AND page_end >= ?", (doc, hi, lo)):
            if any(row["page_start"] <= n <= row["page_end"] for n in wanted):
                rows.append(row)
    return rows


def load_texts(conn: sqlite3.Connection, rowids: Sequence[int]) -> dict[int, tuple[str, str]]:
    """rowid -> (text, page_map JSON) for the sections about to be returned."""
    if not rowids:
        return {}
    marks = ",".join("?" * len(rowids))
    return {r[0]: (r[1], r[2]) for r in conn.execute(
        f"SELECT rowid, text, page_map FROM sections WHERE rowid IN ({marks})", list(rowids))}


def load_pages(conn: sqlite3.Connection, pages: Sequence[tuple[str, int]]) -> dict[tuple[str, int], str]:
    out: dict[tuple[str, int], str] = {}
    for doc, num in pages:
        row = conn.execute("SELECT text FROM pages WHERE document_id = ? AND number = ?", (doc, num)).fetchone()
        if row is not None:
            out[(doc, num)] = row[0]
    return out
