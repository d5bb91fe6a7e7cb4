"""kb.ingest, kb.documents, kb.outline, kb.read, kb.remove, kb.review."""

from __future__ import annotations

from typing import TYPE_CHECKING

from jsonl_engine.context import RequestContext
from jsonl_engine.models.documents import (
    DocumentItem,
    DocumentsParams,
    DocumentsResult,
    IngestParams,
    IngestResult,
    OutlineParams,
    OutlineResult,
    OutlineSection,
    ReadParams,
    ReadResult,
    RemoveParams,
    RemoveResult,
    ReviewParams,
    ReviewResult,
    UpdateParams,
)
from jsonl_engine.registry import method

if TYPE_CHECKING:
    from jsonl_engine.ingest.outcome import IngestOutcome


@method("kb.ingest", params=IngestParams, result=IngestResult, events=("progress", "result"))
async def ingest(params: IngestParams, ctx: RequestContext) -> None:
    """Ingest PDFs, Markdown and text (files, directories or inline text); one result per document."""
    from jsonl_engine.ingest.pipeline import IngestJob

    summarize = params.summarize or params.resummarize
    gateway = _summary_gateway(ctx, params.reader) if summarize else None
    store = await ctx.store()
    held: list[IngestResult] = []  # with summarize: each result goes out once its summaries are written

    def on_outcome(outcome: IngestOutcome) -> None:
        result = IngestResult.model_validate(outcome, from_attributes=True)
        if summarize:
            held.append(result)
        else:
            ctx.result(result)

    meta = params.meta.model_dump(exclude_none=True) if params.meta is not None else None
    job = IngestJob(store=store, run_in_process=ctx.run_in_process, progress=ctx.progress,
                    on_outcome=on_outcome, cancelled=ctx.cancel_event.is_set, workers=ctx.app.settings.workers,
                    status=params.status, meta=meta, ocr=ctx.app.settings.ocr)
    try:
        if params.text is not None:
            await job.run_text(params.text, params.title or "", params.media_type)
        else:
            await job.run_paths(params.paths or [])
        while held:
            result = held[0]
            if result.document_id and result.error is None and (not result.skipped or params.resummarize):
                held[0] = await _summarized(ctx, store, result, gateway)
            ctx.result(held.pop(0))
    finally:  # cancelled: the documents in the KB still get their results
        for result in held:
            ctx.result(result)


async def _summarized(ctx: RequestContext, store, result: IngestResult, gateway) -> IngestResult:
    """`result` once the document's summaries are written, with what went wrong and the calls' usage."""
    from jsonl_engine.ingest.summarize import summarize_documents
    from jsonl_engine.llm.usage import Usage
    from jsonl_engine.models.answer import Usage as UsageModel

    usage, warnings = Usage(), {}
    await summarize_documents(store, [result.document_id], gateway, usage=usage, progress=ctx.progress,
                              check_cancelled=ctx.check_cancelled, warnings=warnings)
    return result.model_copy(update={
        "warnings": [*result.warnings, *warnings.get(result.document_id, [])],
        "summary_usage": UsageModel(**usage.to_dict()) if gateway is not None else None})


def _summary_gateway(ctx: RequestContext, reader: str | None):
    """The reader that writes summaries; None (extractive summaries) when no LLM is configured and none was
    named. A named reader that does not resolve is an error before any work."""
    from jsonl_engine.errors import LLMUnavailable
    from jsonl_engine.llm.gateways import gateway_for

    try:
        return gateway_for(ctx.app, reader)
    except LLMUnavailable:
        if reader is not None:
            raise
        return None


@method("kb.documents", params=DocumentsParams, result=DocumentsResult)
def documents(params: DocumentsParams, ctx: RequestContext) -> DocumentsResult:
    """List the documents in the KB with their cards, optionally filtered by review status, entity, kind and
    fiscal period."""
    from jsonl_engine.identity.route import card_matches

    docs = [d for d in ctx.app.store.documents(params.statuses)
            if card_matches(d.card, entity=params.entity, kind=params.kind, fiscal_year=params.fiscal_year,
                            fiscal_quarter=params.fiscal_quarter)]
    return DocumentsResult(documents=[_item(d) for d in docs])


def _item(doc) -> DocumentItem:
    return DocumentItem.model_validate(doc, from_attributes=True)


@method("kb.update", params=UpdateParams, result=DocumentItem)
def update(params: UpdateParams, ctx: RequestContext) -> DocumentItem:
    """Set or correct a document's card fields (title, kind, entities, periods); the user's values win over the
    derived ones and survive re-derivation. An explicit null removes the user's value for that field."""
    values = params.meta.model_dump(exclude_unset=True)
    return _item(ctx.app.store.update_document(params.document_id, meta=values)[1])


@method("kb.outline", params=OutlineParams, result=OutlineResult)
def outline(params: OutlineParams, ctx: RequestContext) -> OutlineResult:
    """A document's section tree: titles, ids and page ranges."""
    doc, roots = ctx.app.store.outline(params.document_id, params.max_depth)
    sections = [OutlineSection.model_validate(n, from_attributes=True) for n in roots]
    return OutlineResult(document_id=doc.document_id, title=doc.title, sections=sections)


@method("kb.read", params=ReadParams, result=ReadResult)
def read(params: ReadParams, ctx: RequestContext) -> ReadResult:
    """The stored text of a section, or of one page, with where it sits (document, pages)."""
    store = ctx.app.store
    with store.snapshot():
        if params.section_id is not None:
            s = store.section(params.section_id)
            children = [] if s.is_leaf else store.child_ids(s.section_id)
            return ReadResult(document_id=s.document_id, document_title=s.document_title, status=s.status,
                              section_id=s.section_id, title=s.title, path=s.ancestors, page_start=s.page_start,
                              page_end=s.page_end, text=s.text, page_map=s.page_map, children=children)
        page = store.page(params.document_id or "", params.page or 1)
    return ReadResult(document_id=page.document_id, document_title=page.document_title, status=page.status,
                      section_id=None, title=f"Page {page.number}", path=[], page_start=page.number,
                      page_end=page.number, text=page.text, page_map=[(0, page.number)], children=[])


@method("kb.remove", params=RemoveParams, result=RemoveResult)
def remove(params: RemoveParams, ctx: RequestContext) -> RemoveResult:
    """Remove a document with its sections, pages and index entries, atomically."""
    from jsonl_engine.identity import titles

    info = ctx.app.store.remove(params.document_id)
    titles.retitle(ctx.app.store, {titles.base_name(info)})  # a sibling may no longer need its distinguishing part
    return RemoveResult(document_id=info.document_id, removed=True, pages=info.pages, sections=info.sections)


@method("kb.review", params=ReviewParams, result=ReviewResult)
def review(params: ReviewParams, ctx: RequestContext) -> ReviewResult:
    """Set a document's review status: approved, draft, contested or archived."""
    before, info = ctx.app.store.update_document(params.document_id, status=params.status)
    return ReviewResult(document_id=info.document_id, status=info.status, previous_status=before.status)
