"""The FTS5 statements of the SQLite text index: BM25 over pages, sections and cover pages, phrase counts.

Phrases arrive as token tuples (`Phrase`) and are rendered here into FTS5 MATCH syntax: each phrase quoted,
all OR-ed (tokens are runs of letters and digits only, so they never carry FTS syntax).
Each search is one statement returning at most `limit` rows ordered by score; Python re-ranks only those.
Scores are returned positive (FTS5's bm25() is negative, lower is better). With `stats` (APSW connections), a
statement scores with `bm25.FUNCTION` from the store's cached statistics instead of bm25(): the same scores,
without bm25()'s pass over the whole index counting each phrase's rows. A document's pages and sections
are written in one transaction, so their rowids form a contiguous window: a rowid range lets FTS5 skip
every other document (a join filter still checks the document, so the window is only an accelerator; a search of
one window by the FTS table alone, `search_window`, leaves that check to the store, which maps its rowids).
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass

from jsonl_engine.store.sqlite import bm25
from jsonl_engine.store.sqlite.driver import Connection, tuples
from jsonl_engine.store.types import PageKey, Phrase, Scope, SectionWeights

# Windows of documents whose rows follow one another are searched as one; never across another document's rows:
# a statement over a window holding them would return that document's pages for a search "within" others (a
# library ingested in another order then ranked differently: issue 23, bench/determinism.py).
MERGE_GAP = 1

Window = tuple[int, int]
FTS_TABLE = {"pages": "pages_fts", "sections": "sections_fts", "covers": "covers_fts"}
# The rows a search joins its FTS rows with (their document, a page's number): a section's in section_refs
# (migration 9), many to a page of the file, not its row in sections (its text with it).
ROWS = {"pages": "pages", "sections": "section_refs"}


@dataclass(frozen=True)
class Stats:
    """What bm25() would compute for one statement, from the store's cache: the table's average row length in
    tokens, and each phrase's IDF in the order of the MATCH expression."""

    avgdl: float
    idfs: tuple[float, ...]


def totals(conn: Connection, kind: str) -> tuple[int, int]:
    """The FTS table's row count and token total (its averages record), as bm25() reads them."""
    table = FTS_TABLE[kind]
    row = conn.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
    return bm25.totals(None if row is None else row[0])


def _score(table: str, stats: Stats | None, weights: SectionWeights | None = None) -> tuple[str, list[float]]:
    """The score column (positive: higher is better) and its arguments: bm25() without `stats`, else the same
    BM25 from them (weights stay SQL literals in both, so SQLite parses them into the same doubles)."""
    w = "" if weights is None else ", " + ", ".join(str(x) for x in weights)
    if stats is None:
        return f"-bm25({table}{w})", []
    return f"{bm25.FUNCTION}({table}, ?{w}{', ?' * len(stats.idfs)})", [stats.avgdl, *stats.idfs]


def quote(phrase: Phrase) -> str:
    """One FTS5 phrase."""
    return '"' + " ".join(phrase) + '"'


def match(phrases: Sequence[Phrase]) -> str:
    """The FTS5 MATCH expression: an OR of quoted phrases."""
    return " OR ".join(quote(p) for p in phrases)


def scope_filter(scope: Scope, column: str) -> tuple[str, list[str]]:
    if scope.complete:
        return "1", []
    ids = sorted(scope.documents)
    return f"{column} IN ({','.join('?' * len(ids))})", ids


def _marks(n: int) -> str:
    return ",".join("?" * n)


def windows(conn: Connection, table: str, document_ids: Sequence[str]) -> list[Window]:
    """Rowid windows of the documents' rows in `table` ("pages" or "sections"), merged when one follows the other."""
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


# What a search returns of a row, by table: its alias, its key columns (in the statement over the FTS table alone;
# in the per-window statement), and the key's names there.
_KEYS = {"pages": ("p", "p.document_id, p.number", "p.document_id AS d, p.number AS n, ", "d, n"),
         "sections": ("s", "s.rowid", "", "r")}


def search(conn: Connection, kind: str, match: str, scope: Scope, limit: int, window: Window | None = None,
           stats: Stats | None = None, weights: SectionWeights | None = None) -> list[tuple]:
    """Top rows of `kind` by BM25 (sections: column-weighted by `weights`), best first: pages as (document_id,
    page number, score), sections as (section rowid, score). Sections without text are dropped later (an internal
    node may match on its title alone)."""
    fts, (a, keys, _, _) = FTS_TABLE[kind], _KEYS[kind]
    rng, bounds = ("", []) if window is None else (f" AND {fts}.rowid BETWEEN ? AND ?", list(window))
    score, sargs = _score(fts, stats, weights)
    if scope.complete:  # rank in the FTS table alone, then look up only the rows kept
        sql = (f"SELECT {keys}, f.s FROM (SELECT rowid, {score} AS s FROM {fts} WHERE {fts} MATCH ?{rng} "
               f"ORDER BY s DESC, rowid LIMIT ?) AS f JOIN {ROWS[kind]} {a} ON {a}.rowid = f.rowid ORDER BY f.s DESC, {a}.rowid")
        return [tuple(r) for r in conn.execute(sql, [*sargs, match, *bounds, limit])]
    where, ids = scope_filter(scope, f"{a}.document_id")
    sql = (f"SELECT {keys}, {score} AS s FROM {fts} JOIN {ROWS[kind]} {a} ON {a}.rowid = {fts}.rowid "
           f"WHERE {fts} MATCH ?{rng} AND {where} ORDER BY s DESC, {a}.rowid LIMIT ?")
    return [tuple(r) for r in conn.execute(sql, [*sargs, match, *bounds, *ids, limit])]


def search_window(conn: Connection, kind: str, match: str, limit: int, window: Window, stats: Stats | None = None,
                  weights: SectionWeights | None = None) -> list[tuple[int, float]]:
    """`search` of one window by its FTS table alone: (rowid, score), best first, without the join with the rows
    (a page's row holds its text: a row read per matching page, most of them cold). The store maps the rowids to
    pages or sections and checks they are all of the documents searched (`SqliteStore._in_scope`): the rows of a
    document are written in one transaction, so a window of searched documents holds only theirs, and the top
    rows of the window are then the top rows `search` returns with its document filter."""
    fts = FTS_TABLE[kind]
    score, sargs = _score(fts, stats, weights)
    sql = (f"SELECT rowid, {score} AS s FROM {fts} WHERE {fts} MATCH ? AND rowid BETWEEN ? AND ? "
           "ORDER BY s DESC, rowid LIMIT ?")
    return list(tuples(conn, sql, [*sargs, match, *window, limit]))


def page_numbers(conn: Connection, document_id: str) -> dict[int, int]:
    """A document's pages, rowid -> page number (read from the (document_id, number) index alone)."""
    return dict(tuples(conn, "SELECT rowid, number FROM pages WHERE document_id = ?", (document_id,)))


def _in_windows(column: str, wins: Sequence[Window]) -> tuple[str, list[int]]:
    """SQL for rows of `column` inside the windows: the span filter FTS5 uses, then each window's test (their
    arguments follow in that order)."""
    tests = " OR ".join(f"{column} BETWEEN ? AND ?" for _ in wins)
    args = [min(w[0] for w in wins), max(w[1] for w in wins), *(x for w in wins for x in w)]
    return f"{column} BETWEEN ? AND ? AND ({tests})", args


def best(rows: list[tuple], limit: int) -> list[tuple]:
    """The best `limit` of rows gathered window by window (the windows in rowid order, each one's rows best first,
    ties by rowid; a row's score last): best first, ties by rowid, as one statement over every window orders them
    (the sort is stable). The search of several documents returns its best `limit` rows, not each window's: which
    documents' rows follow one another (an ingest's order) must not change what it finds, and PostgreSQL's search
    returns the same rows."""
    return heapq.nsmallest(limit, rows, key=lambda row: -row[-1])


def search_in(conn: Connection, kind: str, match: str, scope: Scope, limit: int, wins: Sequence[Window],
              stats: Stats | None = None, weights: SectionWeights | None = None) -> list[tuple]:
    """`search` of the windows: their best `limit` rows, best first, ties by rowid. With bm25(), all in one
    statement: FTS5 computes bm25's corpus-wide phrase counts once per statement, and only for rows inside a
    window; but FTS5 matches every row between the first window and the last, a span as large as the library when
    the documents are far apart. With `stats` no statement counts anything: one statement per window, each
    matching only its own rows (each window's best `limit`, then the best of those: `best`)."""
    if len(wins) == 1 or stats is not None:
        return best([row for win in wins for row in search(conn, kind, match, scope, limit, win, stats, weights)],
                    limit)
    fts, (a, _, keys, names) = FTS_TABLE[kind], _KEYS[kind]
    inside, args = _in_windows(f"{fts}.rowid", wins)
    where, ids = scope_filter(scope, f"{a}.document_id")
    score, sargs = _score(fts, stats, weights)
    sql = (f"WITH f AS (SELECT {a}.rowid AS r, {keys}{score} AS s FROM {fts} "
           f"JOIN {ROWS[kind]} {a} ON {a}.rowid = {fts}.rowid WHERE {fts} MATCH ? AND {inside} AND {where}) "
           f"SELECT {names}, s FROM f ORDER BY s DESC, r LIMIT ?")
    return [tuple(r) for r in conn.execute(sql, [*sargs, match, *args, *ids, limit])]


def pages_holding(conn: Connection, match: str, document_ids: Sequence[str]) -> list[PageKey]:
    """The pages of the documents matching `match`, by document id and number (no bm25: no IDF pass)."""
    out: list[PageKey] = []
    ids = sorted(set(document_ids))
    for lo, hi in windows(conn, "pages", ids):
        out += [(r[0], r[1]) for r in conn.execute(
            "SELECT p.document_id, p.number FROM pages_fts JOIN pages p ON p.rowid = pages_fts.rowid "
            f"WHERE pages_fts MATCH ? AND pages_fts.rowid BETWEEN ? AND ? AND p.document_id IN ({_marks(len(ids))})",
            [match, lo, hi, *ids])]
    return sorted(out)


def search_covers(conn: Connection, match: str, scope: Scope, stats: Stats | None = None) -> dict[str, float]:
    """BM25 of each in-scope document's first pages (issuer, form, period): document_id -> best score."""
    where, ids = scope_filter(scope, "p.document_id")
    column, sargs = _score("covers_fts", stats)
    sql = (f"SELECT p.document_id, {column} FROM covers_fts JOIN pages p ON p.rowid = covers_fts.rowid "
           f"WHERE covers_fts MATCH ? AND {where}")
    best: dict[str, float] = {}
    for doc, score in conn.execute(sql, [*sargs, match, *ids]):
        best[doc] = max(score, best.get(doc, score))
    return best


def generation(conn: Connection) -> tuple:
    """Changes whenever a document is added or removed: the count, the newest rowids, and the ids of the
    newest documents (SQLite reuses the top rowid after the newest row is deleted)."""
    row = conn.execute("SELECT (SELECT COUNT(*) FROM documents), (SELECT MAX(rowid) FROM pages), "
                       "(SELECT MAX(rowid) FROM sections), (SELECT group_concat(id) FROM "
                       "(SELECT id FROM documents ORDER BY rowid DESC LIMIT 3))").fetchone()
    return (int(row[0] or 0), int(row[1] or 0), int(row[2] or 0), row[3] or "")


# Frequencies of query phrases (cached by the store per KB generation): a phrase found in a large share of
# the pages carries almost no BM25 weight (its IDF is near zero) yet dominates the cost of a statement.
FREQUENCY_SQL = {
    "pages": "SELECT COUNT(*) FROM pages_fts WHERE pages_fts MATCH ?",
    "covers": "SELECT COUNT(*) FROM covers_fts WHERE covers_fts MATCH ?",
    "sections": "SELECT COUNT(*) FROM sections_fts WHERE sections_fts MATCH ?",
}


def frequency(conn: Connection, kind: str, phrase: Phrase) -> int:
    """Rows of `kind` ("pages", "covers", "sections"; "documents": `document_frequency`) holding the phrase."""
    return conn.execute(FREQUENCY_SQL[kind], (quote(phrase),)).fetchone()[0]


def page_spans(conn: Connection) -> tuple[list[int], list[int]]:
    """The rowid window of each document's pages (written in one transaction: contiguous), as the sorted first
    rowids and the last rowid of each."""
    spans = sorted((r[0], r[1]) for r in conn.execute("SELECT MIN(rowid), MAX(rowid) FROM pages GROUP BY document_id"))
    return [lo for lo, _ in spans], [hi for _, hi in spans]


# document_frequency looks up the window of each of the first documents holding a phrase with its own statement;
# past this many it reads every document's window (one scan of the pages' index, about 30 ms at 265k pages, kept
# per KB generation by the store): most phrases counted there are in a few documents.
SPAN_LOOKUPS = 32


def document_frequency(conn: Connection, phrase: Phrase,
                       spans: Callable[[], tuple[list[int], list[int]]]) -> int:
    """Documents with a page holding the phrase: from the first matching page, skip to the end of its document's
    window, and seek the next match after it (FTS5 seeks a doclist by rowid). One statement per document
    holding the phrase instead of a lookup of the pages table per matching page (its rows are the pages' text:
    a library of 265k pages reads gigabytes of them): the same count, 2-3x faster on 577 filings. The window's
    end is looked up for the first SPAN_LOOKUPS documents, then taken from `spans()` (`page_spans`)."""
    match, after, found = quote(phrase), -1, 0
    starts: list[int] | None = None
    ends: list[int] = []
    while True:
        row = conn.execute("SELECT rowid FROM pages_fts WHERE pages_fts MATCH ? AND rowid > ? ORDER BY rowid "
                           "LIMIT 1", (match, after)).fetchone()
        if row is None:
            return found
        found += 1
        if starts is None and found <= SPAN_LOOKUPS:
            end = conn.execute("SELECT MAX(rowid) FROM pages WHERE document_id = "
                               "(SELECT document_id FROM pages WHERE rowid = ?)", (row[0],)).fetchone()[0]
            after = max(end if end is not None else row[0], row[0])
            continue
        if starts is None:
            starts, ends = spans()
        i = bisect.bisect_right(starts, row[0]) - 1
        after = max(ends[i], row[0]) if i >= 0 else row[0]


FTS_TABLES = ("pages_fts", "sections_fts", "covers_fts")
MERGE_STEP_PAGES = 1000  # index pages written per 'merge' command (each its own short write transaction)
MAX_MERGE_STEPS = 10_000  # a bound, never reached in practice: 10M index pages (about 40 GB) per call


def merge_segments(write: Callable[[], AbstractContextManager[Connection]]) -> None:
    """Merge each FTS index's b-tree segments (any level holding two: usermerge=2, migration 5) until a 'merge'
    command does nothing (FTS5 then changes fewer than 2 rows). Queries read every segment of an index, so a
    library written one document at a time searches faster once merged. Rankings do not change: the index holds
    the same entries. Not 'optimize': it adds a level to the index each time it runs (4 -> 6 levels measured on
    SQLite 3.40), and FTS5 allows a fixed number of levels."""
    for table in FTS_TABLES:
        for _ in range(MAX_MERGE_STEPS):
            with write() as conn:
                before = conn.total_changes
                conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('merge', {MERGE_STEP_PAGES})")
                done = conn.total_changes - before < 2
            if done:
                break
