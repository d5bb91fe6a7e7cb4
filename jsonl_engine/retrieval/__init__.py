"""Lexical retrieval, no LLM: the passages (sections, or whole pages) a question needs, deterministically.

`retrieve` is the shared entry point (kb.context's "lexical" strategy and the first stage of answers):
1. query.parse: user text -> quoted phrases (never FTS syntax), fiscal forms, accounting vocabulary.
2. Phrases found on most pages are left out (IDF near zero, yet most of the cost); a long question keeps
   its rarest phrases.
3. BM25 over whole pages (pages_fts): page evidence, and the candidate pages.
4. Across documents, a document prior (prior.py): the issuer names and periods the question carries, found
   on documents' first pages (else rare words there), then each document's best pages.
5. Column-weighted BM25 over sections (title, ancestors' titles, text) of the documents in focus.
6. Statement cues (cues.py): a metric question lifts the income statement, balance sheet or cash flow pages.
7. rank.fuse: normalised section + page + document scores, rounded; ties break by id; near-duplicates
   collapse to the best (dedupe.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from jsonl_engine.errors import InvalidParams

if TYPE_CHECKING:
    from jsonl_engine.store import Store

__all__ = ["Passage", "Retrieval", "retrieve", "salient_terms", "answer_terms", "UNITS", "check_unit"]

UNITS = ("section", "page")


def check_unit(unit: str) -> None:
    """InvalidParams unless `unit` is one of UNITS."""
    if unit not in UNITS:
        raise InvalidParams(f"unit must be one of {', '.join(UNITS)}", fields=["unit"])


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

    @classmethod
    def for_page(cls, document_id: str, number: int, *, document_title: str, status: str, path: list[str],
                 score: float, text: str, snippet: str, confidence: float | None = None) -> Passage:
        """A unit="page" passage: page `number` of a document, id "<document_id>:p<number>"."""
        return cls(section_id=f"{document_id}:p{number}", document_id=document_id, document_title=document_title,
                   title=f"Page {number}", path=path, page_start=number, page_end=number, score=score, text=text,
                   snippet=snippet, status=status, page_map=[(0, number)], unit="page", confidence=confidence)


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
    """Rank passages for `query`. Raises NotFound for unknown document ids; never raises for query text.

    The pipeline (search.py) is imported on first use, so listing strategies at start-up stays cheap.
    """
    from jsonl_engine.retrieval.search import retrieve as run

    return run(store, query, document_ids=document_ids, statuses=statuses, limit=limit, unit=unit)


def salient_terms(query: str) -> list[str]:
    """The query's content terms (stopwords dropped), in order."""
    from jsonl_engine.retrieval.query import salient_terms as terms

    return terms(query)


def answer_terms(query: str) -> list[str]:
    """The salient terms an answer must cover (kb.synthesize gaps): framing words kept for retrieval dropped."""
    from jsonl_engine.retrieval.query import answer_terms as terms

    return terms(query)
