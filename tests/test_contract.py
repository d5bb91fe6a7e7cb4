"""The generated contract (schemas/, capabilities.json) matches the HANDLERS table and the models."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import BaseModel

from jsonl_engine.registry import HANDLERS, DuplicateMethod, load_methods, method
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
    load_methods()
    for name in HANDLERS:
        for kind in ("params", "result"):
            assert (ROOT / "schemas" / f"{name}.{kind}.json").is_file(), (name, kind)


def test_duplicate_method_names_are_rejected() -> None:
    load_methods()

    class P(BaseModel):
        pass

    with pytest.raises(DuplicateMethod):
        method("capabilities", params=P, result=P)(lambda params, ctx: None)
