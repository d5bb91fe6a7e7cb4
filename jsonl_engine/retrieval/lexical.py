"""The FTS5 statements: scope resolution, BM25 over pages, sections and cover pages, row loading.

Each search is one statement returning at most `limit` rows ordered by score; Python re-ranks only those.
Scores are returned positive (FTS5's bm25() is negative, lower is better). A document's pages and sections
are written in one transaction, so their rowids form a contiguous window: a rowid range lets FTS5 skip
every other document (a join filter still checks the document, so the window is only an accelerator).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from jsonl_engine.errors import NotFound
from jsonl_engine.store.repo import COVER_PAGES

# bm25() column weights for sections_fts(title, ancestors, text).
SECTION_WEIGHTS = (4.0, 1.5, 1.0)
MERGE_GAP = 1000  # rowids between two windows searched as one
SPAN_BACK = 3  # a retrievable section starts at most this many pages before a page it covers

Window = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Scope:
    """The documents a search may touch: id -> (title, status)."""

    documents: dict[str, tuple[str, str]]
    complete: bool  # True when every document in the KB is in scope (no filter needed)

    def sql(self, column: str) -> tuple[str, list[str]]:
        if self.complete:
            return "1", []
        ids = sorted(self.documents)
        return f"{column} IN ({','.join('?' * len(ids))})", ids


def _marks(n: int) -> str:
    return ",".join("?" * n)


def resolve_scope(conn: sqlite3.Connection, document_ids: Sequence[str] | None,
                  statuses: Sequence[str]) -> Scope:
    """Documents in scope with one of `statuses`; unknown ids in `document_ids` raise NotFound."""
    if document_ids is not None:
        wanted = sorted(set(document_ids))
        rows = conn.execute(f"SELECT id, title, status FROM documents WHERE id IN ({_marks(len(wanted))})",
                            wanted).fetchall() if wanted else []
        found = {r[0] for r in rows}
        missing = [d for d in wanted if d not in found]
        if missing:
            raise NotFound(f"unknown document id(s): {', '.join(missing[:5])}", {"document_ids": missing[:20]})
        total = conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
    else:
        rows = conn.execute("SELECT id, title, status FROM documents").fetchall()
        total = len(rows)
    docs = {r[0]: (r[1], r[2]) for r in rows if r[2] in statuses}
    return Scope(documents=docs, complete=len(docs) == total)


def windows(conn: sqlite3.Connection, table: str, document_ids: Sequence[str]) -> list[Window]:
    """Rowid windows of the documents' rows in `table` ("pages" or "sections"), merged when adjacent."""
    if not document_ids:
        return []
    ids = sorted(document_ids)
    spans = sorted((r[0], r[1]) for r in conn.execute(
        f"SELECT MIN(rowid), MAX(rowid) FROM {table} WHERE document_id IN ({_marks(len(ids))}) "
        "GROUP BY document_id", ids) if r[0] is not None)
    merged: list[Window] = []
    for lo, hi in spans:  # one statement for near windows: each statement pays a fixed IDF pass
        if merged and lo - merged[-1][1] <= MERGE_GAP:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    return merged


def search_pages(conn: sqlite3.Connection, match: str, scope: Scope, limit: int,
                 window: Window | None = None) -> list[tuple[str, int, float]]:
    """Top pages by BM25: (document_id, page number, score)."""
    rng, bounds = ("", []) if window is None else (" AND rowid BETWEEN ? AND ?", list(window))
    if scope.complete:  # rank in the FTS table alone, then look up only the pages kept
        sql = ("SELECT p.document_id, p.number, f.s FROM (SELECT rowid, -bm25(pages_fts) AS s FROM pages_fts "
               f"WHERE pages_fts MATCH ?{rng} ORDER BY s DESC, rowid LIMIT ?) AS f "
               "JOIN pages p ON p.rowid = f.rowid ORDER BY f.s DESC, p.rowid")
        return [(r[0], r[1], r[2]) for r in conn.execute(sql, [match, *bounds, limit])]
    where, ids = scope.sql("p.document_id")
    sql = ("SELECT p.document_id, p.number, -bm25(pages_fts) AS s FROM pages_fts "
           "JOIN pages p ON p.rowid = pages_fts.rowid "
           f"WHERE pages_fts MATCH ?{rng.replace('rowid', 'pages_fts.rowid')} AND {where} "
           "ORDER BY s DESC, p.rowid LIMIT ?")
    return [(r[0], r[1], r[2]) for r in conn.execute(sql, [match, *bounds, *ids, limit])]


def search_sections(conn: sqlite3.Connection, match: str, scope: Scope, limit: int,
                    window: Window | None = None) -> list[tuple[int, float]]:
    """Top sections by column-weighted BM25: (section rowid, score). Sections without text are dropped
    later (an internal node may match on its title alone)."""
    rng, bounds = ("", []) if window is None else (" AND sections_fts.rowid BETWEEN ? AND ?", list(window))
    w = ", ".join(str(x) for x in SECTION_WEIGHTS)
    if scope.complete:
        sql = (f"SELECT rowid, -bm25(sections_fts, {w}) AS sc FROM sections_fts WHERE sections_fts MATCH ?{rng} "
               "ORDER BY sc DESC, rowid LIMIT ?")
        return [(r[0], r[1]) for r in conn.execute(sql, [match, *bounds, limit])]
    where, ids = scope.sql("s.document_id")
    sql = (f"SELECT s.rowid, -bm25(sections_fts, {w}) AS sc FROM sections_fts "
           "JOIN sections s ON s.rowid = sections_fts.rowid "
           f"WHERE sections_fts MATCH ?{rng} AND {where} ORDER BY sc DESC, s.rowid LIMIT ?")
    return [(r[0], r[1]) for r in conn.execute(sql, [match, *bounds, *ids, limit])]


def search_covers(conn: sqlite3.Connection, match: str, scope: Scope) -> dict[str, float]:
    """BM25 of each in-scope document's first pages (issuer, form, period): document_id -> best score."""
    where, ids = scope.sql("p.document_id")
    sql = ("SELECT p.document_id, -bm25(covers_fts) FROM covers_fts JOIN pages p ON p.rowid = covers_fts.rowid "
           f"WHERE covers_fts MATCH ? AND {where}")
    best: dict[str, float] = {}
    for doc, score in conn.execute(sql, [match, *ids]):
        best[doc] = max(score, best.get(doc, score))
    return best


# Internal nodes may hold text of their own (a preamble); their page range is the subtree's, so their own
# page map comes along to place them.
SECTION_COLUMNS = ("rowid, id, document_id, title, ancestors, page_start, page_end, length(text) AS text_len, "
                   "CASE WHEN is_leaf THEN NULL ELSE page_map END AS own_map")


def load_sections(conn: sqlite3.Connection, rowids: Sequence[int]) -> list[sqlite3.Row]:
    if not rowids:
        return []
    return conn.execute(f"SELECT {SECTION_COLUMNS} FROM sections WHERE rowid IN ({_marks(len(rowids))})",
                        list(rowids)).fetchall()


def sections_on_pages(conn: sqlite3.Connection, pages: Sequence[tuple[str, int]]) -> list[sqlite3.Row]:
    """Sections with text that start on, or shortly before, each given page and reach it."""
    rows: list[sqlite3.Row] = []
    seen: set[int] = set()
    for doc, page in pages:
        for row in conn.execute(f"SELECT {SECTION_COLUMNS} FROM sections WHERE document_id = ? "
                                "AND page_start BETWEEN ? AND ? AND page_end >= ?",
                                (doc, page - SPAN_BACK, page, page)):
            if row["rowid"] not in seen:
                seen.add(row["rowid"])
                rows.append(row)
    return rows


def load_texts(conn: sqlite3.Connection, rowids: Sequence[int]) -> dict[int, tuple[str, str]]:
    """rowid -> (text, page_map JSON) for the sections about to be returned."""
    if not rowids:
        return {}
    return {r[0]: (r[1], r[2]) for r in conn.execute(
        f"SELECT rowid, text, page_map FROM sections WHERE rowid IN ({_marks(len(rowids))})", list(rowids))}


def load_pages(conn: sqlite3.Connection, pages: Sequence[tuple[str, int]]) -> dict[tuple[str, int], str]:
    by_doc: dict[str, list[int]] = {}
    for doc, num in pages:
        by_doc.setdefault(doc, []).append(num)
    out: dict[tuple[str, int], str] = {}
    for doc, nums in by_doc.items():
        for num, text in conn.execute(f"SELECT number, text FROM pages WHERE document_id = ? AND number IN "
                                      f"({_marks(len(nums))})", [doc, *nums]):
            out[(doc, num)] = text
    return out


# Document frequencies of query phrases, cached per KB generation: a phrase found in a large share of the
# pages carries almost no BM25 weight (its IDF is near zero) yet dominates the cost of a statement.
_DF: dict[tuple[tuple, str], int] = {}
_DF_MAX = 100_000


def generation(conn: sqlite3.Connection) -> tuple:
    """Changes whenever a document is added or removed: the count, the newest rowids, and the ids of the
    newest documents (SQLite reuses the top rowid after the newest row is deleted)."""
    row = conn.execute("SELECT (SELECT COUNT(*) FROM documents), (SELECT MAX(rowid) FROM pages), "
                       "(SELECT MAX(rowid) FROM sections), (SELECT group_concat(id) FROM "
                       "(SELECT id FROM documents ORDER BY rowid DESC LIMIT 3))").fetchone()
    return (int(row[0] or 0), int(row[1] or 0), int(row[2] or 0), row[3] or "")


def _cached(key: tuple, compute) -> int:
    """A value of the per-process frequency cache (computed once per KB generation; thread-safe enough:
    a racing thread computes the same value again)."""
    value = _DF.get(key)
    if value is None:
        if len(_DF) > _DF_MAX:
            _DF.clear()
        value = _DF[key] = compute()
    return value


def page_frequencies(conn: sqlite3.Connection, gen: tuple, phrases: Sequence[str]) -> dict[str, int]:
    """phrase (an FTS5 phrase string) -> number of pages holding it."""
    sql = "SELECT COUNT(*) FROM pages_fts WHERE pages_fts MATCH ?"
    return {p: _cached((gen, p), lambda p=p: conn.execute(sql, (p,)).fetchone()[0]) for p in phrases}


def page_count(conn: sqlite3.Connection, gen: tuple) -> int:
    return _cached((gen, ""), lambda: conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0])


def cover_frequencies(conn: sqlite3.Connection, gen: tuple, phrases: Sequence[str]) -> dict[str, int]:
    """phrase -> number of cover pages (first pages of documents) holding it."""
    sql = "SELECT COUNT(*) FROM covers_fts WHERE covers_fts MATCH ?"
    return {p: _cached((gen, "covers:" + p), lambda p=p: conn.execute(sql, (p,)).fetchone()[0]) for p in phrases}


def cover_count(conn: sqlite3.Connection, gen: tuple) -> int:
    sql = f"SELECT COUNT(*) FROM pages WHERE number <= {COVER_PAGES}"
    return _cached((gen, "covers:"), lambda: conn.execute(sql).fetchone()[0])


def document_frequencies(conn: sqlite3.Connection, gen: tuple, phrases: Sequence[str]) -> dict[str, int]:
    """phrase -> number of documents with a page holding it (an issuer's name: few; a financial term: most)."""
    sql = ("SELECT COUNT(DISTINCT p.document_id) FROM pages_fts JOIN pages p ON p.rowid = pages_fts.rowid "
           "WHERE pages_fts MATCH ?")
    return {p: _cached((gen, "docs:" + p), lambda p=p: conn.execute(sql, (p,)).fetchone()[0]) for p in phrases}


def page_counts(conn: sqlite3.Connection, document_ids: Sequence[str]) -> dict[str, int]:
    if not document_ids:
        return {}
    return {r[0]: r[1] for r in conn.execute(
        f"SELECT id, pages FROM documents WHERE id IN ({_marks(len(document_ids))})", list(document_ids))}
