"""Token accounting: a per-request `Usage` accumulator and a tokenizer-free token estimate."""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4  # tokens per chat message (role, separators)


def estimate_tokens(text: str) -> int:
    """~4 ASCII characters per token, one token per non-ASCII character (CJK, symbols): cheap and on the
    high side for prose, close for numbers-heavy filings."""
    if not text:
        return 0
    if text.isascii():
        return -(-len(text) // CHARS_PER_TOKEN)
    wide = sum(1 for ch in text if ord(ch) > 127)
    return -(-(len(text) - wide) // CHARS_PER_TOKEN) + wide


def content_text(content: Any) -> str:
    """The text of a chat message's `content`: a string, or the text of its content parts; else ""."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def estimate_messages(messages: Iterable[Mapping[str, Any]]) -> int:
    """Prompt tokens of chat messages by `estimate_tokens`: each message's text plus MESSAGE_OVERHEAD."""
    return sum(estimate_tokens(content_text(m.get("content"))) + MESSAGE_OVERHEAD for m in messages)


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix within `max_tokens` (by `estimate_tokens`), cut at a word boundary when one is
    near, and never between a character and its combining marks."""
    if max_tokens <= 0:
        return ""
    if estimate_tokens(text) <= max_tokens:
        return text
    if text.isascii():
        cut = max_tokens * CHARS_PER_TOKEN
    else:
        cut, budget = 0, max_tokens * CHARS_PER_TOKEN
        for ch in text:
            budget -= CHARS_PER_TOKEN if ord(ch) > 127 else 1
            if budget < 0:
                break
            cut += 1
    space = text.rfind(" ", max(0, cut - 200), cut + 1)
    for ws in ("\n", "\t"):
        space = max(space, text.rfind(ws, max(0, cut - 200), cut + 1))
    if space > cut // 2:
        cut = space
    while 0 < cut < len(text) and (unicodedata.combining(text[cut]) or text[cut] in "\u200d\ufe0f\ufe0e"):
        cut -= 1
    return text[:cut].rstrip()


class Usage:
    """Tokens and calls summed over every upstream call one request makes (retried attempts included in
    `calls`). Pass one instance down to every gateway call of the request."""

    __slots__ = ("prompt_tokens", "completion_tokens", "calls", "_lock")

    def __init__(self, prompt_tokens: int = 0, completion_tokens: int = 0, calls: int = 0) -> None:
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.calls = calls
        self._lock = threading.Lock()

    def add(self, prompt_tokens: int = 0, completion_tokens: int = 0, calls: int = 0) -> None:
        with self._lock:
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens
            self.calls += calls

    def merge(self, other: Usage) -> None:
        self.add(other.prompt_tokens, other.completion_tokens, other.calls)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "total_tokens": self.total_tokens, "calls": self.calls}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Usage):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return (f"Usage(prompt_tokens={self.prompt_tokens}, completion_tokens={self.completion_tokens}, "
                f"calls={self.calls})")
