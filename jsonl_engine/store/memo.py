"""The store's cache of derived values (one policy for all of them): bounded per kind, cleared when full.

Keys name immutable content (a document id is a content hash, so its pages never change; a section id
extends it), or carry the KB generation they were computed at, so an entry is never stale; a racing thread
computes the same value again, which is harmless.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)
MAX_ENTRIES = 200_000  # per kind


class Memo:
    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._kinds: dict[str, dict[Hashable, Any]] = {}

    def get(self, kind: str, key: Hashable, compute: Callable[[], T]) -> T:
        entries = self._kinds.setdefault(kind, {})
        try:
            return entries[key]
        except KeyError:
            pass
        value = compute()
        if len(entries) >= self.max_entries:
            entries.clear()
        entries[key] = value
        return value

    def get_many(self, kind: str, keys: Sequence[K], compute: Callable[[list[K]], dict[K, T]],
                 max_entries: int | None = None) -> dict[K, T]:
        """Values for `keys`; the missing ones computed together by `compute(missing keys)`. `max_entries`:
        a smaller bound for a kind of larger values."""
        entries = self._kinds.setdefault(kind, {})
        out = {k: entries[k] for k in keys if k in entries}
        missing = [k for k in keys if k not in out]
        if missing:
            computed = compute(missing)
            if len(entries) + len(computed) > (max_entries or self.max_entries):
                entries.clear()
            entries.update(computed)
            out.update(computed)
        return out

    def known(self, kind: str, keys: Sequence[K]) -> dict[K, Any]:
        """The values kept for those of `keys` that have one (none computed)."""
        entries = self._kinds.get(kind, {})
        return {k: entries[k] for k in keys if k in entries}

    def has(self, kind: str, key: Hashable) -> bool:
        """Whether a value is kept for `key`."""
        return key in self._kinds.get(kind, ())

    def clear(self) -> None:
        self._kinds.clear()
