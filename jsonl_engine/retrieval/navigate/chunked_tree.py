"""chunked-tree: when the outline does not fit one call, it is sliced into sibling subtrees that fit (each
with its breadcrumb), the slices are asked in parallel under bounded concurrency, and the picks merged:
each id keeps its highest confidence; order is by confidence, then by the rank the model gave it in its
slice, then by slice order. An outline that fits is one single-pass call."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from jsonl_engine.llm.usage import Usage, estimate_tokens
from jsonl_engine.retrieval.navigate import outline, single_pass
from jsonl_engine.retrieval.navigate.picks import (
    NO_SECTION,
    Pick,
    picks_result,
    prompt_budget,
    report,
    result,
    setting,
)
from jsonl_engine.retrieval.navigate.tree import Tree

if TYPE_CHECKING:
    from jsonl_engine.llm.gateway import Gateway
    from jsonl_engine.retrieval.types import Progress, Retrieval, StrategyRequest
    from jsonl_engine.store import Store


def merge(per_slice: list[list[Pick]]) -> list[Pick]:
    """One pick per id with its highest confidence, ordered by (confidence, rank in slice, slice)."""
    best: dict[str, tuple[Pick, int, int]] = {}
    for slice_index, picks in enumerate(per_slice):
        for rank, pick in enumerate(picks):
            known = best.get(pick.node.id)
            if known is None or pick.weight > known[0].weight:
                best[pick.node.id] = (Pick(pick.node, pick.confidence), rank, slice_index)
    ordered = sorted(best.values(), key=lambda t: (-t[0].weight, t[1], t[2]))
    out = []
    for rank, (pick, _, _) in enumerate(ordered):
        pick.rank = rank
        out.append(pick)
    return out


async def run(store: Store, tree: Tree, request: StrategyRequest, gateway: Gateway, progress: Progress,
              usage: Usage) -> Retrieval:
    limit = int(request.limit)
    budget = prompt_budget(request, gateway, single_pass.REPLY_TOKENS) - single_pass.overhead(request.query, limit)
    whole = outline.render(tree)
    if estimate_tokens(whole) <= budget:
        found = await single_pass.run(store, tree, request, gateway, progress, usage)
        found.details["slices"] = 1
        return found
    slices = outline.slice_outline(tree, budget)
    if not slices:
        slices = outline.slice_outline(tree, budget, summaries=False)
    if not slices:
        return result([], usage=usage, hops=0, reason="max_tokens_per_call is too small to show any part of the "
                                                       "outline")
    bound = max(1, int(setting(request, "concurrency", gateway.settings.max_concurrency)))
    slots = asyncio.Semaphore(bound)
    finished = [0]
    report(progress, "navigate", 0, len(slices), f"chunked-tree: {len(slices)} slices")

    async def ask(i: int, piece: outline.Slice) -> tuple[int, list[Pick], list[str], bool]:
        messages = single_pass.select_messages(request.query, piece.text, limit, part=(i + 1, len(slices)))
        async with slots:
            asked, picks, invented = await single_pass.select(gateway, tree, messages, usage)
        finished[0] += 1
        report(progress, "navigate", finished[0], len(slices), f"chunked-tree: slice {i + 1} answered")
        return asked.turns, picks, invented, asked.value is not None

    tasks = [asyncio.ensure_future(ask(i, s)) for i, s in enumerate(slices)]
    try:
        answers = await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    turns = sum(a[0] for a in answers)
    failed = sum(1 for a in answers if not a[3])
    invented = list(dict.fromkeys(i for a in answers for i in a[2]))
    picks = merge([a[1] for a in answers])
    details: dict[str, Any] = {"slices": len(slices)}
    if failed:
        details["failed_slices"] = failed
    if invented:
        details["invented_ids"] = invented
    if failed == len(slices):
        return result([], usage=usage, hops=turns, details=details,
                      reason="the model did not return a usable JSON selection for any outline slice")
    return await picks_result(store, tree, request, picks, usage=usage, hops=turns, nothing=NO_SECTION,
                              details=details)
