"""Fuse the section and page BM25 rankings, statement cues and (across documents) a document prior.

Each BM25 signal is divided by its best value in the candidate set, so the weights mean the same for any
query length. Scores are rounded and ties break by id, so the order is a pure function of KB and query.
"""

from __future__ import annotations

from dataclasses import dataclass

from jsonl_engine.retrieval.weights import (
    DOC_TOP_PAGES,
    MIN_PREAMBLE,
    SCORE_DIGITS,
    SPREAD_SECTION,
    W_COVER,
    W_DOC,
    W_PAGE,
    W_PAGES,
    W_SAME_PAGE,
    W_SECTION,
    W_TITLE,
    W_TITLED,
)
from jsonl_engine.store import SectionRef

PageKey = tuple[str, int]


@dataclass(slots=True)
class Candidate:
    id: str
    document_id: str
    title: str
    path: list[str]
    page_start: int
    page_end: int
    section: float = 0.0
    page: float = 0.0
    doc: float = 0.0
    score: float = 0.0
    best: int = 0  # the page giving its page score (the first of equals)


def candidate(ref: SectionRef) -> Candidate | None:
    """A retrievable section (a leaf with text, or a parent with a real preamble), on its own pages."""
    if not ref.text_len or (ref.own_map is not None and ref.text_len < MIN_PREAMBLE):
        return None
    start, end = ref.page_start, ref.page_end
    if ref.own_map is not None:
        own = [p for _, p in ref.own_map]
        start, end = (min(own), max(own)) if own else (start, start)
    return Candidate(id=ref.section_id, document_id=ref.document_id, title=ref.title, path=ref.path,
                     page_start=start, page_end=end)


def _scaled(values: dict[str, float]) -> dict[str, float]:
    best = max(values.values(), default=0.0)
    return {k: (v / best if best > 0 else 0.0) for k, v in values.items()}


def document_prior(pages: list[tuple[str, int, float]], covers: dict[str, float],
                   titles: dict[str, float], named: bool = False) -> dict[str, float]:
    """How much the query is about each document, in [0, 1].

    When the query names an issuer found on documents' first pages (`named`), only those documents get a
    prior, ordered by the name match and then by their best pages. Otherwise the prior mixes the first-page
    match of rare query words, the title, and the sum of each document's best page scores.
    """
    per_doc: dict[str, list[float]] = {}
    for doc, _, score in pages:
        per_doc.setdefault(doc, []).append(score)
    sums = {doc: sum(sorted(s, reverse=True)[:DOC_TOP_PAGES]) for doc, s in per_doc.items()}
    sums_n, covers_n = _scaled(sums), _scaled(covers)
    if named:
        raw = {d: c * (1 - W_PAGES + W_PAGES * sums_n.get(d, 0.0)) + W_TITLE * titles.get(d, 0.0)
               for d, c in covers_n.items()}
        return _scaled(raw)
    raw = {d: W_COVER * covers_n.get(d, 0.0) + W_TITLE * titles.get(d, 0.0) + W_PAGES * sums_n.get(d, 0.0)
           for d in set(sums) | set(covers) | set(titles)}
    return _scaled(raw)


def page_scores(pages: list[tuple[str, int, float]], boost: dict[PageKey, float]) -> dict[PageKey, float]:
    best = max((s for _, _, s in pages), default=0.0) or 1.0
    scores = {(doc, num): s / best for doc, num, s in pages}
    for key, b in boost.items():
        scores[key] = scores.get(key, 0.0) + b
    return scores


def fuse(cands: dict[str, Candidate], sections: list[tuple[str, float]], page_score: dict[PageKey, float],
         prior: dict[str, float] | None, spread_out: bool = True, lifted: set[str] = frozenset()) -> list[Candidate]:
    """The candidates scored and ranked; unless told not to, a page's further weak sections spread out (`spread`)."""
    best_s = max((s for _, s in sections), default=0.0) or 1.0
    for section_id, s in sections:
        if section_id in cands:
            cands[section_id].section = s / best_s
    get = page_score.get
    for c in cands.values():
        doc, start, end = c.document_id, c.page_start, c.page_end
        if start == end:  # most sections: one page, its score
            c.page, c.best = get((doc, start), 0.0), start
        else:
            scores = [(get((doc, n), 0.0), n) for n in range(start, end + 1)]
            c.page, c.best = max(scores, key=lambda t: (t[0], -t[1]), default=(0.0, start))
        c.doc = prior.get(doc, 0.0) if prior else 0.0
        c.score = round(W_SECTION * c.section + W_PAGE * c.page + W_DOC * c.doc
                        + (W_TITLED if c.id in lifted else 0.0), SCORE_DIGITS)
    ranked = sorted(cands.values(), key=lambda c: (-c.score, c.id))
    return spread(ranked) if spread_out else ranked


def spread(ranked: list[Candidate]) -> list[Candidate]:
    """`ranked` (best first), each section that shows no page a better section does not show already, and whose own
    words match weakly (below SPREAD_SECTION of the best section match), lowered by W_SAME_PAGE, then ranked again.

    Documents are cut into sections by their headings, and a page is often several: a statement split into a
    section per group of rows ("ASSETS", "Cash flows from investing activities"), a report's first page split into
    labelled blocks (the title block, "Analysis", "Probable Cause and Findings", "Findings"). Each of them gets its
    page's score (W_PAGE weighs the page above the section's own words), so the page matching best filled the first
    places with blocks ranking only by it, and kept out the other pages a question may be answered on (an accident
    report's third page with the flight's departure point). A section matching well on its own keeps its place (a
    table of figures split from its page's heading: kb.synthesize answers from it), and so does one reaching a page
    not shown yet. A section covers its pages only when it spans at most two of them (a chapter spanning many is no
    page's content), and only when the page giving its page score (`best`) was not covered already."""
    covered: set[PageKey] = set()
    for c in ranked:
        pages = [(c.document_id, n) for n in range(c.page_start, c.page_end + 1)]
        if (c.document_id, c.best) in covered:
            if c.section < SPREAD_SECTION and covered.issuperset(pages):
                c.score = round(c.score - W_SAME_PAGE, SCORE_DIGITS)
        elif len(pages) <= 2:
            covered.update(pages)
    return sorted(ranked, key=lambda c: (-c.score, c.id))


@dataclass(slots=True)
class PageCandidate:
    document_id: str
    number: int
    section: Candidate | None
    score: float = 0.0


def fuse_pages(cands: dict[str, Candidate], sections: list[tuple[str, float]], page_score: dict[PageKey, float],
               prior: dict[str, float] | None) -> list[PageCandidate]:
    """Rank pages: the page's own BM25 plus the best section on it (so titles and ancestors count)."""
    best_s = max((s for _, s in sections), default=0.0) or 1.0
    best_on: dict[PageKey, tuple[float, Candidate]] = {}
    for section_id, s in sections:
        c = cands.get(section_id)
        if c is None:
            continue
        for n in range(c.page_start, c.page_end + 1):
            key = (c.document_id, n)
            if key not in best_on or best_on[key][0] < s / best_s:
                best_on[key] = (s / best_s, c)
    out = []
    for key in set(page_score) | set(best_on):
        s, c = best_on.get(key, (0.0, None))
        d = prior.get(key[0], 0.0) if prior else 0.0
        score = W_PAGE * page_score.get(key, 0.0) + W_SECTION * s + W_DOC * d
        out.append(PageCandidate(document_id=key[0], number=key[1], section=c, score=round(score, SCORE_DIGITS)))
    return sorted(out, key=lambda p: (-p.score, p.document_id, p.number))
