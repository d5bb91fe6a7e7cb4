"""Lexical retrieval, no LLM: the passages (sections, or whole pages) a question needs, deterministically.

`retrieve` is the shared entry point (kb.context's "lexical" strategy and the first stage of answers); it runs
the pipeline of `pipeline.py`, one module of `stages/` per stage:
1. parse: user text -> quoted phrases (never FTS syntax), fiscal forms, accounting vocabulary (query.py).
2. route: the documents the question names by entity, period and kind (identity/route.py), else the names and
   rare words found on documents' first pages (prior.py).
3. candidates: phrases found on most pages are left out, a long question keeps its rarest; BM25 over whole pages;
   across documents a document prior picks the documents whose sections column-weighted BM25 searches.
4. score: statement cues (cues.py) lift the statement pages a metric question needs; rank.fuse: scaled section +
   page + document scores, rounded; ties break by id; a page's further weakly matching sections step aside
   (rank.spread).
5. assemble: near-duplicates collapse to the best (dedupe.py); texts and snippets (snippet.py).
Every constant they weigh with is in weights.py.
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

    The pipeline (pipeline.py) is imported on first use, so listing strategies at start-up stays cheap.
    """
    from jsonl_engine.retrieval.pipeline import retrieve as run

    return run(store, query, document_ids=document_ids, statuses=statuses, limit=limit, unit=unit)


def salient_terms(query: str) -> list[str]:
    """The query's content terms (stopwords dropped), in order."""
    from jsonl_engine.retrieval.query import salient_terms as terms

    return terms(query)


def answer_terms(query: str) -> list[str]:
    """The salient terms an answer must cover (kb.synthesize gaps): framing words kept for retrieval dropped."""
    from jsonl_engine.retrieval.query import answer_terms as terms

    return terms(query)
