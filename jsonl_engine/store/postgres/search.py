"""The full-text statements of the PostgreSQL text index: BM25 over pages, sections and cover pages, phrase
counts (the counterpart of sqlite/search.py).

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

from jsonl_engine.store.postgres.text import CONFIG, words
from jsonl_engine.store.types import COVER_PAGES, PageKey, Phrase, Scope, SectionWeights

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
