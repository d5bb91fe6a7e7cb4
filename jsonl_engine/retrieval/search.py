"""The lexical retrieval pipeline behind `retrieve` (see the package docstring for the steps)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from jsonl_engine.identity import route as route_mod
from jsonl_engine.identity import transcript
from jsonl_engine.identity.statements import statement_pages as page_statements
from jsonl_engine.retrieval import cues, dedupe, rank, snippet
from jsonl_engine.retrieval import prior as prior_mod
from jsonl_engine.retrieval.query import Query, has_stopword, parse, tokenize
from jsonl_engine.retrieval.types import Passage, Retrieval, check_unit
from jsonl_engine.store import Phrase, Scope, SectionWeights, Store

T = TypeVar("T")

PAGE_CANDIDATES = 200
SECTION_CANDIDATES = 200
PAGES_TO_SECTIONS = 30  # top pages whose sections join the candidate set
NAMED_DOCS = 4  # a question naming its issuer searches the pages of that issuer's best-matching documents
SECTION_DOCS = 2  # across many documents, section BM25 runs on the documents the prior ranks first
MAX_DF = 0.3  # phrases on more than this share of pages are left out (IDF near zero, cost high)
KEEP_RAREST = 3  # ... unless every phrase is that common: then the rarest few are kept
MAX_STATEMENT_PHRASES = 20  # a long question keeps its rarest phrases (cost grows with each phrase)
SECTION_WEIGHTS = SectionWeights(title=4.0, ancestors=1.5, text=1.0)  # BM25 weight of each section field
SPAN_BACK = 3  # a retrievable section starts at most this many pages before a page it covers


def retrieve(store: Store, query: str, *, document_ids: list[str] | None = None,
             statuses: Sequence[str] = ("approved",), limit: int = 8, unit: str = "section") -> Retrieval:
    """Rank passages for `query`. Raises NotFound for unknown document ids; never raises for query text."""
    check_unit(unit)
    q = parse(query)
    with store.snapshot():
        scope = store.scope(document_ids, statuses)
        if not scope.documents:
            return Retrieval([], reason="no documents in scope with status " + ", ".join(sorted(statuses)))
        if not q.phrases:
            return Retrieval([], reason="the query has no searchable terms")
        return _retrieve(store, q, scope, limit, unit, query)


def _retrieve(store: Store, q: Query, scope: Scope, limit: int, unit: str, text: str = "") -> Retrieval:
    docs = sorted(scope.documents)
    routed = route_mod.route(store, text, scope) if len(docs) > 1 else route_mod.Route()
    decided = routed.decided()
    if decided is not None:  # the query names one document by its entity and period: answer from it
        covers, named = {decided: routed.scores[decided]}, True
    elif routed.scores:  # the query names an entity the cards know: its documents, by period and kind
        covers, named = dict(routed.scores), True
    else:
        covers, named = prior_mod.cover_scores(store, q, scope) if len(docs) > 1 else ({}, False)
    # The issuer's name picks the document (the prior); inside its own filings it is on every page and
    # only adds noise (a list of subsidiaries named after it), so passages are ranked without it.
    issuer = prior_mod.issuer_names(store, q, sorted(covers) if named else docs if len(docs) <= SECTION_DOCS else [])
    issuer |= _call_words(store, q, _ranked(covers)[:NAMED_DOCS] if named else docs if len(docs) <= SECTION_DOCS
                          else [])
    page_phrases, section_phrases = _select_phrases(store, q, issuer)
    why, covering = _routed(routed, scope, decided), routed.covering()
    if not page_phrases:
        return Retrieval([], reason="no passage matches the query terms", routed=why, period_documents=covering)
    # The section statement runs on another core beside the page statement, for the documents it will search:
    # known when few are in scope, else guessed from the routing (kept only if the prior then picks them).
    ranked = _ranked(covers) if named else []
    guess = docs if len(docs) <= SECTION_DOCS else ranked[:SECTION_DOCS] or None
    beside = _beside(store, store.search_sections, section_phrases, SECTION_WEIGHTS, scope, SECTION_CANDIDATES,
                     guess) if guess and section_phrases else None
    if named:  # the question names its issuer: search that issuer's documents only (cheaper, as good)
        pages = store.search_pages(page_phrases, scope, PAGE_CANDIDATES, within=ranked[:NAMED_DOCS])
    else:
        pages = store.search_pages(page_phrases, scope, PAGE_CANDIDATES, within=docs if len(docs) == 1 else None)
    prior = None
    focus = docs
    if len(docs) > 1:
        prior = rank.document_prior(pages, covers, _title_matches(store, q.words, scope), named)
        if len(docs) > SECTION_DOCS:
            focus = sorted(prior, key=lambda d: (-prior[d], d))[:SECTION_DOCS]
    if beside is not None and set(guess) == set(focus):
        hits = beside.result()
    else:
        hits = store.search_sections(section_phrases, SECTION_WEIGHTS, scope, SECTION_CANDIDATES, focus) \
            if section_phrases else []
    if not pages and not hits:
        return Retrieval([], reason="no passage matches the query terms", routed=why, period_documents=covering)
    boost = _statement_boost(store, q, pages, focus)
    page_score = rank.page_scores(pages, boost)
    refs = [h.section for h in hits]
    if unit == "section":  # sections on the best pages (pages themselves need only the section hits)
        top = [(d, n) for d, n, _ in pages[:PAGES_TO_SECTIONS]]
        refs += store.sections_on_pages(top + sorted(set(boost) - set(top)), SPAN_BACK)
    cands = {c.id: c for c in map(rank.candidate, refs) if c is not None}
    sections = [(h.section.section_id, h.score) for h in hits]
    if unit == "page":
        passages = _pages(store, q.words, scope, rank.fuse_pages(cands, sections, page_score, prior), limit)
    else:
        passages = _sections(store, q.words, scope, rank.fuse(cands, sections, page_score, prior), limit)
    return Retrieval(passages, reason=None if passages else "no passage matches the query terms", routed=why,
                     period_documents=covering)


_side: ThreadPoolExecutor | None = None
_side_lock = threading.Lock()


def _side_pool() -> ThreadPoolExecutor:
    global _side
    with _side_lock:
        if _side is None:
            _side = ThreadPoolExecutor(max_workers=2, thread_name_prefix="search-side")
        return _side


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
    """The phrases' page counts, half of them counted on a side thread (a phrase not seen before costs a pass over
    the index)."""
    half = len(phrases) // 2
    if half < 2:
        return store.page_frequencies(phrases)
    beside = _beside(store, store.page_frequencies, phrases[:half])
    counts = store.page_frequencies(phrases[half:])
    return {**beside.result(), **counts}


def _ranked(covers: dict[str, float]) -> list[str]:
    return sorted(covers, key=lambda d: (-covers[d], d))


def _call_words(store: Store, q: Query, docs: list[str]) -> frozenset[str]:
    """Inside earnings-call transcripts, the words naming the call ("Q2 2023 earnings call") are on its title and
    opening turn only: like the issuer's name, they picked the document and are left out of its passages' ranking."""
    if not docs or not all(d.card is not None and d.card.kind == transcript.KIND
                           for d in store.documents(document_ids=docs)):
        return frozenset()
    return transcript.call_words(q.words)


def _routed(routed: route_mod.Route, scope: Scope, decided: str | None) -> list[dict]:
    """The documents the query was routed to, best first, with their titles, scores and reasons (`decided`: the
    one document the passages then come from)."""
    return [{"document_id": d, "title": scope.documents[d][0], "score": routed.scores[d], "why": routed.why[d],
             "decided": d == decided} for d in routed.top()]


def _sections(store: Store, words: list[str], scope: Scope, ranked: list[rank.Candidate],
              limit: int) -> list[Passage]:
    ranked = ranked[: limit * 4 + 8]
    texts = store.section_texts([c.id for c in ranked])
    kept = dedupe.collapse(ranked, lambda c: texts[c.id][0], limit)
    find = snippet.finder(words)
    out = []
    for c in kept:
        text, page_map = texts[c.id]
        title, status = scope.documents[c.document_id]
        out.append(Passage(section_id=c.id, document_id=c.document_id, document_title=title, title=c.title,
                           path=c.path, page_start=c.page_start, page_end=c.page_end, score=c.score, text=text,
                           snippet=find(text), status=status, page_map=page_map))
    return out


def _pages(store: Store, words: list[str], scope: Scope, ranked: list[rank.PageCandidate],
           limit: int) -> list[Passage]:
    ranked = ranked[: limit * 4 + 8]
    texts: dict[tuple[str, int], str] = {}
    kept: list[rank.PageCandidate] = []
    for start in range(0, len(ranked), limit + 4):  # pages are long: load them as dedupe needs them
        batch = ranked[start: start + limit + 4]
        texts.update(store.page_texts([(p.document_id, p.number) for p in batch]))
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


def _title_matches(store: Store, words: list[str], scope: Scope) -> dict[str, float]:
    """Share of the query's words found in each document title (tokenised once per title)."""
    if not words:
        return {}
    wanted = set(words)
    out = {}
    for doc, (title, _) in scope.documents.items():
        tokens = store.memo("title-tokens", title, lambda title=title: frozenset(tokenize(title)))
        hit = wanted.intersection(tokens)
        if hit:
            out[doc] = len(hit) / len(wanted)
    return out


def _statement_boost(store: Store, q: Query, pages: Sequence[tuple[str, int, float]],
                     focus: list[str]) -> dict[tuple[str, int], float]:
    """Lift the statement pages (income, balance sheet, cash flow) a metric question needs: among the pages
    found, and every such page of the documents in focus (a statement page may share few query words)."""
    wanted = cues.wanted_statements(q.tokens)
    if not wanted:
        return {}
    focus = focus[:SECTION_DOCS]
    statements = page_statements(store, sorted({d for d, _, _ in pages} | set(focus)))
    keys = {(d, n) for d, n, _ in pages} | {(d, n) for d in focus for n in statements[d]}
    return {(d, n): rank.W_STATEMENT for d, n in keys if statements[d].get(n) in wanted}


def _select_phrases(store: Store, q: Query, issuer: frozenset[str] = frozenset()
                    ) -> tuple[list[Phrase], list[Phrase]]:
    """Phrases for the page and the section statements: absent and near-ubiquitous ones left out.

    Multi-word phrases with stopwords ("statement of cash flows") stay out of the section statement: their
    position lists are the most expensive to evaluate, and the page statement already rewards them.
    """
    limit = MAX_DF * store.page_count()
    df = _page_frequencies(store, q.phrases)
    present = [p for p in q.phrases if df[p] > 0]
    if issuer and any(not issuer.issuperset(p) for p in present):
        present = [p for p in present if not issuer.issuperset(p)]
    chosen = [p for p in present if df[p] <= limit]
    if not chosen:
        chosen = sorted(present, key=lambda p: (df[p], p))[:KEEP_RAREST]
    if len(chosen) > MAX_STATEMENT_PHRASES:
        keep = set(sorted(chosen, key=lambda p: (df[p], p))[:MAX_STATEMENT_PHRASES])
        chosen = [p for p in chosen if p in keep]
    return chosen, [p for p in chosen if not has_stopword(p)]
