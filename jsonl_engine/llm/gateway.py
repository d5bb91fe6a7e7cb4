"""`POST {base_url}/chat/completions` (OpenAI-compatible) over one httpx.AsyncClient per reader.

Policy where the issue is silent:
- Retried, up to `max_retries` times: HTTP 408/409/429/5xx, connection errors, timeouts, bodies that are not
  a completion. Waits double from `retry_backoff_s` with +-50% jitter; `Retry-After` / `retry-after-ms`
  (seconds or HTTP-date) replaces the computed wait; every wait is capped at `retry_max_wait_s`.
- An upstream timeout is `llm_error` (retryable, data.reason "timeout"), not the `timeout` code, which is
  the engine's own request deadlines.
- A stream is retried only before its first chunk; a stream cut after that raises a retryable `llm_error`
  once the chunks that came have been yielded.
- A parameter the endpoint rejects with HTTP 400/422 (response_format, stream_options, max_tokens,
  temperature) is dropped once and remembered (max_tokens becomes max_completion_tokens).
- `usage.calls` counts every HTTP attempt; token counts are the endpoint's, else `estimate_tokens`.
- What an upstream error body says reaches a message as one line, with the API key (in any case) and any
  `Bearer <token>` masked, cut at `MAX_DETAIL_CHARS` (and marked as cut).
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import math
import random
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import orjson

from jsonl_engine.errors import LLMError
from jsonl_engine.llm.jsonparse import JSONParseError, parse_json_object
from jsonl_engine.llm.readers import Reader
from jsonl_engine.llm.usage import Usage, content_text, estimate_messages, estimate_tokens

log = logging.getLogger(__name__)

CHAT_PATH = "chat/completions"
RETRY_STATUSES = frozenset({408, 409, 429})
ADAPTABLE_PARAMS = ("response_format", "stream_options", "max_tokens", "temperature")
JSON_REPAIR_PROMPT = "That was not a valid JSON object. Reply with the JSON object only."
MAX_DETAIL_CHARS = 500  # of an upstream error message, in an LLMError's message
BEARER_TOKEN = re.compile(r"\bBearer\s+[A-Za-z0-9._~+/-]+=*", re.IGNORECASE)
MASK = "***"

Message = Mapping[str, Any]
Sleep = Callable[[float], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    usage: Usage  # this call's tokens


class _Retryable(Exception):
    """An attempt failed in a way worth another try (after `retry_after` seconds if the server said)."""

    def __init__(self, error: LLMError, retry_after: float | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.retry_after = retry_after


class _Adapted(Exception):
    """The endpoint rejected an optional parameter, now dropped: try again at once."""


class Gateway:
    def __init__(self, reader: Reader, *, sleep: Sleep = asyncio.sleep) -> None:
        self.reader = reader
        self.settings = reader.settings
        self._sleep = sleep
        self._slots = asyncio.Semaphore(self.settings.max_concurrency)
        self._http: httpx.AsyncClient | None = None
        self._dropped: set[str] = set()

    @property
    def name(self) -> str:
        return self.reader.name

    @property
    def model(self) -> str:
        return self.reader.model

    def __repr__(self) -> str:
        return f"Gateway(reader={self.name!r}, model={self.model!r}, base_url={self.reader.base_url!r})"

    async def aclose(self) -> None:
        if self._http is not None:
            http, self._http = self._http, None
            await http.aclose()

    # -- public calls -------------------------------------------------------------------------------

    async def chat(self, messages: Sequence[Message], *, usage: Usage | None = None, json_mode: bool = False,
                   max_tokens: int | None = None, temperature: float | None = 0.0) -> Completion:
        attempt = 0
        while True:
            body = self._body(messages, json_mode=json_mode, max_tokens=max_tokens,
                              temperature=temperature, stream=False)
            try:
                completion = await self._chat_once(body, usage)
            except _Adapted:
                continue
            except _Retryable as failure:
                await self._before_retry(failure, attempt)
                attempt += 1
                continue
            if usage is not None:
                usage.add(completion.usage.prompt_tokens, completion.usage.completion_tokens)
            return completion

    async def chat_json(self, messages: Sequence[Message], *, usage: Usage | None = None,
                        max_tokens: int | None = None, temperature: float | None = 0.0) -> dict[str, Any]:
        """A JSON object from the model (JSON mode + tolerant parsing, one repair turn if need be)."""
        completion = await self.chat(messages, usage=usage, json_mode=True, max_tokens=max_tokens,
                                     temperature=temperature)
        try:
            return parse_json_object(completion.text)
        except JSONParseError:
            log.info("reader %s: reply is not a JSON object, asking once more", self.name)
        repair = [*messages, {"role": "assistant", "content": completion.text},
                  {"role": "user", "content": JSON_REPAIR_PROMPT}]
        completion = await self.chat(repair, usage=usage, json_mode=True, max_tokens=max_tokens,
                                     temperature=temperature)
        try:
            return parse_json_object(completion.text)
        except JSONParseError as exc:
            raise LLMError(f"reader {self.name!r}: the model did not return a JSON object", status=None,
                           retryable=True, data={"reason": "malformed_json"}) from exc

    async def stream(self, messages: Sequence[Message], *, usage: Usage | None = None,
                     json_mode: bool = False, max_tokens: int | None = None,
                     temperature: float | None = 0.0) -> AsyncIterator[str]:
        """Text chunks as the server sends them (SSE). Consume with `contextlib.aclosing` (or from a task
        that may be cancelled): leaving the iteration closes the upstream response."""
        attempt = 0
        while True:
            body = self._body(messages, json_mode=json_mode, max_tokens=max_tokens,
                              temperature=temperature, stream=True)
            state = _StreamState(self._detail)
            try:
                try:
                    async with self._slots:
                        if usage is not None:
                            usage.add(calls=1)
                        async with self._client().stream("POST", CHAT_PATH, content=orjson.dumps(body),
                                                         headers={"Accept": "text/event-stream"}) as response:
                            if not response.is_success:
                                await response.aread()
                                self._raise_for_status(response, body)
                            async for payload in _sse_data(response):
                                text = state.feed(payload)
                                if text:
                                    yield text
                                if state.done:
                                    break
                except httpx.TimeoutException as exc:
                    raise _Retryable(self._timeout_error()) from exc
                except httpx.TransportError as exc:
                    if not state.complete:
                        raise _Retryable(self._transport_error(exc, cut=bool(state.parts))) from exc
                if not state.complete:
                    raise _Retryable(LLMError(f"reader {self.name!r}: stream ended before the reply was "
                                              "complete", status=None, retryable=True,
                                              data={"reason": "stream_cut"}))
            except _Adapted:
                continue
            except _Retryable as failure:
                if state.parts:
                    self._count_stream(usage, messages, state)
                    raise failure.error from failure.__cause__
                await self._before_retry(failure, attempt)
                attempt += 1
                continue
            self._count_stream(usage, messages, state)
            return

    # -- one attempt --------------------------------------------------------------------------------

    async def _chat_once(self, body: dict[str, Any], usage: Usage | None) -> Completion:
        try:
            async with self._slots:
                if usage is not None:
                    usage.add(calls=1)
                response = await self._client().post(CHAT_PATH, content=orjson.dumps(body))
        except httpx.TimeoutException as exc:
            raise _Retryable(self._timeout_error()) from exc
        except httpx.TransportError as exc:
            raise _Retryable(self._transport_error(exc)) from exc
        if not response.is_success:
            self._raise_for_status(response, body)
        return self._completion(response, body["messages"])

    def _completion(self, response: httpx.Response, messages: Sequence[Message]) -> Completion:
        status = response.status_code
        try:
            data = orjson.loads(response.content)
        except orjson.JSONDecodeError as exc:
            raise _Retryable(LLMError(f"reader {self.name!r}: the endpoint sent a body that is not JSON",
                                      status=status, retryable=True, data={"reason": "malformed_body"})) from exc
        choices = data.get("choices") if isinstance(data, dict) else None
        if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
            detail = self._detail(data) if isinstance(data, dict) else ""
            raise _Retryable(LLMError(f"reader {self.name!r}: the endpoint sent no completion"
                                      + (f": {detail}" if detail else ""),
                                      status=status, retryable=True, data={"reason": "malformed_body"}))
        choice = choices[0]
        message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        text = content_text(message.get("content"))
        prompt, completion = _usage_of(data.get("usage"))
        usage = Usage(prompt if prompt is not None else estimate_messages(messages),
                      completion if completion is not None else estimate_tokens(text), 1)
        return Completion(text=text, usage=usage)

    # -- helpers ------------------------------------------------------------------------------------

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            s = self.settings
            headers = {"Content-Type": "application/json", "Accept": "application/json",
                       "User-Agent": "jsonl-engine"}
            if self.reader.api_key:
                headers["Authorization"] = f"Bearer {self.reader.api_key}"
            self._http = httpx.AsyncClient(
                base_url=self.reader.base_url + "/", headers=headers,
                timeout=httpx.Timeout(s.timeout_s, connect=min(s.timeout_s, 10.0)),
                limits=httpx.Limits(max_connections=s.max_concurrency,
                                    max_keepalive_connections=s.max_concurrency))
        return self._http

    def _body(self, messages: Sequence[Message], *, json_mode: bool, max_tokens: int | None,
              temperature: float | None, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": [dict(m) for m in messages]}
        limit = min(max_tokens, self.settings.max_tokens) if max_tokens else self.settings.max_tokens
        body["max_completion_tokens" if "max_tokens" in self._dropped else "max_tokens"] = limit
        if temperature is not None and "temperature" not in self._dropped:
            body["temperature"] = temperature
        if json_mode and "response_format" not in self._dropped:
            body["response_format"] = {"type": "json_object"}
        if stream:
            body["stream"] = True
            if "stream_options" not in self._dropped:
                body["stream_options"] = {"include_usage": True}
        return body

    def _raise_for_status(self, response: httpx.Response, body: Mapping[str, Any]) -> None:
        status = response.status_code
        detail = self._detail(_json_or_text(response))
        if status in (400, 422):
            lowered = detail.lower()
            for param in ADAPTABLE_PARAMS:
                if param in body and param in lowered and param not in self._dropped:
                    log.warning("reader %s rejected %s; retrying without it", self.name, param)
                    self._dropped.add(param)
                    raise _Adapted(param)
        message = f"reader {self.name!r}: the LLM endpoint answered HTTP {status}"
        if status in (401, 403):
            message += " (check the API key)"
        if detail:
            message += f": {detail}"
        retryable = status in RETRY_STATUSES or status >= 500
        error = LLMError(message, status=status, retryable=retryable)
        if retryable:
            raise _Retryable(error, parse_retry_after(response.headers))
        raise error

    async def _before_retry(self, failure: _Retryable, attempt: int) -> None:
        if attempt >= self.settings.max_retries:
            raise failure.error from (failure.__cause__ or failure)
        delay = self.retry_delay(attempt, failure.retry_after)
        log.info("reader %s: %s; retry %d/%d in %.2fs", self.name, failure.error.message, attempt + 1,
                 self.settings.max_retries, delay)
        await self._sleep(delay)

    def retry_delay(self, attempt: int, retry_after: float | None = None) -> float:
        cap = self.settings.retry_max_wait_s
        if retry_after is not None:
            return min(retry_after, cap)
        return min(self.settings.retry_backoff_s * 2 ** attempt * (0.5 + random.random()), cap)

    def _timeout_error(self) -> LLMError:
        return LLMError(f"reader {self.name!r}: the LLM endpoint did not answer within "
                        f"{self.settings.timeout_s:g}s", status=None, retryable=True, data={"reason": "timeout"})

    def _transport_error(self, exc: Exception, cut: bool = False) -> LLMError:
        what = "the stream was cut" if cut else "cannot reach the LLM endpoint"
        return LLMError(self._redact(f"reader {self.name!r}: {what} ({type(exc).__name__}: {exc})"),
                        status=None, retryable=True, data={"reason": "stream_cut" if cut else "connection"})

    def _redact(self, text: str) -> str:
        return redact(text, self.reader.api_key)

    def _detail(self, data: Any) -> str:
        """The upstream's own error message, one line, secrets masked, bounded."""
        detail = self._redact(" ".join(str(_message_of(data)).split()))
        if len(detail) <= MAX_DETAIL_CHARS:
            return detail
        return f"{detail[:MAX_DETAIL_CHARS]}... [cut: {len(detail)} chars in all]"

    def _count_stream(self, usage: Usage | None, messages: Sequence[Message], state: _StreamState) -> None:
        if usage is None:
            return
        prompt, completion = state.usage
        usage.add(prompt if prompt is not None else estimate_messages(messages),
                  completion if completion is not None else estimate_tokens("".join(state.parts)))


class _StreamState:
    __slots__ = ("detail", "parts", "done", "finished", "usage")

    def __init__(self, detail: Callable[[Any], str]) -> None:
        self.detail = detail  # what an error chunk says, fit for a message
        self.parts: list[str] = []
        self.done = False
        self.finished = False
        self.usage: tuple[int | None, int | None] = (None, None)

    @property
    def complete(self) -> bool:
        return self.done or self.finished

    def feed(self, payload: str) -> str:
        if payload.strip() == "[DONE]":
            self.done = True
            return ""
        try:
            chunk = orjson.loads(payload)
        except orjson.JSONDecodeError:
            log.warning("skipping an SSE event that is not JSON (%d chars)", len(payload))
            return ""
        if not isinstance(chunk, dict):
            return ""
        if chunk.get("error"):
            raise _Retryable(LLMError(f"the LLM stream reported an error: {self.detail(chunk)}", status=None,
                                      retryable=True, data={"reason": "stream_error"}))
        if chunk.get("usage"):
            self.usage = _usage_of(chunk["usage"])
        text = ""
        choices = chunk.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            delta = choices[0].get("delta") or choices[0].get("message") or {}
            text = content_text(delta.get("content")) if isinstance(delta, dict) else ""
            if choices[0].get("finish_reason"):
                self.finished = True
        if text:
            self.parts.append(text)
        return text


async def _sse_data(response: httpx.Response) -> AsyncIterator[str]:
    """The `data` of each server-sent event (multi-line data joined with newlines)."""
    data: list[str] = []
    async for line in response.aiter_lines():
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if field == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        yield "\n".join(data)


def parse_retry_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms` or `Retry-After` (delta-seconds or HTTP-date); None if absent."""
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            value = float(ms) / 1000
        except ValueError:
            value = math.nan
        if math.isfinite(value):
            return max(0.0, value)
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        value = float(raw.strip())
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw.strip())
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
    return max(0.0, value) if math.isfinite(value) else None


def _usage_of(raw: Any) -> tuple[int | None, int | None]:
    if not isinstance(raw, dict):
        return None, None
    prompt, completion = raw.get("prompt_tokens"), raw.get("completion_tokens")
    return (prompt if isinstance(prompt, int) and prompt >= 0 else None,
            completion if isinstance(completion, int) and completion >= 0 else None)


def _json_or_text(response: httpx.Response) -> Any:
    try:
        return orjson.loads(response.content)
    except orjson.JSONDecodeError:
        return response.text


def redact(text: str, secret: str | None) -> str:
    """`text` with `secret` (in any case) and any `Bearer <token>` masked."""
    text = BEARER_TOKEN.sub(f"Bearer {MASK}", text)
    if secret and len(secret) >= 4:
        text = re.sub(re.escape(secret), MASK, text, flags=re.IGNORECASE)
    return text


def _message_of(data: Any) -> Any:
    """The error message in an upstream body (the body itself when it has no recognisable one)."""
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict):
            return err.get("message") or err.get("type") or ""
        return err or data.get("message") or data.get("detail") or ""
    return data
