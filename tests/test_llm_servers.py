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
    TokenCountingServer,
    char_tokens,
    chat_reply,
    digit_tokens,
    empty_stream,
    json_reply,
    litellm_error,
    litellm_no_db,
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


# -- issue 26: what still went missing ---------------------------------------------------------------------


def test_every_finish_reason_but_stop_is_coded_and_truncated(gateway):
    """A content-filtered reply passed as complete: truncated false, no warning."""
    partial = "Johnson & Johnson completed the split-off on"
    gateway.push(chat_reply(partial, finish_reason="content_filter"), chat_reply(partial, finish_reason="tool_calls"),
                 chat_reply("Done.", finish_reason="stop"),
                 stream_reply(["Johnson & Johnson ", "completed the split-off on"], finish_reason="content_filter"))

    async def run(gw):
        return [await gw.chat(MESSAGES) for _ in range(3)]

    filtered, other, done = run_with(gateway, run)
    assert filtered.truncated and [w.split(":")[0] for w in filtered.warnings()] == ["content_filtered"]
    assert other.truncated and other.warnings()[0].startswith("reply_unfinished:") and "tool_calls" in other.warnings()[0]
    assert not done.truncated and done.warnings() == []
    status = ReplyStatus()
    assert "".join(run_with(gateway, collect(status=status))) == partial
    assert status.truncated and status.finish_reason == "content_filter"


def test_a_json_reply_cut_at_max_tokens_is_noted(gateway):
    """Gateway JSON calls never looked at finish_reason: a list cut mid-item parsed as a short answer."""
    gateway.push(chat_reply('{"sections": [{"id": "0.1.0", "confidence": 0.9}, {"id": "0.', finish_reason="length"))
    usage = Usage()
    run_with(gateway, lambda gw: gw.chat(MESSAGES, usage=usage, json_mode=True))
    assert [n.split(":")[0] for n in usage.notes] == ["reply_truncated"]


def test_a_400_with_unrelated_wording_drops_no_parameter(gateway):
    """Any "unsupported"-like word anywhere plus the parameter's name anywhere counted as a rejection."""
    gateway.push(litellm_error(400, "this deployment does not support image inputs (see the response_format and "
                                    "temperature docs)"), json_reply({"a": 1}))

    async def twice(gw):
        with pytest.raises(LLMError) as info:
            await gw.chat_json(MESSAGES)
        return info.value.status, await gw.chat_json(MESSAGES), gw.adaptations

    assert run_with(gateway, twice) == (400, {"a": 1}, [])
    assert len(gateway.requests) == 2 and gateway.requests[1].body["temperature"] == 0
    assert gateway.requests[1].body["response_format"] == {"type": "json_object"}


@pytest.mark.parametrize("message", [
    "Unsupported parameter: 'temperature'",
    "temperature is not supported with this model",
    "Unrecognized request argument supplied: temperature",
])
def test_a_message_saying_the_parameter_itself_is_unsupported_drops_it(gateway, message):
    gateway.push(litellm_error(400, message), chat_reply("ok"))
    usage = Usage()
    assert run_with(gateway, lambda gw: gw.chat(MESSAGES, usage=usage)).text == "ok"
    assert "temperature" in gateway.requests[0].body and "temperature" not in gateway.requests[1].body
    assert [n.split(":")[0] for n in usage.notes] == ["parameter_dropped"]


def test_a_prompt_fitted_for_a_tokenizer_that_counts_more_fits_the_second_time(gateway):
    """A prompt fitted to 2048 was 2093 tokens for the tiny model's tokenizer and failed llm_error: the
    server's own count of the refused prompt now scales the fit."""
    server = TokenCountingServer(2048, char_tokens)  # one token per character: twice our conservative estimate
    gateway.responder = server
    usage = Usage()
    out = run_with(gateway, lambda gw: gw.chat(MESSAGES, usage=usage, max_tokens=256), context_tokens=2048)
    assert out.text == server.reply and server.counts[-1] + 256 <= 2048
    assert len(gateway.requests) == 2  # fitted right the first time, from the count in the 400
    assert [n.split(":")[0] for n in usage.notes] == ["prompt_fitted"]


def test_a_streamed_prompt_of_figures_is_fitted_for_a_digit_splitting_tokenizer(gateway):
    """Streamed, llama-cpp-python says nothing but an empty stream: the conservative estimate itself must
    hold for a tokenizer that splits figures into digits."""
    table = "\n".join(f"Purchases of PP&E ({1000 + i:,}) ({900 + i:,}) ({800 + i:,}) {i}.{i}%" for i in range(400))
    messages = [{"role": "system", "content": "Answer from the sources."},
                {"role": "user", "content": f"Sources:\n\n{table}\n\nAnswer: what were purchases of PP&E?"}]
    server = TokenCountingServer(2048, digit_tokens)
    gateway.responder = server

    async def go(gw):
        return [chunk async for chunk in gw.stream(messages, max_tokens=256)]

    assert "".join(run_with(gateway, go, context_tokens=2048)) == server.reply
    assert len(gateway.requests) == 2 and server.counts[-1] + 256 <= 2048


def test_litellm_no_connected_db_hints_at_the_key(gateway):
    gateway.push(litellm_no_db())
    with pytest.raises(LLMError) as info:
        run_with(gateway, lambda gw: gw.chat(MESSAGES))
    assert info.value.status == 400 and "(check the API key)" in info.value.message
    assert "No connected db." in info.value.message and len(gateway.requests) == 1
