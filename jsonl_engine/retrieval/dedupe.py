"""Collapse near-duplicate passages (the same boilerplate on many pages) to the best-scored one.

Two texts are near-duplicates when the Jaccard similarity of their word 4-shingles reaches THRESHOLD.
Numbers stay in the shingles, so statements of different periods (same labels, other figures) stay apart.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TypeVar

THRESHOLD = 0.8
SHINGLE = 4
_WORD = re.compile(r"\w+")

T = TypeVar("T")


Shingles = frozenset[tuple[str, ...]]


SAMPLE_CHARS = 6000  # boilerplate shows in a passage's first pages' worth of text


def shingles(text: str) -> Shingles:
    words = _WORD.findall(text[:SAMPLE_CHARS].lower())
    if len(words) < SHINGLE:
        return frozenset([tuple(words)]) if words else frozenset()
    return frozenset(zip(*(words[i:] for i in range(SHINGLE)), strict=False))


def similar(a: Shingles, b: Shingles) -> bool:
    if not a or not b:
        return False
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    if len(small) < THRESHOLD * len(large):
        return False  # Jaccard <= |small| / |large|
    inter = len(small & large)
    return inter / (len(a) + len(b) - inter) >= THRESHOLD


def collapse(items: Iterable[T], text_of: Callable[[T], str], keep: int) -> list[T]:
    """Keep items in the given (best-first) order, skipping near-duplicates of an item already kept."""
    kept: list[T] = []
    seen: list[Shingles] = []
    for item in items:
        sig = shingles(text_of(item))
        if any(similar(sig, other) for other in seen):
            continue
        kept.append(item)
        seen.append(sig)
        if len(kept) >= keep:
            break
    return kept
