"""The table of retrieval strategies by name, built here and only here: lexical plus the navigating strategies.
kb.context and kb.answer resolve `strategy` through `get_strategy`; a new strategy is a `Strategy` (types.py)
added to STRATEGIES below.
"""

from __future__ import annotations

import asyncio
import functools
import os
from typing import TYPE_CHECKING

from jsonl_engine.errors import InvalidParams
from jsonl_engine.retrieval import navigate
from jsonl_engine.retrieval.types import Progress, Retrieval, Strategy, StrategyRequest
from jsonl_engine.retrieval.workers import Workers, shared

if TYPE_CHECKING:
    from jsonl_engine.llm.gateway import Gateway
    from jsonl_engine.store import Store


class Lexical:
    """BM25 over sections and pages, fused; no LLM. The blocking store work runs in a worker thread."""

    name = "lexical"
    needs_llm = False

    async def run(self, store: Store, request: StrategyRequest, llm: Gateway | None,
                  progress: Progress) -> Retrieval:
        from jsonl_engine.retrieval.pipeline import (
            retrieve,  # the pipeline loads on first use (start-up stays fast)
        )

        return await asyncio.get_running_loop().run_in_executor(_workers(), functools.partial(
            retrieve, store, request.query, document_ids=request.document_ids, statuses=request.statuses,
            limit=request.limit, unit=request.unit))


def _workers() -> Workers:
    """The threads lexical retrieval runs on (asyncio.to_thread's pool spreads one-at-a-time questions over several
    threads, each reading through a page cache of its own: workers.py); as many as asyncio's default pool has."""
    return shared("retrieval", min(32, (os.cpu_count() or 1) + 4))


STRATEGIES: dict[str, Strategy] = {s.name: s for s in (Lexical(), *navigate.STRATEGIES)}


def get_strategy(name: str) -> Strategy:
    try:
        return STRATEGIES[name]
    except KeyError:
        known = ", ".join(sorted(STRATEGIES))
        raise InvalidParams(f"unknown strategy {name!r}; known: {known}", fields=["strategy"]) from None
