"""kb.answer: an LLM answer from the KB whose citations point at verified quotes in the cited sections."""

from __future__ import annotations

from jsonl_engine.context import RequestContext
from jsonl_engine.models.answer import AnswerParams, AnswerResult
from jsonl_engine.registry import method


@method("kb.answer", params=AnswerParams, result=AnswerResult, events=("progress", "delta", "result"))
async def answer(params: AnswerParams, ctx: RequestContext) -> AnswerResult:
    """Answer a question with the configured LLM, citing the sections it used (verified quotes, pages)."""
    from jsonl_engine.answer.cells import place_cells
    from jsonl_engine.answer.llm_answer import answer_question
    from jsonl_engine.answer.pages import place_citations
    from jsonl_engine.llm.gateways import gateway_for

    gateway = gateway_for(ctx.app, params.reader)  # llm_unavailable / unknown reader before any work
    request = params.request()
    store = await ctx.store()
    out = await answer_question(store, gateway, request, on_delta=ctx.delta, progress=ctx.progress)
    result = out.as_dict()

    def place() -> None:  # pages and boxes of each quote, and the table cell holding the figure the answer states
        place_citations(store, result["citations"])
        place_cells(store, result["citations"], result["answer"])

    await ctx.run_in_thread(place)
    return AnswerResult.model_validate(result)
