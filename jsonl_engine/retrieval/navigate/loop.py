"""The turn loop shared by agentic and pageindex (`Navigator`): a conversation kept within the per-call token
budget, and tolerant parsing of one JSON action per reply."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from jsonl_engine.llm.jsonparse import JSONParseError, parse_json_object
from jsonl_engine.llm.usage import (
    MESSAGE_OVERHEAD,
    Usage,
    estimate_messages,
    estimate_tokens,
    truncate_to_tokens,
)
from jsonl_engine.retrieval.navigate import outline
from jsonl_engine.retrieval.navigate.picks import (
    DEFAULT_MAX_HOPS,
    REPLY_ECHO_TOKENS,
    prompt_budget,
    report,
    setting,
)
from jsonl_engine.retrieval.navigate.tree import Tree

if TYPE_CHECKING:
    from jsonl_engine.llm.gateway import Gateway
    from jsonl_engine.retrieval.types import Progress, Retrieval, StrategyRequest
    from jsonl_engine.store import Store

MAX_BAD_STREAK = 3  # replies in a row that are not a valid action, ending the loop
ELIDED = "[earlier observation removed to stay within the token budget]"
NAME_KEYS = ("action", "tool", "name", "type", "function", "command")
ARG_KEYS = ("args", "arguments", "input", "parameters", "params")


class Conversation:
    """system + the opening user message, then (reply, observation) pairs. `messages()` is the history as
    sent: the oldest observations are elided first, then the newest is cut, so a call never exceeds
    `budget` prompt tokens (the opening is fitted by the caller)."""

    def __init__(self, system: str, opening: str, budget: int) -> None:
        self.budget = budget
        self.history: list[dict[str, str]] = [{"role": "system", "content": system},
                                              {"role": "user", "content": opening}]

    @property
    def base_tokens(self) -> int:
        return estimate_messages(self.history[:2])

    def observation_cap(self, floor: int = 256) -> int:
        """Tokens an observation may take: half of what the opening leaves, at least `floor`."""
        return max(floor, (self.budget - self.base_tokens) // 2)

    def add_reply(self, text: str) -> None:
        self.history.append({"role": "assistant", "content": truncate_to_tokens(text, REPLY_ECHO_TOKENS) or "{}"})

    def add_observation(self, text: str) -> None:
        self.history.append({"role": "user", "content": text})

    def messages(self, note: str | None = None) -> list[dict[str, str]]:
        out = [dict(m) for m in self.history]
        if note:
            if out[-1]["role"] == "user":
                out[-1]["content"] += "\n\n" + note
            else:
                out.append({"role": "user", "content": note})
        observations = [i for i in range(2, len(out)) if out[i]["role"] == "user"]
        for i in observations[:-1]:
            if estimate_messages(out) <= self.budget:
                break
            out[i]["content"] = ELIDED
        excess = estimate_messages(out) - self.budget
        for i in (len(out) - 1, 1):
            if excess <= 0:
                break
            keep = max(16, estimate_tokens(out[i]["content"]) - excess - MESSAGE_OVERHEAD)
            out[i]["content"] = truncate_to_tokens(out[i]["content"], keep)
            excess = estimate_messages(out) - self.budget
        return out

    async def turn(self, gateway: Gateway, usage: Usage, note: str | None, reply_tokens: int,
                   aliases: Mapping[str, str]) -> tuple[str, dict[str, Any]] | str:
        """One model turn: send the history (with `note`), keep the reply, parse it (see `parse_action`)."""
        completion = await gateway.chat(self.messages(note), usage=usage, json_mode=True, max_tokens=reply_tokens)
        self.add_reply(completion.text)
        return parse_action(completion.text, aliases)


class Navigator:
    """One JSON action per turn, for at most `max_hops` turns. A subclass sets the class attributes, calls
    `start` (the opening and the reply size) from its __init__, and implements the hooks: `describe` (the
    progress text of an action), `observe` (an action's observation), `done` and `fallback` (the Retrieval,
    on done or when the loop ends without it: hop cap, or MAX_BAD_STREAK invalid replies in a row).

    Each hop is reported as "hop N: <describe>" or "hop N: invalid <kind> (<problem>)"; an observation ends
    with "(<kind>s left: N)"; the last turn carries `last_hop_note`."""

    kind: str  # what one reply is, in progress messages and reasons: "action", "tool call"
    aliases: Mapping[str, str]  # action names as the model may write them -> canonical names
    last_hop_note: str
    bad_reply: str  # the observation for an invalid reply, with {problem}

    def __init__(self, store: Store, tree: Tree, request: StrategyRequest, gateway: Gateway,
                 usage: Usage) -> None:
        self.store, self.tree, self.request, self.gateway, self.usage = store, tree, request, gateway, usage
        self.max_hops = max(1, int(setting(request, "max_hops", DEFAULT_MAX_HOPS)))
        self.invented: list[str] = []

    def start(self, system: str, user: str, reply_tokens: int, **fields: str) -> None:
        """The conversation, for replies of at most `reply_tokens`: `system`, then `user` filled with the query,
        `fields` and the outline as deep as fits half of what the budget leaves (`outline_text`)."""
        self.reply_tokens = reply_tokens
        budget = prompt_budget(self.request, self.gateway, reply_tokens)
        frame = estimate_tokens(system + user + self.request.query + "".join(fields.values())) + 16
        self.outline_text, _ = outline.fit(self.tree, max(64, (budget - frame) // 2))
        self.chat = Conversation(system, user.format(query=self.request.query, outline=self.outline_text, **fields),
                                 budget)

    async def drive(self, progress: Progress) -> Retrieval:
        bad_streak, hops = 0, 0
        for hop in range(1, self.max_hops + 1):
            note = self.last_hop_note if hop == self.max_hops else None
            action = await self.chat.turn(self.gateway, self.usage, note, self.reply_tokens, self.aliases)
            hops = hop
            if isinstance(action, str):
                bad_streak += 1
                report(progress, "navigate", hop, self.max_hops, f"hop {hop}: invalid {self.kind} ({action})")
                if bad_streak >= MAX_BAD_STREAK:
                    return await self.fallback(hops, f"the model sent {bad_streak} replies in a row that were not "
                                                     f"valid JSON {self.kind}s")
                self.chat.add_observation(self.bad_reply.format(problem=action))
                continue
            bad_streak = 0
            name, args = action
            report(progress, "navigate", hop, self.max_hops, f"hop {hop}: {self.describe(name, args)}")
            if name == "done":
                return await self.done(args, hops)
            observation = await self.observe(name, args)
            self.chat.add_observation(f"{observation}\n\n({self.kind}s left: {self.max_hops - hop})")
        return await self.fallback(hops, f"the model did not call done within max_hops={self.max_hops}")

    def with_invented(self, details: dict[str, Any]) -> dict[str, Any]:
        """`details` with the ids the model invented (deduplicated), when there are any."""
        if self.invented:
            details["invented_ids"] = list(dict.fromkeys(self.invented))
        return details

    def describe(self, name: str, args: Mapping[str, Any]) -> str:
        return name

    async def observe(self, name: str, args: Mapping[str, Any]) -> str:
        raise NotImplementedError

    async def done(self, args: Mapping[str, Any], hops: int) -> Retrieval:
        raise NotImplementedError

    async def fallback(self, hops: int, why: str) -> Retrieval:
        raise NotImplementedError


def parse_action(text: str, aliases: Mapping[str, str]) -> tuple[str, dict[str, Any]] | str:
    """(canonical action name, its arguments) from a reply, or a short description of what is wrong.

    Accepts {"action": "read", "section_id": ...}, {"tool": "pages", "args": {...}}, {"read": "3.1"},
    {"action": {"name": "read", ...}}; names are matched through `aliases` (lower-cased)."""
    try:
        obj = parse_json_object(text)
    except JSONParseError:
        return "the reply is not a JSON object"
    name, args = _named_action(obj, aliases)
    for key in ARG_KEYS:
        if isinstance(obj.get(key), dict):
            args = {**args, **obj[key]}
    if not isinstance(name, str) or not name.strip():
        return "no action named"
    canonical = aliases.get(name.strip().lower())
    if canonical is None:
        return f"unknown action {name.strip()[:40]!r}"
    return canonical, args


def _named_action(obj: dict[str, Any], aliases: Mapping[str, str]) -> tuple[Any, dict[str, Any]]:
    """The action's name as the reply gives it, and the arguments beside it: under a name key ({"action": "read"},
    {"action": {"name": "read", ...}}), else the one key of the reply that is an action ({"read": "3.1"})."""
    args: dict[str, Any] = dict(obj)
    name: Any = next((obj[key] for key in NAME_KEYS if key in obj), None)
    if isinstance(name, dict):
        args = {**args, **name}
        name = next((name[k] for k in NAME_KEYS if k in name), None)
    if name is not None:
        return name, args
    keyed = [k for k in obj if isinstance(k, str) and k.strip().lower() in aliases]
    if len(keyed) != 1:
        return None, args
    value = obj[keyed[0]]
    if isinstance(value, dict):
        return keyed[0], {**args, **value}
    return keyed[0], args if value is None else {**args, "_value": value}


def arg(args: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        if key in args and args[key] is not None:
            return args[key]
    return args.get("_value")
