"""Which documents a query is about, before any passage is scored: the names it carries ("3M", "AMCOR",
"Best Buy") found on a document's first pages (cover, release heading), and the years it names.

Names are weighted by a smoothed document-level IDF, log(1 + N / df), which stays positive when one issuer
files most of a small KB (FTS5's BM25 clamps such a term's IDF to zero). Queries without capitalised names
fall back to BM25 over the first pages with the query words that few first pages share.
"""

from __future__ import annotations

import math
import sqlite3

from jsonl_engine.retrieval import lexical
from jsonl_engine.retrieval.query import Query, normalise, quote, render

COVER_PAGES = 2          # as indexed by covers_fts
W_YEAR = 0.25            # a year counts this much of a name (covers also carry filing and share-count dates)
COVER_MAX_DF = 0.2       # fallback: words on at most this share of first pages
_TOKENS: dict[str, frozenset[str]] = {}  # document id (a content hash: its pages never change) -> tokens
_TOKENS_MAX = 50_000


def _cover_tokens(conn: sqlite3.Connection, docs: list[str]) -> dict[str, frozenset[str]]:
    missing = [d for d in docs if d not in _TOKENS]
    if missing:
        if len(_TOKENS) + len(missing) > _TOKENS_MAX:
            _TOKENS.clear()
        from jsonl_engine.retrieval.query import _TOKEN

        texts: dict[str, list[str]] = {d: [] for d in missing}
        marks = ",".join("?" * len(missing))
        for doc, text in conn.execute(f"SELECT document_id, text FROM pages WHERE number <= {COVER_PAGES} "
                                      f"AND document_id IN ({marks})", missing):
            texts[doc].append(text)
        for doc, parts in texts.items():
            _TOKENS[doc] = frozenset(_TOKEN.findall(normalise(" ".join(parts))))
    return {d: _TOKENS[d] for d in docs}


def name_scores(conn: sqlite3.Connection, q: Query, scope: lexical.Scope) -> dict[str, float]:
    """document id -> how strongly its first pages carry the query's names (and years)."""
    if not q.names:
        return {}
    docs = sorted(lexical.search_covers(conn, render([(n,) for n in q.names]), scope))
    if not docs:
        return {}
    tokens = _cover_tokens(conn, docs)
    n = len(scope.documents)
    weights: dict[str, float] = {}
    for term, w in [*((name, 1.0) for name in q.names), *((year, W_YEAR) for year in q.years)]:
        df = sum(1 for d in docs if term in tokens[d])
        if df:
            weights[term] = w * math.log(1 + n / df)
    return {d: s for d in docs if (s := sum(w for t, w in weights.items() if t in tokens[d])) > 0}


def word_scores(conn: sqlite3.Connection, q: Query, scope: lexical.Scope) -> dict[str, float]:
    """Fallback without names: BM25 of first pages for the query words few first pages share."""
    words = q.phrases[: q.n_words]
    if not words:
        return {}
    gen = lexical.generation(conn)
    limit = max(2.0, COVER_MAX_DF * lexical.cover_count(conn, gen))
    df = lexical.cover_frequencies(conn, gen, [quote(p) for p in words])
    rare = [p for p in words if 0 < df[quote(p)] <= limit]
    return lexical.search_covers(conn, render(rare), scope) if rare else {}


def cover_scores(conn: sqlite3.Connection, q: Query, scope: lexical.Scope) -> dict[str, float]:
    return name_scores(conn, q, scope) or word_scores(conn, q, scope)
