"""Stage 2, route: which documents the query is about, before any passage is scored.

The cards decide first (identity/route.py: entity, period, kind; one document when the query names it by entity
and period); a query naming no entity the cards know falls back to the names and rare words found on documents'
first pages (prior.py). One document in scope is not routed.
"""

from __future__ import annotations

from dataclasses import dataclass

from jsonl_engine.identity import route as identity_route
from jsonl_engine.retrieval import prior
from jsonl_engine.retrieval.stages.parse import Ask
from jsonl_engine.retrieval.types import Passage, Retrieval
from jsonl_engine.store import Store

NOTHING_FOUND = "no passage matches the query terms"


@dataclass(frozen=True, slots=True)
class Routing:
    """Document id -> how much the query is about it, and what the answer reports of the routing."""

    covers: dict[str, float]
    named: bool  # the covers come from names the query carries (the cards' entities or first pages' names)
    routed: list[dict]  # Retrieval.routed: the documents the cards routed to, best first, with titles and reasons
    period_documents: list[str]  # Retrieval.period_documents: the routed documents covering the named period

    @property
    def ranked(self) -> list[str]:
        """The covered documents, best first (ties by id)."""
        return sorted(self.covers, key=lambda d: (-self.covers[d], d))

    def outcome(self, passages: list[Passage]) -> Retrieval:
        """The retrieval these passages make, with the routing reported."""
        return Retrieval(passages, reason=None if passages else NOTHING_FOUND, routed=self.routed,
                         period_documents=self.period_documents)


def route(store: Store, ask: Ask) -> Routing:
    routed = identity_route.route(store, ask.text, ask.scope) if ask.several else identity_route.Route()
    decided = routed.decided()
    if decided is not None:  # the query names one document by its entity and period: answer from it
        covers, named = {decided: routed.scores[decided]}, True
    elif routed.scores:  # the query names an entity the cards know: its documents, by period and kind
        covers, named = dict(routed.scores), True
    else:
        covers, named = prior.cover_scores(store, ask.query, ask.scope) if ask.several else ({}, False)
    return Routing(covers=covers, named=named, routed=_reported(routed, ask, decided),
                   period_documents=routed.covering())


def _reported(routed: identity_route.Route, ask: Ask, decided: str | None) -> list[dict]:
    """The documents the query was routed to, best first, with their titles, scores and reasons (`decided`: the
    one document the passages then come from)."""
    return [{"document_id": d, "title": ask.scope.documents[d][0], "score": routed.scores[d], "why": routed.why[d],
             "decided": d == decided} for d in routed.top()]
