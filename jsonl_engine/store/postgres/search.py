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
The GIN index finds the candidate rows: those holding every word of some phrase (`tsv @@ (a & b) | c ...`, a
query the index answers exactly, so no row's tsvector is read to recheck it); each candidate's tsvector is read
once (an inner query), the phrases matched on that copy (`a <-> b`), and the score computed on the matching rows
only, each phrase's tf once per row, from tsquery constants the server stemmed once per phrase. (A phrase query
given to the index directly is rechecked on every candidate, whose tsvector is then read again for the score.)
Phrase counts likewise: a one-word phrase is counted by the index alone, the multi-word phrases together in one
pass over their candidates.
Reader sessions run with `enable_seqscan = off`: a `tsv @@` filter on a sequential scan reads (detoasts) every
row's tsvector, which the planner does not cost; GIN scans read only the candidates (none for a one-word count).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

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


class Tsq(NamedTuple):
    """A phrase's tsquery texts: `exact` (its words in order, `a <-> b`) and `words` (all its words, `a & b`:
    the candidates, which the GIN index finds without reading a row); equal for a one-word phrase."""

    exact: str
    words: str

    @property
    def phrase(self) -> bool:
        return self.exact != self.words


def tsqueries(conn: Any, phrases: Sequence[Phrase]) -> dict[Phrase, Tsq]:
    """Each phrase's tsqueries (stemmed by the server once; the store memoises them). Statements then take
    `%s::tsquery` constants: the planner sees the lexemes, and no row re-parses a phrase."""
    if not phrases:
        return {}
    rows = conn.execute(f"SELECT phraseto_tsquery('{CONFIG}', q)::text, plainto_tsquery('{CONFIG}', q)::text "
                        "FROM unnest(%s::text[]) WITH ORDINALITY AS t(q, i) ORDER BY i",
                        ([query(p) for p in phrases],)).fetchall()
    return {p: Tsq(r[0], r[1]) for p, r in zip(phrases, rows, strict=True)}


def matching(tsqs: Sequence[Tsq]) -> tuple[str, list[Any], str, list[Any]]:
    """The rows holding any of the phrases: (the GIN condition on `x.tsv` and its arguments, the exact condition
    on the read copy `v.tsv` (TRUE when every phrase is one word, as the index then is exact) and its arguments)."""
    match = "x.tsv @@ (" + " || ".join("%s::tsquery" for _ in tsqs) + ")"
    if not any(q.phrase for q in tsqs):
        return match, [q.exact for q in tsqs], "TRUE", []
    check = "v.tsv @@ (" + " || ".join("%s::tsquery" for _ in tsqs) + ")"
    return match, [q.words for q in tsqs], check, [q.exact for q in tsqs]


def idf(rows: int, hits: int) -> float:
    value = math.log((rows - hits + 0.5) / (hits + 0.5))
    return value if value > 0.0 else MIN_IDF


# A row's tsvector read once: a column reference hands each ts_rank_cd call the stored (compressed, TOASTed)
# value to fetch and decompress again; the result of `||` is an in-memory copy the outer query shares.
DETOASTED = "(x.tsv || ''::tsvector) AS tsv"


class Score:
    """A BM25 statement's parts: `tf` (the weighted term frequency of each phrase, selected once per matching
    row in an inner query), `expr` (the score over those, in the outer query), `match` (the candidates, by the
    GIN index) and `check` (the candidates holding a phrase, on their tsvector read once). Each with its
    arguments, in the order they appear."""

    def __init__(self, tsqs: Sequence[Tsq], idfs: Sequence[float], avgdl: float, rank_weights: list[float],
                 scale: float) -> None:
        norm = f"({K1} * ((1 - {B}) + (({B} * t.ntok) / %s::float8)))"
        self.tf = ", ".join(f"(ts_rank_cd(%s::float4[], v.tsv, %s::tsquery, 0)::float8 * %s::float8) AS tf{i}"
                            for i in range(len(tsqs)))
        self.tf_args: list[Any] = [a for q in tsqs for a in (rank_weights, q.exact, scale)]
        self.expr = "(0.0::float8 + " + " + ".join(
            f"(%s::float8 * ((t.tf{i} * {K1 + 1.0}) / (t.tf{i} + {norm})))" for i in range(len(tsqs))) + ")"
        self.expr_args: list[Any] = [a for value in idfs for a in (value, avgdl or 1.0)]
        self.match, self.match_args, self.check, self.check_args = matching(tsqs)


def section_rank_weights(weights: SectionWeights) -> tuple[list[float], float]:
    """tsvector weights [D, C, B, A] = [-, text, ancestors, title] scaled into (0, 1], and the scale."""
    scale = max(weights.title, weights.ancestors, weights.text, 1e-9)
    return [1.0, *(max(w / scale, 1e-9) for w in (weights.text, weights.ancestors, weights.title))], scale


def scope_filter(scope: Scope, column: str) -> tuple[str, list[Any]]:
    if scope.complete:
        return "TRUE", []
    return f"{column} = ANY(%s)", [sorted(scope.documents)]


def stats(conn: Any) -> dict[str, tuple[int, float]]:
    """kind -> (rows, mean tokens per row) for pages, covers and sections: the sums of the deltas the writes left
    in text_stats (migration 5), a few rows, instead of counting the tables."""
    sums = {kind: (int(n), int(tok)) for kind, n, tok in
            conn.execute("SELECT kind, SUM(rows), SUM(tokens) FROM text_stats GROUP BY kind")}
    return {kind: (n, float(tok) / n if n else 0.0)
            for kind in ("pages", "covers", "sections") for n, tok in [sums.get(kind, (0, 0))]}


def fold_stats(conn: Any) -> None:
    """text_stats' deltas folded into one row per kind (the sums unchanged; rows other writers have not committed
    yet are not seen, so stay as they are)."""
    conn.execute("WITH gone AS (DELETE FROM text_stats RETURNING kind, rows, tokens) "
                 "INSERT INTO text_stats SELECT kind, SUM(rows), SUM(tokens) FROM gone GROUP BY kind")


def frequencies(conn: Any, kind: str, tsqs: Sequence[Tsq]) -> list[int]:
    """Rows of `kind` ("pages", "covers", "sections", "documents") holding each phrase, in one statement: a
    one-word phrase counted by its own GIN scan (exact, so no tsvector is read), the multi-word phrases in one
    pass over their candidates, each candidate's tsvector read once."""
    if not tsqs:
        return []
    table, where = TABLES["pages" if kind == "documents" else kind]
    counted = "DISTINCT x.document_id" if kind == "documents" else "*"
    words = [q for q in tsqs if not q.phrase]
    phrases = [q for q in tsqs if q.phrase]
    columns = [f"(SELECT COUNT({counted}) FROM {table} x WHERE {where} AND x.tsv @@ %s::tsquery)" for _ in words]
    args: list[Any] = [q.exact for q in words]
    sql = "SELECT " + ", ".join(columns + [f"m.n{i}" for i in range(len(phrases))])
    if phrases:
        counts = ", ".join(f"COUNT({counted}) FILTER (WHERE x.tsv @@ %s::tsquery) AS n{i}"
                           for i in range(len(phrases)))
        sql += (f" FROM (SELECT {counts} FROM (SELECT x.document_id, {DETOASTED} FROM {table} x WHERE {where} AND "
                "x.tsv @@ (" + " || ".join("%s::tsquery" for _ in phrases) + ") OFFSET 0) x) m")
        args += [q.exact for q in phrases] + [q.words for q in phrases]
    row = conn.execute(sql, args).fetchone()
    found = dict(zip([*words, *phrases], row, strict=True))
    return [int(found[q]) for q in tsqs]


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
           f"WHERE {score.match} AND {where} OFFSET 0) v WHERE {score.check} OFFSET 0) t "
           "ORDER BY s DESC, t.rowid" + (" LIMIT %s" if limit is not None else ""))
    args = [*score.expr_args, *score.tf_args, *score.match_args, *ids, *score.check_args] + (
        [limit] if limit is not None else [])
    return [(r[0], r[1], r[2]) for r in conn.execute(sql, args)]


def pages_holding(conn: Any, tsqs: Sequence[Tsq], document_ids: Sequence[str]) -> list[PageKey]:
    """The pages of the documents holding any of the phrases, by document id and number (no score)."""
    match, match_args, check, check_args = matching(tsqs)
    sql = (f"SELECT v.document_id, v.number FROM (SELECT x.document_id, x.number, {DETOASTED} FROM pages x "
           f"WHERE {match} AND x.document_id = ANY(%s) OFFSET 0) v WHERE {check}")
    return sorted((r[0], r[1]) for r in conn.execute(sql, [*match_args, sorted(document_ids), *check_args]))


def search_sections(conn: Any, score: Score, scope: Scope, limit: int,
                    within: Sequence[str]) -> list[tuple[int, float]]:
    """Top sections of the `within` documents by field-weighted BM25: (section rowid, score)."""
    where, ids = scope_filter(scope, "x.document_id")
    sql = (f"SELECT t.rowid, {score.expr} AS sc FROM (SELECT v.rowid, v.ntok, {score.tf} FROM (SELECT x.rowid, "
           f"x.ntok, {DETOASTED} FROM sections x WHERE {score.match} AND {where} AND x.document_id = ANY(%s) "
           f"OFFSET 0) v WHERE {score.check} OFFSET 0) t ORDER BY sc DESC, t.rowid LIMIT %s")
    args = [*score.expr_args, *score.tf_args, *score.match_args, *ids, sorted(within), *score.check_args, limit]
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
