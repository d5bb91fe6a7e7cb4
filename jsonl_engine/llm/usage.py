"""Token accounting: a per-request `Usage` accumulator and a tokenizer-free token estimate."""

from __future__ import annotations

import string
import threading
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

CHARS_PER_TOKEN = 4
CONSERVATIVE_CHARS_PER_TOKEN = 2  # an unknown tokenizer on figures and tables: used when refitting a prompt
MESSAGE_OVERHEAD = 4  # tokens per chat message (role, separators)
ELISION = "\n[...]\n"
_SINGLES = frozenset(string.digits + string.punctuation)  # one token each in conservative_tokens
_NOT_SINGLE = {cp: None for cp in range(128) if chr(cp) not in _SINGLES}  # translate() keeps singles and non-ASCII


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


def conservative_tokens(text: str) -> int:
    """A high estimate for an unknown tokenizer: what a prompt is fitted with after the server said it did
    not fit. Digits and punctuation count one token each (tokenizers of the llama family split numbers into
    digits, so a table of figures runs near one token per character), other ASCII ~2 characters per token,
    non-ASCII one token per character."""
    if not text:
        return 0
    singles = len(text.translate(_NOT_SINGLE))
    return -(-(len(text) - singles) // CONSERVATIVE_CHARS_PER_TOKEN) + singles


def conservative_messages(messages: Iterable[Mapping[str, Any]]) -> int:
    return sum(conservative_tokens(content_text(m.get("content"))) + MESSAGE_OVERHEAD for m in messages)


def fit_messages(messages: Iterable[Mapping[str, Any]], budget: int) -> list[dict[str, Any]]:
    """`messages` within `budget` tokens by `conservative_tokens`: the longest message is shortened in its
    middle (its start and its last paragraph, usually the instruction, are kept) until the whole fits or
    nothing more can go. String contents only; others are kept as they are."""
    out = [dict(m) for m in messages]
    for _ in range(len(out) * 2):
        over = conservative_messages(out) - budget
        if over <= 0:
            break
        sizes = [(conservative_tokens(m["content"]), i) for i, m in enumerate(out)
                 if isinstance(m.get("content"), str) and m["content"]]
        if not sizes:
            break
        size, i = max(sizes)
        out[i]["content"] = _shorten(out[i]["content"], size - over)
    return out


def _shorten(text: str, keep: int) -> str:
    """`text` within `keep` conservative tokens: its start, ELISION, and its last paragraph if that is short."""
    room = keep - conservative_tokens(ELISION)
    if room <= 0:
        return ""
    cut = text.rfind("\n\n")
    tail = text[cut:].lstrip("\n") if cut != -1 and len(text) - cut <= 600 else ""
    if conservative_tokens(tail) * 2 > room:
        tail = ""
    room -= conservative_tokens(tail)
    head = text[: len(text) - len(tail)][: room * CONSERVATIVE_CHARS_PER_TOKEN]
    while (tokens := conservative_tokens(head)) > room:
        head = head[: len(head) * room // tokens]
    return head.rstrip() + ELISION + tail


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

    __slots__ = ("prompt_tokens", "completion_tokens", "calls", "estimated", "notes", "_lock")

    def __init__(self, prompt_tokens: int = 0, completion_tokens: int = 0, calls: int = 0,
                 estimated: bool = False) -> None:
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.calls = calls
        self.estimated = estimated  # some token count is `estimate_tokens`', not the server's
        self.notes: list[str] = []  # coded warnings the gateway raised for this request ("code: text")
        self._lock = threading.Lock()

    def add(self, prompt_tokens: int = 0, completion_tokens: int = 0, calls: int = 0,
            estimated: bool = False) -> None:
        with self._lock:
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens
            self.calls += calls
            self.estimated = self.estimated or estimated

    def note(self, warning: str) -> None:
        """Record a gateway warning once per request."""
        with self._lock:
            if warning not in self.notes:
                self.notes.append(warning)

    def merge(self, other: Usage) -> None:
        self.add(other.prompt_tokens, other.completion_tokens, other.calls, other.estimated)
        for warning in other.notes:
            self.note(warning)

    def add_dict(self, extra: Mapping[str, Any] | None) -> None:
        """Add a `to_dict()` of another Usage (a retrieval's)."""
        if extra:
            self.add(int(extra.get("prompt_tokens") or 0), int(extra.get("completion_tokens") or 0),
                     int(extra.get("calls") or 0), bool(extra.get("estimated")))

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "total_tokens": self.total_tokens, "calls": self.calls, "estimated": self.estimated}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Usage):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return (f"Usage(prompt_tokens={self.prompt_tokens}, completion_tokens={self.completion_tokens}, "
                f"calls={self.calls}, estimated={self.estimated})")
