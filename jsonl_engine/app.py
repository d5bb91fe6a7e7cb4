"""The composition root: the method table (built-in handlers listed below, plus plugins'), settings, and the
shared resources handlers use, created lazily on first use. The parsers (`ingest/parsers.py`) and retrieval
strategies (`retrieval/strategies.py`) are tables too, rows naming their functions; nothing registers itself on
import."""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import BrokenExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from jsonl_engine.config import Settings
from jsonl_engine.errors import UnsupportedMedia
from jsonl_engine.registry import Method, method_of, method_table, methods_in

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

    from jsonl_engine.store import Store

T = TypeVar("T")

POOL_JOIN_S = 1.0  # how long closing waits for a stopped pool's manager thread (its workers are killed; a loaded machine needs more than 0.25 s)


def builtin_handlers() -> list[Method]:
    """Every built-in method, its handler's module imported: one row per handler (a new method is a handler in
    `methods/` and a row here, then `jsonl-engine schemas --write` lists it in the catalog)."""
    from jsonl_engine.methods import answer, context, documents, render, synthesize, system

    return [method_of(handler) for handler in (
        system.capabilities, system.cancel, system.shutdown,
        documents.ingest, documents.documents, documents.update, documents.outline, documents.read,
        documents.remove, documents.review,
        context.context, synthesize.synthesize, answer.answer, render.render,
    )]


def builtin_methods() -> list[Method]:
    """The built-in methods as the catalog lists them (`methods/catalog.py`, generated from `builtin_handlers`): a
    method's handler module, and the models it builds, load at the method's first request, not at start."""
    from jsonl_engine.methods import catalog

    return [Method.from_row(row, _builtin_handler) for row in catalog.read()["methods"]]


def _builtin_handler(name: str) -> Callable[..., Any]:
    """The handler a catalog row names ("jsonl_engine.methods.MODULE:function")."""
    from importlib import import_module

    module, _, function = name.partition(":")
    if not module.startswith("jsonl_engine.methods."):
        raise ValueError(f"the catalog names a handler outside jsonl_engine.methods: {name!r}")
    return getattr(import_module(module), function)


def load_methods(plugins: list[str] = ()) -> dict[str, Method]:
    """The method table: the built-in methods, then each plugin module's `@method` handlers (a plugin is a module
    the user names, `--plugin` or `plugins`; a name given twice is DuplicateMethod)."""
    from importlib import import_module

    return method_table([*builtin_methods(), *(m for module in plugins for m in methods_in(import_module(module)))])


class Control:
    """Server operations the `cancel` and `shutdown` methods reach; the server supplies them."""

    def cancel(self, target: Any) -> bool:  # pragma: no cover - replaced by the server
        return False

    def shutdown(self) -> None:  # pragma: no cover - replaced by the server
        pass

    def in_flight(self) -> int:  # pragma: no cover - replaced by the server
        return 0

    async def wait_idle(self, exclude: Any = None) -> None:  # pragma: no cover - replaced by the server
        return None


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """Ask Linux to signal this process when its parent dies (no-op elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, sig, 0, 0, 0)  # PR_SET_PDEATHSIG
    except OSError:
        pass


OVER_MEMORY_EXIT = 75  # a pool worker's exit status when it stopped itself past its memory cap
MEMORY_POLL_S = 0.02  # how often a worker checks its resident memory (pdfium may grow it by ~350 MB/s)


def _worker_init(daemon_pid: int, memory_cap: int) -> None:
    """Pool workers are children of the forkserver, not of the daemon: also watch the daemon itself, so a
    SIGKILLed daemon leaves no worker (nor, through them, the forkserver) behind. And watch the worker's own
    resident memory: past `memory_cap` bytes it exits at once (OVER_MEMORY_EXIT) rather than exhaust the
    machine (pdfium decompresses a content stream whole, and lays out every glyph of it)."""
    die_with_parent()
    # Ctrl-C is the daemon's to handle (it stops the pool, killing its workers): a worker that took SIGINT
    # itself (a terminal signals its whole process group) died with a KeyboardInterrupt traceback on the
    # user's stderr and broke the pool, whose semaphores then leaked
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while True:
            time.sleep(0.5)
            try:
                os.kill(daemon_pid, 0)
            except ProcessLookupError:
                os._exit(1)
            except PermissionError:
                pass

    def watch_memory() -> None:
        page = os.sysconf("SC_PAGE_SIZE")
        with open("/proc/self/statm", "rb", buffering=0) as statm:
            while True:
                statm.seek(0)
                if int(statm.read().split()[1]) * page > memory_cap:
                    os._exit(OVER_MEMORY_EXIT)
                time.sleep(MEMORY_POLL_S)

    threading.Thread(target=watch, name="jsonl-engine-daemon-watch", daemon=True).start()
    if os.path.exists("/proc/self/statm"):
        threading.Thread(target=watch_memory, name="jsonl-engine-memory-watch", daemon=True).start()


class App:
    def __init__(self, settings: Settings, methods: dict[str, Method] | None = None) -> None:
        self.settings = settings
        self.methods = methods if methods is not None else {}  # the method table (`load_methods`)
        self.control = Control()
        self._store: Store | None = None
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._alone = asyncio.Semaphore(settings.workers)  # bounds the one-off processes of `_run_alone`
        self.extras: dict[str, Any] = {}

    @property
    def store(self) -> Store:
        if self._store is None:
            with self._lock:
                if self._store is None:
                    from jsonl_engine.identity import statements
                    from jsonl_engine.identity.card import fill_missing
                    from jsonl_engine.store import open_store

                    store = open_store(self.settings.kb_location, sqlite=self.settings.kb.sqlite,
                                       read_url=self.settings.kb_read_url)
                    fill_missing(store)  # documents stored before cards existed (schema < 3)
                    statements.fill_missing(store)  # documents stored before statement pages were kept (schema < 4)
                    self._store = store
        return self._store

    def pool(self) -> ProcessPoolExecutor:
        """The shared worker pool; a new one when the last is broken (a worker died, maybe while idle)."""
        with self._lock:
            if self._pool is None or _broken(self._pool):
                if self._pool is not None:
                    _stop(self._pool)
                self._pool = _new_pool(self.settings.workers, self._memory_cap())
            return self._pool

    def _memory_cap(self) -> int:
        return self.settings.worker_memory_mb << 20

    async def run_in_process(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` in a worker process. When a worker dies (pdfium crashing on a hostile file, the OOM killer),
        every call in the pool fails, not only the one that killed it: each runs again (so `fn` must be safe to
        run twice) alone in a one-off process, and only a call that kills that one too raises BrokenExecutor."""
        pool = self.pool()
        try:
            return await asyncio.get_running_loop().run_in_executor(pool, fn, *args)
        except BrokenExecutor:
            with self._lock:
                if self._pool is pool:
                    self._pool = None
                    _stop(pool)
        return await self._run_alone(fn, *args)

    async def _run_alone(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` in a process of its own, stopped afterwards (also when the caller is cancelled). A process
        that stopped itself past the memory cap is unsupported_media (too_large): the file needs more memory to
        extract than a worker may take."""
        async with self._alone:
            pool = _new_pool(1, self._memory_cap())
            try:
                future = asyncio.get_running_loop().run_in_executor(pool, fn, *args)
                procs = list((getattr(pool, "_processes", None) or {}).values())  # started by the submit
                try:
                    return await future
                except BrokenExecutor as exc:
                    for proc in procs:
                        await asyncio.to_thread(proc.join, 5.0)
                    if any(proc.exitcode == OVER_MEMORY_EXIT for proc in procs):
                        limit = self.settings.worker_memory_mb
                        raise UnsupportedMedia(f"extracting the file takes more than the worker memory cap "
                                               f"({limit} MiB, worker_memory_mb)", reason="too_large",
                                               data={"limit_mb": limit}) from exc
                    raise
            finally:
                _stop(pool)

    async def aclose(self) -> None:
        """Close async resources kept in `extras` (anything with an `aclose()`, e.g. LLM clients)."""
        for key in list(self.extras):
            closer = getattr(self.extras[key], "aclose", None)
            if closer is not None:
                self.extras.pop(key, None)
                await closer()

    def close(self) -> None:
        self.close_pool()
        self.close_store()

    def close_pool(self) -> None:
        """Kill the pool's workers and wait (at most POOL_JOIN_S) for its queues to go. Never waits on a lock
        that a request's thread may hold."""
        if self._pool is not None:
            pool, self._pool = self._pool, None
            _stop(pool, wait=True)
            _release_semaphores()

    def close_store(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


def _new_pool(workers: int, memory_cap: int) -> ProcessPoolExecutor:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("forkserver"),
                               initializer=_worker_init, initargs=(os.getpid(), memory_cap))


def _broken(pool: ProcessPoolExecutor) -> bool:
    return bool(getattr(pool, "_broken", False))  # set by the pool's manager thread once a worker has died


def _release_semaphores() -> None:
    """Unlink the pool's named semaphores and unregister them from multiprocessing's resource tracker now, as
    interpreter exit would (`multiprocessing.util._exit_function` runs the same finalizers). The daemon leaves by
    `os._exit`; when the pool's manager thread had not let go of its queues within POOL_JOIN_S (a loaded machine),
    their semaphores were still registered and the tracker printed "5 leaked semaphore objects" on the user's
    terminal. Only at close: the workers are dead, and a thread still holding a queue keeps working on the
    unlinked semaphore."""
    from multiprocessing import util

    util._run_finalizers(0)  # noqa: SLF001 - the finalizers of exit priority >= 0: SemLock unlinks, queue closes


def _stop(pool: ProcessPoolExecutor, wait: bool = False) -> None:
    """Shut a pool down now, killing its workers: a worker still running a call would run it to the end.

    `wait`: also wait (a moment: the workers are dead) for the pool's manager thread, the last holder of the
    pool's queues, so that they go now and their five named semaphores are unlinked and unregistered from
    multiprocessing's resource tracker. The daemon leaves by `os._exit`, which skips the finalizers that would
    do it later: the tracker then printed "There appear to be 5 leaked semaphore objects" at every exit after
    the pool had been used (every ingest), on the stderr of the user's terminal."""
    # shutdown() drops `_processes` and the manager thread: take them first, or the workers outlive us (idle
    # workers keep the forkserver alive, and their death signal is tied to the forkserver, not to us)
    procs = list((getattr(pool, "_processes", None) or {}).values())
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        if proc.is_alive():
            proc.kill()
    if wait and manager is not None:
        manager.join(POOL_JOIN_S)
