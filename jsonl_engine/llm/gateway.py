"""`POST {base_url}/chat/completions` (OpenAI-compatible) over one httpx.AsyncClient per reader.

Policy where the issue is silent:
- Retried, up to `max_retries` times: HTTP 408/409/429/5xx, connection errors, timeouts, bodies that are not
  a completion. Waits double from `retry_backoff_s` with +-50% jitter; `Retry-After` / `retry-after-ms`
  (seconds or HTTP-date) replaces the computed wait; every wait is capped at `retry_max_wait_s`.
- An upstream timeout is `llm_error` (retryable, data.reason "timeout"), not the `timeout` code, which is
  the engine's own request deadlines.
- A stream is retried only before its first chunk; a stream cut after that raises a retryable `llm_error`
  once the chunks that came have been yielded.
- A parameter the endpoint clearly rejects with HTTP 400/422 (response_format, stream_options, max_tokens,
  temperature) is left out of that reader's calls for ADAPT_TTL_S, then tried again; every request that runs
  without it gets a `parameter_dropped` note (`Usage.notes`). Clearly: the error's `param` field names it
  (with an "unsupported" kind of code or wording), or the message says that parameter itself is unsupported
  ("Unsupported parameter: 'temperature'", "temperature is not supported"); a message that merely names a
  parameter somewhere beside an "unsupported" word changes nothing. max_tokens becomes max_completion_tokens
  only when the server says max_tokens itself is unsupported.
- A context-length error (400/413/422 saying so), or a stream that sends nothing at all with HTTP 200 (what
  llama-cpp-python does with an over-long streamed prompt), is retried with the prompt fitted to the
  reader's `context_tokens` (or the smaller context the server names) by a conservative token estimate,
  scaled down by the server's own count of the refused prompt when it gives one and counts more; with a
  `prompt_fitted` note. A fitted prompt that overflows again is fitted once more only when the server
  counted more tokens in it than the estimate; else, and after that, it is `llm_error` with reason
  `context_overflow`/`empty_stream`.
- Every finish reason other than "stop" is visible: `reply_warnings` codes it (reply_truncated,
  content_filtered, reply_unfinished) and `truncated` is true; JSON-mode calls note these in `Usage.notes`.
- A reply is capped by the daemon at `max_reply_chars(limit)` characters whatever the server does with
  max_tokens; stream chunks are coalesced (COALESCE_CHARS, COALESCE_S) so a reply of tiny deltas does not
  become as many events.
- `usage.calls` counts every HTTP attempt; token counts are the endpoint's, else `estimate_tokens` (and the
  usage is then marked `estimated`).
- What an upstream error body says reaches a message as one line, with the API key (in any case) and any
  `Bearer <token>` masked, cut at `MAX_DETAIL_CHARS` (and marked as cut).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import logging
import math
import random
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import orjson

from jsonl_engine.errors import LLMError
from jsonl_engine.llm.jsonparse import JSONParseError, parse_json_object
from jsonl_engine.llm.readers import Reader
from jsonl_engine.llm.usage import (
    Usage,
    conservative_messages,
    content_text,
    estimate_messages,
    estimate_tokens,
    fit_messages,
)

log = logging.getLogger(__name__)

CHAT_PATH = "chat/completions"
RETRY_STATUSES = frozenset({408, 409, 429})
ADAPTABLE_PARAMS = ("response_format", "stream_options", "max_tokens", "temperature")
JSON_REPAIR_PROMPT = "That was not a valid JSON object. Reply with the JSON object only."
MAX_DETAIL_CHARS = 500  # of an upstream error message, in an LLMError's message
BEARER_TOKEN = re.compile(r"\bBearer\s+[A-Za-z0-9._~+/-]+=*", re.IGNORECASE)
MASK = "***"
ADAPT_TTL_S = 600.0  # a parameter left out after a clear rejection is tried again after this long
UNSUPPORTED_CODES = frozenset({"unsupported_parameter", "unsupported_value", "unknown_parameter"})
UNSUPPORTED = re.compile(r"unsupported|not supported|unrecogni[sz]ed|unknown (?:parameter|field|argument|key)|"
                         r"extra (?:fields|inputs) (?:are )?not permitted|does not support|unexpected keyword|"
                         r"not (?:a )?valid (?:parameter|argument)", re.IGNORECASE)
_NOUN = r"(?:parameters?|params?|arguments?|fields?|keys?|options?|keyword arguments?)"
_SAID_BEFORE = (rf"(?:(?:unsupported|unrecogni[sz]ed|unknown|unexpected|invalid|extra)(?: request)? {_NOUN}"
                rf"(?: supplied)?|does not support (?:the )?{_NOUN})")
_SAID_AFTER = (r"(?:is|are) (?:not supported|unsupported|not allowed|not permitted|unrecogni[sz]ed|unknown|"
               r"not (?:a )?valid)")


def _rejection(param: str) -> re.Pattern[str]:
    """A message saying `param` itself is unsupported: "Unsupported parameter: 'temperature'", "does not
    support parameters: ['response_format']", "temperature is not supported", a pydantic "extra inputs are
    not permitted" entry at that parameter's loc."""
    name = re.escape(param)
    return re.compile(rf"{_SAID_BEFORE}\W{{0,8}}{name}\b|\b{name}\W{{0,4}}(?:{_NOUN} )?{_SAID_AFTER}|"
                      rf"\b{name}'\],? 'msg': 'extra (?:fields|inputs) (?:are )?not permitted", re.IGNORECASE)


REJECTS = {param: _rejection(param) for param in ADAPTABLE_PARAMS}
CONTEXT_OVERFLOW = re.compile(r"context[ _-]?(?:length|window|size)|maximum context|too many tokens|"
                              r"prompt is too long|input is too long|n_ctx|exceed_context|"
                              r"'?max_tokens'? (?:or '?max_completion_tokens'? )?is too large", re.IGNORECASE)
CONTEXT_SIZE = re.compile(r"(?:context (?:window|length|size)|maximum context length|n_ctx)\D{0,12}?(\d{3,7})",
                          re.IGNORECASE)
# the tokens a server counted in a refused prompt: llama-cpp-python / OpenAI "(2077 in the messages, 16 in the
# completion)", vLLM "your request has 1900 input tokens", OpenAI "your messages resulted in 5000 tokens"
PROMPT_TOKENS = re.compile(r"(\d+) in the messages|(?:request has|messages resulted in) (\d+) (?:input )?tokens",
                           re.IGNORECASE)
# a 400 that means the key is not known: LiteLLM's proxy without a database looks a key up there and says this
KEY_UNKNOWN = re.compile(r"\bno connected db\b", re.IGNORECASE)
FIT_MARGIN = 32  # tokens kept free when a prompt is fitted after an overflow
REPLY_CHARS_PER_TOKEN = 8  # the daemon's own cap on a reply: this many characters per max_tokens token...
REPLY_CHARS_SLACK = 1024  # ...plus this
COALESCE_CHARS = 64  # stream chunks are held until this many characters...
COALESCE_S = 0.05  # ...or this long since the last chunk went out

Message = Mapping[str, Any]
Sleep = Callable[[float], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    usage: Usage  # this call's tokens
    finish_reason: str | None = None
    capped: bool = False  # the daemon cut the reply at max_reply_chars

    @property
    def truncated(self) -> bool:
        return unfinished(self.finish_reason) or self.capped

    def warnings(self) -> list[str]:
        return reply_warnings(self.text, self.finish_reason, self.capped)


@dataclass(slots=True)
class ReplyStatus:
    """How a streamed reply ended: pass one to `Gateway.stream(status=...)`."""

    finish_reason: str | None = None
    capped: bool = False

    @property
    def truncated(self) -> bool:
        return unfinished(self.finish_reason) or self.capped


UNFINISHED_CODES = ("reply_truncated:", "reply_capped:", "content_filtered:", "reply_unfinished:")  # reply_warnings


def unfinished(finish_reason: str | None) -> bool:
    """The server said the reply did not end normally: any finish reason but "stop" (None: it said nothing)."""
    return finish_reason is not None and finish_reason != "stop"


def max_reply_chars(limit: int) -> int:
    return limit * REPLY_CHARS_PER_TOKEN + REPLY_CHARS_SLACK


def reply_warnings(text: str, finish_reason: str | None, capped: bool = False) -> list[str]:
    """Coded warnings ("code: text") for a reply that is empty or did not end normally (every finish reason
    but "stop")."""
    out = []
    if not text.strip():
        out.append("empty_reply: the reader returned no text"
                   + (f" (finish_reason {finish_reason!r})" if finish_reason else ""))
    if capped:
        out.append("reply_capped: the daemon stopped the reply at its own size cap (the server did not "
                   "honour max_tokens)")
    elif finish_reason == "length":
        out.append("reply_truncated: the reply was cut off at max_tokens (finish_reason \"length\")")
    elif finish_reason == "content_filter":
        out.append("content_filtered: the server's content filter stopped the reply (finish_reason "
                   "\"content_filter\"); what came may be partial")
    elif unfinished(finish_reason):
        out.append(f"reply_unfinished: the reply ended with finish_reason {str(finish_reason)[:40]!r}, not "
                   "\"stop\"; it may be incomplete")
    return out


def note_reply(usage: Usage | None, completion: Completion) -> None:
    """Record in `usage` the coded warnings of a reply the caller parses rather than shows (a JSON turn)."""
    if usage is not None:
        for warning in completion.warnings():
            usage.note(warning)


class _Retryable(Exception):
    """An attempt failed in a way worth another try (after `retry_after` seconds if the server said)."""

    def __init__(self, error: LLMError, retry_after: float | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.retry_after = retry_after


class _Adapted(Exception):
    """The endpoint rejected an optional parameter, now dropped: try again at once."""


class _Overflow(Exception):
    """The prompt did not fit the server's context (`context`: the size it named, `prompt_tokens`: the tokens
    it counted in the refused prompt, if it said)."""

    def __init__(self, error: LLMError, context: int | None = None, prompt_tokens: int | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.context = context
        self.prompt_tokens = prompt_tokens


class Gateway:
    def __init__(self, reader: Reader, *, sleep: Sleep = asyncio.sleep) -> None:
        self.reader = reader
        self.settings = reader.settings
        self._sleep = sleep
        self._slots = asyncio.Semaphore(self.settings.max_concurrency)
        self._http: httpx.AsyncClient | None = None
        self._dropped: dict[str, float] = {}  # parameter -> when it was dropped (time.monotonic)

    @property
    def name(self) -> str:
        return self.reader.name

    @property
    def model(self) -> str:
        return self.reader.model

    def __repr__(self) -> str:
        return f"Gateway(reader={self.name!r}, model={self.model!r}, base_url={self.reader.base_url!r})"

    @property
    def adaptations(self) -> list[str]:
        """Parameters this reader's calls currently leave out."""
        return [p for p in ADAPTABLE_PARAMS if self._is_dropped(p)]

    def _is_dropped(self, param: str) -> bool:
        when = self._dropped.get(param)
        if when is None:
            return False
        if time.monotonic() - when >= ADAPT_TTL_S:
            self._dropped.pop(param, None)
            log.info("reader %s: trying %s again", self.name, param)
            return False
        return True

    def _note_adaptations(self, usage: Usage | None) -> None:
        if usage is None:
            return
        for param in self.adaptations:
            usage.note(f"parameter_dropped: reader {self.name!r} rejected {param}; its calls leave it out "
                       f"(tried again {ADAPT_TTL_S:g}s after the rejection)")

    def _fit(self, original: Sequence[Message], sent: Sequence[Message], max_tokens: int | None,
             failure: _Overflow, usage: Usage | None, fits: int) -> tuple[list[dict[str, Any]], int]:
        """The prompt (`original` shortened) and reply limit for a retry after `sent` overflowed. The first
        overflow is fitted; a fitted prompt that overflows again is fitted once more only when the server counted
        more tokens in it than our estimate (the budget is then scaled by its count); else it raises."""
        estimate, counted = conservative_messages(sent), failure.prompt_tokens or 0
        counted_more = counted > estimate > 0
        if fits >= 2 or (fits == 1 and not counted_more):
            raise self._overflowed(failure) from failure
        context = self.settings.context_tokens
        if failure.context is not None:
            context = min(context, failure.context)
        reply = self._limit(max_tokens)
        reply = min(reply, max(16, context // 4))
        budget = max(16, context - reply - FIT_MARGIN)
        if counted_more:  # the server's tokenizer counts more than our estimate: scale the budget by its count
            budget = max(16, budget * estimate // counted)
        fitted = fit_messages(original, budget)
        log.warning("reader %s: %s; retrying with the prompt fitted to %d tokens", self.name,
                    failure.error.message, context)
        if usage is not None:
            usage.note(f"prompt_fitted: the prompt did not fit the reader's context; it was shortened to fit "
                       f"{context} tokens and the reply limited to {reply} tokens")
        return fitted, reply

    def _overflowed(self, failure: _Overflow) -> LLMError:
        reason = (failure.error.data or {}).get("reason", "context_overflow")
        return LLMError(f"{failure.error.message} (also after fitting the prompt to the reader's context: "
                        f"set context_tokens to the server's context size)", status=failure.error.status,
                        retryable=False, data={"reason": reason})

    async def aclose(self) -> None:
        if self._http is not None:
            http, self._http = self._http, None
            await http.aclose()

    # -- public calls -------------------------------------------------------------------------------

    async def chat(self, messages: Sequence[Message], *, usage: Usage | None = None, json_mode: bool = False,
                   max_tokens: int | None = None, temperature: float | None = 0.0) -> Completion:
        attempt, fits, original = 0, 0, messages
        while True:
            body = self._body(messages, json_mode=json_mode, max_tokens=max_tokens,
                              temperature=temperature, stream=False)
            self._note_adaptations(usage)
            try:
                completion = await self._chat_once(body, usage)
            except _Adapted:
                continue
            except _Overflow as failure:
                messages, max_tokens = self._fit(original, messages, max_tokens, failure, usage, fits)
                fits += 1
                continue
            except _Retryable as failure:
                await self._before_retry(failure, attempt)
                attempt += 1
                continue
            if usage is not None:
                usage.add(completion.usage.prompt_tokens, completion.usage.completion_tokens,
                          estimated=completion.usage.estimated)
            if json_mode:  # parsed by the caller, never shown: a cut-off reply must still be said
                note_reply(usage, completion)
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
                     temperature: float | None = 0.0, status: ReplyStatus | None = None) -> AsyncIterator[str]:
        """Text chunks as the server sends them (SSE), coalesced (COALESCE_CHARS, COALESCE_S) and capped at
        `max_reply_chars`; `status` learns the finish reason and whether the cap cut the reply. Consume with
        `contextlib.aclosing` (or from a task that may be cancelled): leaving the iteration closes the upstream
        response."""
        attempt, fits, original = 0, 0, messages
        status = status if status is not None else ReplyStatus()
        while True:
            body = self._body(messages, json_mode=json_mode, max_tokens=max_tokens,
                              temperature=temperature, stream=True)
            self._note_adaptations(usage)
            state = _StreamState(self._detail, max_reply_chars(self._limit(max_tokens)))
            held: list[str] = []
            try:
                async with contextlib.aclosing(self._stream_once(body, usage, state, held)) as chunks:
                    async for chunk in chunks:
                        yield chunk
                self._check_stream_end(state)
            except _Adapted:
                continue
            except _Overflow as failure:
                messages, max_tokens = self._fit(original, messages, max_tokens, failure, usage, fits)
                fits += 1
                continue
            except _Retryable as failure:
                if state.parts:
                    if held:
                        yield "".join(held)
                    self._count_stream(usage, messages, state)
                    raise failure.error from failure.__cause__
                await self._before_retry(failure, attempt)
                attempt += 1
                continue
            if held:
                yield "".join(held)
            status.finish_reason, status.capped = state.finish_reason, state.capped
            if state.capped:
                log.warning("reader %s: reply cut at the daemon's cap of %d characters", self.name, state.cap)
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
        return self._completion(response, body["messages"], self._limit(body.get("max_tokens")
                                                                        or body.get("max_completion_tokens")))

    async def _stream_once(self, body: dict[str, Any], usage: Usage | None, state: _StreamState,
                           held: list[str]) -> AsyncIterator[str]:
        """One streamed request: the reply's text fed to `state`, yielded in coalesced chunks; text not yet
        yielded waits in `held` (the caller sends it on). Transport failures become `_Retryable`, except a cut
        after the reply was complete."""
        sent_at = -math.inf
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
                            held.append(text)
                            now = time.monotonic()
                            if sum(map(len, held)) >= COALESCE_CHARS or now - sent_at >= COALESCE_S:
                                chunk, sent_at = "".join(held), now
                                held.clear()
                                yield chunk
                        if state.done or state.capped:
                            break
        except httpx.TimeoutException as exc:
            raise _Retryable(self._timeout_error()) from exc
        except httpx.TransportError as exc:
            if not state.complete:
                raise _Retryable(self._transport_error(exc, cut=bool(state.parts))) from exc

    def _check_stream_end(self, state: _StreamState) -> None:
        """A stream that ended with no event at all overflowed the server's context (`_Overflow`); one that ended
        before the reply was complete (and not at the cap) is retried."""
        if not state.events:
            raise _Overflow(LLMError(f"reader {self.name!r}: the endpoint answered HTTP 200 with an empty "
                                     "stream (llama.cpp servers do this when the prompt exceeds their "
                                     "context)", status=200, retryable=False,
                                     data={"reason": "empty_stream"}))
        if not state.complete and not state.capped:
            raise _Retryable(LLMError(f"reader {self.name!r}: stream ended before the reply was "
                                      "complete", status=None, retryable=True,
                                      data={"reason": "stream_cut"}))

    def _completion(self, response: httpx.Response, messages: Sequence[Message], limit: int) -> Completion:
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
        cap = max_reply_chars(limit)
        capped = len(text) > cap
        if capped:
            log.warning("reader %s: reply cut at the daemon's cap of %d characters", self.name, cap)
            text = text[:cap]
        finish = choice.get("finish_reason")
        prompt, completion = _usage_of(data.get("usage"))
        usage = Usage(prompt if prompt is not None else estimate_messages(messages),
                      completion if completion is not None else estimate_tokens(text), 1,
                      estimated=prompt is None or completion is None)
        return Completion(text=text, usage=usage, finish_reason=finish if isinstance(finish, str) else None,
                          capped=capped)

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
        body["max_completion_tokens" if self._is_dropped("max_tokens") else "max_tokens"] = self._limit(max_tokens)
        if temperature is not None and not self._is_dropped("temperature"):
            body["temperature"] = temperature
        if json_mode and not self._is_dropped("response_format"):
            body["response_format"] = {"type": "json_object"}
        if stream:
            body["stream"] = True
            if not self._is_dropped("stream_options"):
                body["stream_options"] = {"include_usage": True}
        return body

    def _limit(self, max_tokens: int | None) -> int:
        return min(max_tokens, self.settings.max_tokens) if max_tokens else self.settings.max_tokens

    def _raise_for_status(self, response: httpx.Response, body: Mapping[str, Any]) -> None:
        status = response.status_code
        data = _json_or_text(response)
        detail = self._detail(data)
        message = f"reader {self.name!r}: the LLM endpoint answered HTTP {status}"
        if status in (400, 413, 422) and CONTEXT_OVERFLOW.search(detail):
            size = CONTEXT_SIZE.search(detail)
            counted = PROMPT_TOKENS.search(detail)
            raise _Overflow(LLMError(f"{message}: {detail}", status=status, retryable=False,
                                     data={"reason": "context_overflow"}),
                            int(size.group(1)) if size else None,
                            int(counted.group(1) or counted.group(2)) if counted else None)
        if status in (400, 422) and (param := self._rejected_param(data, detail, body)) is not None:
            log.warning("reader %s rejected %s (%s); leaving it out for %gs", self.name, param, detail,
                        ADAPT_TTL_S)
            self._dropped[param] = time.monotonic()
            raise _Adapted(param)
        if status in (401, 403) or (status == 400 and KEY_UNKNOWN.search(detail)):
            message += " (check the API key)"
        if status == 404 and not re.search(r"/v\d+\b", self.reader.base_url):
            message += (f" (base_url {self.reader.base_url} has no /v1: OpenAI-compatible servers usually "
                        f"serve {self.reader.base_url}/v1/{CHAT_PATH})")
        if detail:
            message += f": {detail}"
        retryable = status in RETRY_STATUSES or status >= 500
        error = LLMError(message, status=status, retryable=retryable)
        if retryable:
            raise _Retryable(error, parse_retry_after(response.headers))
        raise error

    def _rejected_param(self, data: Any, detail: str, body: Mapping[str, Any]) -> str | None:
        """The parameter a 400/422 clearly rejects as such: named by the error's `param` field (with an
        "unsupported" kind of code or wording), or by a message saying it is unsupported (`REJECTS`); else None."""
        err = data.get("error") if isinstance(data, dict) else None
        err = err if isinstance(err, dict) else (data if isinstance(data, dict) else {})
        named = err.get("param") if isinstance(err.get("param"), str) else None
        unsupported = str(err.get("code") or "").lower() in UNSUPPORTED_CODES or bool(UNSUPPORTED.search(detail))
        for param in ADAPTABLE_PARAMS:
            if param not in body or self._is_dropped(param):
                continue
            if (named == param and unsupported) or (named is None and REJECTS[param].search(detail)):
                return param
        return None

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
                  completion if completion is not None else estimate_tokens("".join(state.parts)),
                  estimated=prompt is None or completion is None)


class _StreamState:
    __slots__ = ("detail", "cap", "parts", "size", "events", "done", "finished", "finish_reason", "capped", "usage")

    def __init__(self, detail: Callable[[Any], str], cap: int) -> None:
        self.detail = detail  # what an error chunk says, fit for a message
        self.cap = cap  # characters of reply kept, at most
        self.parts: list[str] = []
        self.size = 0
        self.events = 0
        self.done = False
        self.finished = False
        self.finish_reason: str | None = None
        self.capped = False
        self.usage: tuple[int | None, int | None] = (None, None)

    @property
    def complete(self) -> bool:
        return self.done or self.finished

    def feed(self, payload: str) -> str:
        self.events += 1
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
                reason = choices[0]["finish_reason"]
                self.finish_reason = reason if isinstance(reason, str) else None
        if text and self.size + len(text) > self.cap:
            text, self.capped = text[: self.cap - self.size], True
        if text:
            self.parts.append(text)
            self.size += len(text)
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
