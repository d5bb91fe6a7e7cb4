"""kb.render: a page, or the region around a quote, as a PNG with the quote highlighted."""

from __future__ import annotations

from jsonl_engine.context import RequestContext
from jsonl_engine.models.render import RenderParams, RenderResult
from jsonl_engine.registry import method


@method("kb.render", params=RenderParams, result=RenderResult)
async def render(params: RenderParams, ctx: RequestContext) -> RenderResult:
    """Render a PDF page to PNG at a scale, highlighting a span of its text (a claim's or citation's pages[]
    start/end), optionally cropped around it; the PNG is a file in the KB's cache directory or base64."""
    from jsonl_engine.answer import render as r

    store = await ctx.store()
    span = None if params.start is None or params.end is None else (params.start, params.end)
    out = await ctx.run_in_thread(lambda: r.render(store, params.document_id, params.page, span, scale=params.scale,
                                                   crop=params.crop, margin=params.margin))
    path = data = None
    if params.output == "file":
        path = await ctx.run_in_thread(lambda: r.save(ctx.app.settings.kb_dir, params.document_id, params.page,
                                                      span, params.scale, params.crop, params.margin, out.png))
    else:
        data = r.encode(out.png)
    return RenderResult(document_id=params.document_id, page=params.page, width=out.width, height=out.height,
                        scale=params.scale, rotation=out.rotation, boxes=out.boxes, pixel_boxes=out.pixel_boxes,
                        path=path, data=data)
