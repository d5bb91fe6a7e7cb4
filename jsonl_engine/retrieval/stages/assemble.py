"""Stage 5, assemble: the passages out of the ranking: near-duplicates collapsed to the best (dedupe.py), texts
loaded, snippets cut around the query's words (snippet.py)."""

from __future__ import annotations

from jsonl_engine.retrieval import dedupe, rank, snippet
from jsonl_engine.retrieval.stages.parse import Ask
from jsonl_engine.retrieval.stages.score import Scored
from jsonl_engine.retrieval.types import Passage
from jsonl_engine.retrieval.weights import PAGE_BATCH_EXTRA, POOL_EXTRA, POOL_FACTOR
from jsonl_engine.store import Store


def assemble(store: Store, ask: Ask, scored: Scored) -> list[Passage]:
    """At most `ask.limit` passages, best first."""
    if ask.unit == "page":
        return _pages(store, ask, scored.pages)
    return _sections(store, ask, scored.sections)


def _sections(store: Store, ask: Ask, ranked: list[rank.Candidate]) -> list[Passage]:
    ranked = ranked[: ask.limit * POOL_FACTOR + POOL_EXTRA]
    texts: dict[str, tuple[str, list[tuple[int, int]]]] = {}
    place = {c.id: i for i, c in enumerate(ranked)}

    def text_of(c: rank.Candidate) -> str:
        """Texts loaded limit + PAGE_BATCH_EXTRA at a time, from the first one collapsing has not seen: it reads
        about limit of them (weights.PAGE_BATCH_EXTRA)."""
        if c.id not in texts:
            start = place[c.id]
            texts.update(store.section_texts([x.id for x in ranked[start: start + ask.limit + PAGE_BATCH_EXTRA]]))
        return texts[c.id][0]

    kept = dedupe.collapse(ranked, text_of, ask.limit)
    find = snippet.finder(ask.query.words)
    out = []
    for c in kept:
        text, page_map = texts[c.id]
        title, status = ask.scope.documents[c.document_id]
        out.append(Passage(section_id=c.id, document_id=c.document_id, document_title=title, title=c.title,
                           path=c.path, page_start=c.page_start, page_end=c.page_end, score=c.score, text=text,
                           snippet=find(text), status=status, page_map=page_map))
    return out


def _pages(store: Store, ask: Ask, ranked: list[rank.PageCandidate]) -> list[Passage]:
    limit = ask.limit
    ranked = ranked[: limit * POOL_FACTOR + POOL_EXTRA]
    texts: dict[tuple[str, int], str] = {}
    kept: list[rank.PageCandidate] = []
    for start in range(0, len(ranked), limit + PAGE_BATCH_EXTRA):  # pages are long: load them as dedupe needs them
        batch = ranked[start: start + limit + PAGE_BATCH_EXTRA]
        texts.update(store.page_texts([(p.document_id, p.number) for p in batch]))
        kept = dedupe.collapse([p for p in ranked[: start + len(batch)] if (p.document_id, p.number) in texts],
                               lambda p: texts[(p.document_id, p.number)], limit)
        if len(kept) >= limit:
            break
    find = snippet.finder(ask.query.words)
    out = []
    for p in kept:
        text = texts[(p.document_id, p.number)]
        title, status = ask.scope.documents[p.document_id]
        path = [*p.section.path, p.section.title] if p.section is not None else []
        out.append(Passage.for_page(p.document_id, p.number, document_title=title, status=status, path=path,
                                    score=p.score, text=text, snippet=find(text)))
    return out
