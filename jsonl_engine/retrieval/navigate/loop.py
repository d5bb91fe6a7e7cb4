"""The turn loop shared by agentic and pageindex: a conversation kept within the per-call token budget, and
tolerant parsing of one JSON action per reply."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jsonl_engine.llm.jsonparse import JSONParseError, parse_json_object
from jsonl_engine.llm.usage import estimate_tokens, truncate_to_tokens
from jsonl_engine.retrieval.navigate.common import MESSAGE_OVERHEAD, REPLY_ECHO_TOKENS, messages_tokens

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
        return messages_tokens(self.history[:2])

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
            if messages_tokens(out) <= self.budget:
                break
            out[i]["content"] = ELIDED
        excess = messages_tokens(out) - self.budget
        for i in (len(out) - 1, 1):
            if excess <= 0:
                break
            keep = max(16, estimate_tokens(out[i]["content"]) - excess - MESSAGE_OVERHEAD)
            out[i]["content"] = truncate_to_tokens(out[i]["content"], keep)
            excess = messages_tokens(out) - self.budget
        return out

    async def turn(self, gateway: Any, usage: Any, note: str | None, reply_tokens: int,
                   aliases: Mapping[str, str]) -> tuple[str, dict[str, Any]] | str:
        """One model turn: send the history (with `note`), keep the reply, parse it (see `parse_action`)."""
        completion = await gateway.chat(self.messages(note), usage=usage, json_mode=True, max_tokens=reply_tokens)
        self.add_reply(completion.text)
        return parse_action(completion.text, aliases)


def parse_action(text: str, aliases: Mapping[str, str]) -> tuple[str, dict[str, Any]] | str:
    """(canonical action name, its arguments) from a reply, or a short description of what is wrong.

    Accepts {"action": "read", "section_id": ...}, {"tool": "pages", "args": {...}}, {"read": "3.1"},
    {"action": {"name": "read", ...}}; names are matched through `aliases` (lower-cased)."""
    try:
        obj = parse_json_object(text)
    except JSONParseError:
        return "the reply is not a JSON object"
    name: Any = None
    args: dict[str, Any] = dict(obj)
    for key in NAME_KEYS:
        if key in obj:
            name = obj[key]
            break
    if isinstance(name, dict):
        args = {**args, **name}
        name = next((name[k] for k in NAME_KEYS if k in name), None)
    if name is None:
        keyed = [k for k in obj if isinstance(k, str) and k.strip().lower() in aliases]
        if len(keyed) == 1:
            name = keyed[0]
            value = obj[name]
            if isinstance(value, dict):
                args = {**args, **value}
            elif value is not None:
                args = {**args, "_value": value}
    for key in ARG_KEYS:
        if isinstance(obj.get(key), dict):
            args = {**args, **obj[key]}
    if not isinstance(name, str) or not name.strip():
        return "no action named"
    canonical = aliases.get(name.strip().lower())
    if canonical is None:
        return f"unknown action {name.strip()[:40]!r}"
    return canonical, args


def arg(args: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        if key in args and args[key] is not None:
            return args[key]
    return args.get("_value")
