"""A short excerpt of a passage around the densest cluster of query terms."""

from __future__ import annotations

import re
from collections.abc import Callable

from jsonl_engine.retrieval.weights import SNIPPET_CHARS, SNIPPET_CLUSTER, SNIPPET_LEAD, SNIPPET_TERMS

_SPACE = re.compile(r"\s+")
_PLAIN = re.compile(r"[a-z0-9]+")  # a query word (text.words)
_WORD_CHAR = re.compile(r"\w")


def finder(terms: list[str], width: int = SNIPPET_CHARS) -> Callable[[str], str]:
    """A function text -> snippet for these query terms (the pattern is compiled once per query): a term found
    where no word character precedes it, the longest first.

    Terms of letters and digits only (a question's words) are searched without the lookbehind, which keeps `re`
    from skipping ahead to the terms' first characters (a third faster on the passages of the dev questions), and
    a match inside a word dropped after: such a match ends inside its word, so it never covers the start of the
    next word, where the pattern with the lookbehind would have matched."""
    words = sorted({t for t in terms[:SNIPPET_TERMS] if t}, key=lambda t: (-len(t), t))
    if words and all(_PLAIN.fullmatch(w) for w in words):
        plain = re.compile("(?:" + "|".join(words) + ")")
        return lambda text: snippet(text, plain, width, inside=True)
    pattern = re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, words)) + ")") if words else None
    return lambda text: snippet(text, pattern, width)


def snippet(text: str, pattern: re.Pattern[str] | None, width: int = SNIPPET_CHARS, inside: bool = False) -> str:
    """About `width` characters (whitespace collapsed) around the window with the most distinct terms.
    `inside`: the pattern also matches inside words (no lookbehind), those matches dropped here."""
    if len(text) <= width:
        return _SPACE.sub(" ", text).strip()
    start = 0
    hits = _hits(text.lower(), pattern, inside) if pattern else []
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


def _hits(low: str, pattern: re.Pattern[str], inside: bool) -> list[tuple[int, str]]:
    hits = [(m.start(), m.group()) for m in pattern.finditer(low)]
    if inside:
        hits = [h for h in hits if not h[0] or not _WORD_CHAR.match(low, h[0] - 1)]
    return hits


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
