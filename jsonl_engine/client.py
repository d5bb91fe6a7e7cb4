"""A Python client for the daemon: spawn it, wait for `ready`, send requests, route events by id.

Blocking::

    with Client(kb="./kb") as kb:
        kb.call("kb.ingest", {"paths": ["filings"]})          # the one result, or a list when there are several
        for event in kb.stream("kb.answer", {"query": "capex 2022"}):
            ...                                               # progress/delta/result events (dicts, as on the wire)
        answer = kb.call("kb.synthesize", {"query": "capex 2022"})

asyncio::

    async with AsyncClient(kb="./kb") as kb:
        results = await asyncio.gather(*(kb.call("kb.context", {"query": q}) for q in queries))

Many requests may be in flight at once, from several threads (blocking) or tasks (asyncio). An `error` event
raises `RequestError` (`code`, `message`, `data`); a daemon that exits with requests in flight raises
`DaemonExited` (code `daemon_exited`). Leaving the `with` block closes stdin: the daemon finishes the requests
already read and exits 0. This module imports nothing of the engine: it is only the wire protocol (PROTOCOL.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import queue
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import orjson

__all__ = ["AsyncClient", "AsyncStream", "Client", "DaemonExited", "RequestError", "Stream", "daemon_command"]

_END = object()  # queued to every open request when the daemon's stdout ends


class RequestError(Exception):
    """An `error` event: `code` (PROTOCOL.md's error codes), `message`, `data` (a dict or None)."""

    def __init__(self, code: str, message: str, data: dict[str, Any] | None = None,
                 request_id: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.data = data
        self.request_id = request_id

    @classmethod
    def from_event(cls, event: dict[str, Any]) -> RequestError:
        error = event.get("error") or {}
        return cls(str(error.get("code", "internal")), str(error.get("message", "")), error.get("data"),
                   event.get("id"))


class DaemonExited(RequestError):
    """The daemon ended (or never became ready) while a request waited; `data` has `returncode`."""

    def __init__(self, message: str, returncode: int | None, request_id: Any = None) -> None:
        super().__init__("daemon_exited", message, {"returncode": returncode}, request_id)


def daemon_command(kb: str | os.PathLike[str] | None = None, config: str | os.PathLike[str] | None = None,
                   args: Sequence[str] = ()) -> list[str]:
    """The command that runs this package's daemon with this interpreter."""
    cmd = [sys.executable, "-m", "jsonl_engine"]
    if kb is not None:
        cmd += ["--kb", os.fspath(kb)]
    if config is not None:
        cmd += ["--config", os.fspath(config)]
    return cmd + list(args)


def _request_line(request_id: Any, method: str, params: dict[str, Any] | None) -> bytes:
    request: dict[str, Any] = {"id": request_id, "method": method}
    if params is not None:
        request["params"] = params
    return orjson.dumps(request) + b"\n"


def _key(request_id: Any) -> tuple[bool, Any]:
    return (isinstance(request_id, str), request_id)  # 1 and "1" are different ids


def _collect(events: list[dict[str, Any]]) -> Any:
    results = [e["data"] for e in events if e["event"] == "result"]
    return results[0] if len(results) == 1 else results


# ---- blocking ---------------------------------------------------------------------------------------------


class _Events:
    """What the events of one request mean to whoever reads them, blocking or async: progress/delta/result are
    handed out, an error is raised after the request's `done` (the request has ended then), a daemon that exits
    first raises DaemonExited."""

    def __init__(self, client: Any, request_id: Any, timeout: float | None) -> None:
        self.client = client
        self.id = request_id
        self.done: dict[str, Any] | None = None
        self._timeout = timeout
        self._error: RequestError | None = None

    def _timed_out(self) -> TimeoutError:
        return TimeoutError(f"request {self.id!r}: no event within {self._timeout}s")

    def _take(self, event: Any) -> dict[str, Any] | None:
        """The event to hand out, or None (an error kept for later, or the `done` that ends the request)."""
        if event is _END:
            raise DaemonExited(f"the daemon exited before request {self.id!r} was done", self.client.returncode,
                               self.id)
        kind = event.get("event")
        if kind == "done":
            self.done = event
            if self._error is not None:
                raise self._error
            return None
        if kind == "error":
            self._error = RequestError.from_event(event)
            return None
        return event


class Stream(_Events):
    """The events of one request: iterate for progress/delta/result events; an error event raises at its place.

    `id` is the request id (for `cancel`); `done` is the final `done` event once iteration has ended. Leaving a
    loop early (break, exception) cancels the request if it is still running.
    """

    def __init__(self, client: Client, request_id: Any, q: queue.Queue[Any], timeout: float | None) -> None:
        super().__init__(client, request_id, timeout)
        self._queue = q

    def __iter__(self) -> Iterator[dict[str, Any]]:
        try:
            while self.done is None:
                try:
                    event = self._queue.get(timeout=self._timeout)
                except queue.Empty:
                    raise self._timed_out() from None
                if (handed := self._take(event)) is not None:
                    yield handed
        finally:
            if self.done is None:
                with contextlib.suppress(Exception):
                    self.client.cancel(self.id)
            self.client._forget(self.id)

    def events(self) -> list[dict[str, Any]]:
        """All events up to done (raises on an error event)."""
        return list(self)


class Client:
    """Spawn the daemon (`command`, default: this package on `kb`) and talk to it; thread-safe.

    `stderr` is the daemon's stderr: None (inherit), subprocess.DEVNULL, or subprocess.PIPE (then kept in
    `stderr_text`). `timeout` bounds the wait for `ready` and, per event, `call`/`stream` (None: no bound).
    """

    def __init__(self, kb: str | os.PathLike[str] | None = None, *, command: Sequence[str] | None = None,
                 config: str | os.PathLike[str] | None = None, args: Sequence[str] = (),
                 env: dict[str, str] | None = None, cwd: str | os.PathLike[str] | None = None,
                 stderr: int | None = None, ready_timeout: float = 60.0, timeout: float | None = None) -> None:
        self.command = list(command) if command is not None else daemon_command(kb, config, args)
        self.timeout = timeout
        self.unrouted: list[dict[str, Any]] = []  # events with id null (or an id no request waits for)
        self._stderr_chunks: list[bytes] = []
        self._pending: dict[tuple[bool, Any], queue.Queue[Any]] = {}
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._ready = threading.Event()
        self._closed = False
        self._eof = False
        self.ready: dict[str, Any] | None = None
        self.proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                     env=env, cwd=cwd)
        self._threads = [threading.Thread(target=self._read, daemon=True, name="jsonl-engine-client")]
        if stderr == subprocess.PIPE:
            self._threads.append(threading.Thread(target=self._drain_stderr, daemon=True))
        for thread in self._threads:
            thread.start()
        if not self._ready.wait(ready_timeout) or self.ready is None:
            self.close(timeout=5)
            raise DaemonExited(f"the daemon did not become ready: {' '.join(self.command)}"
                               + (f"\n{self.stderr_text[-2000:]}" if self.stderr_text else ""), self.returncode)

    # ---- reading ----

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                event = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue  # the protocol forbids it; nothing to route
            if not isinstance(event, dict):
                continue
            if event.get("event") == "ready" and self.ready is None:
                self.ready = event
                self._ready.set()
                continue
            with self._lock:
                q = self._pending.get(_key(event.get("id"))) if event.get("id") is not None else None
                if q is None:
                    self.unrouted.append(event)
            if q is not None:
                q.put(event)
        with self._lock:
            self._eof = True
            waiting = list(self._pending.values())
        for q in waiting:
            q.put(_END)
        self._ready.set()

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self._stderr_chunks.append(raw)

    @property
    def stderr_text(self) -> str:
        return b"".join(self._stderr_chunks).decode("utf-8", "replace")

    @property
    def returncode(self) -> int | None:
        return self.proc.poll()

    def _forget(self, request_id: Any) -> None:
        with self._lock:
            self._pending.pop(_key(request_id), None)

    # ---- requests ----

    def new_id(self) -> str:
        return f"c{next(self._ids)}"

    def stream(self, method: str, params: dict[str, Any] | None = None, *, id: Any = None,
               timeout: float | None = None) -> Stream:
        """Send one request; iterate the returned Stream for its events."""
        request_id = self.new_id() if id is None else id
        q: queue.Queue[Any] = queue.Queue()
        with self._lock:
            if self._eof:
                raise DaemonExited("the daemon is not running", self.returncode, request_id)
            if _key(request_id) in self._pending:
                raise ValueError(f"request id {request_id!r} is already in flight")
            self._pending[_key(request_id)] = q
        try:
            self._write(_request_line(request_id, method, params))
        except (BrokenPipeError, OSError, ValueError):
            self._forget(request_id)
            raise DaemonExited("the daemon is not running", self.returncode, request_id) from None
        return Stream(self, request_id, q, self.timeout if timeout is None else timeout)

    def call(self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None) -> Any:
        """The result's data; a list of them when the request gave several (kb.ingest of several documents)."""
        return _collect(self.stream(method, params, timeout=timeout).events())

    def results(self, method: str, params: dict[str, Any] | None = None, *,
                timeout: float | None = None) -> list[Any]:
        """Every result's data, always as a list."""
        return [e["data"] for e in self.stream(method, params, timeout=timeout).events() if e["event"] == "result"]

    def cancel(self, request_id: Any) -> bool:
        """Cancel a request in flight; True if the daemon cancelled it (False: unknown or already finished)."""
        return bool(self.call("cancel", {"target": request_id}).get("cancelled"))

    def _write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        with self._write_lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    # ---- life cycle ----

    def close(self, timeout: float = 30.0) -> int | None:
        """Close stdin (the daemon finishes what it read, then exits 0) and wait; terminate after `timeout`."""
        if not self._closed:
            self._closed = True
            with self._write_lock, contextlib.suppress(OSError, ValueError):
                assert self.proc.stdin is not None
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for thread in self._threads:
            thread.join(timeout=5)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        return self.proc.returncode

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# ---- asyncio ----------------------------------------------------------------------------------------------


class AsyncStream(_Events):
    """`async for event in stream` (progress/delta/result); like Stream, raises on an error event."""

    def __init__(self, client: AsyncClient, request_id: Any, q: asyncio.Queue[Any],
                 timeout: float | None) -> None:
        super().__init__(client, request_id, timeout)
        self._queue = q

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        try:
            while self.done is None:
                try:
                    event = await asyncio.wait_for(self._queue.get(), self._timeout)
                except TimeoutError:
                    raise self._timed_out() from None
                if (handed := self._take(event)) is not None:
                    yield handed
        finally:
            if self.done is None:
                with contextlib.suppress(Exception):
                    await self.client.send("cancel", {"target": self.id})
            self.client._forget(self.id)

    async def events(self) -> list[dict[str, Any]]:
        return [event async for event in self]


class AsyncClient:
    """The asyncio client: `async with AsyncClient(kb=...) as kb: await kb.call(...)`; safe across tasks."""

    def __init__(self, kb: str | os.PathLike[str] | None = None, *, command: Sequence[str] | None = None,
                 config: str | os.PathLike[str] | None = None, args: Sequence[str] = (),
                 env: dict[str, str] | None = None, cwd: str | os.PathLike[str] | None = None,
                 stderr: int | None = None, ready_timeout: float = 60.0, timeout: float | None = None) -> None:
        self.command = list(command) if command is not None else daemon_command(kb, config, args)
        self.timeout = timeout
        self.ready_timeout = ready_timeout
        self.unrouted: list[dict[str, Any]] = []
        self.ready: dict[str, Any] | None = None
        self.proc: asyncio.subprocess.Process | None = None
        self._spawn = {"env": env, "cwd": cwd, "stderr": stderr}
        self._pending: dict[tuple[bool, Any], asyncio.Queue[Any]] = {}
        self._ids = itertools.count(1)
        self._reader: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[dict[str, Any] | None] | None = None

    async def start(self) -> AsyncClient:
        """Spawn the daemon and wait for `ready` (done by `async with`)."""
        self._ready = asyncio.get_running_loop().create_future()
        self.proc = await asyncio.create_subprocess_exec(
            *self.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            limit=64 * 1024 * 1024, **self._spawn)
        self._reader = asyncio.create_task(self._read())
        try:
            self.ready = await asyncio.wait_for(asyncio.shield(self._ready), self.ready_timeout)
        except TimeoutError:
            self.ready = None
        if self.ready is None:
            await self.close(timeout=5)
            raise DaemonExited(f"the daemon did not become ready: {' '.join(self.command)}", self.returncode)
        return self

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None and self._ready is not None
        while raw := await self.proc.stdout.readline():
            try:
                event = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(event, dict):
                continue
            if event.get("event") == "ready" and not self._ready.done():
                self._ready.set_result(event)
                continue
            q = self._pending.get(_key(event.get("id"))) if event.get("id") is not None else None
            if q is None:
                self.unrouted.append(event)
            else:
                q.put_nowait(event)
        for q in self._pending.values():
            q.put_nowait(_END)
        if not self._ready.done():
            self._ready.set_result(None)

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode if self.proc is not None else None

    def _forget(self, request_id: Any) -> None:
        self._pending.pop(_key(request_id), None)

    def new_id(self) -> str:
        return f"a{next(self._ids)}"

    async def send(self, method: str, params: dict[str, Any] | None = None, *, id: Any = None) -> Any:
        """Write one request without waiting for it (its events go to `unrouted`); returns its id."""
        request_id = self.new_id() if id is None else id
        await self._write(_request_line(request_id, method, params), request_id)
        return request_id

    async def _write(self, data: bytes, request_id: Any) -> None:
        if self.proc is None or self.proc.stdin is None or self.proc.stdin.is_closing():
            raise DaemonExited("the daemon is not running", self.returncode, request_id)
        try:
            self.proc.stdin.write(data)  # one write per line: lines of several tasks never interleave
            await self.proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            raise DaemonExited("the daemon is not running", self.returncode, request_id) from None

    async def stream(self, method: str, params: dict[str, Any] | None = None, *, id: Any = None,
                     timeout: float | None = None) -> AsyncStream:
        """Send one request; `async for` over the returned AsyncStream."""
        request_id = self.new_id() if id is None else id
        if self._reader is None or self._reader.done():
            raise DaemonExited("the daemon is not running", self.returncode, request_id)
        if _key(request_id) in self._pending:
            raise ValueError(f"request id {request_id!r} is already in flight")
        q: asyncio.Queue[Any] = asyncio.Queue()
        self._pending[_key(request_id)] = q
        try:
            await self._write(_request_line(request_id, method, params), request_id)
        except BaseException:
            self._forget(request_id)
            raise
        return AsyncStream(self, request_id, q, self.timeout if timeout is None else timeout)

    async def call(self, method: str, params: dict[str, Any] | None = None, *,
                   timeout: float | None = None) -> Any:
        return _collect(await (await self.stream(method, params, timeout=timeout)).events())

    async def results(self, method: str, params: dict[str, Any] | None = None, *,
                      timeout: float | None = None) -> list[Any]:
        events = await (await self.stream(method, params, timeout=timeout)).events()
        return [e["data"] for e in events if e["event"] == "result"]

    async def cancel(self, request_id: Any) -> bool:
        return bool((await self.call("cancel", {"target": request_id})).get("cancelled"))

    async def close(self, timeout: float = 30.0) -> int | None:
        """Close stdin and wait for the daemon to exit (terminate after `timeout`)."""
        if self.proc is None:
            return None
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            self.proc.terminate()
            try:
                await asyncio.wait_for(self.proc.wait(), 5)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        if self._reader is not None:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(self._reader, 5)
        return self.proc.returncode

    async def __aenter__(self) -> AsyncClient:
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
