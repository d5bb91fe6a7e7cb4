"""Lexical retrieval: FTS5 BM25 over leaf sections and pages, fused, deduplicated, deterministic.

`retrieve` is the shared entry point (kb.context's "lexical" strategy and the first stage of answers).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from jsonl_engine.errors import Internal, InvalidParams
from jsonl_engine.retrieval import cues, dedupe, lexical, rank, snippet
from jsonl_engine.retrieval import prior as prior_mod
from jsonl_engine.retrieval.query import Query, has_stopword, parse, quote, render, salient_terms, tokenize

if TYPE_CHECKING:
    from jsonl_engine.store import Store

__all__ = ["Passage", "Retrieval", "retrieve", "salient_terms", "UNITS"]

UNITS = ("section", "page")
PAGE_CANDIDATES = 200
SECTION_CANDIDATES = 200
PAGES_TO_SECTIONS = 30  # top pages whose sections join the candidate set
SECTION_DOCS = 2  # across many documents, section BM25 runs on the documents the prior ranks first
MAX_DF = 0.3  # phrases on more than this share of pages are left out (IDF near zero, cost high)
KEEP_RAREST = 3  # ... unless every phrase is that common: then the rarest few are kept
MAX_STATEMENT_PHRASES = 20  # a long question keeps its rarest phrases (cost grows with each phrase)


@dataclass(frozen=True, slots=True)
class Passage:
    section_id: str
    document_id: str
    document_title: str
    title: str
    path: list[str]
    page_start: int
    page_end: int
    score: float
    text: str
    snippet: str
    status: str
    page_map: list[tuple[int, int]]
    unit: str = "section"
    confidence: float | None = None  # LLM strategies: the model's confidence in this pick / citation, 0..1


@dataclass
class Retrieval:
    passages: list[Passage]
    reason: str | None = None
    usage: dict = field(default_factory=dict)
    hops_taken: int = 0
    confidence: float | None = None  # LLM strategies: overall confidence, 0..1
    details: dict = field(default_factory=dict)  # strategy-specific (pageindex: answer, citations)


def retrieve(store: Store, query: str, *, document_ids: list[str] | None = None,
             statuses: Sequence[str] = ("approved",), limit: int = 8, unit: str = "section") -> Retrieval:
    """Rank passages for `query`. Raises NotFound for unknown document ids; never raises for query text."""
    if unit not in UNITS:
        raise InvalidParams(f"unit must be one of {', '.join(UNITS)}", fields=["unit"])
    q = parse(query)
    try:
        with store.snapshot() as conn:
            scope = lexical.resolve_scope(conn, document_ids, statuses)
            if not scope.documents:
                return Retrieval([], reason="no documents in scope with status " + ", ".join(sorted(statuses)))
            if not q.phrases:
                return Retrieval([], reason="the query has no searchable terms")
            return _retrieve(conn, q, scope, limit, unit)
    except sqlite3.Error as exc:
        raise Internal(f"retrieval failed: {exc}") from exc


def _retrieve(conn: sqlite3.Connection, q: Query, scope: lexical.Scope, limit: int, unit: str) -> Retrieval:
    docs = sorted(scope.documents)
    page_window = None
    if len(docs) == 1:
        spans = lexical.windows(conn, "pages", docs)
        page_window = spans[0] if spans else (0, -1)
    page_phrases, section_phrases = _select_phrases(conn, q)
    if not page_phrases:
        return Retrieval([], reason="no passage matches the query terms")
    pages = lexical.search_pages(conn, render(page_phrases), scope, PAGE_CANDIDATES, page_window)
    prior = None
    focus = docs
    if len(docs) > 1:
        covers = prior_mod.cover_scores(conn, q, scope)
        prior = rank.document_prior(pages, covers, _title_matches(q.words, scope))
        if len(docs) > SECTION_DOCS:
            focus = sorted(prior, key=lambda d: (-prior[d], d))[:SECTION_DOCS]
    sections: list[tuple[int, float]] = []
    for window in lexical.windows(conn, "sections", focus) if section_phrases else []:
        sections += lexical.search_sections(conn, render(section_phrases), scope, SECTION_CANDIDATES, window)
    if not pages and not sections:
        return Retrieval([], reason="no passage matches the query terms")
    page_score = rank.page_scores(pages, _statement_boost(conn, q, pages))
    rows = lexical.load_sections(conn, [r for r, _ in sections])
    rows += lexical.sections_on_pages(conn, [(d, n) for d, n, _ in pages[:PAGES_TO_SECTIONS]])
    cands = {c.rowid: c for c in map(rank.candidate, rows) if c is not None}
    if unit == "page":
        passages = _pages(conn, q.words, scope, rank.fuse_pages(cands, sections, page_score, prior), limit)
    else:
        passages = _sections(conn, q.words, scope, rank.fuse(cands, sections, page_score, prior), limit)
    return Retrieval(passages, reason=None if passages else "no passage matches the query terms")


def _sections(conn: sqlite3.Connection, words: list[str], scope: lexical.Scope, ranked: list[rank.Candidate],
              limit: int) -> list[Passage]:
    ranked = ranked[: limit * 4 + 8]
    texts = lexical.load_texts(conn, [c.rowid for c in ranked])
    kept = dedupe.collapse(ranked, lambda c: texts[c.rowid][0], limit)
    find = snippet.finder(words)
    out = []
    for c in kept:
        text, page_map = texts[c.rowid]
        title, status = scope.documents[c.document_id]
        out.append(Passage(section_id=c.id, document_id=c.document_id, document_title=title, title=c.title,
                           path=c.path, page_start=c.page_start, page_end=c.page_end, score=c.score, text=text,
                           snippet=find(text), status=status, page_map=_page_map(page_map)))
    return out


def _pages(conn: sqlite3.Connection, words: list[str], scope: lexical.Scope, ranked: list[rank.PageCandidate],
           limit: int) -> list[Passage]:
    ranked = ranked[: limit * 4 + 8]
    texts = lexical.load_pages(conn, [(p.document_id, p.number) for p in ranked])
    ranked = [p for p in ranked if (p.document_id, p.number) in texts]
    kept = dedupe.collapse(ranked, lambda p: texts[(p.document_id, p.number)], limit)
    find = snippet.finder(words)
    out = []
    for p in kept:
        text = texts[(p.document_id, p.number)]
        title, status = scope.documents[p.document_id]
        path = [*p.section.path, p.section.title] if p.section is not None else []
        out.append(Passage(section_id=f"{p.document_id}:p{p.number}", document_id=p.document_id,
                           document_title=title, title=f"Page {p.number}", path=path, page_start=p.number,
                           page_end=p.number, score=p.score, text=text, snippet=find(text), status=status,
                           page_map=[(0, p.number)], unit="page"))
    return out


def _page_map(raw: str) -> list[tuple[int, int]]:
    try:
        return [(int(a), int(b)) for a, b in json.loads(raw or "[]")]
    except (ValueError, TypeError):
        return []


def _title_matches(words: list[str], scope: lexical.Scope) -> dict[str, float]:
    """Share of the query's words found in each document title (titles are few; tokenised here)."""
    if not words:
        return {}
    wanted = set(words)
    out = {}
    for doc, (title, _) in scope.documents.items():
        hit = wanted.intersection(tokenize(title))
        if hit:
            out[doc] = len(hit) / len(wanted)
    return out


def _statement_boost(conn: sqlite3.Connection, q: Query, pages: list[tuple[str, int, float]]
                     ) -> dict[tuple[str, int], float]:
    """Lift the statement pages (income, balance sheet, cash flow) a metric question needs."""
    wanted = cues.wanted_statements(q.tokens)
    if not wanted:
        return {}
    kinds = cues.page_kinds(conn, [(d, n) for d, n, _ in pages])
    return {key: rank.W_STATEMENT for key, kind in kinds.items() if kind in wanted}


def _select_phrases(conn: sqlite3.Connection, q: Query) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """Phrases for the page and the section statements: absent and near-ubiquitous ones left out.

    Multi-word phrases with stopwords ("statement of cash flows") stay out of the section statement: their
    position lists are the most expensive to evaluate, and the page statement already rewards them.
    """
    gen = lexical.generation(conn)
    limit = MAX_DF * lexical.page_count(conn, gen)
    df = lexical.page_frequencies(conn, gen, [quote(p) for p in q.phrases])
    present = [p for p in q.phrases if df[quote(p)] > 0]
    chosen = [p for p in present if df[quote(p)] <= limit]
    if not chosen:
        chosen = sorted(present, key=lambda p: (df[quote(p)], p))[:KEEP_RAREST]
    if len(chosen) > MAX_STATEMENT_PHRASES:
        keep = set(sorted(chosen, key=lambda p: (df[quote(p)], p))[:MAX_STATEMENT_PHRASES])
        chosen = [p for p in chosen if p in keep]
    return chosen, [p for p in chosen if not has_stopword(p)]
