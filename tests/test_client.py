"""jsonl_engine.client against the real daemon: results, streams, errors, cancel, threads and tasks, exit; the typed
methods and their result models, the error classes, values JSON cannot carry, the README's example."""

from __future__ import annotations

import asyncio
import math
import os
import re
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from jsonl_engine import client as client_module
from jsonl_engine.client import (
    ERRORS,
    AsyncClient,
    Client,
    DaemonExited,
    InvalidParams,
    LLMUnavailable,
    MethodNotFound,
    NotFound,
    RequestError,
    UnsendableValue,
)
from jsonl_engine.errors import ERROR_CODES
from jsonl_engine.models import documents as docs
from jsonl_engine.models.answer import AnswerResult
from jsonl_engine.models.context import ContextResult
from jsonl_engine.models.render import RenderResult
from jsonl_engine.models.synthesize import SynthesizeResult
from jsonl_engine.models.system import CapabilitiesResult
from tests.support.daemon import ROOT, TEST_PLUGIN

DOC = ("# Quillon Ferries 2030 Report\n\n## Fleet\n\nQuillon Ferries ran 9 ferries in 2030.\n\n"
       "## Fuel\n\nFuel costs at Quillon were $12.5 million in 2030.\n")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JSONL_ENGINE_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _client(tmp_path, **kw) -> Client:
    return Client(tmp_path / "kb", args=["--plugin", TEST_PLUGIN], env=_env(), cwd=ROOT,
                  stderr=subprocess.PIPE, timeout=60, **kw)


def test_call_stream_errors_and_clean_exit(tmp_path) -> None:
    with _client(tmp_path) as kb:
        assert kb.ready and kb.ready["data"]["protocol"] == 1
        ingest = kb.stream("kb.ingest", {"text": DOC, "title": "Quillon", "media_type": "text/markdown"})
        events = ingest.events()
        assert [e["event"] for e in events if e["event"] != "progress"] == ["result"]
        assert ingest.done and ingest.done["status"] == "ok"
        doc = next(e["data"] for e in events if e["event"] == "result")
        out = kb.call("kb.synthesize", {"query": "How many ferries did Quillon run?"})
        assert out["claims"][0]["text"] == "Quillon Ferries ran 9 ferries in 2030."
        assert out["claims"][0]["document_id"] == doc["document_id"]
        assert kb.results("kb.documents")[0]["documents"][0]["title"] == "Quillon"

        with pytest.raises(RequestError) as err:
            kb.call("kb.context", {"query": "x", "limit": 0})
        assert err.value.code == "invalid_params" and err.value.data["field"] == "limit"
        assert "limit" in err.value.message
        with pytest.raises(RequestError) as err:
            kb.call("kb.read", {"document_id": "0123456789abcdef", "page": 1})
        assert err.value.code == "not_found"
        with pytest.raises(RequestError) as err:
            kb.call("no.such.method")
        assert err.value.code == "method_not_found"
        ticks = [e for e in kb.stream("test.sleep", {"seconds": 0.05, "ticks": 3}) if e["event"] == "progress"]
        assert [t["data"]["done"] for t in ticks] == [1, 2, 3]
    assert kb.returncode == 0 and not kb.unrouted


def test_cancel_and_many_requests_from_threads(tmp_path) -> None:
    with _client(tmp_path) as kb:
        kb.call("kb.ingest", {"text": DOC, "title": "Quillon", "media_type": "text/markdown"})
        slow = kb.stream("test.sleep", {"seconds": 60})
        assert kb.cancel(slow.id) is True
        with pytest.raises(RequestError) as err:
            slow.events()
        assert err.value.code == "cancelled" and slow.done["status"] == "cancelled"

        queries = [("ferries 2030", "Fleet"), ("fuel costs", "Fuel")] * 12
        with ThreadPoolExecutor(8) as pool:
            tops = list(pool.map(lambda q: kb.call("kb.context", {"query": q[0], "limit": 1})["items"][0]["title"],
                                 queries))
        assert tops == [title for _, title in queries]

        # leaving a stream early cancels its request
        stream = kb.stream("test.sleep", {"seconds": 60, "ticks": 600})
        for event in stream:
            assert event["event"] == "progress"
            break
        assert kb.call("cancel", {"target": stream.id}) == {"cancelled": False}  # already ended by the break


def test_daemon_exit_raises_daemon_exited(tmp_path) -> None:
    with pytest.raises(DaemonExited):
        Client(command=[sys.executable, "-c", "import sys; sys.exit(3)"], ready_timeout=30)
    kb = _client(tmp_path)
    slow = kb.stream("test.sleep", {"seconds": 60})
    kb.proc.kill()
    with pytest.raises(DaemonExited) as err:
        slow.events()
    assert err.value.code == "daemon_exited" and err.value.returncode == err.value.data["returncode"] == -9
    with pytest.raises(DaemonExited):
        kb.call("capabilities")
    kb.close()


def test_async_client_tasks_cancel_and_errors(tmp_path) -> None:
    async def main() -> None:
        async with AsyncClient(tmp_path / "kb", args=["--plugin", TEST_PLUGIN], env=_env(), cwd=ROOT,
                               stderr=subprocess.DEVNULL, timeout=60) as kb:
            await kb.call("kb.ingest", {"text": DOC, "title": "Quillon", "media_type": "text/markdown"})
            queries = [("ferries 2030", "Fleet"), ("fuel costs", "Fuel")] * 10
            outs = await asyncio.gather(*(kb.call("kb.context", {"query": q, "limit": 1}) for q, _ in queries))
            assert [o["items"][0]["title"] for o in outs] == [t for _, t in queries]

            slow = await kb.stream("test.sleep", {"seconds": 60})
            assert await kb.cancel(slow.id) is True
            with pytest.raises(RequestError) as err:
                await slow.events()
            assert err.value.code == "cancelled"
            with pytest.raises(RequestError) as err:
                await kb.call("kb.synthesize", {"query": "x", "depth": 0})
            assert err.value.code == "invalid_params" and err.value.data["field"] == "depth"
            events = [e async for e in await kb.stream("test.sleep", {"seconds": 0.03, "ticks": 3})]
            assert [e["data"].get("done") for e in events] == [1, 2, 3, None]
            assert events[-1] == {"id": events[-1]["id"], "event": "result", "data": {"value": "slept"}}
        assert kb.returncode == 0

    asyncio.run(main())


def test_async_daemon_exited_carries_the_return_code(tmp_path) -> None:
    """Issue 25 item 11: like the blocking client's, AsyncClient's DaemonExited has the daemon's return code."""
    async def main() -> None:
        kb = await AsyncClient(tmp_path / "kb", args=["--plugin", TEST_PLUGIN], env=_env(), cwd=ROOT,
                               stderr=subprocess.DEVNULL, timeout=60).start()
        slow = await kb.stream("test.sleep", {"seconds": 60})
        kb.proc.kill()
        with pytest.raises(DaemonExited) as err:
            await slow.events()
        assert err.value.returncode == err.value.data["returncode"] == -9
        with pytest.raises(DaemonExited) as err:
            await kb.call("capabilities")
        assert err.value.returncode == -9
        await kb.close()
        with pytest.raises(DaemonExited) as err:
            await AsyncClient(command=[sys.executable, "-c", "import sys; sys.exit(3)"], ready_timeout=30).start()
        assert err.value.returncode == 3

    asyncio.run(main())


def test_typed_methods_return_the_result_models(tmp_path, sample_pdfs) -> None:
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "quillon.md").write_text(DOC, encoding="utf-8")
    with _client(tmp_path) as kb:
        assert isinstance(kb.capabilities(), CapabilitiesResult) and kb.capabilities().readers == []
        one = kb.ingest(tmp_path / "reports" / "quillon.md")  # one path: still a list
        assert [type(r) for r in one] == [docs.IngestResult] and one[0].title == "Quillon Ferries 2030 Report"
        doc = one[0].document_id
        progress = []
        several = kb.ingest([tmp_path / "reports", sample_pdfs["outline"], sample_pdfs["not_pdf"]],
                            on_progress=progress.append)
        assert [(r.document_id == doc, r.skipped) for r in several if r.error is None] == [(True, True), (False, False)]
        (failed,) = [r for r in several if r.error is not None]
        assert failed.error.code == "unsupported_media" and failed.path == str(sample_pdfs["not_pdf"])
        assert progress and {e["event"] for e in progress} == {"progress"}
        pdf = next(r.document_id for r in several if r.media_type == "application/pdf")
        inline = kb.ingest(text="Harbour dues rose to $4 million.", title="Dues note")
        assert [r.title for r in inline] == ["Dues note"]

        context = kb.context("fuel costs", limit=1, document_ids=[doc])
        assert isinstance(context, ContextResult) and context.items[0].title == "Fuel"
        synth = kb.synthesize("What were Quillon fuel costs in 2030?")
        assert isinstance(synth, SynthesizeResult)
        claim = synth.claims[0]
        assert claim.text == "Fuel costs at Quillon were $12.5 million in 2030." and synth.meta.passages >= 1
        section = kb.read(claim.section_id)
        assert isinstance(section, docs.ReadResult) and section.text[claim.quote_start:claim.quote_end] == claim.text
        assert "Quillon Ferries ran 9 ferries" in kb.read(document_id=doc, page=1).text
        outline = kb.outline(doc, max_depth=1)
        assert isinstance(outline, docs.OutlineResult) and outline.sections[0].children == []
        listed = kb.documents()
        assert isinstance(listed, docs.DocumentsResult) and len(listed.documents) == 3
        updated = kb.update(doc, {"kind": "annual report"})
        assert isinstance(updated, docs.DocumentItem) and updated.card.kind == "annual report"
        assert [d.document_id for d in kb.documents(kind="annual report").documents] == [doc]
        reviewed = kb.review(doc, "draft")
        assert isinstance(reviewed, docs.ReviewResult) and reviewed.previous_status == "approved"
        assert kb.synthesize("What were Quillon fuel costs in 2030?").claims == []  # drafts are not cited
        page = kb.render(pdf, 1, output="base64", scale=0.5)
        assert isinstance(page, RenderResult) and page.data and page.width > 0
        with pytest.raises(LLMUnavailable):
            kb.answer("What were Quillon fuel costs in 2030?")
        removed = kb.remove(doc)
        assert isinstance(removed, docs.RemoveResult) and removed.removed
        with pytest.raises(NotFound):
            kb.outline(doc)
        assert kb.call("kb.ingest", {"text": DOC, "title": "Raw"})["title"] == "Raw"  # the raw call stays
    assert kb.returncode == 0 and not kb.unrouted


def test_answer_streams_deltas_to_on_delta(tmp_path, gateway) -> None:
    from tests.support.answer_script import AnswerScript, cite_all, offered_ids

    script = AnswerScript()
    gateway.responder = script
    env = {**_env(), **gateway.env()}

    async def main() -> None:
        async with AsyncClient(tmp_path / "kb", env=env, cwd=ROOT, stderr=subprocess.DEVNULL, timeout=60) as kb:
            await kb.ingest(text=DOC, title="Quillon", media_type="text/markdown")
            deltas: list[str] = []
            out = await kb.answer("What were Quillon fuel costs in 2030?", on_delta=deltas.append)
            assert isinstance(out, AnswerResult) and "".join(deltas) == out.answer
            assert out.answer == cite_all(offered_ids(script.seen["answer"][0]))
            quiet = await kb.answer("What were Quillon fuel costs in 2030?")
            assert quiet.answer == out.answer and not script.seen["answer"][1].body.get("stream")

    asyncio.run(main())


def test_one_error_class_per_code_under_request_error(tmp_path) -> None:
    assert set(ERRORS) == set(ERROR_CODES)
    assert all(issubclass(cls, RequestError) and cls is not RequestError for cls in ERRORS.values())
    assert len(set(ERRORS.values())) == len(ERRORS) and issubclass(DaemonExited, RequestError)
    with _client(tmp_path) as kb:
        with pytest.raises(InvalidParams) as err:
            kb.context("x", limit=0)
        assert err.value.code == "invalid_params" and err.value.data["field"] == "limit"
        with pytest.raises(NotFound):
            kb.read(document_id="0123456789abcdef", page=1)
        with pytest.raises(MethodNotFound):
            kb.call("no.such.method")
        with pytest.raises(RequestError) as err:  # the base still catches every code
            kb.call("kb.review", {"document_id": "0123456789abcdef", "status": "approved"})
        assert type(err.value) is NotFound
    assert RequestError.from_event({"id": 1, "event": "error", "error": {"code": "new_code", "message": "m"}}) \
        .__class__ is RequestError  # a code this client does not know


UNSENDABLE = [(2**64, "limit"), (-(2**63) - 1, "limit"), (10**5000, "limit"), (math.nan, "max_chars"),
              (math.inf, "max_chars"), (-math.inf, "document_ids.1")]


def _unsendable_params(value: object, field: str) -> dict:
    return {"query": "x", field.split(".")[0]: ["a", value] if "." in field else value}


def test_values_json_cannot_carry_raise_before_sending(tmp_path) -> None:
    """Issue 25 item 11: a ValueError naming the field, not a bare TypeError or a silent null; nothing is sent."""
    with _client(tmp_path) as kb:
        for value, field in UNSENDABLE:
            params = _unsendable_params(value, field)
            with pytest.raises(ValueError) as err:
                kb.call("kb.context", params)
            assert isinstance(err.value, UnsendableValue) and err.value.field == field
            assert str(err.value).startswith(f"{field}: ")
            with pytest.raises(UnsendableValue):
                kb.context(**params)
        assert not kb._pending and kb.documents().documents == [] and not kb.unrouted  # nothing reached the daemon

    async def in_async() -> None:
        async with AsyncClient(tmp_path / "kb", env=_env(), cwd=ROOT, stderr=subprocess.DEVNULL, timeout=60) as kb:
            for value, field in UNSENDABLE:
                with pytest.raises(UnsendableValue) as err:
                    await kb.call("kb.context", _unsendable_params(value, field))
                assert err.value.field == field
            assert not kb._pending and (await kb.documents()).documents == [] and not kb.unrouted

    asyncio.run(in_async())


def test_sendable_bounds_and_ids(tmp_path) -> None:
    with _client(tmp_path) as kb:
        for limit in (2**64 - 1, -(2**63)):  # the wire's range: sent, and answered by the daemon
            with pytest.raises(InvalidParams):
                kb.context("x", limit=limit)
        with pytest.raises(UnsendableValue) as err:
            kb.stream("capabilities", id=2**64)
        assert err.value.field == "id"
        with pytest.raises(UnsendableValue) as err:
            kb.ingest(text="x", title="t", meta={"fiscal_year": 2**80})
        assert err.value.field == "meta.fiscal_year"
        assert kb.cancel(2**64 - 1) is False
    assert not kb.unrouted


def test_py_typed_marker_ships_with_the_package() -> None:
    assert (Path(client_module.__file__).parent / "py.typed").is_file()
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "py.typed" in package_data["jsonl_engine"]


def test_readme_python_example_runs(tmp_path) -> None:
    """The README's Python example, as written, in a folder with a `reports` directory."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (example,) = [b for b in re.findall(r"```python\n(.*?)```", readme, flags=re.S)
                  if "from jsonl_engine.client import" in b]
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "quillon.md").write_text(DOC, encoding="utf-8")
    run = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "Quillon Ferries 2030 Report added"
    assert 'Quillon Ferries 2030 Report, p. 1: "Fuel costs at Quillon were $12.5 million in 2030."' in lines
    assert lines[-1].startswith("invalid_params limit ")
    assert (tmp_path / "kb" / "kb.sqlite3").exists()


def test_the_client_imports_nothing_of_the_engine_but_the_wire_models() -> None:
    import ast

    tree = ast.parse(Path(client_module.__file__).read_text(encoding="utf-8"))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module} | \
        {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    engine = sorted(m for m in imported if m.startswith("jsonl_engine"))
    assert engine and all(m.startswith("jsonl_engine.models") for m in engine), engine
    loaded = subprocess.run([sys.executable, "-c", "import sys, jsonl_engine.client; print(sorted(m for m in "
                             "sys.modules if m.startswith(('jsonl_engine', 'pydantic'))))"],
                            env=_env(), capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "['jsonl_engine', 'jsonl_engine.client']"  # the models load with the first typed call
