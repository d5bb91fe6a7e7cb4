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
from typing import TYPE_CHECKING

from jsonl_engine.retrieval.types import UNITS, Passage, Retrieval, check_unit

if TYPE_CHECKING:
    from jsonl_engine.store import Store

__all__ = ["Passage", "Retrieval", "retrieve", "salient_terms", "answer_terms", "UNITS", "check_unit"]

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
