"""Methods: `@method(...)` describes a handler (a `Method` record kept on the function, nothing registered
anywhere); `method_table` builds the name -> Method table the server dispatches through, from handlers listed
explicitly (the composition root, `app.load_methods`, lists the built-in ones and adds plugins' with
`methods_in`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from jsonl_engine.errors import InvalidParams

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

    from jsonl_engine.models import Params


class Typed(NamedTuple):
    """The typed side of a method: its params and result models and the handler. A model may be given by a function
    that imports it (called at its first use) and params may be None (the method takes none)."""

    params: type[Params] | Callable[[], type[Params]] | None
    result: type[BaseModel] | Callable[[], type[BaseModel]]
    handler: Callable[..., Any]


class Method:
    """One method of the table: what `capabilities` says of it (name, summary, events), how the server runs it
    (`is_async`; `inline`: in the dispatch itself), and its typed side (params and result models, handler).

    A `@method` handler carries its Method (`fn.method`). A built-in method starts as its row of the generated
    catalog (`methods/catalog.json`, `app.builtin_methods`), its handler named `module:function`: `params`,
    `result` and `handler` find the handler (`find`, importing its module) at their first use, the method's
    first request, so the daemon answers `capabilities` without building the other methods' models."""

    __slots__ = ("name", "summary", "events", "is_async", "inline", "handler_name", "_typed", "_find")

    def __init__(self, name: str, summary: str, events: tuple[str, ...], is_async: bool, inline: bool,
                 handler_name: str, typed: Typed | None = None,
                 find: Callable[[str], Callable[..., Any]] | None = None) -> None:
        self.name = name
        self.summary = summary
        self.events = tuple(events)
        self.is_async = is_async
        self.inline = inline
        self.handler_name = handler_name  # "module:function", where the `@method` handler is defined
        self._typed = typed
        self._find = find

    def row(self) -> dict[str, Any]:
        """What the catalog keeps of the method (everything but the typed side)."""
        return {"name": self.name, "summary": self.summary, "events": list(self.events), "is_async": self.is_async,
                "inline": self.inline, "handler": self.handler_name}

    @classmethod
    def from_row(cls, row: dict[str, Any], find: Callable[[str], Callable[..., Any]]) -> Method:
        """The method a catalog row describes; `find("module:function")` gives its handler when first needed."""
        return cls(row["name"], row["summary"], tuple(row["events"]), row["is_async"], row["inline"], row["handler"],
                   find=find)

    @property
    def typed(self) -> Typed:
        if self._typed is None:
            self._typed = self._load()
        return self._typed

    def _load(self) -> Typed:
        """The typed side of the `@method` handler the row names, which must be described as the row says (else
        the catalog is out of date: `jsonl-engine schemas --write`)."""
        assert self._find is not None, "a @method record is typed from the start"
        loaded = method_of(self._find(self.handler_name))
        if loaded.row() != self.row():
            raise RuntimeError(f"methods/catalog.json is out of date for {self.name!r} (it says {self.row()}, the "
                               f"handler {loaded.row()}): run `jsonl-engine schemas --write`")
        return loaded.typed

    @property
    def params(self) -> type[Params]:
        """The params model, imported at its first use (a method without params: `NoParams`, for its schema)."""
        declared = self.typed.params
        if isinstance(declared, type):
            return declared
        from jsonl_engine.models import NoParams, Params

        model = NoParams if declared is None else declared()
        if not (isinstance(model, type) and issubclass(model, Params)):
            raise TypeError(f"method {self.name!r}: params must subclass jsonl_engine.models.Params")
        if declared is not None:
            self._typed = self.typed._replace(params=model)  # imported once
        return model

    @property
    def result(self) -> type[BaseModel]:
        declared = self.typed.result
        return declared if isinstance(declared, type) else declared()

    def parse(self, params: dict[str, Any]) -> Any:
        """A request's params, checked: validated by the params model, then its cross-field rules (`check`). A
        method without params takes `{}` only (checked here, so that `capabilities` builds no validator) and its
        handler gets None. Raises InvalidParams naming the params at fault."""
        if self.typed.params is None:
            if params:
                raise InvalidParams(f"{_KINDS['extra_forbidden']}: {', '.join(params)}", fields=list(params))
            return None
        from pydantic import ValidationError

        try:
            parsed = self.params.model_validate(params)
        except ValidationError as exc:
            raise invalid_params_from(exc) from None
        parsed.check()
        return parsed

    @property
    def handler(self) -> Callable[..., Any]:
        return self.typed.handler

    @property
    def schema_files(self) -> dict[str, str]:
        return {"params": f"{self.name}.params.json", "result": f"{self.name}.result.json"}


class DuplicateMethod(RuntimeError):
    pass


def method(name: str, *, params: type[Params] | Callable[[], type[Params]] | None,
           result: type[BaseModel] | Callable[[], type[BaseModel]],
           events: tuple[str, ...] = ("result",), summary: str | None = None,
           inline: bool = False) -> Callable[[Callable], Callable]:
    """Describe `fn(params, ctx)` as method `name` (the record is `fn.method`; `method_table` collects it). Async handlers run on the loop; plain functions in a thread,
    unless `inline`: a plain function that never blocks (capabilities, cancel) runs in the dispatch itself.

    `params` and `result` are models, or functions that import and return one (called at first use: a handler
    module that defers its models imports no pydantic); `params=None`: the method takes no params (its handler
    gets None).
    `events` lists the event kinds the method may emit besides `error` and `done`.
    """

    def register(fn: Callable) -> Callable:
        import inspect

        if isinstance(params, type):
            from jsonl_engine.models import Params

            if not issubclass(params, Params):
                raise TypeError(f"method {name!r}: params must subclass jsonl_engine.models.Params")
        if inline and inspect.iscoroutinefunction(fn):
            raise TypeError(f"inline method {name!r} must be a plain function")
        doc = summary or (inspect.getdoc(fn) or "").split("\n", 1)[0].strip()
        fn.method = Method(name, doc, tuple(events), inspect.iscoroutinefunction(fn), inline,
                           f"{fn.__module__}:{fn.__qualname__}", Typed(params, result, fn))
        return fn

    return register


_KINDS = {"missing": "missing param(s)", "extra_forbidden": "unknown param(s)"}
_INVALID = "invalid value for param(s)"


def _field_name(loc: tuple[int | str, ...]) -> str:
    """The param, with the index of a list item (`statuses.0`); a union member's tag (`int`) is no field."""
    if not loc:
        return "params"
    return ".".join([str(loc[0]), *(str(part) for part in loc[1:] if isinstance(part, int))])


def invalid_params_from(exc: ValidationError) -> InvalidParams:
    """Say which params are missing, unknown or invalid; never put pydantic's validator text on the wire."""
    by_kind: dict[str, list[str]] = {label: [] for label in (*_KINDS.values(), _INVALID)}
    fields: list[str] = []
    for err in exc.errors():
        name = _field_name(err["loc"])
        for names in (by_kind[_KINDS.get(err["type"], _INVALID)], fields):
            if name not in names:
                names.append(name)
    message = "; ".join(f"{label}: {', '.join(names)}" for label, names in by_kind.items() if names)
    return InvalidParams(message, fields=fields)


def method_of(handler: Callable) -> Method:
    """The Method a `@method` handler carries."""
    found = getattr(handler, "method", None)
    if not isinstance(found, Method):
        raise TypeError(f"{handler!r} is not a @method handler")
    return found


def methods_in(module: object) -> list[Method]:
    """The `@method` handlers a (plugin) module defines, by name."""
    found = [value.method for value in vars(module).values() if isinstance(getattr(value, "method", None), Method)]
    return sorted(found, key=lambda m: m.name)


def method_table(methods: Iterable[Method]) -> dict[str, Method]:
    """name -> Method; a name given twice is DuplicateMethod."""
    table: dict[str, Method] = {}
    for m in methods:
        if m.name in table:
            raise DuplicateMethod(f"method {m.name!r} is registered twice")
        table[m.name] = m
    return table
