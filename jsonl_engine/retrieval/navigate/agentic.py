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
from typing import TYPE_CHECKING, Any

from jsonl_engine.llm.usage import Usage, estimate_tokens, truncate_to_tokens
from jsonl_engine.retrieval.navigate import outline, prompts
from jsonl_engine.retrieval.navigate.common import (
    DEFAULT_MAX_HOPS,
    PICK_KEYS,
    Pick,
    by_relevance,
    emit,
    materialize,
    prompt_budget,
    raw_picks,
    resolve_picks,
    result,
    setting,
)
from jsonl_engine.retrieval.navigate.loop import Conversation, arg
from jsonl_engine.retrieval.navigate.tree import Node, Tree, node_text

if TYPE_CHECKING:
    from jsonl_engine.llm.gateway import Gateway
    from jsonl_engine.retrieval import Retrieval
    from jsonl_engine.store import Store

REPLY_TOKENS = 384
MAX_BAD_STREAK = 3
ACTIONS = {"outline": "outline", "structure": "outline", "toc": "outline",
           "expand": "expand", "children": "expand", "open": "expand", "list": "expand",
           "read": "read", "view": "read", "text": "read",
           "done": "done", "finish": "done", "answer": "done", "submit": "done", "final": "done"}
ID_ARGS = ("section_id", "id", "section", "target", "node")


class Agent:
    def __init__(self, store: Store, tree: Tree, request: Any, gateway: Gateway, usage: Usage) -> None:
        self.store, self.tree, self.request, self.gateway, self.usage = store, tree, request, gateway, usage
        self.limit = int(request.limit)
        self.max_hops = max(1, int(setting(request, "max_hops", DEFAULT_MAX_HOPS)))
        budget = prompt_budget(request, gateway, REPLY_TOKENS)
        system = prompts.AGENT_SYSTEM.format(limit=self.limit, max_hops=self.max_hops)
        frame = estimate_tokens(system + prompts.AGENT_USER + request.query) + 16
        self.outline_text, _ = outline.fit(tree, max(64, (budget - frame) // 2))
        self.chat = Conversation(system, prompts.AGENT_USER.format(query=request.query, outline=self.outline_text),
                                 budget)
        self.shortlist: list[Pick] = []
        self.read: list[Node] = []
        self.invented: list[str] = []
        self.seen: set[tuple[str, str]] = set()

    async def run(self, progress: Any) -> Retrieval:
        bad_streak, hops = 0, 0
        for hop in range(1, self.max_hops + 1):
            note = prompts.AGENT_LAST_HOP if hop == self.max_hops else None
            action = await self.chat.turn(self.gateway, self.usage, note, REPLY_TOKENS, ACTIONS)
            hops = hop
            if isinstance(action, str):
                bad_streak += 1
                emit(progress, "navigate", hop, self.max_hops, f"hop {hop}: invalid action ({action})")
                if bad_streak >= MAX_BAD_STREAK:
                    return await self.finish(None, hops, f"the model sent {bad_streak} replies in a row that were "
                                                         "not valid JSON actions")
                self.chat.add_observation(prompts.AGENT_BAD_ACTION.format(problem=action))
                continue
            bad_streak = 0
            name, args = action
            target = arg(args, *ID_ARGS)
            emit(progress, "navigate", hop, self.max_hops,
                 f"hop {hop}: {name}" + (f" {str(target)[:40]}" if target is not None and name != "done" else ""))
            if name == "done":
                return await self.finish(raw_picks(args, (*PICK_KEYS, "_value")) or [], hops, None)
            self.note_shortlist(args)
            observation = await self.observe(name, target)
            left = self.max_hops - hop
            self.chat.add_observation(f"{observation}\n\n(actions left: {left})")
        return await self.finish(None, hops, f"the model did not call done within max_hops={self.max_hops}")

    def note_shortlist(self, args: dict[str, Any]) -> None:
        raw = raw_picks(args, ("picks", "candidates", "shortlist"))
        if raw:
            picks, invented = resolve_picks(self.tree, raw)
            self.invented.extend(invented)
            if picks:
                self.shortlist = picks

    async def observe(self, name: str, target: Any) -> str:
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

    async def finish(self, raw: list[tuple[Any, float | None]] | None, hops: int, reason: str | None) -> Retrieval:
        details: dict[str, Any] = {}
        if raw is not None:
            picks, invented = resolve_picks(self.tree, raw)
            picks = by_relevance(picks)
            self.invented.extend(invented)
            if not picks and invented:
                reason = "the model picked only ids that are not in the outline"
            elif not picks:
                reason = "the model found no section that answers the query"
        else:
            details["fallback"] = True
            picks = list(self.shortlist) or [Pick(n, None, i) for i, n in enumerate(reversed(self.read))]
            reason = (f"{reason}; returning " + (f"the {len(picks)} best pick(s) so far" if picks else "nothing (no "
                                                 "section was read or shortlisted)"))
        if self.invented:
            details["invented_ids"] = list(dict.fromkeys(self.invented))
        passages = await asyncio.to_thread(materialize, self.store, self.tree, picks, query=self.request.query,
                                           unit=self.request.unit, limit=self.limit)
        confidence = max((p.confidence for p in picks if p.confidence is not None), default=None)
        return result(passages, usage=self.usage, hops=hops, reason=reason, confidence=confidence, details=details)


async def run(store: Store, tree: Tree, request: Any, gateway: Gateway, progress: Any, usage: Usage) -> Retrieval:
    return await Agent(store, tree, request, gateway, usage).run(progress)
