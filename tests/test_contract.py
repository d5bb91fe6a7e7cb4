"""The generated contract (schemas/, capabilities.json) matches the method table and the models."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import BaseModel, ValidationError

from jsonl_engine.app import load_methods
from jsonl_engine.models import Params
from jsonl_engine.registry import DuplicateMethod, invalid_params_from, method, method_table
from tests.support.daemon import ROOT


def test_schemas_check_passes_on_the_committed_contract() -> None:
    proc = subprocess.run([sys.executable, "-m", "jsonl_engine", "schemas", "--check", "--root", str(ROOT)],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr


def test_schemas_check_fails_on_drift(tmp_path) -> None:
    subprocess.run([sys.executable, "-m", "jsonl_engine", "schemas", "--write", "--root", str(tmp_path)],
                   check=True, capture_output=True, cwd=ROOT)
    target = tmp_path / "schemas" / "capabilities.result.json"
    target.write_text(target.read_text().replace('"title"', '"tidle"', 1))
    (tmp_path / "schemas" / "stale.params.json").write_text("{}")
    proc = subprocess.run([sys.executable, "-m", "jsonl_engine", "schemas", "--check", "--root", str(tmp_path)],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 1
    assert "out of date: schemas/capabilities.result.json" in proc.stderr
    assert "schemas/stale.params.json" in proc.stderr


def test_every_method_has_both_schema_files() -> None:
    for name in load_methods():
        for kind in ("params", "result"):
            assert (ROOT / "schemas" / f"{name}.{kind}.json").is_file(), (name, kind)


def test_duplicate_method_names_are_rejected() -> None:
    class P(Params):
        pass

    again = method("capabilities", params=P, result=P)(lambda params, ctx: None)
    with pytest.raises(DuplicateMethod):
        method_table([*load_methods().values(), again.method])


def test_params_must_be_params_models_so_cross_field_checks_run() -> None:
    class Plain(BaseModel):
        pass

    with pytest.raises(TypeError, match="must subclass"):
        method("test.plain_params", params=Plain, result=Plain)(lambda params, ctx: None)


def test_cross_field_rules_are_invalid_params_with_fields(tmp_path) -> None:
    from tests.support.daemon import Daemon

    with Daemon(tmp_path / "kb") as d:
        ingest = d.request("kb.ingest", {"paths": ["a.md"], "title": "t"})
        read = d.request("kb.read", {"section_id": "x:0", "page": 2})
    for events, field in ((ingest, "title"), (read, "section_id")):
        assert [e["event"] for e in events] == ["error", "done"]
        assert events[0]["error"]["code"] == "invalid_params" and events[0]["error"]["data"]["fields"] == [field]


def test_invalid_params_message_says_which_params_are_missing_unknown_or_invalid() -> None:
    handlers = load_methods()
    with pytest.raises(ValidationError) as info:
        handlers["kb.read"].params.model_validate({"page": 0, "bogus": 1, "section_id": ""})
    error = invalid_params_from(info.value)
    assert error.message == "unknown param(s): bogus; invalid value for param(s): section_id, page"
    assert error.data == {"fields": ["section_id", "page", "bogus"], "field": "section_id"}
    with pytest.raises(ValidationError) as info:
        handlers["cancel"].params.model_validate({"id": 2})
    assert invalid_params_from(info.value).message == "missing param(s): target; unknown param(s): id"
