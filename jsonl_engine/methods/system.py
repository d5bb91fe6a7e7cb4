"""capabilities, cancel, shutdown. Their models are imported at first use (`@method`) and their results are plain
data: a daemon answers `capabilities` without importing pydantic (the first request with params loads it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jsonl_engine import PROTOCOL_VERSION, __version__
from jsonl_engine.config import Settings
from jsonl_engine.context import RequestContext
from jsonl_engine.errors import ERROR_CODES
from jsonl_engine.methods import catalog
from jsonl_engine.registry import Method, method

if TYPE_CHECKING:
    from pydantic import BaseModel

    from jsonl_engine.models.system import CancelParams, ShutdownParams


def _model(name: str) -> Callable[[], type[BaseModel]]:
    """A model of models/system.py, imported when first needed (a request with params, a schema)."""
    def load() -> type[BaseModel]:
        from jsonl_engine.models import system

        return getattr(system, name)

    return load

EVENT_KINDS = ["ready", "progress", "delta", "result", "error", "done"]


def build_capabilities(settings: Settings, methods: dict[str, Method], listed: dict[str, Any]) -> dict[str, Any]:
    """The `capabilities` result (CapabilitiesResult's shape; schemagen validates it against the model), as plain
    data: `methods` and the strategies and media types the catalog lists (`methods/catalog.py`, `listed`), so the
    first request of a client loads neither the tables behind them nor the result models."""
    from jsonl_engine.llm.readers import reader_names
    from jsonl_engine.store.location import backend_of, describe

    return {
        "name": "jsonl-engine",
        "version": __version__,
        "protocol": PROTOCOL_VERSION,
        "methods": [{"name": m.name, "summary": m.summary, "events": list(m.events),
                     "params_schema": m.schema_files["params"], "result_schema": m.schema_files["result"]}
                    for m in sorted(methods.values(), key=lambda m: m.name)],
        "events": EVENT_KINDS,
        "error_codes": list(ERROR_CODES),
        "readers": reader_names(settings),
        "strategies": listed["strategies"],
        "media_types": listed["media_types"],
        "kb": {"backend": backend_of(settings.kb_location), "location": describe(settings.kb_location)},
    }


@method("capabilities", params=None, result=_model("CapabilitiesResult"), inline=True)
def capabilities(params: None, ctx: RequestContext) -> dict[str, Any]:
    """What this daemon offers: methods with their schemas and events, readers and strategies by name."""
    cached = ctx.app.extras.get("capabilities")
    if cached is None:
        cached = ctx.app.extras["capabilities"] = build_capabilities(ctx.app.settings, ctx.app.methods,
                                                                     catalog.read())
    return cached


@method("cancel", params=_model("CancelParams"), result=_model("CancelResult"), inline=True)
def cancel(params: CancelParams, ctx: RequestContext) -> dict[str, Any]:
    """Cancel a request in flight; an unknown or finished id answers `cancelled: false`."""
    return {"cancelled": ctx.app.control.cancel(params.target)}


@method("shutdown", params=_model("ShutdownParams"), result=_model("ShutdownResult"))
async def shutdown(params: ShutdownParams, ctx: RequestContext) -> dict[str, Any]:
    """Stop accepting work, finish the requests in flight, answer, then exit 0."""
    control = ctx.app.control
    control.shutdown()
    pending = control.in_flight() - 1
    await control.wait_idle(exclude=ctx.id)
    return {"ok": True, "finished": max(0, pending)}
