"""Fit passages into a character / token budget (kb.context's max_chars / max_tokens).

Tokens are estimated as characters / CHARS_PER_TOKEN, one estimate everywhere. Items keep their order;
an item that does not fit whole is clipped only if at least MIN_USEFUL characters of budget remain,
otherwise it is dropped whole (and a later, shorter item may still fit). A clipped text is a prefix of
the original, cut after a sentence end, else at a word boundary, never inside a character, so offsets into
the section text stay valid.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

from jsonl_engine.llm.usage import CHARS_PER_TOKEN
from jsonl_engine.retrieval.weights import MIN_USEFUL

_SENTENCE_END = re.compile(r"[.!?;:][)\]\"'’”]*(?=\s)|\n\s*\n")
_SPACE = re.compile(r"\s")


def char_limit(max_chars: int | None, max_tokens: int | None) -> int | None:
    """The effective character budget: the tighter of the two limits, None when neither is set."""
    limits = [x for x in (max_chars, None if max_tokens is None else max_tokens * CHARS_PER_TOKEN) if x is not None]
    return min(limits) if limits else None


def clip(text: str, limit: int, floor: int | None = None) -> str:
    """The longest prefix of `text` within `limit` characters that ends at a sentence, else a word.

    A boundary shorter than `floor` (default: half the limit) is not taken: the next kind is tried.
    """
    if len(text) <= limit:
        return text
    if limit <= 0:
        return ""
    window = text[: limit + 1]  # the char after the cut tells whether we end at a boundary
    floor = min(limit, limit // 2 if floor is None else floor)
    ends = [m.end() for m in _SENTENCE_END.finditer(window) if floor <= m.end() <= limit]
    if ends:
        return text[: ends[-1]].rstrip()
    spaces = [m.start() for m in _SPACE.finditer(window) if floor <= m.start() <= limit]
    if spaces:
        return text[: spaces[-1]].rstrip()
    cut = limit
    while cut > 0 and (unicodedata.combining(text[cut]) or 0xDC00 <= ord(text[cut]) <= 0xDFFF
                       or text[cut] in "\u200d\ufe0f"):
        cut -= 1  # keep a base character with its combining marks / joiners
    return text[:cut]


@dataclass
class Fitted:
    texts: list[str | None]  # per item: its (possibly clipped) text, None when dropped
    max_chars: int | None
    used_chars: int = 0
    clipped: int = 0
    omitted: int = 0
    kept: list[int] = field(default_factory=list)  # indices of the items kept, in order

    @property
    def truncated(self) -> bool:
        return bool(self.clipped or self.omitted)


def fit(texts: Sequence[str], max_chars: int | None, min_useful: int = MIN_USEFUL) -> Fitted:
    """Fit `texts` (best first) into `max_chars` (None: no budget)."""
    out = Fitted(texts=[], max_chars=max_chars)
    remaining = max_chars
    useful = min(min_useful, max_chars) if max_chars is not None else min_useful
    for i, text in enumerate(texts):
        if remaining is None or len(text) <= remaining:
            piece: str | None = text
        elif remaining >= useful and remaining > 0:
            piece = clip(text, remaining, floor=max(useful, remaining // 2))
            if len(piece) < useful or not piece.strip():
                piece = None
            else:
                out.clipped += 1
        else:
            piece = None
        if piece is None:
            out.omitted += 1
        else:
            out.kept.append(i)
            out.used_chars += len(piece)
            if remaining is not None:
                remaining -= len(piece)
        out.texts.append(piece)
    return out
