"""The full-text statements of the PostgreSQL store: scope resolution, BM25 over pages, sections and cover pages,
row loading (the counterpart of sqlite/search.py).

Ranking is FTS5's bm25() computed in SQL, so both backends rank alike: for each phrase,
    idf * (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * D / avgdl)),  k1 = 1.2, b = 0.75,
summed over the query's phrases, where
- tf is the phrase's occurrences in the row, each counted with the weight of its field (sections: title,
  ancestors, text as tsvector weights A, B, C). `ts_rank_cd(weights, tsv, phrase, 0)` is exactly that sum
  for a one-phrase query (every occurrence is a cover of its own, worth its label's weight); weights above 1
  are scaled into [0, 1] and the result scaled back;
- D is the row's token count (all fields), avgdl the table's mean (cached per KB generation);
- idf = ln((N - n + 0.5) / (n + 0.5)) (at least 1e-6) with n the rows holding the phrase, N all rows (FTS5
  counts over the whole table, whatever the scope: so does this).
The GIN index finds the rows holding any phrase (`tsv @@ q1 || q2 ...`); the score is computed on those only,
each phrase's tf once per row (an inner query) on the row's tsvector read once, from tsquery constants the
server stemmed once per phrase.
Reader sessions run with `enable_seqscan = off`: a `tsv @@` filter on a sequential scan reads (detoasts) every
row's tsvector, which the planner does not cost; GIN scans read only the candidates (none for a one-word count).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import orjson

from jsonl_engine.errors import NotFound
from jsonl_engine.store.postgres.text import CONFIG, words
from jsonl_engine.store.rows import json_pairs
from jsonl_engine.store.types import COVER_PAGES, PageKey, Phrase, Scope, SectionRef, SectionWeights, TreeRow

K1, B = 1.2, 0.75
MIN_IDF = 1e-6
TABLES = {"pages": ("pages", "TRUE"), "covers": ("pages", f"number <= {COVER_PAGES}"),
          "sections": ("sections", "TRUE")}
UNWEIGHTED = [1.0, 1.0, 1.0, 1.0]  # tsvector weights D, C, B, A


def query(phrase: Phrase) -> str:
    """A phrase as phraseto_tsquery input: its index tokens, space-separated."""
    return words(" ".join(phrase))


def tsqueries(conn: Any, phrases: Sequence[Phrase]) -> dict[Phrase, str]:
    """Each phrase as the text of its tsquery (stemmed by the server once; the store memoises it). Statements
    then take `%s::tsquery` constants: the planner sees the lexemes, and no row re-parses a phrase."""
    if not phrases:
        return {}
    rows = conn.execute(f"SELECT phraseto_tsquery('{CONFIG}', q)::text FROM unnest(%s::text[]) WITH ORDINALITY "
                        "AS t(q, i) ORDER BY i", ([query(p) for p in phrases],)).fetchall()
    return {p: r[0] for p, r in zip(phrases, rows, strict=True)}


def idf(rows: int, hits: int) -> float:
    value = math.log((rows - hits + 0.5) / (hits + 0.5))
    return value if value > 0.0 else MIN_IDF


# A row's tsvector read once: a column reference hands each ts_rank_cd call the stored (compressed, TOASTed)
# value to fetch and decompress again; the result of `||` is an in-memory copy the outer query shares.
DETOASTED = "(x.tsv || ''::tsvector) AS tsv"


class Score:
    """A BM25 statement's parts: `tf` (the weighted term frequency of each phrase, selected once per matching
    row in an inner query), `expr` (the score over those, in the outer query) and `match` (the rows holding
    any phrase, by the GIN index). Each with its arguments, in the order they appear."""

    def __init__(self, tsqs: Sequence[str], idfs: Sequence[float], avgdl: float, rank_weights: list[float],
                 scale: float) -> None:
        norm = f"({K1} * ((1 - {B}) + (({B} * t.ntok) / %s::float8)))"
        self.tf = ", ".join(f"(ts_rank_cd(%s::float4[], v.tsv, %s::tsquery, 0)::float8 * %s::float8) AS tf{i}"
                            for i in range(len(tsqs)))
        self.tf_args: list[Any] = [a for q in tsqs for a in (rank_weights, q, scale)]
        self.expr = "(0.0::float8 + " + " + ".join(
            f"(%s::float8 * ((t.tf{i} * {K1 + 1.0}) / (t.tf{i} + {norm})))" for i in range(len(tsqs))) + ")"
        self.expr_args: list[Any] = [a for value in idfs for a in (value, avgdl or 1.0)]
        self.match = "x.tsv @@ (" + " || ".join("%s::tsquery" for _ in tsqs) + ")"
        self.match_args: list[Any] = list(tsqs)


def section_rank_weights(weights: SectionWeights) -> tuple[list[float], float]:
    """tsvector weights [D, C, B, A] = [-, text, ancestors, title] scaled into (0, 1], and the scale."""
    scale = max(weights.title, weights.ancestors, weights.text, 1e-9)
    return [1.0, *(max(w / scale, 1e-9) for w in (weights.text, weights.ancestors, weights.title))], scale


def scope_filter(scope: Scope, column: str) -> tuple[str, list[Any]]:
    if scope.complete:
        return "TRUE", []
    return f"{column} = ANY(%s)", [sorted(scope.documents)]


def resolve_scope(conn: Any, document_ids: Sequence[str] | None, statuses: Sequence[str]) -> Scope:
    if document_ids is not None:
        wanted = sorted(set(document_ids))
        rows = conn.execute("SELECT id, title, status FROM documents WHERE id = ANY(%s)", (wanted,)).fetchall() \
            if wanted else []
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


def stats(conn: Any) -> dict[str, tuple[int, float]]:
    """kind -> (rows, mean tokens per row) for pages, covers and sections."""
    r = conn.execute(
        "SELECT (SELECT COUNT(*) FROM pages), (SELECT COALESCE(SUM(ntok), 0) FROM pages),"
        f" (SELECT COUNT(*) FROM pages WHERE number <= {COVER_PAGES}),"
        f" (SELECT COALESCE(SUM(ntok), 0) FROM pages WHERE number <= {COVER_PAGES}),"
        " (SELECT COUNT(*) FROM sections), (SELECT COALESCE(SUM(ntok), 0) FROM sections)").fetchone()
    return {kind: (int(n), float(tok) / n if n else 0.0)
            for kind, n, tok in (("pages", r[0], r[1]), ("covers", r[2], r[3]), ("sections", r[4], r[5]))}


def frequencies(conn: Any, kind: str, tsqs: Sequence[str]) -> list[int]:
    """Rows of `kind` ("pages", "covers", "sections", "documents") holding each tsquery: one statement, one
    count per phrase (each its own GIN scan; a one-word phrase needs no recheck, so no tsvector is read)."""
    if not tsqs:
        return []
    if kind == "documents":
        one = "SELECT COUNT(DISTINCT document_id) FROM pages WHERE tsv @@ %s::tsquery"
    else:
        table, where = TABLES[kind]
        one = f"SELECT COUNT(*) FROM {table} WHERE {where} AND tsv @@ %s::tsquery"
    row = conn.execute("SELECT " + ", ".join(f"({one})" for _ in tsqs), list(tsqs)).fetchone()
    return [int(n) for n in row]


def search_pages(conn: Any, score: Score, scope: Scope, limit: int | None, within: Sequence[str] | None = None,
                 covers: bool = False) -> list[tuple[str, int, float]]:
    """Top pages by BM25: (document_id, page number, score)."""
    where, ids = scope_filter(scope, "x.document_id")
    if within is not None:
        where += " AND x.document_id = ANY(%s)"
        ids.append(sorted(within))
    if covers:
        where += f" AND x.number <= {COVER_PAGES}"
    sql = (f"SELECT t.document_id, t.number, {score.expr} AS s FROM (SELECT v.rowid, v.document_id, v.number, "
           f"v.ntok, {score.tf} FROM (SELECT x.rowid, x.document_id, x.number, x.ntok, {DETOASTED} FROM pages x "
           f"WHERE {score.match} AND {where} OFFSET 0) v OFFSET 0) t "
           "ORDER BY s DESC, t.rowid" + (" LIMIT %s" if limit is not None else ""))
    args = [*score.expr_args, *score.tf_args, *score.match_args, *ids] + ([limit] if limit is not None else [])
    return [(r[0], r[1], r[2]) for r in conn.execute(sql, args)]


def pages_holding(conn: Any, tsqs: Sequence[str], document_ids: Sequence[str]) -> list[PageKey]:
    """The pages of the documents holding any of the phrases (as tsquery texts), by document id and number
    (no score)."""
    match = "x.tsv @@ (" + " || ".join("%s::tsquery" for _ in tsqs) + ")"
    sql = f"SELECT x.document_id, x.number FROM pages x WHERE {match} AND x.document_id = ANY(%s)"
    return sorted((r[0], r[1]) for r in conn.execute(sql, [*tsqs, sorted(document_ids)]))


def search_sections(conn: Any, score: Score, scope: Scope, limit: int,
                    within: Sequence[str]) -> list[tuple[int, float]]:
    """Top sections of the `within` documents by field-weighted BM25: (section rowid, score)."""
    where, ids = scope_filter(scope, "x.document_id")
    sql = (f"SELECT t.rowid, {score.expr} AS sc FROM (SELECT v.rowid, v.ntok, {score.tf} FROM (SELECT x.rowid, "
           f"x.ntok, {DETOASTED} FROM sections x WHERE {score.match} AND {where} AND x.document_id = ANY(%s) "
           "OFFSET 0) v OFFSET 0) t ORDER BY sc DESC, t.rowid LIMIT %s")
    args = [*score.expr_args, *score.tf_args, *score.match_args, *ids, sorted(within), limit]
    return [(r[0], r[1]) for r in conn.execute(sql, args)]


def section_columns(a: str) -> str:
    """The columns of a SectionRef, of the sections table aliased `a`."""
    return (f"{a}.rowid, {a}.id, {a}.document_id, {a}.title, {a}.ancestors, {a}.page_start, {a}.page_end, "
            f"length({a}.text) AS text_len, CASE WHEN {a}.is_leaf THEN NULL ELSE {a}.page_map END AS own_map")


def _ref(r: Sequence[Any]) -> SectionRef:
    try:
        path = [str(t) for t in orjson.loads(r[4] or "[]")]
    except (ValueError, TypeError):
        path = []
    return SectionRef(section_id=r[1], document_id=r[2], title=r[3], path=path, page_start=r[5], page_end=r[6],
                      text_len=r[7] or 0, own_map=None if r[8] is None else json_pairs(r[8]))


def load_sections(conn: Any, rowids: Sequence[int]) -> dict[int, SectionRef]:
    if not rowids:
        return {}
    return {r[0]: _ref(r) for r in conn.execute(f"SELECT {section_columns('s')} FROM sections s WHERE s.rowid = ANY(%s)",
                                                (list(rowids),))}


def sections_on_pages(conn: Any, pages: Sequence[PageKey], back: int) -> list[SectionRef]:
    """Sections starting at most `back` pages before each page and covering it: page by page, in page order,
    each section once (one statement for all pages)."""
    if not pages:
        return []
    rows: list[SectionRef] = []
    seen: set[int] = set()
    for r in conn.execute(
            f"SELECT {section_columns('s')} FROM unnest(%s::text[], %s::int[]) WITH ORDINALITY AS k(d, n, i) "
            "JOIN sections s ON s.document_id = k.d AND s.page_start BETWEEN k.n - %s AND k.n AND s.page_end >= k.n "
            "ORDER BY k.i, s.page_start, s.rowid", ([d for d, _ in pages], [n for _, n in pages], back)):
        if r[0] not in seen:
            seen.add(r[0])
            rows.append(_ref(r))
    return rows


def section_texts(conn: Any, section_ids: Sequence[str]) -> dict[str, tuple[str, list[tuple[int, int]]]]:
    ids = list(dict.fromkeys(section_ids))
    return {sid: (text, json_pairs(page_map)) for sid, text, page_map in conn.execute(
        "SELECT id, text, page_map FROM sections WHERE id = ANY(%s)", (ids,))} if ids else {}


def load_pages(conn: Any, pages: Sequence[PageKey], chars: int | None = None) -> dict[PageKey, str]:
    if not pages:
        return {}
    column = "text" if chars is None else f"substr(text, 1, {int(chars)})"
    docs, nums = [d for d, _ in pages], [n for _, n in pages]
    return {(d, n): t for d, n, t in conn.execute(
        f"SELECT p.document_id, p.number, {column} FROM pages p "
        "JOIN unnest(%s::text[], %s::int[]) AS k(d, n) ON p.document_id = k.d AND p.number = k.n", (docs, nums))}


def cover_texts(conn: Any, document_ids: Sequence[str]) -> dict[str, list[str]]:
    parts: dict[str, list[str]] = {d: [] for d in document_ids}
    if not document_ids:
        return parts
    for doc, text in conn.execute(f"SELECT document_id, text FROM pages WHERE number <= {COVER_PAGES} "
                                  "AND document_id = ANY(%s) ORDER BY document_id, number", (list(document_ids),)):
        parts[doc].append(text)
    return parts


GIN_INDEXES = ("pages_tsv", "sections_tsv", "covers_tsv")


def flush_pending(conn: Any) -> None:
    """Move each GIN index's pending list (fastupdate: recent rows not yet in the index's trees, which every
    search scans in full) into the index, as autovacuum would later."""
    for index in GIN_INDEXES:
        conn.execute("SELECT gin_clean_pending_list(%s::regclass)", (index,))


def generation(conn: Any) -> tuple:
    """Changes whenever a document is added or removed: the count and the newest sequence number (never reused)."""
    row = conn.execute("SELECT COUNT(*), COALESCE(MAX(seq), 0) FROM documents").fetchone()
    return (int(row[0]), int(row[1]))


def page_counts(conn: Any, document_ids: Sequence[str]) -> dict[str, int]:
    if not document_ids:
        return {}
    return dict(conn.execute("SELECT id, pages FROM documents WHERE id = ANY(%s)", (list(document_ids),)).fetchall())


def tree_rows(conn: Any, document_ids: Sequence[str], head_chars: int) -> list[TreeRow]:
    if not document_ids:
        return []
    rows = conn.execute(
        "SELECT id, document_id, parent_id, depth, title, page_start, page_end, is_leaf, summary,"
        f" length(text) AS text_len, CASE WHEN summary = '' THEN substr(text, 1, {int(head_chars)}) END AS head"
        " FROM sections WHERE document_id = ANY(%s) ORDER BY document_id, position", (list(document_ids),)).fetchall()
    return [TreeRow(section_id=r[0], document_id=r[1], parent_id=r[2], depth=int(r[3]), title=r[4],
                    page_start=int(r[5]), page_end=int(r[6]), is_leaf=bool(r[7]), summary=r[8],
                    text_len=int(r[9]), head=r[10]) for r in rows]
