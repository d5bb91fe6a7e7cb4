"""Stage 3, candidates: the phrases searched, the pages and sections they hit, and the documents in focus.

Phrases found on most pages are left out (IDF near zero, yet most of the cost); a long question keeps its rarest
phrases; the words that named the document (its issuer, an earnings call's quarter) are left out of its passages'
ranking. BM25 over whole pages gives the page evidence; across documents a document prior (rank.document_prior)
picks the documents whose sections column-weighted BM25 then searches. The section statement runs on a side
thread beside the page statement when the documents it will search are known (few in scope) or guessed (routed),
not for one document in scope: both its statements are small, and a side thread reads through a connection (and
a page cache) of its own, which a new daemon fills a second time (bench/backends.py --measure-only, ten times the
library, a fresh daemon per round, 6 rounds on a quiet machine: scoped kb.context p95 18.0-28.4 -> 14.9-19.8 ms,
the daemon's CPU p95 19.6-31.1 -> 14.8-19.4 ms).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, wait
from dataclasses import dataclass
from typing import Any, TypeVar

from jsonl_engine.identity import transcript
from jsonl_engine.retrieval import prior, rank
from jsonl_engine.retrieval.query import Query, has_stopword, tokenize
from jsonl_engine.retrieval.stages.parse import Ask
from jsonl_engine.retrieval.stages.route import Routing
from jsonl_engine.retrieval.weights import (
    KEEP_RAREST,
    MAX_DF,
    MAX_STATEMENT_PHRASES,
    NAMED_DOCS,
    PAGE_CANDIDATES,
    SECTION_CANDIDATES,
    SECTION_DOCS,
    SECTION_WEIGHTS,
)
from jsonl_engine.retrieval.workers import Workers, shared
from jsonl_engine.store import PageHit, Phrase, Scope, SectionHit, Store

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Found:
    """What the searches found: pages (document, page, BM25) and sections, best first; the document prior (None
    for one document in scope) and the documents whose sections were searched."""

    pages: list[PageHit]
    sections: list[SectionHit]
    prior: dict[str, float] | None
    focus: list[str]

    @property
    def empty(self) -> bool:
        return not self.pages and not self.sections


def gather(store: Store, ask: Ask, routing: Routing) -> Found:
    # the page counts before the naming words' cover pages: a client-server store reads those with the counts
    df = _page_frequencies(store, ask.query.phrases)
    page_phrases, section_phrases = select_phrases(store, ask.query, _naming_words(store, ask, routing), df)
    if not page_phrases:
        return Found(pages=[], sections=[], prior=None, focus=ask.documents)
    guess = ask.documents if ask.few else routing.ranked[:SECTION_DOCS] if routing.named else None
    beside = _beside(store, store.search_sections, section_phrases, SECTION_WEIGHTS, ask.scope, SECTION_CANDIDATES,
                     guess) if guess and ask.several and section_phrases and store.side_searches else None
    try:
        pages = _search_pages(store, ask, routing, page_phrases)
        document_prior, focus = _focus(store, ask, routing, pages)
    except BaseException:
        _drop(beside)
        raise
    if beside is not None and set(guess) == set(focus):
        sections = beside.result()
    else:
        _drop(beside)
        sections = store.search_sections(section_phrases, SECTION_WEIGHTS, ask.scope, SECTION_CANDIDATES, focus) \
            if section_phrases else []
    return Found(pages=pages, sections=sections, prior=document_prior, focus=focus)


def _naming_words(store: Store, ask: Ask, routing: Routing) -> frozenset[str]:
    """The words that picked the document: the issuer's name picks it (the prior), but inside its own filings it
    is on every page and only adds noise (a list of subsidiaries named after it), so passages are ranked without
    it; likewise the words naming an earnings call."""
    named = sorted(routing.covers) if routing.named else ask.documents if ask.few else []
    best = routing.ranked[:NAMED_DOCS] if routing.named else ask.documents if ask.few else []
    return prior.issuer_names(store, ask.query, named) | _call_words(store, ask.query, best)


def _call_words(store: Store, q: Query, docs: list[str]) -> frozenset[str]:
    """Inside earnings-call transcripts, the words naming the call ("Q2 2023 earnings call") are on its title and
    opening turn only: like the issuer's name, they picked the document and are left out of its passages' ranking."""
    cards = store.cards(docs) if docs else {}  # the library's, kept per state of the KB: no statement
    if not docs or not all((card := cards.get(d)) is not None and card.kind == transcript.KIND for d in docs):
        return frozenset()
    return transcript.call_words(q.words)


def select_phrases(store: Store, q: Query, leave_out: frozenset[str] = frozenset(),
                   df: dict[Phrase, int] | None = None) -> tuple[list[Phrase], list[Phrase]]:
    """Phrases for the page and the section statements: absent and near-ubiquitous ones left out, and those made
    only of `leave_out` words (unless nothing else is found).

    Multi-word phrases with stopwords ("statement of cash flows") stay out of the section statement: their
    position lists are the most expensive to evaluate, and the page statement already rewards them.
    """
    limit = MAX_DF * store.count("pages")
    df = _page_frequencies(store, q.phrases) if df is None else df  # `df`: the page counts, read already
    present = [p for p in q.phrases if df[p] > 0]
    if leave_out and any(not leave_out.issuperset(p) for p in present):
        present = [p for p in present if not leave_out.issuperset(p)]
    chosen = [p for p in present if df[p] <= limit]
    if not chosen:
        chosen = sorted(present, key=lambda p: (df[p], p))[:KEEP_RAREST]
    if len(chosen) > MAX_STATEMENT_PHRASES:
        keep = set(sorted(chosen, key=lambda p: (df[p], p))[:MAX_STATEMENT_PHRASES])
        chosen = [p for p in chosen if p in keep]
    return chosen, [p for p in chosen if not has_stopword(p)]


def _search_pages(store: Store, ask: Ask, routing: Routing, phrases: list[Phrase]) -> list[PageHit]:
    """The best pages: of the named issuer's documents only when the question names it (cheaper, as good)."""
    if routing.named:
        return store.search_pages(phrases, ask.scope, PAGE_CANDIDATES, within=routing.ranked[:NAMED_DOCS])
    return store.search_pages(phrases, ask.scope, PAGE_CANDIDATES, within=None if ask.several else ask.documents)


def _focus(store: Store, ask: Ask, routing: Routing, pages: list[PageHit]
           ) -> tuple[dict[str, float] | None, list[str]]:
    """The document prior (across documents) and the documents whose sections are searched: every document in
    scope when few are, else the prior's first."""
    if not ask.several:
        return None, ask.documents
    document_prior = rank.document_prior(pages, routing.covers, _title_matches(store, ask.query.words, ask.scope),
                                         routing.named)
    if ask.few:
        return document_prior, ask.documents
    return document_prior, sorted(document_prior, key=lambda d: (-document_prior[d], d))[:SECTION_DOCS]


def _title_matches(store: Store, words: list[str], scope: Scope) -> dict[str, float]:
    """Share of the query's words found in each document title (tokenised once per title), in scope order. The
    scope's titles are indexed by word once per scope (the library's: once per state of it), so a query reads the
    documents whose title holds one of its words instead of testing every title."""
    if not words:
        return {}
    wanted = set(words)
    titles = tuple((doc, title) for doc, (title, _) in scope.documents.items())
    index = store.memo("title-index", titles, lambda: _title_index(store, titles))
    hits: dict[int, int] = {}
    for word in wanted:
        for i in index.get(word, ()):
            hits[i] = hits.get(i, 0) + 1
    return {titles[i][0]: hits[i] / len(wanted) for i in sorted(hits)}


def _title_tokens(store: Store, title: str) -> frozenset[str]:
    return store.memo("title-tokens", title, lambda: frozenset(tokenize(title)))


def _title_index(store: Store, titles: tuple[tuple[str, str], ...]) -> dict[str, list[int]]:
    """word -> the places in `titles` of the titles holding it."""
    index: dict[str, list[int]] = {}
    for i, (_, title) in enumerate(titles):
        for word in _title_tokens(store, title):
            index.setdefault(word, []).append(i)
    return index


def _side_pool() -> Workers:
    return shared("search-side", 2)


def _drop(side: Future[Any] | None) -> None:
    """A side read not needed after all: cancelled, or waited for if it is already reading, so that no read
    outlives its request (a store closed after the request would close a connection the side thread still uses)."""
    if side is not None and not side.cancel():
        wait([side])


def _beside(store: Store, read: Callable[..., T], *args: Any) -> Future[T]:
    """`read(*args)` on a side thread, beside the calling thread's statements: the page and the section statements
    are independent once the documents to search are known, and each costs FTS5 a pass over the whole library's
    phrase counts.

    The side read has a snapshot of its own (store reads are per thread), so the counts it caches agree with the KB
    generation they are cached under; it may be newer than the caller's. Documents are immutable once written, so
    a search of named documents can only miss the rows of one removed meanwhile, as a search started a moment
    later would."""
    def run() -> T:
        with store.snapshot():
            return read(*args)

    return _side_pool().submit(run)


def _page_frequencies(store: Store, phrases: list[Phrase]) -> dict[Phrase, int]:
    """The phrases' page counts, half of those costly to count (`store.costly_counts`: SQLite's long phrases
    without statistics, each a pass over the index) counted on a side thread. Not the others: read from the term
    statistics, they cost less than the side thread's snapshot (ten times the library, the 65 dev questions
    scoped, in process, 6 alternated passes: a side thread per question with four phrases or more, none of
    them counted on the index, cost 0.2-1.3 ms of CPU per question, median 0.8)."""
    costly = store.costly_counts("pages", phrases)
    half = len(costly) // 2
    if not half:
        return store.frequencies("pages", phrases)
    aside = set(costly[:half])
    beside = _beside(store, store.frequencies, "pages", costly[:half])
    counts = store.frequencies("pages", [p for p in phrases if p not in aside])
    return {**beside.result(), **counts}
