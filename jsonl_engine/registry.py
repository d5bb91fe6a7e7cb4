"""The HANDLERS table: method name -> Method record, built by the `@method` decorator (as pygls registers features)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from jsonl_engine.errors import InvalidParams
from jsonl_engine.models import Params


@dataclass(frozen=True, slots=True)
class Method:
    name: str
    params: type[Params]
    result: type[BaseModel]
    handler: Callable[..., Any]
    summary: str
    events: tuple[str, ...]
    is_async: bool
    inline: bool = False

    @property
    def schema_files(self) -> dict[str, str]:
        return {"params": f"{self.name}.params.json", "result": f"{self.name}.result.json"}


HANDLERS: dict[str, Method] = {}


class DuplicateMethod(RuntimeError):
    pass


def method(name: str, *, params: type[Params], result: type[BaseModel],
           events: tuple[str, ...] = ("result",), summary: str | None = None,
           inline: bool = False) -> Callable[[Callable], Callable]:
    """Register `fn(params, ctx)` as `name`. Async handlers run on the loop; plain functions in a thread,
    unless `inline`: a plain function that never blocks (capabilities, cancel) runs in the dispatch itself.

    `events` lists the event kinds the method may emit besides `error` and `done`.
    """

    def register(fn: Callable) -> Callable:
        if name in HANDLERS:
            raise DuplicateMethod(f"method {name!r} is registered twice")
        if not (isinstance(params, type) and issubclass(params, Params)):
            raise TypeError(f"method {name!r}: params must subclass jsonl_engine.models.Params")
        if inline and inspect.iscoroutinefunction(fn):
            raise TypeError(f"inline method {name!r} must be a plain function")
        doc = summary or (inspect.getdoc(fn) or "").split("\n", 1)[0].strip()
        HANDLERS[name] = Method(name=name, params=params, result=result, handler=fn, summary=doc,
                                events=tuple(events), is_async=inspect.iscoroutinefunction(fn),
                                inline=inline)
        return fn

    return register


def field_names(exc: ValidationError) -> list[str]:
    names: list[str] = []
    for err in exc.errors():
        name = ".".join(str(p) for p in err["loc"]) or "params"
        if name not in names:
            names.append(name)
    return names


def invalid_params_from(exc: ValidationError) -> InvalidParams:
    """Name the offending fields; never put pydantic's validator text on the wire."""
    fields = field_names(exc)
    kinds = {err["type"] for err in exc.errors()}
    if kinds == {"extra_forbidden"}:
        message = f"unknown param(s): {', '.join(fields)}"
    elif kinds == {"missing"}:
        message = f"missing param(s): {', '.join(fields)}"
    else:
        message = f"invalid value for param(s): {', '.join(fields)}"
    return InvalidParams(message, fields=fields)


def load_methods(plugins: list[str] = ()) -> dict[str, Method]:
    """Import the built-in method modules, then any plugin modules (which register more methods)."""
    import importlib

    import jsonl_engine.methods  # noqa: F401  (registers the built-in methods)

    for module in plugins:
        importlib.import_module(module)
    return HANDLERS
