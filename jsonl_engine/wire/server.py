"""The loop: lines in, events out. Validates envelopes, dispatches through HANDLERS, and owns the life cycle
(cancel, shutdown, EOF drain, signals, parent death, broken pipe).

This is the one place that catches broadly: any surprise becomes `internal` and the daemon keeps serving.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pydantic import BaseModel, ValidationError

from jsonl_engine import PROTOCOL_VERSION, __version__
from jsonl_engine.app import App, Control
from jsonl_engine.context import RequestContext
from jsonl_engine.errors import (
    Cancelled,
    EngineError,
    InvalidRequest,
    MethodNotFound,
    Overloaded,
    ParseError,
    PayloadTooLarge,
    ShuttingDown,
)
from jsonl_engine.registry import Method, invalid_params_from
from jsonl_engine.wire.framing import (
    CHUNK,
    LineReader,
    LineSplitter,
    TooLong,
    Writer,
    decode_line,
    encode_event,
    pollable,
)

log = logging.getLogger("jsonl_engine.server")

SIGNAL_GRACE_S = 1.5
PARENT_POLL_S = 0.2


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
        app.control = self

    # ---- output -------------------------------------------------------------------------------------------

    def _emitter(self, job: Job):
        request_id = job.id
        write = self.writer.write

        def emit(kind: str, data: dict[str, Any]) -> None:
            with self._lock:
                if job.finished:
                    return  # nothing may follow `done`
                write({"id": request_id, "event": kind, "data": data})

        return emit

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
        if isinstance(line, TooLong):
            self._error(None, PayloadTooLarge(
                f"request line of {line.size} bytes exceeds the limit of {self.app.settings.max_line_bytes} bytes",
                {"limit": self.app.settings.max_line_bytes}), started)
            return
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line.strip():
            return
        try:
            obj = decode_line(line)
        except ValueError:
            try:
                line.decode("utf-8")
                message = "request line is not valid JSON"
            except UnicodeDecodeError:
                message = "request line is not valid UTF-8"
            self._error(None, ParseError(message), started)
            return
        if not isinstance(obj, dict):
            self._error(None, InvalidRequest("a request must be a JSON object"), started)
            return
        request_id = obj.get("id")
        if type(request_id) not in (str, int):
            self._error(None, InvalidRequest("request `id` must be a string or an integer",
                                             {"field": "id"}), started)
            return
        name = obj.get("method")
        if type(name) is not str:
            self._error(request_id, InvalidRequest("request `method` must be a string",
                                                   {"field": "method"}), started)
            return
        params = obj.get("params")
        if params is None:
            params = {}
        elif type(params) is not dict:
            self._error(request_id, InvalidRequest("request `params` must be an object",
                                                   {"field": "params"}), started)
            return
        key = (type(request_id) is str, request_id)
        if key in self.jobs:
            self._error(request_id, InvalidRequest(f"id {request_id!r} is already in flight",
                                                   {"field": "id"}), started)
            return
        if not self.accepting:
            self._error(request_id, ShuttingDown("the daemon is shutting down"), started)
            return
        if len(self.jobs) >= self.app.settings.max_in_flight:
            self._error(request_id, Overloaded(
                f"too many requests in flight (limit {self.app.settings.max_in_flight})"), started)
            return
        method = self.handlers.get(name)
        if method is None:
            self._error(request_id, MethodNotFound(f"unknown method {name!r}", {"method": name}), started)
            return
        try:
            parsed = method.params.model_validate(params)
            parsed.check()
        except ValidationError as exc:
            self._error(request_id, invalid_params_from(exc), started)
            return
        except EngineError as exc:
            self._error(request_id, exc, started)
            return
        job = Job(request_id, key, None)  # type: ignore[arg-type]
        job.started = started
        job.ctx = RequestContext(request_id, self.app, self._emitter(job))
        if method.inline:
            self._run_inline(job, method, parsed)
            return
        self.jobs[key] = job
        if name == "shutdown":
            self.accepting = False  # lines read after it are refused even before its handler runs
        job.task = self._loop.create_task(self._run(job, method, parsed))

    # ---- running ------------------------------------------------------------------------------------------

    async def _run(self, job: Job, method: Method, params: BaseModel) -> None:
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
        finally:
            self._complete(job, method, result, error)
            self.jobs.pop(job.key, None)
            self._maybe_stop()

    def _run_inline(self, job: Job, method: Method, params: BaseModel) -> None:
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
        return EngineError(f"internal error in {method.name}; see the daemon's stderr")

    def _complete(self, job: Job, method: Method, result: Any, error: EngineError | None) -> None:
        """Write the outcome (the result, unless the handler streamed its own, or the error), then `done`.

        The final event and `done` go out in one write: nothing is held back, and a client waiting on the
        result wakes once.
        """
        ctx = job.ctx
        final: dict[str, Any] | None = None
        if error is None:
            if result is not None:
                data = result if isinstance(result, dict) else result.model_dump(mode="json", by_alias=True)
                final = {"id": job.id, "event": "result", "data": data}
            elif ctx.results_sent == 0:
                error = self._as_engine_error(RuntimeError("produced no result"), method, job.id)
        if error is not None:
            final = {"id": job.id, "event": "error", "error": error.to_wire()}
            if isinstance(error, Cancelled):
                ctx.cancel_event.set()
        status = "ok" if error is None else ("cancelled" if isinstance(error, Cancelled) else "error")
        done = encode_event({"id": job.id, "event": "done", "status": status, "elapsed_ms": _elapsed(job.started)})
        with self._lock:
            self.writer.write_bytes(done if final is None else encode_event(final) + done)
            job.finished = True

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

    def _watch_parent(self) -> None:
        parent = os.getppid()
        while True:
            time.sleep(PARENT_POLL_S)
            if os.getppid() != parent:
                self._loop.call_soon_threadsafe(self._on_signal, signal.SIGTERM)
                return

    # ---- main ---------------------------------------------------------------------------------------------

    async def serve(self, input_fd: int = 0) -> int:
        self._loop = asyncio.get_running_loop()
        self._stopped = asyncio.Event()
        gc.freeze()  # start-up objects (modules, models) live forever: keep them out of every collection
        for signum in (signal.SIGTERM, signal.SIGINT):
            self._loop.add_signal_handler(signum, self._on_signal, signum)
        self.writer.write({"id": None, "event": "ready",
                           "data": {"protocol": PROTOCOL_VERSION, "version": __version__}})
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
    try:
        code = asyncio.run(server.serve())
    finally:
        try:
            app.close()
        except Exception:
            log.exception("error while closing")
    return code
