"""kb.context: the passages that matter for a query, fitted to a budget."""

from __future__ import annotations

from typing import TYPE_CHECKING

from jsonl_engine.context import RequestContext
from jsonl_engine.models.context import (
    ContextBudget,
    ContextItem,
    ContextParams,
    ContextResult,
    RoutedDocument,
)
from jsonl_engine.registry import method

if TYPE_CHECKING:
    from jsonl_engine.retrieval.budget import Fitted


@method("kb.context", params=ContextParams, result=ContextResult)
async def context(params: ContextParams, ctx: RequestContext) -> ContextResult:
    """Rank the passages (sections or pages) that answer a query and fit them into a character budget."""
    from jsonl_engine.retrieval import budget
    from jsonl_engine.retrieval.strategies import get_strategy

    strategy = get_strategy(params.strategy)
    request = params.strategy_request(limit=params.limit, unit=params.unit)
    llm = None
    if strategy.needs_llm:  # llm_unavailable before any work
        from jsonl_engine.llm.gateways import gateway_for

        llm = gateway_for(ctx.app, params.reader)
    found = await strategy.run(await ctx.store(), request, llm, ctx.progress)
    ctx.check_cancelled()
    passages = found.passages[: params.limit]
    limit = budget.char_limit(params.max_chars, params.max_tokens)
    texts = [p.text if params.include_text else p.snippet for p in passages]
    fitted = budget.fit(texts, limit)
    kept = set(fitted.kept)
    items = [ContextItem(section_id=p.section_id, document_id=p.document_id, document_title=p.document_title,
                         title=p.title, path=list(p.path), page_start=p.page_start, page_end=p.page_end,
                         score=p.score, text=fitted.texts[i] if params.include_text else None,
                         snippet=p.snippet if params.include_text else fitted.texts[i] or "",
                         confidence=p.confidence)
             for i, p in enumerate(passages) if i in kept]
    return ContextResult(query=params.query, strategy=strategy.name, items=items,
                         budget=ContextBudget(max_chars=limit, used_chars=fitted.used_chars,
                                              truncated=fitted.truncated, omitted=fitted.omitted),
                         reason=_reason(found.reason, fitted, len(passages)), hops_taken=found.hops_taken,
                         usage=found.usage or None, confidence=found.confidence,
                         routed=[RoutedDocument(**r) for r in found.routed], warnings=found.warnings)


def _reason(found: str | None, fitted: Fitted, total: int) -> str | None:
    if found and not fitted.kept:
        return found
    if total and not fitted.kept:
        return f"no passage fits max_chars={fitted.max_chars}"
    parts = []
    if fitted.clipped:
        parts.append(f"{fitted.clipped} item clipped")
    if fitted.omitted:
        parts.append(f"{fitted.omitted} of {total} items omitted")
    if parts:
        return " and ".join(parts) + f" to fit max_chars={fitted.max_chars}"
    return found

