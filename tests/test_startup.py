"""Start-up loads only what the first requests need: `capabilities` answers without the store, the ingest, the
retrieval package, the LLM client, pdfium or the other methods' handlers and models (the daemon starts from the
generated catalog, `methods/catalog.py`); bench/protocol.py measures the time, this checks the imports."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from jsonl_engine.app import _builtin_handler, builtin_handlers, load_methods
from jsonl_engine.registry import Method
from tests.support.daemon import ROOT, Daemon

NOT_AT_START = ("jsonl_engine.store.port", "jsonl_engine.store.types", "jsonl_engine.store.sqlite",
                "jsonl_engine.store.postgres", "jsonl_engine.identity", "jsonl_engine.answer", "jsonl_engine.llm.gateway",
                "httpx", "pypdfium2", "apsw", "sqlite3", "tomllib",
                # the parsers' and strategies' tables: capabilities lists their names from the catalog
                "jsonl_engine.ingest", "jsonl_engine.retrieval",
                # the handlers of methods not yet asked for, and the models they build
                "jsonl_engine.methods.documents", "jsonl_engine.methods.context", "jsonl_engine.methods.answer",
                "jsonl_engine.methods.synthesize", "jsonl_engine.methods.render", "jsonl_engine.models.documents",
                "jsonl_engine.models.context", "jsonl_engine.models.answer", "jsonl_engine.models.synthesize",
                "jsonl_engine.models.render", "jsonl_engine.models.query_params")
# ... nor pydantic (the settings are checked without it; capabilities takes no params and answers plain data), nor
# what pydantic's plugin lookup brings (importlib.metadata, email)
NOT_BEFORE_CAPABILITIES = (*NOT_AT_START, "pydantic", "pydantic_core", "email", "importlib.metadata")


def test_capabilities_answers_without_loading_what_a_request_would(tmp_path: Path) -> None:
    with Daemon(tmp_path / "kb", args=["--plugin", "tests.support.modules_method"]) as d:
        assert "kb.ingest" in {m["name"] for m in d.result("capabilities")["methods"]}
        loaded = d.result("test.modules")["modules"]
        assert [m for m in loaded if m.startswith(NOT_AT_START)] == []
        d.result("kb.documents")  # the first request that reads the KB opens it, and loads its handler's module
        loaded = d.result("test.modules")["modules"]
    assert {"jsonl_engine.store.types", "jsonl_engine.store.sqlite", "jsonl_engine.identity",
            "jsonl_engine.methods.documents", "jsonl_engine.models.documents"} <= set(loaded)
    assert not {"jsonl_engine.methods.answer", "jsonl_engine.methods.render"} & set(loaded)  # still unasked for


def test_what_a_request_imports_is_frozen_after_it(tmp_path: Path) -> None:
    """Modules loaded at a request's first use live as long as start-up's: frozen after the request that loaded them
    (wire/server.py _freeze_imports), so no full collection goes through them; a request that loads nothing
    freezes nothing."""
    with Daemon(tmp_path / "kb", args=["--plugin", "tests.support.modules_method"]) as d:
        d.result("test.modules")
        first = d.result("test.modules")
        d.result("kb.documents")  # opens the KB: the store, the handler's module and models load
        opened = d.result("test.modules")
        d.result("kb.documents")
        again = d.result("test.modules")
    assert len(opened["modules"]) > len(first["modules"])
    assert opened["frozen"] > first["frozen"]
    assert again["modules"] == opened["modules"] and again["frozen"] == opened["frozen"]


def test_the_first_capabilities_result_needs_no_pydantic(tmp_path: Path) -> None:
    """Every module a daemon imports up to its first `capabilities` result (python -X importtime; no plugin, which
    would import its own models)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JSONL_ENGINE_")}
    env.update(PYTHONPATH=str(ROOT), PYTHONPROFILEIMPORTTIME="1")
    profile = tmp_path / "imports.txt"
    with profile.open("wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "jsonl_engine", "--kb", str(tmp_path / "kb")],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env)
        try:
            proc.stdin.write(b'{"id": 1, "method": "capabilities"}\n')
            proc.stdin.flush()
            while b'"event":"done"' not in (line := proc.stdout.readline()):
                assert line, "the daemon exited before its capabilities result"
        finally:
            proc.kill()  # what it would import after the result is not the question
            proc.wait()
    imported = [line.rsplit("|", 1)[1].strip() for line in profile.read_text().splitlines()
                if line.startswith("import time:") and "self [us]" not in line]
    assert "jsonl_engine.llm.readers" in imported  # the profile covers the request (its handler imports it)
    assert [m for m in imported if m.startswith(tuple(p + "." for p in NOT_BEFORE_CAPABILITIES))
            or m in NOT_BEFORE_CAPABILITIES] == []


def test_the_catalog_gives_each_builtin_method_its_handler_and_models() -> None:
    table = load_methods()
    handlers = builtin_handlers()
    assert list(table) == [m.name for m in handlers]
    for m in handlers:
        listed = table[m.name]
        assert listed.row() == m.row()
        assert (listed.params, listed.result, listed.handler) == (m.params, m.result, m.handler)


def test_a_catalog_row_that_no_longer_says_what_its_handler_does_is_refused() -> None:
    row = next(m.row() for m in builtin_handlers() if m.name == "kb.read")
    stale = Method.from_row({**row, "events": ["progress", "result"]}, _builtin_handler)
    assert stale.summary == row["summary"]  # its description needs no import
    with pytest.raises(RuntimeError, match=r"catalog\.json is out of date for 'kb.read'.*schemas --write"):
        stale.params  # noqa: B018 - the first use loads the handler


def test_a_method_whose_handler_cannot_be_loaded_answers_internal_on_its_id(tmp_path: Path) -> None:
    """A catalog out of date (a handler changed without `schemas --write`) costs that method, not the daemon."""
    copy = tmp_path / "src"
    shutil.copytree(ROOT / "jsonl_engine", copy / "jsonl_engine", ignore=shutil.ignore_patterns("__pycache__"))
    catalog = copy / "jsonl_engine" / "methods" / "catalog.json"
    listed = orjson.loads(catalog.read_bytes())
    next(row for row in listed["methods"] if row["name"] == "kb.read")["summary"] = "something else"
    catalog.write_bytes(orjson.dumps(listed))
    with Daemon(tmp_path / "kb", env={"PYTHONPATH": str(copy)}, cwd=copy) as d:
        events = d.request("kb.read", {"section_id": "x:0"})
        assert d.result("kb.documents")["documents"] == []  # the daemon serves on
    assert [e["event"] for e in events] == ["error", "done"]
    assert events[0]["error"]["code"] == "internal" and events[1]["status"] == "error"
    assert "catalog.json is out of date for 'kb.read'" in d.stderr


PYDANTIC_PLUGIN = '''
import os
from pathlib import Path

Path(os.environ["MARKER"]).write_text("loaded")


class Plugin:
    def new_schema_validator(self, *args, **kwargs):
        return None, None, None


plugin = Plugin()
'''


@pytest.mark.parametrize("setting", [None, ""])
def test_pydantic_plugins_are_not_looked_up_unless_asked_for(tmp_path: Path, setting: str | None,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """An installed distribution's pydantic plugin (an entry point): the daemon neither scans for it nor loads it
    when it builds its first validator (a request with params), unless PYDANTIC_DISABLE_PLUGINS is set (empty:
    every plugin)."""
    monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS", raising=False)  # as a user's shell has it
    site = tmp_path / "site"
    (site / "marker_plugin-1.0.dist-info").mkdir(parents=True)
    (site / "marker_plugin-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: marker-plugin\n"
                                                                   "Version: 1.0\n")
    (site / "marker_plugin-1.0.dist-info" / "entry_points.txt").write_text("[pydantic]\nmarker = marker_plugin:plugin\n")
    (site / "marker_plugin.py").write_text(PYDANTIC_PLUGIN)
    marker = tmp_path / "marker"
    env = {"PYTHONPATH": f"{ROOT}{os.pathsep}{site}", "MARKER": str(marker)}
    if setting is not None:
        env["PYDANTIC_DISABLE_PLUGINS"] = setting
    with Daemon(tmp_path / "kb", env=env) as d:
        assert d.result("capabilities")["name"] == "jsonl-engine"
        assert d.result("cancel", {"target": "no-such-request"}) == {"cancelled": False}
    assert marker.exists() == (setting == "")
