"""kb.synthesize: a deterministic answer whose every sentence is cited source text (llm=true: rewritten into
prose by the LLM, every sentence still citing offered claims)."""

from __future__ import annotations

from jsonl_engine.context import RequestContext
from jsonl_engine.errors import LLMUnavailable
from jsonl_engine.models.synthesize import (
    Claim,
    ClaimTable,
    Computed,
    FirstClaim,
    SynthesizeParams,
    SynthesizeResult,
    SynthLLM,
    SynthMeta,
)
from jsonl_engine.registry import method


@method("kb.synthesize", params=SynthesizeParams, result=SynthesizeResult)
async def synthesize(params: SynthesizeParams, ctx: RequestContext) -> SynthesizeResult:
    """Compose an answer only from reviewed sources, each sentence verbatim with its [claim_id]; name the gaps."""
    gateway = _gateway(ctx, params.reader) if params.llm else None
    from jsonl_engine.answer.direct import answer_first as run
    from jsonl_engine.answer.pages import Quote, locate_with_tables

    ctx.check_cancelled()
    out = await ctx.run_in_thread(lambda: run(ctx.app.store, params.query, depth=params.depth,
                                              max_chars=params.max_chars, document_ids=params.document_ids,
                                              statuses=params.statuses, max_claims=params.max_claims))
    answer, claims, llm, confidence = out.answer, out.claims, None, out.confidence
    if gateway is not None:
        from jsonl_engine.answer.rewrite import rewrite_or_keep
        from jsonl_engine.llm.usage import Usage

        usage = Usage()
        rewrite = await rewrite_or_keep(gateway, params.query, out.claims, usage, out.answer)
        answer = rewrite.answer
        claims = [c for c in out.claims if f"[{c.id}]" in answer]
        if not answer.strip():
            confidence = "none"
        elif not rewrite.fallback and (rewrite.dropped or rewrite.stripped) and confidence == "high":
            confidence = "medium"
        llm = SynthLLM(reader=gateway.name, model=gateway.model, dropped_sentences=rewrite.dropped,
                       stripped_claim_ids=rewrite.stripped, fallback=rewrite.fallback, warnings=rewrite.warnings,
                       usage=usage.to_dict())
    with_table = [c for c in claims if c.id in out.tables]
    located, parts = await ctx.run_in_thread(lambda: locate_with_tables(
        ctx.app.store, [Quote(c.document_id, c.section_id, c.quote_start, c.quote_end) for c in claims],
        [(c.document_id, out.tables[c.id]) for c in with_table]))
    tables = {c.id: p for c, p in zip(with_table, parts, strict=True)}
    return SynthesizeResult(
        answer=answer,
        claims=[Claim(**c.as_dict(), **where.as_dict(),
                      table=ClaimTable(**tables[c.id]) if c.id in tables else None)
                for c, where in zip(claims, located, strict=True)],
        gaps=out.gaps,
        meta=SynthMeta(synthesis_confidence=confidence, passages=out.passages,
                       salient_terms=out.salient_terms, truncated=out.truncated, llm=llm, more=out.more,
                       first_claim=FirstClaim(**out.first_claim) if out.first_claim else None,
                       not_in_kb=out.not_in_kb, warnings=out.warnings,
                       computed=Computed(**out.computed) if out.computed else None),
    )


def _gateway(ctx: RequestContext, reader: str | None):
    from jsonl_engine.llm.gateways import gateway_for

    try:
        return gateway_for(ctx.app, reader)
    except LLMUnavailable as exc:
        raise LLMUnavailable(f"kb.synthesize llm=true needs an LLM: {exc.message}; or use llm=false for the "
                             "deterministic cited answer") from exc
