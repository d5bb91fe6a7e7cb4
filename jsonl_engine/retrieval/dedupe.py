"""Collapse near-duplicate passages (the same boilerplate on many pages) to the best-scored one.

Two texts are near-duplicates when the Jaccard similarity of their word shingles (SHINGLE_WORDS words, from the
first DUPLICATE_SAMPLE_CHARS characters) reaches DUPLICATE_JACCARD (weights.py).
Numbers stay in the shingles, so statements of different periods (same labels, other figures) stay apart.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TypeVar

from jsonl_engine.retrieval.weights import DUPLICATE_JACCARD, DUPLICATE_SAMPLE_CHARS, SHINGLE_WORDS

_WORD = re.compile(r"\w+")

T = TypeVar("T")


Shingles = frozenset[str]


def shingles(text: str) -> Shingles:
    """Each run of SHINGLE_WORDS words (all of them when fewer), joined by a space: words are runs of \\w, so
    joined runs are equal exactly when their words are (the sets' sizes and overlaps are those of the word
    tuples), and a set of strings is built in two thirds of the time of a set of tuples."""
    words = _WORD.findall(text[:DUPLICATE_SAMPLE_CHARS].lower())
    if len(words) < SHINGLE_WORDS:
        return frozenset([" ".join(words)]) if words else frozenset()
    return frozenset(map(" ".join, zip(*(words[i:] for i in range(SHINGLE_WORDS)), strict=False)))


def similar(a: Shingles, b: Shingles) -> bool:
    if not a or not b:
        return False
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    if len(small) < DUPLICATE_JACCARD * len(large):
        return False  # Jaccard <= |small| / |large|
    inter = len(small & large)
    return inter / (len(a) + len(b) - inter) >= DUPLICATE_JACCARD


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
