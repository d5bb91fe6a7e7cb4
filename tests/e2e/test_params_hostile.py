"""Hostile params against the daemon subprocess: loose types and huge values are `invalid_params` naming the
field, never `internal` or a dead request, and values at the published bounds are served."""

from __future__ import annotations

import pytest

from tests.support.daemon import Daemon

DOC = "0123456789abcdef"  # a well-formed document id the KB does not hold


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory):
    with Daemon(tmp_path_factory.mktemp("hostile") / "kb") as d:
        yield d
        assert d.bad_lines == []


@pytest.mark.parametrize(("name", "params", "field"), [
    ("kb.context", {"query": "revenue", "max_tokens": 2**62}, "max_tokens"),
    ("kb.read", {"document_id": DOC, "page": 2**63}, "page"),
    ("kb.documents", {"statuses": ["approved"] * 250_001}, "statuses"),
    ("kb.context", {"query": "revenue", "limit": "5"}, "limit"),
    ("kb.context", {"query": "revenue", "limit": True}, "limit"),
    ("kb.context", {"query": "revenue", "include_text": "yes"}, "include_text"),
    ("kb.read", {"document_id": DOC, "page": "2"}, "page"),
    ("cancel", {"target": True}, "target"),
    ("kb.ingest", {"paths": ["a.md", ""]}, "paths.1"),
])
def test_hostile_value_is_invalid_params_naming_the_field(daemon: Daemon, name: str, params: dict,
                                                          field: str) -> None:
    error = daemon.error(name, params)
    assert error == {"code": "invalid_params", "message": f"invalid value for param(s): {field}",
                     "data": {"fields": [field], "field": field}}
    assert daemon.result("capabilities")["name"] == "jsonl-engine"


def _doc_ids(n: int) -> list[str]:
    return [f"{i:016x}" for i in range(n)]


@pytest.mark.parametrize(("name", "params", "field", "at_bound", "past_bound", "code"), [
    ("kb.context", {"query": "revenue"}, "max_tokens", 10_000_000, 10_000_001, None),
    ("kb.context", {"query": "revenue"}, "max_chars", 10_000_000, 10_000_001, None),
    ("kb.read", {"document_id": DOC}, "page", 1_000_000, 1_000_001, "not_found"),
    ("kb.documents", {}, "statuses", ["approved"] * 16, ["approved"] * 17, None),
    ("kb.context", {"query": "revenue"}, "document_ids", _doc_ids(10_000), _doc_ids(10_001), "not_found"),
])
def test_a_value_at_the_bound_is_served_and_one_past_it_is_invalid_params(
        daemon: Daemon, name: str, params: dict, field: str, at_bound: object, past_bound: object,
        code: str | None) -> None:
    if code is None:
        daemon.result(name, {**params, field: at_bound})
    else:
        assert daemon.error(name, {**params, field: at_bound})["code"] == code
    assert daemon.error(name, {**params, field: past_bound})["data"]["fields"] == [field]


def test_cancel_error_says_what_is_missing_and_what_is_unknown(daemon: Daemon) -> None:
    error = daemon.error("cancel", {"id": 2})
    assert error == {"code": "invalid_params", "message": "missing param(s): target; unknown param(s): id",
                     "data": {"fields": ["target", "id"], "field": "target"}}

