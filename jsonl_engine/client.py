"""A Python client for the daemon: spawn it, wait for `ready`, send requests, route events by id.

Typed methods, one per kb method, return the method's result model (pydantic, `jsonl_engine.models`)::

    with Client(kb="./kb") as kb:
        added = kb.ingest(["filings"])                        # always a list: one IngestResult per document
        passages = kb.context("capex 2022", limit=3)          # ContextResult: .items[0].text, .page_start, ...
        answer = kb.synthesize("What was capex in 2022?")     # SynthesizeResult: .answer, .claims[0].page, ...

The raw protocol stays for anything else (plugin methods, events as the wire gives them)::

    with Client(kb="./kb") as kb:
        kb.call("kb.ingest", {"paths": ["filings"]})          # the one result, or a list when there are several
        for event in kb.stream("kb.answer", {"query": "capex 2022"}):
            ...                                               # progress/delta/result events (dicts, as on the wire)

asyncio: the same methods, awaited::

    async with AsyncClient(kb="./kb") as kb:
        results = await asyncio.gather(*(kb.context(q) for q in queries))

Many requests may be in flight at once, from several threads (blocking) or tasks (asyncio). An `error` event
raises the `RequestError` subclass of its code (`InvalidParams`, `NotFound`, `LLMUnavailable`, ...; `ERRORS` maps
codes to classes) with `code`, `message`, `data`; a daemon that exits with requests in flight raises
`DaemonExited` (code `daemon_exited`, `data["returncode"]`). Params that JSON cannot carry exactly (an integer
beyond 64 bits, NaN, Infinity) raise `UnsendableValue` (a ValueError) before anything is sent. Leaving the `with`
block closes stdin: the daemon finishes the requests already read and exits 0. This module imports nothing of the
engine but its wire models (`jsonl_engine.models`, on the first typed call): it is the wire protocol (PROTOCOL.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import os
import queue
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from pydantic import BaseModel

    from jsonl_engine.models.answer import AnswerResult
    from jsonl_engine.models.context import ContextResult
    from jsonl_engine.models.documents import (
        DocumentItem,
        DocumentsResult,
        IngestResult,
        OutlineResult,
        ReadResult,
        RemoveResult,
        ReviewResult,
    )
    from jsonl_engine.models.render import RenderResult
    from jsonl_engine.models.synthesize import SynthesizeResult
    from jsonl_engine.models.system import CapabilitiesResult, ShutdownResult

__all__ = ["ERRORS", "AsyncClient", "AsyncStream", "Cancelled", "Client", "DaemonExited", "Internal",
           "InvalidParams", "InvalidRequest", "KBUnavailable", "LLMError", "LLMUnavailable", "MethodNotFound",
           "NotFound", "Overloaded", "ParseError", "PayloadTooLarge", "RequestError", "ShuttingDown", "Stream",
           "Timeout", "UnsendableValue", "UnsupportedMedia", "daemon_command"]

_END = object()  # queued to every open request when the daemon's stdout ends
PathArg = str | os.PathLike[str]
Event = dict[str, Any]


# ---- errors -----------------------------------------------------------------------------------------------


class RequestError(Exception):
    """An `error` event: `code` (PROTOCOL.md's error codes), `message`, `data` (a dict or None), `request_id`.

    The base of one class per code (`ERRORS`); catch it for any error, or a subclass for one code."""

    def __init__(self, code: str, message: str, data: dict[str, Any] | None = None,
                 request_id: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.data = data
        self.request_id = request_id

    @classmethod
    def from_event(cls, event: dict[str, Any]) -> RequestError:
        """The exception of an `error` event: the class of its code (RequestError for a code it does not know)."""
        error = event.get("error") or {}
        code = str(error.get("code", "internal"))
        return ERRORS.get(code, RequestError)(code, str(error.get("message", "")), error.get("data"),
                                              event.get("id"))


class ParseError(RequestError):
    """`parse_error`: the line was not JSON (this client never sends one)."""


class InvalidRequest(RequestError):
    """`invalid_request`: the request object is malformed (no method, a bad id)."""


class MethodNotFound(RequestError):
    """`method_not_found`: no such method (see `capabilities`)."""


class InvalidParams(RequestError):
    """`invalid_params`: a param is missing, unknown or out of range; `data["field"]`/`data["fields"]` name it."""


class PayloadTooLarge(RequestError):
    """`payload_too_large`: the request line is over the daemon's limit."""


class NotFound(RequestError):
    """`not_found`: an unknown document or section id, or a path that does not exist."""


class UnsupportedMedia(RequestError):
    """`unsupported_media`: a file the engine cannot read; `data["reason"]` says why."""


class KBUnavailable(RequestError):
    """`kb_unavailable`: the KB cannot be opened or written; `data` has its `path`."""


class LLMUnavailable(RequestError):
    """`llm_unavailable`: the method needs an LLM reader and none is configured (or not the one named)."""


class LLMError(RequestError):
    """`llm_error`: the LLM endpoint failed; `data` has `status` and `retryable`."""


class Timeout(RequestError):
    """`timeout`: the daemon gave up on the request (not the client's own `timeout`, a builtin TimeoutError)."""


class Cancelled(RequestError):
    """`cancelled`: the request was cancelled (by `cancel`, or by leaving a stream early)."""


class Overloaded(RequestError):
    """`overloaded`: too many requests in flight; retry later."""


class ShuttingDown(RequestError):
    """`shutting_down`: the daemon is stopping and takes no new work."""


class Internal(RequestError):
    """`internal`: a bug in the engine (please report it with the daemon's stderr)."""


class DaemonExited(RequestError):
    """`daemon_exited` (the client's own code): the daemon ended, or never became ready, while a request waited;
    `returncode` (also `data["returncode"]`) is its exit status, negative for a signal, None if unknown."""

    def __init__(self, message: str, returncode: int | None, request_id: Any = None) -> None:
        super().__init__("daemon_exited", message, {"returncode": returncode}, request_id)
        self.returncode = returncode


ERRORS: dict[str, type[RequestError]] = {
    "parse_error": ParseError, "invalid_request": InvalidRequest, "method_not_found": MethodNotFound,
    "invalid_params": InvalidParams, "payload_too_large": PayloadTooLarge, "not_found": NotFound,
    "unsupported_media": UnsupportedMedia, "kb_unavailable": KBUnavailable, "llm_unavailable": LLMUnavailable,
    "llm_error": LLMError, "timeout": Timeout, "cancelled": Cancelled, "overloaded": Overloaded,
    "shutting_down": ShuttingDown, "internal": Internal,
}


class UnsendableValue(ValueError):
    """A request value JSON cannot carry exactly: an integer beyond 64 bits (the wire's range is [-2^63,
    2^64 - 1]), NaN or +/-Infinity (not JSON). Raised before anything is sent; `field` is where it sits in the
    params (`limit`, `meta.fiscal_year`, `document_ids.2`), or `id`."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field


# ---- requests on the wire ---------------------------------------------------------------------------------

INT_MIN, INT_MAX = -(2**63), 2**64 - 1  # what orjson writes and the daemon reads


def check_sendable(value: Any, field: str) -> None:
    """Raise UnsendableValue if `value` (or anything inside it) is an integer beyond 64 bits, NaN or Infinity;
    orjson would raise a bare TypeError for the first and write `null` for the others."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, int):
        if not INT_MIN <= value <= INT_MAX:
            raise UnsendableValue(field, f"an integer of {value.bit_length()} bits; the protocol carries integers "
                                         "in [-2^63, 2^64 - 1]")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise UnsendableValue(field, f"{value} is not a JSON number")
    elif isinstance(value, dict):
        for key, item in value.items():
            check_sendable(item, f"{field}.{key}" if field else str(key))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            check_sendable(item, f"{field}.{index}" if field else str(index))


def daemon_command(kb: PathArg | None = None, config: PathArg | None = None,
                   args: Sequence[str] = ()) -> list[str]:
    """The command that runs this package's daemon with this interpreter."""
    cmd = [sys.executable, "-m", "jsonl_engine"]
    if kb is not None:
        cmd += ["--kb", os.fspath(kb)]
    if config is not None:
        cmd += ["--config", os.fspath(config)]
    return cmd + list(args)


def _request_line(request_id: Any, method: str, params: dict[str, Any] | None) -> bytes:
    check_sendable(request_id, "id")
    check_sendable(params, "")
    request: dict[str, Any] = {"id": request_id, "method": method}
    if params is not None:
        request["params"] = params
    return orjson.dumps(request) + b"\n"


def _key(request_id: Any) -> tuple[bool, Any]:
    return (isinstance(request_id, str), request_id)  # 1 and "1" are different ids


def _collect(events: list[dict[str, Any]]) -> Any:
    results = [e["data"] for e in events if e["event"] == "result"]
    return results[0] if len(results) == 1 else results


# ---- typed methods: params in, result models out ----------------------------------------------------------


def _params(**params: Any) -> dict[str, Any]:
    """The request's params: the keyword arguments given, without those left at None (the method's default)."""
    return {key: value for key, value in params.items() if value is not None}


def _paths(paths: PathArg | Sequence[PathArg]) -> list[str]:
    """kb.ingest's paths, absolute (the daemon's working directory may not be the caller's)."""
    items = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    return [os.path.abspath(os.fspath(p)) for p in items]


def result_model(name: str) -> type[BaseModel]:
    """A result model of `jsonl_engine.models` by class name, imported on first use (pydantic and the models load
    with the first typed call, not with `import jsonl_engine.client`)."""
    from jsonl_engine.models import answer, context, documents, render, synthesize, system

    for module in (context, synthesize, answer, documents, render, system):
        if isinstance(model := getattr(module, name, None), type):
            return model
    raise LookupError(name)


def _models(name: str, results: list[Any]) -> list[Any]:
    model = result_model(name)
    return [model.model_validate(data) for data in results]


def _deltas(on_delta: Callable[[str], None] | None) -> Callable[[Event], None] | None:
    """kb.answer's events to `on_delta`: the text of each delta."""
    if on_delta is None:
        return None
    return lambda event: on_delta(event["data"]["text"]) if event["event"] == "delta" else None


def _one(name: str, results: list[Any]) -> Any:
    """The one result of a single-result method, as its model."""
    if len(results) != 1:
        raise Internal("internal", f"expected one result, got {len(results)}")
    return _models(name, results)[0]


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
    `stderr_text`). `ready_timeout` bounds the wait for `ready`; `timeout` the wait for each event of `call`,
    `stream` and the typed methods (None: no bound; past it a builtin TimeoutError, the request cancelled).
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
        with contextlib.suppress(subprocess.TimeoutExpired):  # reap it, so DaemonExited carries its return code
            self.proc.wait(5)
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
        line = _request_line(request_id, method, params)  # UnsendableValue before anything is registered or sent
        q: queue.Queue[Any] = queue.Queue()
        with self._lock:
            if self._eof:
                raise DaemonExited("the daemon is not running", self.returncode, request_id)
            if _key(request_id) in self._pending:
                raise ValueError(f"request id {request_id!r} is already in flight")
            self._pending[_key(request_id)] = q
        try:
            self._write(line)
        except (BrokenPipeError, OSError, ValueError):  # ValueError: write to a closed pipe
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

    # ---- typed methods: one per kb method, its result model out (raw `call`/`stream` for anything else) ----

    def _typed(self, method: str, params: dict[str, Any], on_event: Callable[[Event], None] | None) -> list[Any]:
        """Every result's data; the other events (progress, delta) go to `on_event`."""
        results = []
        for event in self.stream(method, params):
            if event["event"] == "result":
                results.append(event["data"])
            elif on_event is not None:
                on_event(event)
        return results

    def capabilities(self) -> CapabilitiesResult:
        """What the daemon offers: methods, error codes, configured LLM `readers`, retrieval `strategies`."""
        return _one("CapabilitiesResult", self._typed("capabilities", {}, None))

    def ingest(self, paths: PathArg | Sequence[PathArg] | None = None, *,
               on_progress: Callable[[Event], None] | None = None, **params: Any) -> list[IngestResult]:
        """Ingest files and folders (made absolute here), or inline `text=` with `title=`: always a list, one
        IngestResult per document or failed entry (check each `.error`). Other params: `media_type`, `status`,
        `summarize`, `meta`, ... (schemas/kb.ingest.params.json). `on_progress` gets each progress event."""
        given = _params(paths=None if paths is None else _paths(paths), **params)
        return _models("IngestResult", self._typed("kb.ingest", given, on_progress))

    def documents(self, **params: Any) -> DocumentsResult:
        """The documents with their cards; filters: `statuses`, `entity`, `kind`, `fiscal_year`,
        `fiscal_quarter`."""
        return _one("DocumentsResult", self._typed("kb.documents", _params(**params), None))

    def update(self, document_id: str, meta: dict[str, Any]) -> DocumentItem:
        """Set card fields of a document (`title`, `kind`, `entities`, ...; None removes the user's value)."""
        return _one("DocumentItem", self._typed("kb.update", {"document_id": document_id, "meta": meta}, None))

    def outline(self, document_id: str, **params: Any) -> OutlineResult:
        """A document's section tree (titles, ids, pages); `max_depth=1` for the top level only."""
        return _one("OutlineResult", self._typed("kb.outline", _params(document_id=document_id, **params), None))

    def read(self, section_id: str | None = None, *, document_id: str | None = None,
             page: int | None = None) -> ReadResult:
        """The stored text of a section (`read(section_id)`), or of one page (`read(document_id=..., page=N)`)."""
        given = _params(section_id=section_id, document_id=document_id, page=page)
        return _one("ReadResult", self._typed("kb.read", given, None))

    def remove(self, document_id: str) -> RemoveResult:
        """Remove a document with its sections, pages and index entries."""
        return _one("RemoveResult", self._typed("kb.remove", {"document_id": document_id}, None))

    def review(self, document_id: str, status: str) -> ReviewResult:
        """Set a document's review status: approved, draft, contested or archived."""
        return _one("ReviewResult", self._typed("kb.review", {"document_id": document_id, "status": status}, None))

    def context(self, query: str, **params: Any) -> ContextResult:
        """The ranked passages that answer `query`, with their text; params: `limit`, `max_chars`, `max_tokens`,
        `document_ids`, `statuses`, `unit="page"`, `include_text`, `strategy`, ... (kb.context's schema)."""
        return _one("ContextResult", self._typed("kb.context", _params(query=query, **params), None))

    def synthesize(self, query: str, **params: Any) -> SynthesizeResult:
        """An answer made only of verbatim sentences of the sources, each cited (`.claims`), and the `.gaps`;
        no LLM unless `llm=True`. Params: `depth`, `max_chars`, `document_ids`, `statuses`, ..."""
        return _one("SynthesizeResult", self._typed("kb.synthesize", _params(query=query, **params), None))

    def answer(self, query: str, *, on_delta: Callable[[str], None] | None = None, **params: Any) -> AnswerResult:
        """The configured LLM's answer with verified citations (raises LLMUnavailable without a reader).
        `on_delta` gets the answer text as it streams (without it nothing streams); params: `strategy`,
        `max_sections`, `max_citations`, `reader`, `document_ids`, ..."""
        given = _params(query=query, stream=on_delta is not None, **params)
        return _one("AnswerResult", self._typed("kb.answer", given, _deltas(on_delta)))

    def render(self, document_id: str, page: int, **params: Any) -> RenderResult:
        """A PDF page as a PNG, a span (`start`, `end`: a claim's or citation's `pages[]`) highlighted; `crop`,
        `scale`, `output="base64"` (needs the `[render]` extra on the daemon's side)."""
        given = _params(document_id=document_id, page=page, **params)
        return _one("RenderResult", self._typed("kb.render", given, None))

    def shutdown(self) -> ShutdownResult:
        """Ask the daemon to finish the requests in flight and exit 0."""
        return _one("ShutdownResult", self._typed("shutdown", {}, None))

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
        with contextlib.suppress(TimeoutError):  # reap it, so DaemonExited carries its return code
            await asyncio.wait_for(self.proc.wait(), 5)
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
        line = _request_line(request_id, method, params)  # UnsendableValue before anything is registered or sent
        q: asyncio.Queue[Any] = asyncio.Queue()
        self._pending[_key(request_id)] = q
        try:
            await self._write(line, request_id)
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

    # ---- typed methods: Client's, awaited ----

    async def _typed(self, method: str, params: dict[str, Any],
                     on_event: Callable[[Event], None] | None) -> list[Any]:
        results = []
        async for event in await self.stream(method, params):
            if event["event"] == "result":
                results.append(event["data"])
            elif on_event is not None:
                on_event(event)
        return results

    async def capabilities(self) -> CapabilitiesResult:
        """See Client.capabilities."""
        return _one("CapabilitiesResult", await self._typed("capabilities", {}, None))

    async def ingest(self, paths: PathArg | Sequence[PathArg] | None = None, *,
                     on_progress: Callable[[Event], None] | None = None, **params: Any) -> list[IngestResult]:
        """See Client.ingest: always a list, one IngestResult per document or failed entry."""
        given = _params(paths=None if paths is None else _paths(paths), **params)
        return _models("IngestResult", await self._typed("kb.ingest", given, on_progress))

    async def documents(self, **params: Any) -> DocumentsResult:
        """See Client.documents."""
        return _one("DocumentsResult", await self._typed("kb.documents", _params(**params), None))

    async def update(self, document_id: str, meta: dict[str, Any]) -> DocumentItem:
        """See Client.update."""
        given = {"document_id": document_id, "meta": meta}
        return _one("DocumentItem", await self._typed("kb.update", given, None))

    async def outline(self, document_id: str, **params: Any) -> OutlineResult:
        """See Client.outline."""
        given = _params(document_id=document_id, **params)
        return _one("OutlineResult", await self._typed("kb.outline", given, None))

    async def read(self, section_id: str | None = None, *, document_id: str | None = None,
                   page: int | None = None) -> ReadResult:
        """See Client.read."""
        given = _params(section_id=section_id, document_id=document_id, page=page)
        return _one("ReadResult", await self._typed("kb.read", given, None))

    async def remove(self, document_id: str) -> RemoveResult:
        """See Client.remove."""
        return _one("RemoveResult", await self._typed("kb.remove", {"document_id": document_id}, None))

    async def review(self, document_id: str, status: str) -> ReviewResult:
        """See Client.review."""
        given = {"document_id": document_id, "status": status}
        return _one("ReviewResult", await self._typed("kb.review", given, None))

    async def context(self, query: str, **params: Any) -> ContextResult:
        """See Client.context."""
        return _one("ContextResult", await self._typed("kb.context", _params(query=query, **params), None))

    async def synthesize(self, query: str, **params: Any) -> SynthesizeResult:
        """See Client.synthesize."""
        return _one("SynthesizeResult", await self._typed("kb.synthesize", _params(query=query, **params), None))

    async def answer(self, query: str, *, on_delta: Callable[[str], None] | None = None,
                     **params: Any) -> AnswerResult:
        """See Client.answer."""
        given = _params(query=query, stream=on_delta is not None, **params)
        return _one("AnswerResult", await self._typed("kb.answer", given, _deltas(on_delta)))

    async def render(self, document_id: str, page: int, **params: Any) -> RenderResult:
        """See Client.render."""
        given = _params(document_id=document_id, page=page, **params)
        return _one("RenderResult", await self._typed("kb.render", given, None))

    async def shutdown(self) -> ShutdownResult:
        """See Client.shutdown."""
        return _one("ShutdownResult", await self._typed("shutdown", {}, None))

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
