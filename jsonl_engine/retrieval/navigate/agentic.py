"""agentic: the model navigates the outline with one JSON action per turn (outline, expand, read, done),
each observation fed back, for at most `max_hops` turns.

- The opening shows the outline as deep as fits half the budget, so an easy question can end in one turn.
- Invented ids are dropped (an expand/read of one gets an error observation; a pick of one is discarded);
  picks are deduplicated; `read` of an internal node falls back to its summary and its subsections.
- A reply that is not a valid action costs its hop and gets an error observation; three in a row end the
  loop. Reaching the hop cap without `done` returns the best picks so far (the last `picks` the model
  attached to any action, else the sections it read, latest first) with a reason.
- Every call's prompt stays within the budget (`Conversation`); `progress` reports each hop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from jsonl_engine.llm.usage import Usage, truncate_to_tokens
from jsonl_engine.retrieval.navigate import outline, prompts
from jsonl_engine.retrieval.navigate.loop import Navigator, arg
from jsonl_engine.retrieval.navigate.picks import (
    ONLY_INVENTED,
    PICK_KEYS,
    Pick,
    by_relevance,
    picks_result,
    raw_picks,
    resolve_picks,
)
from jsonl_engine.retrieval.navigate.tree import Node, Tree, node_text

if TYPE_CHECKING:
    from jsonl_engine.llm.gateway import Gateway
    from jsonl_engine.retrieval.types import Progress, Retrieval, StrategyRequest
    from jsonl_engine.store import Store

REPLY_TOKENS = 384
ACTIONS = {"outline": "outline", "structure": "outline", "toc": "outline",
           "expand": "expand", "children": "expand", "open": "expand", "list": "expand",
           "read": "read", "view": "read", "text": "read",
           "done": "done", "finish": "done", "answer": "done", "submit": "done", "final": "done"}
ID_ARGS = ("section_id", "id", "section", "target", "node")


class Agent(Navigator):
    kind = "action"
    aliases = ACTIONS
    last_hop_note = prompts.AGENT_LAST_HOP
    bad_reply = prompts.AGENT_BAD_ACTION

    def __init__(self, store: Store, tree: Tree, request: StrategyRequest, gateway: Gateway,
                 usage: Usage) -> None:
        self.limit = int(request.limit)
        super().__init__(store, tree, request, gateway, usage)
        self.start(prompts.AGENT_SYSTEM.format(limit=self.limit, max_hops=self.max_hops), prompts.AGENT_USER,
                   REPLY_TOKENS)
        self.shortlist: list[Pick] = []
        self.read: list[Node] = []
        self.seen: set[tuple[str, str]] = set()

    def describe(self, name: str, args: Mapping[str, Any]) -> str:
        target = arg(args, *ID_ARGS)
        return name + (f" {str(target)[:40]}" if target is not None and name != "done" else "")

    def note_shortlist(self, args: Mapping[str, Any]) -> None:
        raw = raw_picks(args, ("picks", "candidates", "shortlist"))
        if raw:
            picks, invented = resolve_picks(self.tree, raw)
            self.invented.extend(invented)
            if picks:
                self.shortlist = picks

    async def observe(self, name: str, args: Mapping[str, Any]) -> str:
        self.note_shortlist(args)
        target = arg(args, *ID_ARGS)
        cap = self.chat.observation_cap()
        if name == "outline":
            return "Top-level outline:\n" + truncate_to_tokens(self.outline_text, cap)
        node = self.tree.resolve(target)
        if node is None:
            if target not in (None, ""):
                self.invented.append(str(target)[:80])
            return (f"Unknown section id {str(target)[:60]!r}: use an id exactly as shown in the outline."
                    if target not in (None, "") else f"{name} needs a section_id.")
        label = f"{self.tree.label(node)} {node.title} [{outline.pages(node)}]"
        repeat = "(You already did this.) " if (name, node.id) in self.seen else ""
        self.seen.add((name, node.id))
        children = self.tree.shown_children(node)
        if name == "expand":
            if not children:
                return f"{repeat}{label} has no subsections; read it or pick it."
            return f"{repeat}Subsections of {label}:\n" + truncate_to_tokens(
                outline.render_nodes(self.tree, children), cap)
        if children:  # read of an internal node: its summary and what is under it
            summary = node.summary or "(no summary)"
            return (f"{repeat}{label} is a section with subsections; its summary: {summary}\nSubsections:\n"
                    + truncate_to_tokens(outline.render_nodes(self.tree, children, summaries=False), cap // 2))
        if node not in self.read:
            self.read.append(node)
        text = (await asyncio.to_thread(node_text, self.store, node)).strip() or node.summary or "(this section has no text)"
        return f"{repeat}Text of {label}:\n" + truncate_to_tokens(text, cap)

    async def done(self, args: Mapping[str, Any], hops: int) -> Retrieval:
        picks, invented = resolve_picks(self.tree, raw_picks(args, (*PICK_KEYS, "_value")) or [])
        self.invented.extend(invented)
        reason = None
        if not picks:
            reason = ONLY_INVENTED if invented else "the model found no section that answers the query"
        return await self.finish(by_relevance(picks), hops, reason, {})

    async def fallback(self, hops: int, why: str) -> Retrieval:
        """The best picks so far: the last shortlist, else the sections read, latest first."""
        picks = list(self.shortlist) or [Pick(n, None, i) for i, n in enumerate(reversed(self.read))]
        reason = (f"{why}; returning " + (f"the {len(picks)} best pick(s) so far" if picks else "nothing (no "
                                          "section was read or shortlisted)"))
        return await self.finish(picks, hops, reason, {"fallback": True})

    async def finish(self, picks: list[Pick], hops: int, reason: str | None, details: dict[str, Any]) -> Retrieval:
        return await picks_result(self.store, self.tree, self.request, picks, usage=self.usage, hops=hops,
                                  reason=reason, details=self.with_invented(details))


async def run(store: Store, tree: Tree, request: StrategyRequest, gateway: Gateway, progress: Progress,
              usage: Usage) -> Retrieval:
    return await Agent(store, tree, request, gateway, usage).drive(progress)
