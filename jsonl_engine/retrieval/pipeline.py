"""Lexical retrieval as one pipeline: parse -> route -> candidates -> score -> assemble (the stages are the modules
of `stages/`, their constants in `weights.py`)."""

from __future__ import annotations

from collections.abc import Sequence

from jsonl_engine.retrieval.stages.assemble import assemble
from jsonl_engine.retrieval.stages.candidates import gather
from jsonl_engine.retrieval.stages.parse import parse
from jsonl_engine.retrieval.stages.route import route
from jsonl_engine.retrieval.stages.score import score
from jsonl_engine.retrieval.types import Retrieval, check_unit
from jsonl_engine.store import Store


def retrieve(store: Store, text: str, *, document_ids: list[str] | None = None,
             statuses: Sequence[str] = ("approved",), limit: int = 8, unit: str = "section") -> Retrieval:
    """Rank passages for `text`. Raises NotFound for unknown document ids; never raises for query text."""
    check_unit(unit)
    with store.snapshot():
        scope = store.scope(document_ids, statuses)
        if not scope.documents:
            return Retrieval([], reason="no documents in scope with status " + ", ".join(sorted(statuses)))
        ask = parse(text, scope, limit=limit, unit=unit)
        if not ask.query.phrases:
            return Retrieval([], reason="the query has no searchable terms")
        routing = route(store, ask)
        found = gather(store, ask, routing)
        if found.empty:
            return routing.outcome([])
        scored = score(store, ask, found)
        return routing.outcome(assemble(store, ask, scored))
