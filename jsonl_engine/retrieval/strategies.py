"""Retrieval strategies by name. kb.context (and kb.answer) resolve `strategy` here; LLM strategies of a
later issue register under the same interface (`register(MyStrategy())`) without touching the handlers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from jsonl_engine.errors import InvalidParams

if TYPE_CHECKING:
    from jsonl_engine.retrieval import Retrieval
    from jsonl_engine.store import Store

Progress = Callable[..., None]  # ctx.progress(stage, done=None, total=None, message=None)


@dataclass
class StrategyRequest:
    query: str
    document_ids: list[str] | None = None
    statuses: tuple[str, ...] = ("approved",)
    limit: int = 8
    unit: str = "section"
    max_tokens_per_call: int | None = None
    max_hops: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # strategy-specific params, passed through


class Strategy(Protocol):
    name: str
    needs_llm: bool

    async def run(self, store: Store, request: StrategyRequest, llm: Any | None,
                  progress: Progress) -> Retrieval: ...


class Lexical:
    """FTS5 BM25 over sections and pages, fused; no LLM. Blocking SQLite work runs in a worker thread."""

    name = "lexical"
    needs_llm = False

    async def run(self, store: Store, request: StrategyRequest, llm: Any | None, progress: Progress) -> Retrieval:
        from jsonl_engine.retrieval import retrieve

        return await asyncio.to_thread(
            retrieve, store, request.query, document_ids=request.document_ids, statuses=request.statuses,
            limit=request.limit, unit=request.unit)


STRATEGIES: dict[str, Strategy] = {}


def register(strategy: Strategy) -> Strategy:
    STRATEGIES[strategy.name] = strategy
    return strategy


def get_strategy(name: str) -> Strategy:
    try:
        return STRATEGIES[name]
    except KeyError:
        known = ", ".join(sorted(STRATEGIES))
        raise InvalidParams(f"unknown strategy {name!r}; known: {known}", fields=["strategy"]) from None


register(Lexical())

import jsonl_engine.retrieval.navigate  # noqa: E402,F401  (registers the LLM strategies; light, no httpx)
