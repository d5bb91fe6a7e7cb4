"""Split an oversized leaf into chunks of at most `max_chars`: at page breaks, then paragraph, sentence,
line and word boundaries, and only as a last resort inside a word (never inside a character)."""

from __future__ import annotations

import bisect
import re

from jsonl_engine.ingest.normalize import safe_cut

MAX_CHARS = 3500

_PARAGRAPH = re.compile(r"\n\s*\n|(?<=[.:;!?)\]”\"])[ \t]*\n(?=\s*[A-Z0-9•(\"“])")
_SENTENCE = re.compile(r"(?<=[.!?])[)\]”\"’']?[ \t\n]+(?=[(\"“‘']?[A-Z0-9])")
_LINE = re.compile(r"\n")
_SPACE = re.compile(r"[ \t]+")


def chunk_spans(text: str, max_chars: int = MAX_CHARS, page_breaks: list[int] | None = None) -> list[tuple[int, int]]:
    """[(start, end)] covering `text` contiguously; each piece at most `max_chars` (plus trailing whitespace)."""
    n = len(text)
    if n <= max_chars:
        return [(0, n)]
    breaks = sorted(b for b in (page_breaks or []) if 0 < b < n)
    spans: list[tuple[int, int]] = []
    start = 0
    while n - start > max_chars:
        pieces = -(-(n - start) // max_chars)
        target = start + (n - start) // pieces
        low = start + max(1, max_chars // 3)
        high = start + max_chars
        cut = _best_cut(text, start, low, target, high, breaks)
        spans.append((start, cut))
        start = cut
    spans.append((start, n))
    return spans


def _best_cut(text: str, start: int, low: int, target: int, high: int, breaks: list[int]) -> int:
    i, j = bisect.bisect_left(breaks, low), bisect.bisect_right(breaks, high)
    if i < j:
        return min(breaks[i:j], key=lambda b: abs(b - target))
    window = text[low:high]
    for pattern in (_PARAGRAPH, _SENTENCE, _LINE, _SPACE):
        ends = [low + m.end() for m in pattern.finditer(window)]
        ends = [e for e in ends if low < e <= high and e < len(text)]
        if ends:
            return min(ends, key=lambda e: abs(e - target))
    return max(safe_cut(text, high), start + 1)
