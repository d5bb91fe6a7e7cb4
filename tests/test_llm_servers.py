"""issue 13: the gateway against the loopback server made to answer as real OpenAI-compatible servers do
(LiteLLM's proxy, llama-cpp-python's server): parameter adaptation, context overflow, empty and cut-off
replies, estimated usage, the daemon's cap on reply size and delta count, the 404 hint."""

import asyncio

import pytest

from jsonl_engine.errors import LLMError
from jsonl_engine.llm import gateway as gateway_module
from jsonl_engine.llm.gateway import COALESCE_CHARS, Gateway, ReplyStatus, max_reply_chars
from jsonl_engine.llm.usage import Usage, conservative_messages
from tests.support.gateway import (
    Reply,
    chat_reply,
    empty_stream,
    json_reply,
    litellm_error,
    llama_cpp_context_error,
    not_found,
    stream_reply,
    text_reply,
)

MESSAGES = [{"role": "system", "content": "Answer from the sources."},
            {"role": "user", "content": "Sources:\n\n" + "Net sales were $34.2 billion in 2022. " * 400
             + "\n\nAnswer the question: what were net sales?"}]


def run_with(server, coro_fn, **settings):
    async def main():
        gw = Gateway(server.reader(**settings))
        try:
            return await coro_fn(gw)
        finally:
            await gw.aclose()

    return asyncio.run(main())


def collect(usage=None, status=None, **kw):
    async def go(gw):
        return [chunk async for chunk in gw.stream(MESSAGES, usage=usage, status=status, **kw)]
    return go


# -- 1. adaptation only on a clear rejection, visible, expiring -------------------------------------------


def test_a_400_that_merely_names_parameters_drops_nothing(gateway):
    gateway.push(litellm_error(400, "litellm.ContentPolicyViolationError: the request was rejected by the "
                                    "content filter (request had temperature and response_format set)"),
                 json_reply({"a": 1}))

    async def twice(gw):
        with pytest.raises(LLMError):
            await gw.chat_json(MESSAGES)
        return await gw.chat_json(MESSAGES), gw.adaptations

    assert run_with(gateway, twice) == ({"a": 1}, [])
    assert len(gateway.requests) == 2
    later = gateway.requests[1].body
    assert later["response_format"] == {"type": "json_object"} and later["temperature"] == 0


def test_an_unsupported_parameter_is_left_out_visibly_and_tried_again_later(gateway, monkeypatch):
    gateway.push(litellm_error(400, "litellm.UnsupportedParamsError: openai does not support parameters: "
                                    "['response_format'], for model=tiny", param="response_format"),
                 json_reply({"a": 1}), json_reply({"a": 2}))
    first, second = Usage(), Usage()

    async def run(gw):
        got = [await gw.chat_json(MESSAGES, usage=first)]
        monkeypatch.setattr(gateway_module, "ADAPT_TTL_S", 0.0)  # the adaptation expires
        got.append(await gw.chat_json(MESSAGES, usage=second))
        return got

    assert run_with(gateway, run) == [{"a": 1}, {"a": 2}]
    assert "response_format" not in gateway.requests[1].body
    assert gateway.requests[2].body["response_format"] == {"type": "json_object"}  # tried again
    assert any(n.startswith("parameter_dropped:") and "response_format" in n for n in first.notes)
    assert second.notes == []


def test_max_tokens_is_kept_unless_the_server_says_it_is_unsupported(gateway):
    gateway.push(litellm_error(400, "Unsupported parameter: 'max_tokens' is not supported with this model. "
                                    "Use 'max_completion_tokens' instead.", param="max_tokens",
                               code="unsupported_parameter"),
                 chat_reply("ok"))
    assert run_with(gateway, lambda gw: gw.chat(MESSAGES)).text == "ok"
    assert "max_tokens" not in gateway.requests[1].body and gateway.requests[1].body["max_completion_tokens"]


# -- 5. context overflow: one retry fitted to the reader's context ----------------------------------------


def test_a_vllm_style_max_tokens_too_large_keeps_max_tokens_and_refits(gateway):
    gateway.push(litellm_error(400, "litellm.BadRequestError: OpenAIException - 'max_tokens' or "
                                    "'max_completion_tokens' is too large: 1024. This model's maximum context "
                                    "length is 2048 tokens and your request has 1900 input tokens "
                                    "(1024 > 2048 - 1900)."),
                 chat_reply("ok"))
    usage = Usage()
    assert run_with(gateway, lambda gw: gw.chat(MESSAGES, usage=usage, max_tokens=1024)).text == "ok"
    retry = gateway.requests[1]
    assert "max_completion_tokens" not in retry.body and retry.body["max_tokens"] <= 2048 // 4
    assert conservative_messages(retry.messages) + retry.body["max_tokens"] <= 2048
    assert any(n.startswith("prompt_fitted:") for n in usage.notes)


def test_llama_cpp_context_error_is_retried_once_with_a_fitted_prompt(gateway):
    gateway.push(llama_cpp_context_error(5000, 2048), chat_reply("Net sales were $34.2 billion."))
    out = run_with(gateway, lambda gw: gw.chat(MESSAGES), context_tokens=4096)
    assert out.text == "Net sales were $34.2 billion." and len(gateway.requests) == 2
    fitted = gateway.requests[1].messages
    assert conservative_messages(fitted) <= 2048 and fitted[0] == MESSAGES[0]
    assert fitted[1]["content"].startswith("Sources:") and fitted[1]["content"].endswith("what were net sales?")

    # the fitted prompt overflows again and the server counts more tokens in it than our estimate: fitted once
    # more on that count; overflowing a third time is llm_error (never retried for ever)
    gateway.push(llama_cpp_context_error(5000, 2048), llama_cpp_context_error(3000, 2048),
                 llama_cpp_context_error(2100, 2048))
    with pytest.raises(LLMError) as info:
        run_with(gateway, lambda gw: gw.chat(MESSAGES))
    assert info.value.data["reason"] == "context_overflow" and not info.value.retryable
    assert "context_tokens" in info.value.message and len(gateway.requests) == 5
    assert conservative_messages(gateway.requests[4].messages) < conservative_messages(gateway.requests[3].messages)


def test_an_empty_200_stream_is_a_context_overflow_retried_once_fitted(gateway):
    gateway.push(empty_stream(), text_reply("Net sales were $34.2 billion."))
    assert "".join(run_with(gateway, collect(), context_tokens=1024)) == "Net sales were $34.2 billion."
    assert len(gateway.requests) == 2 and conservative_messages(gateway.requests[1].messages) <= 1024

    gateway.push(empty_stream(), empty_stream(), text_reply("never"))
    with pytest.raises(LLMError) as info:
        run_with(gateway, collect())
    assert info.value.data["reason"] == "empty_stream" and len(gateway.requests) == 4  # not stream_cut x3


# -- 2./7. finish reason, estimated usage, the daemon's caps ----------------------------------------------


def test_finish_reason_length_and_empty_replies_are_reported(gateway):
    gateway.push(chat_reply("Net sales were $34.", finish_reason="length"), chat_reply(""),
                 Reply(json={"choices": [{"index": 0, "message": {"role": "assistant", "content": None},
                                          "finish_reason": "stop"}]}),
                 stream_reply(["Net ", "sales"], finish_reason="length"))

    async def run(gw):
        return [await gw.chat(MESSAGES) for _ in range(3)]

    cut, empty, null = run_with(gateway, run)
    assert cut.truncated and cut.warnings()[0].startswith("reply_truncated:")
    assert empty.warnings()[0].startswith("empty_reply:") and null.warnings()[0].startswith("empty_reply:")
    status = ReplyStatus()
    run_with(gateway, collect(status=status))
    assert status.truncated and status.finish_reason == "length"


def test_stream_usage_is_marked_estimated_when_the_server_ignores_stream_options(gateway):
    gateway.push(stream_reply(["Net ", "sales."], usage=None))  # llama-cpp-python sends no usage chunk
    usage = Usage()
    run_with(gateway, collect(usage=usage))
    assert usage.estimated is True and usage.to_dict()["estimated"] is True and usage.completion_tokens > 0


def test_a_runaway_reply_is_capped_and_its_deltas_coalesced(gateway):
    pieces = ["abc"] * 20_000  # a server that ignores max_tokens, three characters per delta
    gateway.push(stream_reply(pieces), chat_reply("x" * 336_000))
    status = ReplyStatus()
    chunks = run_with(gateway, collect(status=status, max_tokens=100))
    cap = max_reply_chars(100)
    assert len("".join(chunks)) == cap and status.capped and status.truncated
    assert len(chunks) <= cap // COALESCE_CHARS + 20  # not one event per 3-character delta
    completion = run_with(gateway, lambda gw: gw.chat(MESSAGES, max_tokens=100))
    assert len(completion.text) == cap and completion.capped
    assert completion.warnings()[0].startswith("reply_capped:")


# -- 8. a base URL without /v1 ----------------------------------------------------------------------------


def test_a_404_from_a_base_url_without_v1_says_so(gateway):
    gateway.push(not_found())
    base = gateway.url.removesuffix("/v1")
    with pytest.raises(LLMError) as info:
        run_with(gateway, lambda gw: gw.chat(MESSAGES), base_url=base)
    assert gateway.requests[0].path == "/chat/completions"
    assert f"{base}/v1" in info.value.message and info.value.status == 404
