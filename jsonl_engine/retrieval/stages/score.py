"""Stage 4, score: statement cues lift the pages a metric question needs or names (cues.py); a section whose heading
is made of the question's words is lifted (titled_as_asked); the candidate sections (the
sections hit, and those lying on the best pages) or pages are fused from their section, page and document scores
(rank.py) and ranked, ties broken by id; a page's further weakly matching sections step aside (rank.spread)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from jsonl_engine.identity.statements import statement_pages
from jsonl_engine.retrieval import cues, rank
from jsonl_engine.retrieval.query import LINE_ITEMS, MONTHS, Query, ngrams, tokenize
from jsonl_engine.retrieval.stages.candidates import Found
from jsonl_engine.retrieval.stages.parse import Ask
from jsonl_engine.retrieval.weights import (
    PAGES_TO_SECTIONS,
    SECTION_DOCS,
    SPAN_BACK,
    W_NAMED_STATEMENT,
    W_STATEMENT,
)
from jsonl_engine.store import PageHit, Store
from jsonl_engine.text import STOPWORDS
from jsonl_engine.vocabulary import ANALYST_ITEMS


@dataclass(frozen=True, slots=True)
class Scored:
    """The ranking, best first: of sections (unit "section") or of pages (unit "page"), the other list empty."""

    sections: list[rank.Candidate] = field(default_factory=list)
    pages: list[rank.PageCandidate] = field(default_factory=list)


def score(store: Store, ask: Ask, found: Found) -> Scored:
    # a question naming the statement to read ("... based on the cash flow statement") is answered there: its pages
    # are lifted, and its sections keep their places
    named, _ = cues.named_statement(ask.query.tokens)
    boost = _statement_boost(store, ask.query, named, found.pages, found.focus)
    page_score = rank.page_scores(found.pages, boost)
    refs = [h.section for h in found.sections]
    if ask.unit == "section":  # sections on the best pages (pages themselves need only the section hits)
        top = [(d, n) for d, n, _ in found.pages[:PAGES_TO_SECTIONS]]
        refs += store.sections_on_pages(top + sorted(set(boost) - set(top)), SPAN_BACK)
    candidates = {c.id: c for c in map(rank.candidate, refs) if c is not None}
    sections = [(h.section.section_id, h.score) for h in found.sections]
    if ask.unit == "page":
        return Scored(pages=rank.fuse_pages(candidates, sections, page_score, found.prior))
    titled = titled_as_asked(ask.query, [c for c in candidates.values()
                                          if (c.document_id, c.page_start) not in boost])
    return Scored(sections=rank.fuse(candidates, sections, page_score, found.prior, spread_out=not named,
                                     lifted=titled))


_PART = re.compile(r"\s*\(part \d+\)$")  # a long section's parts: "Employees (part 2)"
# Words of a period: a heading of them alone ("Fiscal 2018") says when, not what.
_PERIOD_WORDS = MONTHS | {"fiscal", "year", "years", "quarter", "quarters", "month", "months", "week", "weeks", "ended",
                          "ending", "end", "first", "second", "third", "fourth"}


def titled_as_asked(q: Query, cands: Iterable[rank.Candidate]) -> set[str]:
    """The ids of the sections whose heading is made only of the question's own words and of the labels the item it
    asks for is printed under (an analyst's "people worked for": "Employees"; "operating profit": "Operating
    income"): a heading naming the asked item ("Employees", "International Segment") is read before pages that match
    by the words a document repeats on most of its pages (its period, its name). Not the related phrases retrieval
    adds ("debt": "short term borrowings"), which name other items; a heading of names (the issuer's) or period
    words alone names no item."""
    grams = ngrams(q.tokens)
    labels = [label for trigger in grams for label in (*ANALYST_ITEMS.get(trigger, ()), *LINE_ITEMS.get(trigger, ()))]
    asked = {t for p in q.phrases[:q.n_words] for t in p} | {t for label in labels for t in label.split()}
    asked = {t for t in asked if not t.isdigit()}
    plain = {t for run in q.names for t in run} | _PERIOD_WORDS
    out = set()
    for c in cands:
        words = _heading_words(c.title)
        if words and asked.issuperset(words) and not plain.issuperset(words):
            out.add(c.id)
    return out


@lru_cache(maxsize=8192)
def _heading_words(title: str) -> frozenset[str]:
    """A heading's words, its part number, stopwords and numbers left out (a pure function of the title: kept)."""
    return frozenset(t for t in tokenize(_PART.sub("", title)) if t not in STOPWORDS and not t.isdigit())


def _statement_boost(store: Store, q: Query, named: str | None, pages: Sequence[PageHit],
                     focus: list[str]) -> dict[tuple[str, int], float]:
    """Lift the statement pages (income, balance sheet, cash flow) a metric question needs: among the pages
    found, and every such page of the documents in focus (a statement page may share few query words). A question
    naming the statement to read ("... outlined in its income statements") wants that statement, whatever item it
    asks for (a line the cues do not know: "restructuring costs")."""
    wanted = cues.wanted_statements(q.tokens) | ({named} if named else frozenset())
    if not wanted:
        return {}
    focus = focus[:SECTION_DOCS]
    statements = statement_pages(store, sorted({d for d, _, _ in pages} | set(focus)))
    keys = {(d, n) for d, n, _ in pages} | {(d, n) for d in focus for n in statements[d]}
    weight = {k: W_NAMED_STATEMENT if k == named else W_STATEMENT for k in wanted}
    return {(d, n): weight[kind] for d, n in keys if (kind := statements[d].get(n)) in wanted}
