"""The lexical retrieval pipeline behind `retrieve` (see the package docstring for the steps)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING

from jsonl_engine.errors import Internal
from jsonl_engine.retrieval import Passage, Retrieval, check_unit, cues, dedupe, lexical, rank, snippet
from jsonl_engine.retrieval import prior as prior_mod
from jsonl_engine.retrieval.query import Query, has_stopword, parse, quote, render, tokenize

if TYPE_CHECKING:
    from jsonl_engine.store import Store

PAGE_CANDIDATES = 200
SECTION_CANDIDATES = 200
PAGES_TO_SECTIONS = 30  # top pages whose sections join the candidate set
NAMED_DOCS = 4  # a question naming its issuer searches the pages of that issuer's best-matching documents
SECTION_DOCS = 2  # across many documents, section BM25 runs on the documents the prior ranks first
MAX_DF = 0.3  # phrases on more than this share of pages are left out (IDF near zero, cost high)
KEEP_RAREST = 3  # ... unless every phrase is that common: then the rarest few are kept
MAX_STATEMENT_PHRASES = 20  # a long question keeps its rarest phrases (cost grows with each phrase)


def retrieve(store: Store, query: str, *, document_ids: list[str] | None = None,
             statuses: Sequence[str] = ("approved",), limit: int = 8, unit: str = "section") -> Retrieval:
    """Rank passages for `query`. Raises NotFound for unknown document ids; never raises for query text."""
    check_unit(unit)
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
    covers, named = prior_mod.cover_scores(conn, q, scope) if len(docs) > 1 else ({}, False)
    # The issuer's name picks the document (the prior); inside its own filings it is on every page and
    # only adds noise (a list of subsidiaries named after it), so passages are ranked without it.
    issuer = prior_mod.issuer_names(conn, q, sorted(covers) if named else docs if len(docs) <= SECTION_DOCS else [])
    page_phrases, section_phrases = _select_phrases(conn, q, issuer)
    if not page_phrases:
        return Retrieval([], reason="no passage matches the query terms")
    if named:  # the question names its issuer: search that issuer's documents only (cheaper, as good)
        pages = []
        chosen = sorted(covers, key=lambda d: (-covers[d], d))[:NAMED_DOCS]
        for window in lexical.windows(conn, "pages", chosen):
            pages += lexical.search_pages(conn, render(page_phrases), scope, PAGE_CANDIDATES, window)
        pages.sort(key=lambda p: (-p[2], p[0], p[1]))
    else:
        pages = lexical.search_pages(conn, render(page_phrases), scope, PAGE_CANDIDATES, page_window)
    prior = None
    focus = docs
    if len(docs) > 1:
        prior = rank.document_prior(pages, covers, _title_matches(q.words, scope), named)
        if len(docs) > SECTION_DOCS:
            focus = sorted(prior, key=lambda d: (-prior[d], d))[:SECTION_DOCS]
    sections: list[tuple[int, float]] = []
    for window in lexical.windows(conn, "sections", focus) if section_phrases else []:
        sections += lexical.search_sections(conn, render(section_phrases), scope, SECTION_CANDIDATES, window)
    if not pages and not sections:
        return Retrieval([], reason="no passage matches the query terms")
    boost = _statement_boost(conn, q, pages, focus)
    page_score = rank.page_scores(pages, boost)
    rows = lexical.load_sections(conn, [r for r, _ in sections])
    if unit == "section":  # sections on the best pages (pages themselves need only the section hits)
        top = [(d, n) for d, n, _ in pages[:PAGES_TO_SECTIONS]]
        rows += lexical.sections_on_pages(conn, top + sorted(set(boost) - set(top)))
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
    texts: dict[tuple[str, int], str] = {}
    kept: list[rank.PageCandidate] = []
    for start in range(0, len(ranked), limit + 4):  # pages are long: load them as dedupe needs them
        batch = ranked[start: start + limit + 4]
        texts.update(lexical.load_pages(conn, [(p.document_id, p.number) for p in batch]))
        kept = dedupe.collapse([p for p in ranked[: start + len(batch)] if (p.document_id, p.number) in texts],
                               lambda p: texts[(p.document_id, p.number)], limit)
        if len(kept) >= limit:
            break
    find = snippet.finder(words)
    out = []
    for p in kept:
        text = texts[(p.document_id, p.number)]
        title, status = scope.documents[p.document_id]
        path = [*p.section.path, p.section.title] if p.section is not None else []
        out.append(Passage.for_page(p.document_id, p.number, document_title=title, status=status, path=path,
                                    score=p.score, text=text, snippet=find(text)))
    return out


def _page_map(raw: str) -> list[tuple[int, int]]:
    try:
        return [(int(a), int(b)) for a, b in json.loads(raw or "[]")]
    except (ValueError, TypeError):
        return []


_TITLE_TOKENS: dict[str, frozenset[str]] = {}


def _title_matches(words: list[str], scope: lexical.Scope) -> dict[str, float]:
    """Share of the query's words found in each document title (tokenised once per title)."""
    if not words:
        return {}
    if len(_TITLE_TOKENS) > 100_000:
        _TITLE_TOKENS.clear()
    wanted = set(words)
    out = {}
    for doc, (title, _) in scope.documents.items():
        tokens = _TITLE_TOKENS.get(title)
        if tokens is None:
            tokens = _TITLE_TOKENS[title] = frozenset(tokenize(title))
        hit = wanted.intersection(tokens)
        if hit:
            out[doc] = len(hit) / len(wanted)
    return out


def _statement_boost(conn: sqlite3.Connection, q: Query, pages: list[tuple[str, int, float]],
                     focus: list[str]) -> dict[tuple[str, int], float]:
    """Lift the statement pages (income, balance sheet, cash flow) a metric question needs: among the pages
    found, and every such page of the documents in focus (a statement page may share few query words)."""
    wanted = cues.wanted_statements(q.tokens)
    if not wanted:
        return {}
    keys = {(d, n) for d, n, _ in pages}
    for doc, count in lexical.page_counts(conn, focus[:SECTION_DOCS]).items():
        keys.update((doc, n) for n in range(1, count + 1))
    kinds = cues.page_kinds(conn, sorted(keys))
    return {key: rank.W_STATEMENT for key, kind in kinds.items() if kind in wanted}


def _select_phrases(conn: sqlite3.Connection, q: Query, issuer: frozenset[str] = frozenset()
                    ) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """Phrases for the page and the section statements: absent and near-ubiquitous ones left out.

    Multi-word phrases with stopwords ("statement of cash flows") stay out of the section statement: their
    position lists are the most expensive to evaluate, and the page statement already rewards them.
    """
    gen = lexical.generation(conn)
    limit = MAX_DF * lexical.page_count(conn, gen)
    df = lexical.page_frequencies(conn, gen, [quote(p) for p in q.phrases])
    present = [p for p in q.phrases if df[quote(p)] > 0]
    if issuer and any(not issuer.issuperset(p) for p in present):
        present = [p for p in present if not issuer.issuperset(p)]
    chosen = [p for p in present if df[quote(p)] <= limit]
    if not chosen:
        chosen = sorted(present, key=lambda p: (df[quote(p)], p))[:KEEP_RAREST]
    if len(chosen) > MAX_STATEMENT_PHRASES:
        keep = set(sorted(chosen, key=lambda p: (df[quote(p)], p))[:MAX_STATEMENT_PHRASES])
        chosen = [p for p in chosen if p in keep]
    return chosen, [p for p in chosen if not has_stopword(p)]
