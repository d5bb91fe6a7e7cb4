"""Garbage collection out of the requests' way.

A daemon's caches (postings, section refs, cards, memoised reads) hold tens of thousands of objects that live as long
as the process; CPython's full collection walks every one of them each time it runs, and it runs inside whichever
request happens to allocate at that moment: measured on a library of 1,657 filings, four or five full collections
of 20-65 ms in 260 queries, each landing on one query (a p95 made of where they fell). Two rules keep that out of
the requests:

- what survived a full collection is long-lived: it is frozen (`gc.freeze`) as soon as no request is in flight,
  so the next full collection walks only what was made since (a few milliseconds), not the whole cache again;
- so is what a request's imports made: modules load at their first use (a method's handler, the retrieval
  pipeline, a backend's driver, numpy: 18k objects for the pipeline and the PostgreSQL search), after start-up's
  freeze; unfrozen, every full collection went through them again, and their count brought the first one early
  (a PostgreSQL daemon ran a 20-30 ms collection within its first 25 questions, inside one of them);
- when the daemon has been idle for `IDLE_S`, one complete collection runs (frozen objects included, then frozen
  again): cyclic garbage that was frozen is freed there, not never.

Objects frozen still go the moment their last reference does (reference counting); only reference cycles wait for
the idle collection.
"""

from __future__ import annotations

import asyncio
import gc
import sys

IDLE_S = 2.0  # a daemon idle this long (no request in flight) collects everything once


class Collector:
    """Installed by the server loop: told when requests start and when the last one in flight ends."""

    def __init__(self, loop: asyncio.AbstractEventLoop, idle_s: float = IDLE_S) -> None:
        self._loop = loop
        self.idle_s = idle_s
        self._full = False  # a full collection ran since the last freeze (set from any thread)
        self._idle: asyncio.TimerHandle | None = None
        self._dirty = False  # requests ran since the last complete collection
        self._modules = len(sys.modules)  # at the last freeze
        self.frozen = 0  # freezes after a full collection or imports (for tests)
        self.collections = 0  # complete collections when idle (for tests)

    def install(self) -> None:
        gc.callbacks.append(self._on_gc)

    def uninstall(self) -> None:
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)
        self._cancel()

    def _on_gc(self, phase: str, info: dict) -> None:
        if phase == "stop" and info.get("generation") == 2:
            self._full = True

    def started(self) -> None:
        """A request arrived: no idle collection now."""
        self._dirty = True
        self._cancel()

    def finished(self, in_flight: int) -> None:
        """A request ended, `in_flight` others are left (on the loop's thread)."""
        if in_flight:
            return
        if self._full or len(sys.modules) != self._modules:
            self._full = False
            self._modules = len(sys.modules)
            gc.freeze()
            self.frozen += 1
        if self._dirty:
            self._cancel()
            self._idle = self._loop.call_later(self.idle_s, self._collect)

    def _cancel(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None

    def _collect(self) -> None:
        self._idle = None
        self._dirty = False
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        self._full = False
        self.collections += 1
