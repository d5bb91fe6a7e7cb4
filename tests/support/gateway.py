"""A real, scripted OpenAI-compatible chat-completions server on 127.0.0.1 for tests and benches.

    def test_x(gateway):                      # the pytest fixture below
        gateway.push(json_reply({"found": True, "quote": "..."}), error(429, retry_after="1"))
        gw = Gateway(gateway.reader())        # or Daemon(env=gateway.env()) for subprocess tests
        ...
        assert gateway.requests[0].body["response_format"] == {"type": "json_object"}

Replies are served in push order; when the queue is empty, `responder(request) -> Reply` answers (benches),
else the server answers 500 and counts the request in `unexpected`. `text_reply` adapts to the request:
a JSON completion, or an SSE stream when the request asked for `stream`.
"""

from __future__ import annotations

import json
import re
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from jsonl_engine.config import ReaderSettings
from jsonl_engine.llm.readers import Reader

MODEL = "test-model"
API_KEY = "sk-test-0123456789abcdef"


@dataclass
class Reply:
    status: int = 200
    json: Any = None  # a JSON body
    body: bytes | None = None  # a raw body (wins over json)
    headers: dict[str, str] = field(default_factory=dict)
    sse: list[Any] | None = None  # SSE events: dict -> `data: <json>`, str -> `data: <str>`, bytes -> raw
    done: bool = True  # end the SSE stream with `data: [DONE]`
    delay: float = 0.0  # seconds before the status line
    chunk_delay: float = 0.0  # seconds before each SSE event
    delays: list[float] | None = None  # per-event delays (event i waits delays[i]); chunk_delay beyond
    cut_after: int | None = None  # drop the connection after this many SSE events
    text: str | None = None  # adaptive: completion or stream depending on the request


@dataclass
class Request:
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON (None if the body was not JSON)
    raw: bytes

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list((self.body or {}).get("messages") or [])

    @property
    def prompt(self) -> str:
        return "\n".join(str(m.get("content")) for m in self.messages)


def completion_body(text: str, *, prompt_tokens: int | None = 11, completion_tokens: int | None = 7,
                    finish_reason: str = "stop", model: str = MODEL) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": finish_reason}]}
    if prompt_tokens is not None or completion_tokens is not None:
        body["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                         "total_tokens": (prompt_tokens or 0) + (completion_tokens or 0)}
    return body


def chat_reply(text: str, **kw: Any) -> Reply:
    delay = kw.pop("delay", 0.0)
    return Reply(json=completion_body(text, **kw), delay=delay)


def json_reply(obj: Any, **kw: Any) -> Reply:
    return chat_reply(json.dumps(obj), **kw)


def text_reply(text: str) -> Reply:
    return Reply(text=text)


def stream_chunks(pieces: list[str], *, usage: tuple[int, int] | None = (11, 7),
                  finish_reason: str | None = "stop") -> list[Any]:
    chunks: list[Any] = [{"id": "chatcmpl-test", "object": "chat.completion.chunk", "model": MODEL,
                          "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                       "finish_reason": None}]}]
    for piece in pieces:
        chunks.append({"id": "chatcmpl-test", "object": "chat.completion.chunk", "model": MODEL,
                       "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
    if finish_reason is not None:
        chunks.append({"id": "chatcmpl-test", "object": "chat.completion.chunk", "model": MODEL,
                       "choices": [{"index": 0, "delta": {}, "finish_reason": finish_reason}]})
    if usage is not None:
        chunks.append({"id": "chatcmpl-test", "object": "chat.completion.chunk", "model": MODEL, "choices": [],
                       "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                                 "total_tokens": sum(usage)}})
    return chunks


def stream_reply(pieces: list[str], *, usage: tuple[int, int] | None = (11, 7), **kw: Any) -> Reply:
    """An SSE stream; `cut_after=N` drops the connection after N events (the role chunk is event 1)."""
    finish = kw.pop("finish_reason", "stop")
    return Reply(sse=stream_chunks(pieces, usage=usage, finish_reason=finish), **kw)


def error(status: int, message: str = "scripted error", *, retry_after: str | None = None,
          headers: dict[str, str] | None = None, delay: float = 0.0) -> Reply:
    hdrs = dict(headers or {})
    if retry_after is not None:
        hdrs["Retry-After"] = retry_after
    return Reply(status=status, json={"error": {"message": message, "type": "scripted", "code": status}},
                 headers=hdrs, delay=delay)


class InFlight:
    """Counts the requests a responder is serving at once, and the most at a time (`peak`)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = self.peak = 0

    def hold(self, seconds: float) -> None:
        """Count this request as in flight for `seconds`."""
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        time.sleep(seconds)
        with self.lock:
            self.now -= 1


class ScriptedLLM:
    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Request] = []
        self.responder: Callable[[Request], Reply] | None = None
        self.unexpected = 0
        self.disconnects = 0
        self.disconnected = threading.Event()  # set when a client dropped a response we were still sending
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.scripted = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="scripted-llm", daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ScriptedLLM:
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def push(self, *replies: Reply) -> ScriptedLLM:
        with self._lock:
            self.replies.extend(replies)
        return self

    @property
    def pending(self) -> int:
        return len(self.replies)

    def settings(self, **overrides: Any) -> ReaderSettings:
        """Reader settings pointing here, with fast retries so tests do not sleep."""
        values: dict[str, Any] = {"base_url": self.url, "model": MODEL, "api_key": API_KEY, "timeout_s": 5.0,
                                  "max_retries": 2, "retry_backoff_s": 0.01, "retry_max_wait_s": 0.05}
        values.update(overrides)
        return ReaderSettings(**values)

    def reader(self, name: str = "default", **overrides: Any) -> Reader:
        settings = self.settings(**overrides)
        return Reader(name=name, settings=settings, api_key=settings.resolved_api_key({}))

    def env(self, **extra: str) -> dict[str, str]:
        """Environment for a daemon subprocess using this server as its LLM."""
        return {"JSONL_ENGINE_LLM_BASE_URL": self.url, "JSONL_ENGINE_LLM_MODEL": MODEL,
                "JSONL_ENGINE_LLM_API_KEY": API_KEY, "JSONL_ENGINE_LLM_RETRY_BACKOFF": "0.01",
                "JSONL_ENGINE_LLM_RETRY_MAX_WAIT": "0.05", **extra}

    # -- called from handler threads ----------------------------------------------------------------

    def _take(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
            if self.replies:
                return self.replies.popleft()
            responder = self.responder
        if responder is not None:
            return responder(request)
        with self._lock:
            self.unexpected += 1
        return error(500, "scripted server: no reply left for this request")

    def _dropped(self) -> None:
        with self._lock:
            self.disconnects += 1
        self.disconnected.set()

    def _wait(self, conn: socket.socket, seconds: float) -> bool:
        """Sleep up to `seconds`; True (early) if the client closed the connection or the server stops."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            if self._stop.is_set():
                return True
            readable, _, _ = select.select([conn], [], [], min(0.02, left))
            if readable:
                try:
                    closed = conn.recv(1, socket.MSG_PEEK) == b""
                except OSError:
                    closed = True
                if closed:
                    self._dropped()
                    return True
                time.sleep(min(0.02, max(0.0, left)))
        return False


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30
    disable_nagle_algorithm = True  # headers and body go out in separate writes

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output clean
        pass

    @property
    def scripted(self) -> ScriptedLLM:
        return self.server.scripted  # type: ignore[attr-defined]

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        request = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body, raw)
        reply = self.scripted._take(request)
        if reply.delay and self.scripted._wait(self.connection, reply.delay):
            self.close_connection = True
            return
        try:
            wants_stream = isinstance(body, dict) and bool(body.get("stream"))
            if reply.text is not None:
                if wants_stream:
                    words = reply.text.split(" ")
                    pieces = [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]
                    reply = Reply(sse=stream_chunks(pieces))
                else:
                    reply = chat_reply(reply.text)
            if reply.sse is not None:
                self._send_stream(reply)
            else:
                self._send_body(reply)
        except (BrokenPipeError, ConnectionResetError):
            self.scripted._dropped()
            self.close_connection = True

    def _send_body(self, reply: Reply) -> None:
        payload = reply.body if reply.body is not None else json.dumps(reply.json).encode()
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _send_stream(self, reply: Reply) -> None:
        self.send_response(reply.status)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.flush()
        events = list(reply.sse or [])
        if reply.done:
            events.append("[DONE]")
        for count, event in enumerate(events):
            if reply.cut_after is not None and count >= reply.cut_after:
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            wait = reply.delays[count] if reply.delays and count < len(reply.delays) else reply.chunk_delay
            if wait and self.scripted._wait(self.connection, wait):
                self.close_connection = True
                return
            if isinstance(event, bytes):
                data = event
            else:
                data = b"data: " + (event if isinstance(event, str) else json.dumps(event)).encode() + b"\n\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


@pytest.fixture
def gateway() -> Iterator[ScriptedLLM]:
    """A started scripted LLM server, closed after the test."""
    with ScriptedLLM() as server:
        yield server


# -- what real servers send (issue 13): bodies as LiteLLM's proxy and llama-cpp-python's server write them ---


def litellm_error(status: int, message: str, *, param: str | None = None, code: str | None = None) -> Reply:
    """LiteLLM proxy: `{"error": {"message", "type", "param", "code"}}`, code the status as a string."""
    return Reply(status=status, json={"error": {"message": message, "type": None, "param": param,
                                                "code": code or str(status)}})


def llama_cpp_context_error(requested: int, n_ctx: int, completion: int = 16) -> Reply:
    """llama-cpp-python's server on a prompt longer than its context (HTTP 400, non-streamed requests)."""
    return Reply(status=400, json={"error": {
        "message": f"This model's maximum context length is {n_ctx} tokens. However, you requested {requested} "
                   f"tokens ({requested - completion} in the messages, {completion} in the completion). Please "
                   "reduce the length of the messages or completion.",
        "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})


def char_tokens(text: str) -> int:
    """A tokenizer with a tiny vocabulary (the random-weights test models): one token per character."""
    return len(text)


def digit_tokens(text: str) -> int:
    """A tokenizer of the llama family on figures: every digit and punctuation mark a token of its own, runs
    of letters ~3 characters per token, a space joined to the word after it."""
    tokens = 0
    for run in re.findall(r"[A-Za-z]+|\S", text):
        tokens += -(-len(run) // 3) if run[0].isalpha() else 1
    return tokens


class TokenCountingServer:
    """A responder answering as llama-cpp-python with a context of `n_ctx` tokens counted by `tokenize`
    (plus CHAT_TEMPLATE_TOKENS per message): an over-long non-streamed prompt gets its HTTP 400 naming the
    tokens it counted, an over-long streamed one HTTP 200 and an empty stream; a prompt that fits gets
    `reply` (adaptive). `counts` records the tokens of every prompt it saw."""

    CHAT_TEMPLATE_TOKENS = 6

    def __init__(self, n_ctx: int, tokenize: Callable[[str], int], reply: str = "Net sales were $34.2 billion.") -> None:
        self.n_ctx, self.tokenize, self.reply = n_ctx, tokenize, reply
        self.counts: list[int] = []

    def __call__(self, request: Request) -> Reply:
        prompt = sum(self.tokenize(str(m.get("content") or "")) + self.CHAT_TEMPLATE_TOKENS
                     for m in request.messages)
        self.counts.append(prompt)
        body = request.body or {}
        completion = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
        if prompt + completion <= self.n_ctx:
            return text_reply(self.reply)
        if body.get("stream"):
            return empty_stream()
        return llama_cpp_context_error(prompt + completion, self.n_ctx, completion)


def litellm_no_db() -> Reply:
    """LiteLLM's proxy without a database, on a key it does not know (the virtual-key lookup needs the db)."""
    return Reply(status=400, json={"error": {"message": "No connected db.", "type": "no_db_connection",
                                             "param": None, "code": "400"}})


def empty_stream() -> Reply:
    """HTTP 200 and a stream without a single event (llama-cpp-python, over-long streamed prompt)."""
    return Reply(sse=[], done=False)


def not_found() -> Reply:
    """What FastAPI-based servers (llama-cpp-python, LiteLLM) answer on an unknown path."""
    return Reply(status=404, json={"detail": "Not Found"})
