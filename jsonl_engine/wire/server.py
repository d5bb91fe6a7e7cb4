"""The loop: lines in, events out. Validates envelopes, dispatches through the method table, and owns the life cycle
(cancel, shutdown, EOF drain, signals, parent death, broken pipe).

This is the one place that catches broadly: any surprise becomes `internal` and the daemon keeps serving.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from jsonl_engine import PROTOCOL_VERSION, __version__
from jsonl_engine.app import App, Control
from jsonl_engine.context import RequestContext, WriteEvent
from jsonl_engine.errors import (
    Cancelled,
    EngineError,
    Internal,
    InvalidParams,
    InvalidRequest,
    MethodNotFound,
    Overloaded,
    ParseError,
    PayloadTooLarge,
    ShuttingDown,
)
from jsonl_engine.registry import Method
from jsonl_engine.wire import parent
from jsonl_engine.wire.framing import (
    CHUNK,
    LineReader,
    LineSplitter,
    NumberOutOfRange,
    TooLong,
    Writer,
    decode_line,
    encode_event,
    pollable,
)

log = logging.getLogger("jsonl_engine.server")

SIGNAL_GRACE_S = 1.0
CLOSE_TIMEOUT_S = 0.3
PARENT_POLL_S = 0.2


# What an integer id may be: orjson writes integers in this range only, and an id must echo back unchanged.
ID_MIN, ID_MAX = -(1 << 63), (1 << 64) - 1


class Rejected(Exception):
    """A line refused before it became a job: answered with `error` and `done` under `request_id`."""

    def __init__(self, request_id: Any, error: EngineError) -> None:
        super().__init__(error.message)
        self.request_id = request_id
        self.error = error


def _request_id(obj: dict[str, Any]) -> Any:
    request_id = obj.get("id")
    if type(request_id) is str or (type(request_id) is int and ID_MIN <= request_id <= ID_MAX):
        return request_id
    raise Rejected(None, InvalidRequest("request `id` must be a string or a 64-bit integer", {"field": "id"}))


def _out_of_range(exc: NumberOutOfRange) -> Rejected:
    """Valid JSON with a number out of range: answered on the request's id when the id is usable."""
    obj = exc.request
    if not isinstance(obj, dict):
        return Rejected(None, InvalidRequest("a request must be a JSON object"))
    request_id = _request_id(obj)  # raises Rejected(None, ...) when the id itself is the number
    where = ".".join(str(p) for p in exc.path)
    if exc.path[0] != "params" or len(exc.path) < 2:
        return Rejected(request_id, InvalidRequest(f"request `{where}` holds a number out of range",
                                                   {"field": str(exc.path[0])}))
    field = ".".join(str(p) for p in exc.path[1:])
    return Rejected(request_id, InvalidParams(f"{field}: number out of range (beyond a 64-bit integer or a double)",
                                              [field]))


class Job:
    __slots__ = ("id", "key", "ctx", "task", "started", "finished")

    def __init__(self, request_id: Any, key: tuple[bool, Any], ctx: RequestContext) -> None:
        self.id = request_id
        self.key = key
        self.ctx = ctx
        self.task: asyncio.Task | None = None
        self.started = time.perf_counter()
        self.finished = False


class Server(Control):
    def __init__(self, app: App, handlers: dict[str, Method], writer: Writer) -> None:
        self.app = app
        self.handlers = handlers
        self.writer = writer
        self.jobs: dict[tuple[bool, Any], Job] = {}
        self.accepting = True
        self.exit_code: int | None = None
        self.threads = ThreadPoolExecutor(max_workers=16, thread_name_prefix="jsonl-engine-handler")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped: asyncio.Event | None = None
        self._lock = threading.Lock()  # guards job.finished against late events from handler threads
        self._modules = 0  # len(sys.modules) at the last gc.freeze (_freeze_imports)
        app.control = self

    # ---- output -------------------------------------------------------------------------------------------

    def _event_writer(self, job: Job) -> WriteEvent:
        request_id = job.id
        write = self.writer.write_bytes

        def write_event(kind: str, data: dict[str, Any]) -> None:
            try:
                line = encode_event({"id": request_id, "event": kind, "data": data})
            except Exception as exc:
                raise Internal(f"internal error: a {kind} event could not be encoded") from exc
            with self._lock:
                if job.finished:
                    return  # nothing may follow `done`
                write(line)

        return write_event

    def _error(self, request_id: Any, exc: EngineError, started: float | None = None) -> None:
        status = "cancelled" if isinstance(exc, Cancelled) else "error"
        self.writer.write_bytes(
            encode_event({"id": request_id, "event": "error", "error": exc.to_wire()})
            + encode_event({"id": request_id, "event": "done", "status": status, "elapsed_ms": _elapsed(started)}))

    # ---- input --------------------------------------------------------------------------------------------

    def deliver(self, batch: list[bytes | TooLong] | None) -> None:
        """Called from the reader thread."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            if batch is None:
                loop.call_soon_threadsafe(self._on_eof)
            else:
                loop.call_soon_threadsafe(self._on_lines, batch)
        except RuntimeError:  # loop closed while we were reading
            pass

    def _watch_input(self, fd: int) -> None:
        """Read stdin on the loop itself: lines are dispatched in the same loop turn they arrive."""
        os.set_blocking(fd, False)
        splitter = LineSplitter(self.app.settings.max_line_bytes)

        def readable() -> None:
            try:
                chunk = os.read(fd, CHUNK)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                chunk = b""
            if chunk:
                self._on_lines(splitter.feed(chunk))
                return
            self._loop.remove_reader(fd)
            self._on_lines(splitter.finish())
            self._on_eof()

        self._loop.add_reader(fd, readable)

    def _on_lines(self, batch: list[bytes | TooLong]) -> None:
        for line in batch:
            try:
                self.handle_line(line)
            except Exception:  # a bug in dispatch itself must not kill the daemon
                log.exception("dispatch failed")
                self._error(None, EngineError("internal error while dispatching a request"))

    def handle_line(self, line: bytes | TooLong) -> None:
        started = time.perf_counter()
        try:
            request = self._admit(line)
        except Rejected as rejected:
            self._error(rejected.request_id, rejected.error, started)
            return
        if request is None:
            return  # a blank line
        request_id, method, params = request
        job = Job(request_id, (type(request_id) is str, request_id), None)  # type: ignore[arg-type]
        job.started = started
        job.ctx = RequestContext(request_id, self.app, self._event_writer(job))
        if method.inline:
            self._run_inline(job, method, params)
            return
        self.jobs[job.key] = job
        if method.name == "shutdown":
            self.accepting = False  # lines read after it are refused even before its handler runs
        job.task = self._loop.create_task(self._run(job, method, params))
        # A task cancelled before it starts never runs its body: the callback, not the body, ends every job.
        job.task.add_done_callback(lambda task: self._settle(job, method, task))

    def _admit(self, line: bytes | TooLong) -> tuple[Any, Method, Any] | None:
        """The request a line carries, checked against the envelope, the server's state and the method's
        params; raises Rejected with the id to answer (None where the line has no usable id)."""
        obj = self._decode(line)
        if obj is None:
            return None
        request_id = _request_id(obj)
        name = obj.get("method")
        if type(name) is not str:
            raise Rejected(request_id, InvalidRequest("request `method` must be a string", {"field": "method"}))
        params = obj.get("params")
        if params is None:
            params = {}
        elif type(params) is not dict:
            raise Rejected(request_id, InvalidRequest("request `params` must be an object", {"field": "params"}))
        if (type(request_id) is str, request_id) in self.jobs:
            # Answered under id null: the request in flight keeps its id, and so its one `done`.
            raise Rejected(None, InvalidRequest(f"id {request_id!r} is already in flight",
                                                {"field": "id", "id": request_id}))
        if not self.accepting:
            raise Rejected(request_id, ShuttingDown("the daemon is shutting down"))
        if len(self.jobs) >= self.app.settings.max_in_flight:
            raise Rejected(request_id, Overloaded(
                f"too many requests in flight (limit {self.app.settings.max_in_flight})"))
        method = self.handlers.get(name)
        if method is None:
            raise Rejected(request_id, MethodNotFound(f"unknown method {name!r}", {"method": name}))
        try:
            method.typed  # noqa: B018 - a built-in method's handler and models load at its first request
        except Exception:
            log.exception("method %s: its handler cannot be loaded", name)
            raise Rejected(request_id, Internal(f"internal error in {name}; see the daemon's stderr")) from None
        try:
            parsed = method.parse(params)
        except EngineError as exc:
            raise Rejected(request_id, exc) from None
        return request_id, method, parsed

    def _decode(self, line: bytes | TooLong) -> dict[str, Any] | None:
        """The line's JSON object, or None for a blank line."""
        if isinstance(line, TooLong):
            limit = self.app.settings.max_line_bytes
            raise Rejected(None, PayloadTooLarge(
                f"request line of {line.size} bytes exceeds the limit of {limit} bytes", {"limit": limit}))
        if not line.strip():
            return None
        try:
            obj = decode_line(line)
        except NumberOutOfRange as exc:
            rejected = _out_of_range(exc)
            if (type(rejected.request_id) is str, rejected.request_id) in self.jobs:
                rejected.request_id = None  # the request in flight under this id keeps its one `done`
            raise rejected from None
        except ValueError:
            try:
                line.decode("utf-8")
                message = "request line is not valid JSON"
            except UnicodeDecodeError:
                message = "request line is not valid UTF-8"
            raise Rejected(None, ParseError(message)) from None
        if not isinstance(obj, dict):
            raise Rejected(None, InvalidRequest("a request must be a JSON object"))
        return obj

    # ---- running ------------------------------------------------------------------------------------------

    async def _run(self, job: Job, method: Method, params: Any) -> None:
        result: Any = None
        error: EngineError | None = None
        try:
            if method.is_async:
                result = await method.handler(params, job.ctx)
            else:
                result = await self._loop.run_in_executor(self.threads, method.handler, params, job.ctx)
        except asyncio.CancelledError:
            error = Cancelled("request cancelled")
        except Exception as exc:
            error = self._as_engine_error(exc, method, job.id)
        self._complete(job, method, result, error)

    def _settle(self, job: Job, method: Method, task: asyncio.Task) -> None:
        """The task is over, however it ended: make sure its job has its `done`, then forget the job."""
        if not job.finished:
            self._complete(job, method, None, Cancelled("request cancelled") if task.cancelled()
                           else Internal(f"internal error in {method.name}; see the daemon's stderr"))
        self.jobs.pop(job.key, None)
        self._freeze_imports()
        self._maybe_stop()

    def _freeze_imports(self) -> None:
        """After a request that imported modules, freeze what the process holds, as start-up did (`serve`).

        Modules load at their first use (a method's handler, the retrieval pipeline, a backend's driver, numpy):
        what they make (functions, classes, their dicts: 18k objects for the pipeline and the PostgreSQL
        backend's search, numpy and psycopg's types) lives as long as the process but was made after start-up's
        freeze, so every full collection went through it again, and its count brought the first one early: a
        PostgreSQL daemon ran a 20-30 ms collection within its first 25 questions, inside one of them. Frozen, a
        full collection goes through what requests made since. Cheap (lists spliced) and rare (a request that
        imported nothing freezes nothing); what it freezes with them (a request's objects still alive) is freed
        by reference counting as before, and a cycle among them would only stay until the process ends."""
        if len(sys.modules) != self._modules:
            self._modules = len(sys.modules)
            gc.freeze()

    def _run_inline(self, job: Job, method: Method, params: Any) -> None:
        """Methods registered `inline` never block: they run right here, with no task or thread."""
        result: Any = None
        error: EngineError | None = None
        try:
            result = method.handler(params, job.ctx)
        except Exception as exc:
            error = self._as_engine_error(exc, method, job.id)
        self._complete(job, method, result, error)

    @staticmethod
    def _as_engine_error(exc: Exception, method: Method, request_id: Any) -> EngineError:
        if isinstance(exc, EngineError):
            return exc
        log.error("method %s failed (request id %r)", method.name, request_id, exc_info=exc)
        return Internal(f"internal error in {method.name}; see the daemon's stderr")

    def _complete(self, job: Job, method: Method, result: Any, error: EngineError | None) -> None:
        """Write the outcome (the result, unless the handler streamed its own, or the error), then `done`.

        The final event and `done` go out in one write: nothing is held back, and a client waiting on the
        result wakes once. This cannot fail: an outcome that cannot be encoded becomes an `internal` error.
        """
        if error is None and result is None and job.ctx.results_sent == 0:
            error = self._as_engine_error(RuntimeError("produced no result"), method, job.id)
        try:
            final = self._final_bytes(job, result, error)
        except Exception as exc:
            log.error("method %s: cannot encode the outcome of request %r", method.name, job.id, exc_info=exc)
            error = Internal(f"internal error in {method.name}: its outcome could not be encoded")
            final = encode_event({"id": job.id, "event": "error", "error": error.to_wire()})
        status = "ok" if error is None else ("cancelled" if isinstance(error, Cancelled) else "error")
        if isinstance(error, Cancelled):
            job.ctx.cancel_event.set()
        done = encode_event({"id": job.id, "event": "done", "status": status, "elapsed_ms": _elapsed(job.started)})
        with self._lock:
            if not job.finished:
                job.finished = True
                self.writer.write_bytes(final + done)

    @staticmethod
    def _final_bytes(job: Job, result: Any, error: EngineError | None) -> bytes:
        if error is not None:
            return encode_event({"id": job.id, "event": "error", "error": error.to_wire()})
        if result is None:
            return b""  # the handler streamed its results
        data = result if isinstance(result, dict) else result.model_dump(mode="json", by_alias=True)
        return encode_event({"id": job.id, "event": "result", "data": data})

    # ---- control ------------------------------------------------------------------------------------------

    def cancel(self, target: Any) -> bool:
        job = self.jobs.get((type(target) is str, target))
        if job is None or job.finished or job.task is None or job.task.done():
            return False
        job.ctx.cancel_event.set()
        job.task.cancel()
        return True

    def shutdown(self) -> None:
        self.accepting = False

    def in_flight(self) -> int:
        return len(self.jobs)

    async def wait_idle(self, exclude: Any = None) -> None:
        """Wait until every job but `exclude` (the caller's own id) has finished."""
        while True:
            others = [j.task for j in self.jobs.values() if j.id != exclude and j.task is not None]
            if not others:
                return
            await asyncio.wait(others)

    def _on_eof(self) -> None:
        self.accepting = False
        self._maybe_stop()

    def _maybe_stop(self) -> None:
        if not self.accepting and not self.jobs and self._stopped is not None:
            self.exit_code = 0 if self.exit_code is None else self.exit_code
            self._stopped.set()

    def _on_signal(self, signum: int) -> None:
        log.info("signal %s: cancelling %d request(s)", signum, len(self.jobs))
        self.accepting = False
        for job in list(self.jobs.values()):
            job.ctx.cancel_event.set()
            if job.task is not None:
                job.task.cancel()
        self.exit_code = 0
        self._loop.call_later(SIGNAL_GRACE_S, self._stopped.set)
        self._maybe_stop()

    def _on_broken_pipe(self) -> None:
        """stdout is gone: nobody can read us any more, so end quietly."""
        os._exit(0)

    def _on_orphaned(self) -> None:
        """The parent is gone (recorded at start-up, `wire/parent.py`): end as on SIGTERM (from any thread)."""
        parent.on_orphaned = None
        self._loop.call_soon_threadsafe(self._on_signal, signal.SIGTERM)

    def _watch_parent(self) -> None:
        while True:
            if parent.orphaned():
                self._on_orphaned()
                return
            time.sleep(PARENT_POLL_S)

    # ---- main ---------------------------------------------------------------------------------------------

    async def serve(self, input_fd: int = 0) -> int:
        self._loop = asyncio.get_running_loop()
        self._stopped = asyncio.Event()
        gc.freeze()  # start-up objects (modules, models) live forever: keep them out of every collection
        self._modules = len(sys.modules)
        for signum in (signal.SIGTERM, signal.SIGINT):
            self._loop.add_signal_handler(signum, self._on_signal, signum)
        self.writer.write({"id": None, "event": "ready",
                           "data": {"protocol": PROTOCOL_VERSION, "version": __version__}})
        parent.on_orphaned = self._on_orphaned
        threading.Thread(target=self._watch_parent, name="jsonl-engine-parent", daemon=True).start()
        if pollable(input_fd):
            self._watch_input(input_fd)
        else:
            LineReader(input_fd, self.app.settings.max_line_bytes, self.deliver).start()
        await self._stopped.wait()
        try:
            await asyncio.wait_for(self.app.aclose(), timeout=0.3)
        except Exception:  # closing is best effort; the process is about to exit
            log.debug("error while closing async resources", exc_info=True)
        return self.exit_code or 0


def _elapsed(started: float | None) -> float:
    if started is None:
        return 0.0
    return round((time.perf_counter() - started) * 1000, 3)


def run(app: App, handlers: dict[str, Method], protocol_fd: int) -> int:
    server: Server | None = None

    def broken() -> None:
        if server is not None:
            server._on_broken_pipe()

    writer = Writer(protocol_fd, broken)
    server = Server(app, handlers, writer)
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(server.serve())
    finally:
        _close_loop(loop)
        _close_app(app)


def _close_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Like the end of asyncio.run, without waiting for executor threads: a thread stuck in cancelled work
    (a blocking read, a slow native call) must not keep the daemon from exiting on time."""
    try:
        pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.wait(pending, timeout=CLOSE_TIMEOUT_S))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()  # shuts the default executor down without waiting for its threads


def _close_app(app: App) -> None:
    """Close the pool, then the KB, giving up on the KB after CLOSE_TIMEOUT_S (a stuck thread may hold a store
    lock). The pool is closed first and in full: its stop is bounded by itself (its workers are killed), and
    cutting it short on a loaded machine left its semaphores to multiprocessing's resource tracker, which
    printed "leaked semaphore objects" on the user's terminal."""
    try:
        app.close_pool()
    except Exception:
        log.exception("error while closing the worker pool")

    def close() -> None:
        try:
            app.close_store()
        except Exception:
            log.exception("error while closing")

    closer = threading.Thread(target=close, name="jsonl-engine-close", daemon=True)
    closer.start()
    closer.join(CLOSE_TIMEOUT_S)
    if closer.is_alive():
        log.warning("closing did not finish within %.1f s; exiting anyway", CLOSE_TIMEOUT_S)
