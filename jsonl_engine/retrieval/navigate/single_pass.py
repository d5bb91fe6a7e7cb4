"""single-pass: the whole outline (depth-limited if it must be, to fit the budget) in one prompt; the model
returns the ids of the sections that answer. An unusable reply is retried twice with a stricter
instruction, then the selection is empty with a reason."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jsonl_engine.llm.usage import Usage, estimate_tokens
from jsonl_engine.retrieval.navigate import outline, prompts
from jsonl_engine.retrieval.navigate.picks import (
    NO_SECTION,
    ONLY_INVENTED,
    Asked,
    Pick,
    ask_json,
    by_relevance,
    picks_result,
    prompt_budget,
    raw_picks,
    report,
    resolve_picks,
    result,
)
from jsonl_engine.retrieval.navigate.tree import Tree

if TYPE_CHECKING:
    from jsonl_engine.llm.gateway import Gateway
    from jsonl_engine.retrieval.types import Progress, Retrieval, StrategyRequest
    from jsonl_engine.store import Store

REPLY_TOKENS = 512


def select_messages(query: str, outline_text: str, limit: int, *, part: tuple[int, int] | None = None
                    ) -> list[dict[str, str]]:
    user = (prompts.SELECT_USER.format(query=query, outline=outline_text) if part is None else
            prompts.SLICE_USER.format(query=query, outline=outline_text, part=part[0], parts=part[1]))
    return [{"role": "system", "content": prompts.SELECT_SYSTEM.format(limit=limit)},
            {"role": "user", "content": user}]


def overhead(query: str, limit: int) -> int:
    """Prompt tokens besides the outline (system, question, framing)."""
    return estimate_tokens(prompts.SELECT_SYSTEM.format(limit=limit) + prompts.SLICE_USER + query) + 16


async def select(gateway: Gateway, tree: Tree, messages: list[dict[str, str]], usage: Usage
                 ) -> tuple[Asked, list[Pick], list[str]]:
    """One selection turn (with its JSON retries): (the turn, the picks that exist, the invented ids)."""
    asked = await ask_json(gateway, messages, usage=usage, max_tokens=REPLY_TOKENS, validate=raw_picks)
    if asked.value is None:
        return asked, [], []
    picks, invented = resolve_picks(tree, asked.value)
    return asked, picks, invented


async def run(store: Store, tree: Tree, request: StrategyRequest, gateway: Gateway, progress: Progress,
              usage: Usage) -> Retrieval:
    limit = int(request.limit)
    budget = prompt_budget(request, gateway, REPLY_TOKENS) - overhead(request.query, limit)
    text, note = outline.fit(tree, budget)
    report(progress, "navigate", 0, 1, "single-pass: outline sent")
    asked, picks, invented = await select(gateway, tree, select_messages(request.query, text, limit), usage)
    report(progress, "navigate", 1, 1, f"single-pass: {len(picks)} section(s) picked")
    details: dict[str, Any] = {"invented_ids": invented} if invented else {}
    if note:
        details["note"] = note
    if asked.value is None:
        return result([], usage=usage, hops=asked.turns, details=details,
                      reason=f"the model did not return a usable JSON selection after {asked.turns} attempts")
    return await picks_result(store, tree, request, by_relevance(picks), usage=usage, hops=asked.turns,
                              nothing=ONLY_INVENTED if invented else NO_SECTION, details=details)
