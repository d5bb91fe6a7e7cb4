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
The GIN index finds the rows holding any phrase (`tsv @@ q1 || q2 ...`); the score is computed on those only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import orjson

from jsonl_engine.errors import NotFound
from jsonl_engine.store.postgres.text import CONFIG, words
from jsonl_engine.store.types import COVER_PAGES, PageKey, Phrase, Scope, SectionRef, SectionWeights, TreeRow

K1, B = 1.2, 0.75
MIN_IDF = 1e-6
TABLES = {"pages": ("pages", "TRUE"), "covers": ("pages", f"number <= {COVER_PAGES}"),
          "sections": ("sections", "TRUE")}
UNWEIGHTED = [1.0, 1.0, 1.0, 1.0]  # tsvector weights D, C, B, A


def query(phrase: Phrase) -> str:
    """A phrase as phraseto_tsquery input: its index tokens, space-separated."""
    return words(" ".join(phrase))


def idf(rows: int, hits: int) -> float:
    value = math.log((rows - hits + 0.5) / (hits + 0.5))
    return value if value > 0.0 else MIN_IDF


def _tsq() -> str:
    return f"phraseto_tsquery('{CONFIG}', %s)"


def bm25(phrases: Sequence[Phrase], idfs: Sequence[float], avgdl: float, rank_weights: list[float],
         scale: float, alias: str) -> tuple[str, str, list[Any], list[Any]]:
    """(score expression, match condition, score args, match args) over the `alias` table's tsv and ntok."""
    terms: list[str] = []
    score_args: list[Any] = []
    norm = f"({K1} * ((1 - {B}) + (({B} * {alias}.ntok) / %s::float8)))"
    for phrase, value in zip(phrases, idfs, strict=True):
        tf = f"(ts_rank_cd(%s::float4[], {alias}.tsv, {_tsq()}, 0)::float8 * %s::float8)"
        terms.append(f"(%s::float8 * (({tf} * {K1 + 1.0}) / ({tf} + {norm})))")
        score_args += [value, rank_weights, query(phrase), scale, rank_weights, query(phrase), scale, avgdl or 1.0]
    score = "(0.0::float8 + " + " + ".join(terms) + ")"
    match = f"{alias}.tsv @@ (" + " || ".join(_tsq() for _ in phrases) + ")"
    return score, match, score_args, [query(p) for p in phrases]


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


def frequency(conn: Any, kind: str, phrase: Phrase) -> int:
    """Rows of `kind` ("pages", "covers", "sections", "documents") holding the phrase."""
    if kind == "documents":
        sql = f"SELECT COUNT(DISTINCT document_id) FROM pages WHERE tsv @@ {_tsq()}"
    else:
        table, where = TABLES[kind]
        sql = f"SELECT COUNT(*) FROM {table} WHERE {where} AND tsv @@ {_tsq()}"
    return conn.execute(sql, (query(phrase),)).fetchone()[0]


def search_pages(conn: Any, score: tuple[str, str, list[Any], list[Any]], scope: Scope, limit: int,
                 within: Sequence[str] | None = None, covers: bool = False) -> list[tuple[str, int, float]]:
    """Top pages by BM25: (document_id, page number, score)."""
    expr, match, score_args, match_args = score
    where, ids = scope_filter(scope, "x.document_id")
    if within is not None:
        where += " AND x.document_id = ANY(%s)"
        ids.append(sorted(within))
    if covers:
        where += f" AND x.number <= {COVER_PAGES}"
    sql = (f"SELECT x.document_id, x.number, {expr} AS s FROM pages x WHERE {match} AND {where} "
           "ORDER BY s DESC, x.rowid" + (" LIMIT %s" if limit is not None else ""))
    args = [*score_args, *match_args, *ids] + ([limit] if limit is not None else [])
    return [(r[0], r[1], r[2]) for r in conn.execute(sql, args)]


def pages_holding(conn: Any, phrases: Sequence[Phrase], document_ids: Sequence[str]) -> list[PageKey]:
    """The pages of the documents holding any phrase, by document id and number (no score)."""
    match = "x.tsv @@ (" + " || ".join(_tsq() for _ in phrases) + ")"
    sql = f"SELECT x.document_id, x.number FROM pages x WHERE {match} AND x.document_id = ANY(%s)"
    return sorted((r[0], r[1]) for r in conn.execute(sql, [*(query(p) for p in phrases), sorted(document_ids)]))


def search_sections(conn: Any, score: tuple[str, str, list[Any], list[Any]], scope: Scope, limit: int,
                    within: Sequence[str]) -> list[tuple[int, float]]:
    """Top sections of the `within` documents by field-weighted BM25: (section rowid, score)."""
    expr, match, score_args, match_args = score
    where, ids = scope_filter(scope, "x.document_id")
    sql = (f"SELECT x.rowid, {expr} AS sc FROM sections x WHERE {match} AND {where} "
           "AND x.document_id = ANY(%s) ORDER BY sc DESC, x.rowid LIMIT %s")
    return [(r[0], r[1]) for r in conn.execute(sql, [*score_args, *match_args, *ids, sorted(within), limit])]


SECTION_COLUMNS = ("rowid, id, document_id, title, ancestors, page_start, page_end, length(text) AS text_len, "
                   "CASE WHEN is_leaf THEN NULL ELSE page_map END AS own_map")


def _json_pairs(raw: str | None) -> list[tuple[int, int]]:
    try:
        return [(int(a), int(b)) for a, b in orjson.loads(raw or "[]")]
    except (ValueError, TypeError):
        return []


def _ref(r: Sequence[Any]) -> SectionRef:
    try:
        path = [str(t) for t in orjson.loads(r[4] or "[]")]
    except (ValueError, TypeError):
        path = []
    return SectionRef(section_id=r[1], document_id=r[2], title=r[3], path=path, page_start=r[5], page_end=r[6],
                      text_len=r[7] or 0, own_map=None if r[8] is None else _json_pairs(r[8]))


def load_sections(conn: Any, rowids: Sequence[int]) -> dict[int, SectionRef]:
    if not rowids:
        return {}
    return {r[0]: _ref(r) for r in conn.execute(f"SELECT {SECTION_COLUMNS} FROM sections WHERE rowid = ANY(%s)",
                                                (list(rowids),))}


def sections_on_pages(conn: Any, pages: Sequence[PageKey], back: int) -> list[SectionRef]:
    rows: list[SectionRef] = []
    seen: set[int] = set()
    for doc, page in pages:
        for r in conn.execute(f"SELECT {SECTION_COLUMNS} FROM sections WHERE document_id = %s "
                              "AND page_start BETWEEN %s AND %s AND page_end >= %s ORDER BY page_start, rowid",
                              (doc, page - back, page, page)):
            if r[0] not in seen:
                seen.add(r[0])
                rows.append(_ref(r))
    return rows


def section_texts(conn: Any, section_ids: Sequence[str]) -> dict[str, tuple[str, list[tuple[int, int]]]]:
    ids = list(dict.fromkeys(section_ids))
    return {sid: (text, _json_pairs(page_map)) for sid, text, page_map in conn.execute(
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
