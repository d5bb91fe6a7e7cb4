"""LLM retrieval strategies that let the model reason over a document's structure:

  single-pass   the outline in one prompt; the model names the sections that answer
  chunked-tree  the outline sliced into sibling subtrees that fit `max_tokens_per_call`, asked in parallel
  agentic       the model navigates with outline / expand / read / done actions, up to `max_hops`
  pageindex     the model reads pages (structure / pages / done) and cites page ranges with confidence

This module is light (the strategy table imports it): each strategy imports its
implementation when it first runs (the rows below name small loader functions). Settings are StrategyRequest fields; one left None takes its default:
max_tokens_per_call (the reader's context window less the reply), max_hops (loop.DEFAULT_MAX_HOPS = 6),
concurrency (chunked-tree: the reader's max_concurrency), max_cited_ranges (pageindex.DEFAULT_MAX_CITATIONS = 3),
max_pages_per_call (pageindex.DEFAULT_MAX_PAGES = 4).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal

from jsonl_engine.errors import LLMUnavailable
from jsonl_engine.retrieval.types import Progress, Retrieval, StrategyRequest, check_unit

if TYPE_CHECKING:
    from jsonl_engine.llm.gateway import Gateway
    from jsonl_engine.store import Store


class NavigateStrategy:
    needs_llm = True

    def __init__(self, name: str, navigate: Callable[..., Awaitable[Retrieval]],
                 navigates: Literal["pages", "sections"] = "sections") -> None:
        self.name = name
        self.navigate = navigate  # (store, tree, request, llm, progress, usage) -> Retrieval
        self.navigates = navigates  # what the model moves through: the sections, or the pages (pageindex)

    def __repr__(self) -> str:
        return f"NavigateStrategy({self.name!r})"

    async def run(self, store: Store, request: StrategyRequest, llm: Gateway | None,
                  progress: Progress) -> Retrieval:
        """`llm` is the Gateway the run calls (None: LLMUnavailable before any work)."""
        from jsonl_engine.llm.usage import Usage
        from jsonl_engine.retrieval.navigate.picks import result
        from jsonl_engine.retrieval.navigate.tree import load_tree

        check_unit(request.unit)
        if llm is None:
            raise LLMUnavailable(f"strategy {self.name!r} needs an LLM: configure [llm] (or JSONL_ENGINE_LLM_BASE_URL "
                                 "and JSONL_ENGINE_LLM_MODEL)")
        usage = Usage()
        tree = await asyncio.to_thread(load_tree, store, request.document_ids, tuple(request.statuses))
        if not tree.docs:
            return result([], usage=usage, hops=0, reason="no documents in scope with status "
                                                           + ", ".join(sorted(request.statuses)))
        if self.navigates == "pages" and not any(d.pages for d in tree.docs):
            return result([], usage=usage, hops=0, reason="the documents in scope have no pages")
        if self.navigates == "sections" and tree.empty:
            return result([], usage=usage, hops=0, reason="the documents in scope have no sections")
        found = await self.navigate(store, tree, request, llm, progress, usage)
        found.details.setdefault("strategy", self.name)
        return found


async def _single_pass(*args: Any) -> Retrieval:
    from jsonl_engine.retrieval.navigate import single_pass

    return await single_pass.run(*args)


async def _chunked_tree(*args: Any) -> Retrieval:
    from jsonl_engine.retrieval.navigate import chunked_tree

    return await chunked_tree.run(*args)


async def _agentic(*args: Any) -> Retrieval:
    from jsonl_engine.retrieval.navigate import agentic

    return await agentic.run(*args)


async def _pageindex(*args: Any) -> Retrieval:
    from jsonl_engine.retrieval.navigate import pageindex

    return await pageindex.run(*args)


STRATEGIES = (NavigateStrategy("single-pass", _single_pass), NavigateStrategy("chunked-tree", _chunked_tree),
              NavigateStrategy("agentic", _agentic), NavigateStrategy("pageindex", _pageindex, navigates="pages"))
