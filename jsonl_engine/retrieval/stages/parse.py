"""Stage 1, parse: the user's text -> the query every later stage reads (query.py builds the phrases)."""

from __future__ import annotations

from dataclasses import dataclass

from jsonl_engine.retrieval import query
from jsonl_engine.retrieval.query import Query
from jsonl_engine.retrieval.weights import SECTION_DOCS
from jsonl_engine.store import Scope


@dataclass(frozen=True, slots=True)
class Ask:
    """One lexical request: the user's text, its parsed query, the documents in scope, and what to return."""

    text: str
    query: Query
    scope: Scope
    documents: list[str]  # the ids in scope, sorted
    limit: int
    unit: str  # "section" or "page" (checked before parsing)

    @property
    def several(self) -> bool:
        """More than one document in scope: the question is routed and documents get a prior."""
        return len(self.documents) > 1

    @property
    def few(self) -> bool:
        """No more documents in scope than sections are searched in: they are known before the pages are."""
        return len(self.documents) <= SECTION_DOCS


def parse(text: str, scope: Scope, *, limit: int, unit: str) -> Ask:
    """Never raises for any text: a query with no searchable terms has no phrases."""
    return Ask(text=text, query=query.parse(text), scope=scope, documents=sorted(scope.documents), limit=limit,
               unit=unit)
