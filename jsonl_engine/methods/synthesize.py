"""kb.synthesize: a deterministic answer whose every sentence is cited source text."""

from __future__ import annotations

from jsonl_engine.context import RequestContext
from jsonl_engine.errors import LLMUnavailable
from jsonl_engine.models.synthesize import Claim, SynthesizeParams, SynthesizeResult, SynthMeta
from jsonl_engine.registry import method


@method("kb.synthesize", params=SynthesizeParams, result=SynthesizeResult)
def synthesize(params: SynthesizeParams, ctx: RequestContext) -> SynthesizeResult:
    """Compose an answer only from reviewed sources, each sentence verbatim with its [claim_id]; name the gaps."""
    if params.llm:
        raise LLMUnavailable("kb.synthesize llm=true (an LLM-written synthesis) is reserved and not available in "
                             "this version; use llm=false for the deterministic cited answer, or kb.answer, "
                             "which uses the LLM configured by [llm] base_url and model in the config file "
                             "(or JSONL_ENGINE_LLM_BASE_URL and JSONL_ENGINE_LLM_MODEL)")
    from jsonl_engine.answer.synthesize import synthesize as run

    ctx.check_cancelled()
    out = run(ctx.app.store, params.query, depth=params.depth, max_chars=params.max_chars,
              document_ids=params.document_ids, statuses=params.statuses)
    return SynthesizeResult(
        answer=out.answer,
        claims=[Claim(**c.as_dict()) for c in out.claims],
        gaps=out.gaps,
        meta=SynthMeta(synthesis_confidence=out.confidence, passages=out.passages,
                       salient_terms=out.salient_terms, truncated=out.truncated),
    )
