"""LLM retrieval strategies that let the model reason over a document's structure:

  single-pass   the outline in one prompt; the model names the sections that answer
  chunked-tree  the outline sliced into sibling subtrees that fit `max_tokens_per_call`, asked in parallel
  agentic       the model navigates with outline / expand / read / done actions, up to `max_hops`
  pageindex     the model reads pages (structure / pages / done) and cites page ranges with confidence

This module is light (capabilities lists strategy names at start-up): each strategy imports its
implementation when it first runs. Settings are StrategyRequest fields; one left None takes its default:
max_tokens_per_call (the reader's context window less the reply), max_hops (loop.DEFAULT_MAX_HOPS = 6),
concurrency (chunked-tree: the reader's max_concurrency), max_cited_ranges (pageindex.DEFAULT_MAX_CITATIONS = 3),
max_pages_per_call (pageindex.DEFAULT_MAX_PAGES = 4).
"""

from __future__ import annotations

import asyncio
from importlib import import_module
from typing import TYPE_CHECKING, Literal

from jsonl_engine.errors import LLMUnavailable
from jsonl_engine.retrieval.types import Progress, Retrieval, StrategyRequest, check_unit

if TYPE_CHECKING:
    from jsonl_engine.llm.gateway import Gateway
    from jsonl_engine.store import Store


class NavigateStrategy:
    needs_llm = True

    def __init__(self, name: str, module: str, navigates: Literal["pages", "sections"] = "sections") -> None:
        self.name = name
        self.module = module
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
        impl = import_module(f"{__name__}.{self.module}")
        found = await impl.run(store, tree, request, llm, progress, usage)
        found.details.setdefault("strategy", self.name)
        return found


STRATEGIES = (NavigateStrategy("single-pass", "single_pass"), NavigateStrategy("chunked-tree", "chunked_tree"),
              NavigateStrategy("agentic", "agentic"), NavigateStrategy("pageindex", "pageindex", navigates="pages"))
