"""A short excerpt of a passage around the densest cluster of query terms."""

from __future__ import annotations

import re
from collections.abc import Callable

from jsonl_engine.retrieval.weights import SNIPPET_CHARS, SNIPPET_CLUSTER, SNIPPET_LEAD, SNIPPET_TERMS

_SPACE = re.compile(r"\s+")


def finder(terms: list[str], width: int = SNIPPET_CHARS) -> Callable[[str], str]:
    """A function text -> snippet for these query terms (the pattern is compiled once per query)."""
    words = sorted({t for t in terms[:SNIPPET_TERMS] if t}, key=lambda t: (-len(t), t))
    pattern = re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, words)) + ")") if words else None
    return lambda text: snippet(text, pattern, width)


def snippet(text: str, pattern: re.Pattern[str] | None, width: int = SNIPPET_CHARS) -> str:
    """About `width` characters (whitespace collapsed) around the window with the most distinct terms."""
    if len(text) <= width:
        return _SPACE.sub(" ", text).strip()
    start = 0
    hits = [(m.start(), m.group()) for m in pattern.finditer(text.lower())] if pattern else []
    if hits:
        start = max(0, cluster(hits, width) - width // SNIPPET_LEAD)
    # widen the raw slice so that, once whitespace runs collapse, about `width` characters remain
    raw = text[start: start + width * 2]
    flat = _SPACE.sub(" ", raw)
    lead = 0
    if start:
        space = flat.find(" ")
        lead = space + 1 if 0 <= space < 30 else 0
    piece = flat[lead: lead + width]
    more = start + len(raw) < len(text) or lead + width < len(flat)
    if more:
        space = piece.rfind(" ")
        if space > width // 2:
            piece = piece[:space]
    return ("…" if start > 0 else "") + piece.strip() + ("…" if more else "")


def cluster(hits: list[tuple[int, str]], width: int) -> int:
    """Where the first window with the most distinct terms starts: for each hit, the hits since the first one
    within `width` * SNIPPET_CLUSTER before it; their terms counted as the window slides (not a set per hit)."""
    best, best_n, j = 0, -1, 0
    inside: dict[str, int] = {}  # the terms of hits[j:i + 1], counted
    for i in range(len(hits)):
        inside[hits[i][1]] = inside.get(hits[i][1], 0) + 1
        while hits[i][0] - hits[j][0] > width * SNIPPET_CLUSTER:
            term = hits[j][1]
            inside[term] -= 1
            if not inside[term]:
                del inside[term]
            j += 1
        n = len(inside)
        if n > best_n:
            best, best_n = hits[j][0], n
    return best
