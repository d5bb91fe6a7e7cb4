"""Collapse near-duplicate passages (the same boilerplate on many pages) to the best-scored one.

Two texts are near-duplicates when the Jaccard similarity of their word 4-shingles reaches THRESHOLD.
Numbers stay in the shingles, so statements of different periods (same labels, other figures) stay apart.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Iterable
from typing import TypeVar

THRESHOLD = 0.8
SHINGLE = 4
_WORD = re.compile(r"\w+")

T = TypeVar("T")


def shingles(text: str) -> frozenset[int]:
    words = _WORD.findall(text.lower())
    if len(words) < SHINGLE:
        return frozenset([zlib.crc32(" ".join(words).encode())]) if words else frozenset()
    return frozenset(zlib.crc32(" ".join(words[i:i + SHINGLE]).encode()) for i in range(len(words) - SHINGLE + 1))


def similar(a: frozenset[int], b: frozenset[int]) -> bool:
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
    seen: list[frozenset[int]] = []
    for item in items:
        sig = shingles(text_of(item))
        if any(similar(sig, other) for other in seen):
            continue
        kept.append(item)
        seen.append(sig)
        if len(kept) >= keep:
            break
    return kept
