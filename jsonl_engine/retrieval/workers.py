"""Threads for the store's reads, made only when every one made is busy.

Each thread reads the KB through a connection of its own (SQLite: one reader per thread), with a page cache of its
own that a new daemon fills from the file. ThreadPoolExecutor counts a worker free only after it has handed its
result over, so a caller that submits its next call as soon as it has the result (a client's next question, a
query's next side read) often finds none free and starts another thread: a daemon asked one question at a time
then spreads them over several threads, each filling a page cache of its own (a second retrieval thread and
reader in 2 of 8 fresh daemons asked the 65 dev questions scoped then corpus-wide on the ten-times library).
Here a worker counts as free before its result is handed over: sequential calls keep one thread, and a new
thread is made only for a call that would otherwise wait behind a busy one.
"""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, TypeVar

T = TypeVar("T")


class Workers(Executor):
    """At most `size` daemon threads named `name`-1, -2, ... (a call never waits behind a busy thread while
    fewer than `size` exist). Calls run in the submitter's context (contextvars), as asyncio.to_thread runs
    them."""

    def __init__(self, size: int, name: str) -> None:
        self._size, self._name = size, name
        self._lock = threading.Lock()
        self._free = 0  # threads that finished a call and were not yet counted for a new one
        self._threads = 0
        self._closed = False
        self._calls: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None] = queue.SimpleQueue()

    @property
    def threads(self) -> int:
        return self._threads

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        context = contextvars.copy_context()
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot submit after shutdown")
            if self._free:
                self._free -= 1
            elif self._threads < self._size:
                self._threads += 1
                threading.Thread(target=self._work, name=f"{self._name}-{self._threads}", daemon=True).start()
            self._calls.put((future, lambda: context.run(fn, *args, **kwargs)))
        return future

    def _work(self) -> None:
        while True:
            item = self._calls.get()
            if item is None:  # shutdown
                self._calls.put(None)
                return
            future, call = item
            del item
            if not future.set_running_or_notify_cancel():
                with self._lock:
                    self._free += 1
                continue
            try:
                result = call()
            except BaseException as exc:  # the caller's .result() raises it
                with self._lock:
                    self._free += 1
                future.set_exception(exc)
            else:
                with self._lock:
                    self._free += 1  # before the result is handed over: its receiver may submit at once
                future.set_result(result)
            del future, call

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """No new calls; the threads end once the calls queued are done (daemon threads: not waited for at exit)."""
        with self._lock:
            self._closed = True
            self._calls.put(None)


_shared: dict[str, Workers] = {}
_shared_lock = threading.Lock()


def shared(name: str, size: int) -> Workers:
    """The process's one `Workers` called `name`, made at its first use."""
    with _shared_lock:
        if name not in _shared:
            _shared[name] = Workers(size, name)
        return _shared[name]
