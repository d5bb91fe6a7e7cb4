"""Every built-in params model accepts exactly what its published schema allows, and bounds every number and
list it takes (a schema-valid value must be safe: SQLite binds 64-bit ints and a limited number of variables)."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from pydantic import ValidationError

from jsonl_engine.app import load_methods
from jsonl_engine.models.query_params import MAX_DOCUMENT_IDS
from jsonl_engine.registry import invalid_params_from

METHODS = {name: m for name, m in load_methods().items() if m.params.__module__.startswith("jsonl_engine.")}
JSON_TYPES: dict[str, Any] = {"null": type(None), "boolean": bool, "integer": int, "number": (int, float),
                              "string": str, "array": list, "object": dict}
# Values of every JSON type, as orjson parses them (a JSON integer is an int, a JSON array a list).
POOL: list[Any] = [None, True, False, 0, 1, -1, 1.5, 2**62, 2**63, "", "x", "5", "yes", "approved",
                   [], ["x"], [""], [1], {}, {"x": 1}]


def _resolve(schema: dict, defs: dict) -> dict:
    return defs[schema["$ref"].rsplit("/", 1)[1]] if "$ref" in schema else schema


def allows(schema: dict, value: Any, defs: dict) -> bool:
    """JSON Schema, the subset the params schemas use."""
    schema = _resolve(schema, defs)
    if "anyOf" in schema:
        return any(allows(s, value, defs) for s in schema["anyOf"])
    kind = schema.get("type")
    if kind and not (isinstance(value, JSON_TYPES[kind]) and isinstance(value, bool) == (kind == "boolean")):
        return False
    if ("enum" in schema and value not in schema["enum"]) or ("const" in schema and value != schema["const"]):
        return False
    size = len(value) if isinstance(value, str | list) else None
    bounds = {"minimum": (value, 1), "maximum": (value, -1), "minLength": (size, 1), "maxLength": (size, -1),
              "minItems": (size, 1), "maxItems": (size, -1)}
    if any((got - schema[key]) * sign < 0 for key, (got, sign) in bounds.items() if key in schema):
        return False
    if kind == "array":
        prefix = schema.get("prefixItems")
        if prefix is not None:
            return len(value) == len(prefix) and all(allows(s, v, defs) for s, v in zip(prefix, value, strict=True))
        return all(allows(schema.get("items", {}), v, defs) for v in value)
    if kind == "object":
        props = schema.get("properties", {})
        return (set(schema.get("required", [])) <= set(value) and set(value) <= set(props)
                and all(allows(props[k], v, defs) for k, v in value.items()))
    return True


def first_allowed(schema: dict, defs: dict) -> Any:
    return next(v for v in probes(schema, defs) if allows(schema, v, defs))


def probes(schema: dict, defs: dict) -> list[Any]:
    """Values on and just past every edge the schema draws, plus values of every JSON type."""
    schema = _resolve(schema, defs)
    out = list(POOL) + list(schema.get("enum", [])) + ([schema["const"]] if "const" in schema else [])
    for branch in schema.get("anyOf", []):
        out += probes(branch, defs)
    for key, step in (("minimum", -1), ("maximum", 1)):
        if key in schema:
            out += [schema[key], schema[key] + step]
    for key, step in (("minLength", -1), ("maxLength", 1)):
        if key in schema:
            out += ["x" * n for n in (schema[key], schema[key] + step) if n >= 0]
    if schema.get("type") == "array":
        if "prefixItems" in schema:
            out.append([first_allowed(s, defs) for s in schema["prefixItems"]])
        else:
            out += [[v] for v in probes(schema.get("items", {}), defs)]
            item = first_allowed(schema.get("items", {}), defs)
            for key, step in (("minItems", -1), ("maxItems", 1)):
                if key in schema:
                    out += [[item] * n for n in (schema[key], schema[key] + step) if n >= 0]
    if schema.get("type") == "object":
        out.append({k: first_allowed(schema["properties"][k], defs) for k in schema.get("required", [])})
    return out


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:40]}... ({len(value)} long)"


@pytest.mark.parametrize("name", sorted(METHODS))
def test_params_accept_exactly_what_the_schema_allows(name: str) -> None:
    model = METHODS[name].params
    schema = model.model_json_schema()
    defs = schema.get("$defs", {})
    props = schema["properties"]
    base = {key: first_allowed(props[key], defs) for key in schema.get("required", [])}
    wrong = []
    for key, sub in props.items():
        for value in probes(sub, defs):
            try:
                model.model_validate({**base, key: value})
                accepted = True
            except ValidationError as exc:
                accepted = False
                assert {f.split(".")[0] for f in invalid_params_from(exc).data["fields"]} == {key}
            if accepted != allows(sub, value, defs):
                wrong.append(f"{key}={_shown(value)}: the schema {'refuses' if accepted else 'allows'} it, "
                             f"the model {'accepts' if accepted else 'refuses'} it")
    assert wrong == []


def _unbounded(schema: dict, defs: dict, where: str) -> list[str]:
    """Places (`param`, `param[]` for items) where a number, string or list has no upper bound."""
    schema = _resolve(schema, defs)
    found = [where for kind, bound in (("integer", "maximum"), ("number", "maximum"), ("string", "maxLength"),
                                       ("array", "maxItems"))
             if schema.get("type") == kind and bound not in schema and "enum" not in schema]
    for branch in schema.get("anyOf", []):
        found += _unbounded(branch, defs, where)
    for sub in (schema.get("items"), *schema.get("prefixItems", [])):
        if sub is not None:
            found += _unbounded(sub, defs, where + "[]")
    for key, sub in schema.get("properties", {}).items():
        found += _unbounded(sub, defs, f"{where}.{key}")
    return found


def test_every_number_string_and_list_in_params_has_an_upper_bound() -> None:
    unbounded = []
    for name, m in sorted(METHODS.items()):
        schema = m.params.model_json_schema()
        unbounded += _unbounded(schema, schema.get("$defs", {}), name)
    # Only the input line limit bounds these: a request id may be any string; each path and the inline text
    # are handled on their own (an unusable path fails its own entry), never bound to SQL as a list.
    assert unbounded == ["cancel.target", "kb.ingest.paths", "kb.ingest.paths[]", "kb.ingest.text"]


def test_document_ids_cap_stays_under_sqlites_variable_limit() -> None:
    """The store binds one `?` per document id (plus a few for the query): the cap must leave room."""
    limit = sqlite3.connect(":memory:").getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    assert min(limit, 32_766) >= MAX_DOCUMENT_IDS + 16  # 32766: the default limit since SQLite 3.32
    for name in ("kb.context", "kb.answer", "kb.synthesize"):
        schema = METHODS[name].params.model_json_schema()["properties"]["document_ids"]
        assert schema["anyOf"][0]["maxItems"] == MAX_DOCUMENT_IDS


@pytest.mark.parametrize(("name", "params", "field"), [
    ("kb.context", {"query": "q", "limit": "5"}, "limit"),
    ("kb.context", {"query": "q", "limit": True}, "limit"),
    ("kb.context", {"query": "q", "include_text": "yes"}, "include_text"),
    ("kb.context", {"query": "q", "max_tokens": 2**62}, "max_tokens"),
    ("kb.read", {"document_id": "d", "page": "2"}, "page"),
    ("kb.read", {"document_id": "d", "page": 2**63}, "page"),
    ("kb.documents", {"statuses": ["draft"] * 17}, "statuses"),
    ("kb.ingest", {"paths": [""]}, "paths.0"),
    ("cancel", {"target": True}, "target"),
    ("cancel", {"target": 2**64}, "target"),
])
def test_loose_or_huge_values_are_refused(name: str, params: dict, field: str) -> None:
    with pytest.raises(ValidationError) as info:
        METHODS[name].params.model_validate(params)
    assert invalid_params_from(info.value).data["fields"] == [field]

