"""Test-only LLM methods (until kb.answer exists), loaded with `--plugin tests.support.llm_methods`."""

from __future__ import annotations

from contextlib import aclosing

from jsonl_engine.context import RequestContext
from jsonl_engine.models import Params, Result
from jsonl_engine.registry import method


class LLMParams(Params):
    prompt: str
    reader: str | None = None
    stream: bool = True


class LLMResult(Result):
    text: str
    reader: str
    model: str
    usage: dict[str, int]


@method("test.llm", params=LLMParams, result=LLMResult, events=("delta", "result"))
async def llm(params: LLMParams, ctx: RequestContext) -> LLMResult:
    """Ask the configured reader; stream its reply as deltas."""
    from jsonl_engine.llm.gateways import gateway_for
    from jsonl_engine.llm.usage import Usage

    gateway = gateway_for(ctx.app, params.reader)  # llm_unavailable / invalid_params before any work
    usage = Usage()
    messages = [{"role": "user", "content": params.prompt}]
    if params.stream:
        parts: list[str] = []
        async with aclosing(gateway.stream(messages, usage=usage)) as chunks:
            async for chunk in chunks:
                parts.append(chunk)
                ctx.delta(chunk)
        text = "".join(parts)
    else:
        text = (await gateway.chat(messages, usage=usage)).text
    return LLMResult(text=text, reader=gateway.name, model=gateway.model, usage=usage.to_dict())
