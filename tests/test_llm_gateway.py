"""The gateway against a real scripted HTTP server on 127.0.0.1 (tests/support/gateway.py)."""

import asyncio
from contextlib import aclosing
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from jsonl_engine.errors import LLMError
from jsonl_engine.llm.gateway import MAX_DETAIL_CHARS, Gateway, parse_retry_after
from jsonl_engine.llm.usage import Usage
from tests.support.gateway import (
    API_KEY,
    MODEL,
    InFlight,
    Reply,
    chat_reply,
    error,
    json_reply,
    stream_chunks,
    stream_reply,
    text_reply,
)

MESSAGES = [{"role": "user", "content": "What were net sales in 2022? Reply in JSON."}]


class Sleeps(list):
    """Records the waits the gateway asks for (and does not wait)."""

    async def __call__(self, seconds: float) -> None:
        self.append(seconds)
        await asyncio.sleep(0)


def run_with(server, coro_fn, *, sleep=None, **settings):
    async def main():
        gw = Gateway(server.reader(**settings), **({"sleep": sleep} if sleep is not None else {}))
        try:
            return await coro_fn(gw)
        finally:
            await gw.aclose()

    return asyncio.run(main())


def test_chat_sends_model_auth_and_json_mode_and_counts_usage(gateway):
    gateway.push(chat_reply('{"found": true}', prompt_tokens=40, completion_tokens=5))
    usage = Usage()
    completion = run_with(gateway, lambda gw: gw.chat(MESSAGES, usage=usage, json_mode=True, max_tokens=99))
    assert completion.text == '{"found": true}'
    assert usage.to_dict() == {"prompt_tokens": 40, "completion_tokens": 5, "total_tokens": 45, "calls": 1,
                               "estimated": False}
    request = gateway.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.body["model"] == MODEL
    assert request.body["messages"] == MESSAGES
    assert request.body["response_format"] == {"type": "json_object"}
    assert request.body["max_tokens"] == 99 and request.body["temperature"] == 0


def test_usage_is_estimated_when_the_server_reports_none_and_sums_over_calls(gateway):
    gateway.push(chat_reply("x" * 40, prompt_tokens=None, completion_tokens=None), chat_reply("ok"))
    usage = Usage()

    async def two(gw):
        await gw.chat(MESSAGES, usage=usage)
        await gw.chat(MESSAGES, usage=usage)

    run_with(gateway, two)
    assert usage.calls == 2
    assert usage.completion_tokens == 10 + 7
    assert usage.prompt_tokens > 11


def test_chat_json_tolerates_fences_and_prose(gateway):
    gateway.push(chat_reply('Here you go:\n```json\n{"found": true, "quote": "x",}\n```\nDone.'))
    assert run_with(gateway, lambda gw: gw.chat_json(MESSAGES)) == {"found": True, "quote": "x"}


def test_malformed_json_gets_one_repair_turn_then_llm_error(gateway):
    gateway.push(chat_reply("I think the answer is yes."), json_reply({"found": False, "quote": ""}))
    usage = Usage()
    assert run_with(gateway, lambda gw: gw.chat_json(MESSAGES, usage=usage)) == {"found": False, "quote": ""}
    assert usage.calls == 2
    assert gateway.requests[1].messages[-2] == {"role": "assistant", "content": "I think the answer is yes."}

    gateway.push(chat_reply("nope"), chat_reply("still nope {"))
    with pytest.raises(LLMError) as info:
        run_with(gateway, lambda gw: gw.chat_json(MESSAGES))
    assert info.value.data["reason"] == "malformed_json" and info.value.retryable


def test_429_honours_retry_after_seconds(gateway):
    gateway.push(error(429, "slow down", retry_after="2"), chat_reply("ok"))
    sleeps = Sleeps()
    usage = Usage()
    completion = run_with(gateway, lambda gw: gw.chat(MESSAGES, usage=usage), sleep=sleeps, retry_max_wait_s=10)
    assert completion.text == "ok"
    assert sleeps == [2.0]
    assert usage.calls == 2


def test_retry_after_is_capped_and_parsed_as_http_date():
    now = datetime(2024, 1, 1, tzinfo=UTC)
    assert parse_retry_after({"retry-after": format_datetime(now + timedelta(seconds=30), usegmt=True)}, now) == 30
    assert parse_retry_after({"retry-after": format_datetime(now - timedelta(seconds=30), usegmt=True)}, now) == 0
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_500s_then_success_with_capped_exponential_backoff(gateway):
    gateway.push(error(500), error(502), chat_reply("ok"))
    sleeps = Sleeps()
    usage = Usage()
    text = run_with(gateway, lambda gw: gw.chat(MESSAGES, usage=usage), sleep=sleeps, max_retries=3,
                    retry_backoff_s=1.0, retry_max_wait_s=1.2)
    assert text.text == "ok"
    assert usage.calls == 3
    assert 0.5 <= sleeps[0] <= 1.5 and 1.0 <= sleeps[1] <= 1.2  # base * 2**n * (0.5..1.5), capped


def test_retries_exhausted_is_llm_error_with_status_and_retryable(gateway):
    gateway.push(error(503), error(503), error(503))
    with pytest.raises(LLMError) as info:
        run_with(gateway, lambda gw: gw.chat(MESSAGES), max_retries=2)
    assert info.value.code == "llm_error"
    assert info.value.to_wire()["data"] == {"status": 503, "retryable": True}
    assert len(gateway.requests) == 3


def test_client_errors_are_not_retried_and_never_echo_the_key(gateway):
    gateway.push(error(401, f"Incorrect API key provided: {API_KEY}"))
    with pytest.raises(LLMError) as info:
        run_with(gateway, lambda gw: gw.chat(MESSAGES))
    assert (info.value.status, info.value.retryable) == (401, False)
    assert API_KEY not in str(info.value.to_wire()) and "API key" in info.value.message
    assert len(gateway.requests) == 1


SHOUTED_KEY = API_KEY.upper()


def leaks_key(text: str) -> bool:
    return API_KEY.lower() in text.lower()


def test_a_key_echoed_in_another_case_or_as_a_bearer_token_is_masked(gateway):
    gateway.push(error(400, f"invalid key {SHOUTED_KEY}; sent Authorization: BEARER {SHOUTED_KEY}, "
                            "and for the record bearer sk-other-token"))
    with pytest.raises(LLMError) as info:
        run_with(gateway, lambda gw: gw.chat(MESSAGES))
    message = info.value.message
    assert not leaks_key(str(info.value.to_wire())) and "sk-other-token" not in message
    assert message.endswith("invalid key ***; sent Authorization: Bearer ***, and for the record Bearer ***")


def test_a_huge_error_body_is_cut_after_the_key_is_masked(gateway):
    huge = "x" * (MAX_DETAIL_CHARS - 10) + SHOUTED_KEY + " y" * 500_000  # the key straddles the cut
    masked = huge.replace(SHOUTED_KEY, "***")
    gateway.push(error(400, huge), Reply(status=500, body=huge.encode()), Reply(status=500, body=huge.encode()))
    for _ in range(2):  # a JSON error message, then a raw body on the retried path
        with pytest.raises(LLMError) as info:
            run_with(gateway, lambda gw: gw.chat(MESSAGES), max_retries=1)
        message = info.value.message
        assert message.endswith(f"{masked[:MAX_DETAIL_CHARS]}... [cut: {len(masked)} chars in all]")
        assert len(message) < MAX_DETAIL_CHARS + 100
        assert not leaks_key(message) and "SK-TEST" not in message


def test_a_stream_error_event_echoing_the_key_is_masked(gateway):
    gateway.push(Reply(sse=[{"error": {"message": f"quota exceeded for {SHOUTED_KEY}"}}], done=False))

    async def collect(gw):
        return [chunk async for chunk in gw.stream(MESSAGES)]

    with pytest.raises(LLMError) as info:
        run_with(gateway, collect, max_retries=0)
    assert info.value.message == "the LLM stream reported an error: quota exceeded for ***"


def test_rejected_optional_parameter_is_dropped_once_and_remembered(gateway):
    gateway.push(error(400, "Unsupported parameter: 'response_format' is not supported with this model."),
                 chat_reply('{"a": 1}'), chat_reply('{"a": 2}'))

    async def twice(gw):
        return [await gw.chat_json(MESSAGES), await gw.chat_json(MESSAGES)]

    assert run_with(gateway, twice) == [{"a": 1}, {"a": 2}]
    assert "response_format" in gateway.requests[0].body
    assert all("response_format" not in r.body for r in gateway.requests[1:])


def test_timeout_is_retried_then_llm_error_with_reason_timeout(gateway):
    gateway.push(chat_reply("late", delay=3), chat_reply("late again", delay=3))
    with pytest.raises(LLMError) as info:
        run_with(gateway, lambda gw: gw.chat(MESSAGES), timeout_s=0.2, max_retries=1)
    assert info.value.retryable and info.value.data["reason"] == "timeout"
    assert len(gateway.requests) == 2
    assert gateway.disconnected.wait(5)  # the timed-out requests were abandoned, not left open


def test_timeout_then_success(gateway):
    gateway.push(chat_reply("late", delay=3), chat_reply("ok"))
    assert run_with(gateway, lambda gw: gw.chat(MESSAGES), timeout_s=0.3).text == "ok"


def test_malformed_body_is_retried(gateway):
    gateway.push(Reply(body=b'{"choices": [ oops'), Reply(json={"error": "upstream hiccup"}), chat_reply("ok"))
    usage = Usage()
    assert run_with(gateway, lambda gw: gw.chat(MESSAGES, usage=usage)).text == "ok"
    assert usage.calls == 3


def test_connection_refused_is_llm_error(gateway):
    settings = {"base_url": "http://127.0.0.1:9/v1", "max_retries": 1}
    with pytest.raises(LLMError) as info:
        run_with(gateway, lambda gw: gw.chat(MESSAGES), **settings)
    assert info.value.retryable and info.value.data["reason"] == "connection"


def test_stream_yields_chunks_and_final_usage(gateway):
    gateway.push(stream_reply(["Net ", "sales ", "rose."], usage=(30, 3)))
    usage = Usage()

    async def collect(gw):
        return [chunk async for chunk in gw.stream(MESSAGES, usage=usage)]

    chunks = run_with(gateway, collect)
    assert chunks[0] == "Net " and "".join(chunks) == "Net sales rose."  # later chunks may be coalesced
    assert usage.to_dict() == {"prompt_tokens": 30, "completion_tokens": 3, "total_tokens": 33, "calls": 1,
                               "estimated": False}
    body = gateway.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert gateway.requests[0].headers["accept"] == "text/event-stream"


def test_stream_retries_before_the_first_chunk(gateway):
    gateway.push(error(503, retry_after="0"), text_reply("all good"))

    async def collect(gw):
        return "".join([chunk async for chunk in gw.stream(MESSAGES)])

    assert run_with(gateway, collect) == "all good"


def test_stream_cut_midway_yields_what_came_then_retryable_llm_error(gateway):
    gateway.push(stream_reply(["Net ", "sales ", "rose ", "sharply."], cut_after=3))
    got: list[str] = []
    usage = Usage()

    async def collect(gw):
        async for chunk in gw.stream(MESSAGES, usage=usage):
            got.append(chunk)

    with pytest.raises(LLMError) as info:
        run_with(gateway, collect)
    assert got == ["Net ", "sales "]
    assert info.value.retryable and info.value.data["reason"] == "stream_cut"
    assert len(gateway.requests) == 1  # no retry once text went out
    assert usage.calls == 1 and usage.completion_tokens > 0


def test_stream_ending_without_done_or_finish_is_an_error(gateway):
    gateway.push(Reply(sse=stream_chunks(["partial"], usage=None, finish_reason=None), done=False))

    async def collect(gw):
        return [chunk async for chunk in gw.stream(MESSAGES)]

    with pytest.raises(LLMError, match="before the reply was complete"):
        run_with(gateway, collect)


def test_cancelling_the_consumer_closes_the_upstream_response(gateway):
    gateway.push(Reply(sse=stream_chunks(["first ", "second"]), delays=[0, 0, 30]), chat_reply("after"))

    async def main(gw):
        first = asyncio.Event()

        async def consume():
            async for _ in gw.stream(MESSAGES):
                first.set()

        task = asyncio.create_task(consume())
        await first.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        closed = await asyncio.to_thread(gateway.disconnected.wait, 5)
        return closed, (await gw.chat(MESSAGES)).text

    assert run_with(gateway, main, max_concurrency=1) == (True, "after")


def test_leaving_an_aclosing_stream_early_closes_the_upstream_response(gateway):
    gateway.push(Reply(sse=stream_chunks(["first ", "second"]), delays=[0, 0, 30]))

    async def main(gw):
        async with aclosing(gw.stream(MESSAGES)) as chunks:
            async for chunk in chunks:
                return chunk

    assert run_with(gateway, main) == "first "
    assert gateway.disconnected.wait(5)


def test_concurrency_is_bounded_per_reader(gateway):
    inflight = InFlight()

    def responder(request):
        inflight.hold(0.05)
        return chat_reply("ok")

    gateway.responder = responder

    async def many(gw):
        return await asyncio.gather(*(gw.chat(MESSAGES) for _ in range(8)))

    assert len(run_with(gateway, many, max_concurrency=2)) == 8
    assert inflight.peak == 2  # the limit is reached and never exceeded
    assert gateway.unexpected == 0
