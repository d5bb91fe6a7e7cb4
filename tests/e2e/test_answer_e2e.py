"""kb.answer through the daemon subprocess, its LLM a scripted chat-completions server on 127.0.0.1."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from jsonl_engine.models.answer import AnswerResult
from tests.support.answer_script import AnswerScript
from tests.support.daemon import Daemon
from tests.support.gateway import MODEL, Reply, error, stream_chunks
from tests.support.harbour import harbour_kb


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return harbour_kb(tmp_path_factory.mktemp("answer_e2e_kb"))


def kinds(events: list[dict]) -> list[str]:
    return [e["event"] for e in events]


def test_no_llm_configured_is_llm_unavailable_before_any_work(kb_dir):
    with Daemon(kb_dir) as d:
        events = d.request("kb.answer", {"query": "harbour tonnage"})
    assert kinds(events) == ["error", "done"]  # no progress: nothing was retrieved
    assert events[0]["error"]["code"] == "llm_unavailable" and events[-1]["status"] == "error"


def test_llm_without_a_model_is_llm_unavailable_before_any_call(kb_dir, gateway):
    no_model = {k: v for k, v in gateway.env().items() if k != "JSONL_ENGINE_LLM_MODEL"}
    with Daemon(kb_dir, env=no_model) as d:
        events = d.request("kb.answer", {"query": "harbour tonnage"})
    assert kinds(events) == ["error", "done"]  # no progress: nothing was retrieved
    assert events[0]["error"]["code"] == "llm_unavailable" and events[-1]["status"] == "error"
    assert "JSONL_ENGINE_LLM_MODEL" in events[0]["error"]["message"]
    assert gateway.requests == [] and gateway.unexpected == 0  # the daemon knew the URL but never called it


def test_answer_over_the_wire(kb_dir, gateway):
    script = AnswerScript()
    gateway.responder = script
    with Daemon(kb_dir, env=gateway.env(JSONL_ENGINE_LLM_MAX_RETRIES="1")) as d:
        assert d.error("kb.answer", {"query": "harbour", "reader": "nope"})["data"]["field"] == "reader"
        assert d.error("kb.answer", {"query": "harbour", "strategy": "nope"})["data"]["field"] == "strategy"
        assert d.error("kb.answer", {"query": "harbour", "max_sections": 0})["data"]["field"] == "max_sections"
        assert d.error("kb.answer", {"query": " \n "})["data"]["field"] == "query"
        assert gateway.requests == []

        events = d.request("kb.answer", {"query": "harbour tonnage Tilbury", "max_sections": 2})
        body = kinds(events)
        assert body[0] == "progress" and body[-2:] == ["result", "done"] and events[-1]["status"] == "ok"
        assert body.index("delta") > max(i for i, k in enumerate(body) if k == "progress")
        result = AnswerResult.model_validate(events[-2]["data"])
        assert "".join(e["data"]["text"] for e in events if e["event"] == "delta") == result.answer
        assert result.model == MODEL and result.error is None and len(result.candidates) == 2
        tonnage = next(c for c in result.citations if c.title == "Tonnage")
        assert tonnage.verified and tonnage.quote.startswith("Harbour tonnage handled rose")
        assert (tonnage.quote_start, tonnage.quote_end) == (12, 12 + len(tonnage.quote))  # after "## Tonnage\n\n"

        quiet = d.request("kb.answer", {"query": "harbour staff", "stream": False, "max_sections": 1})
        assert "delta" not in kinds(quiet) and quiet[-2]["data"]["citations"][0]["title"] == "Staff"

        script.then("answer", error(500), error(500))  # the reader fails after retrieval
        failed = d.request("kb.answer", {"query": "harbour staff", "max_sections": 1})
        assert kinds(failed)[-2:] == ["result", "done"] and failed[-1]["status"] == "ok"
        data = failed[-2]["data"]
        assert data["error"]["code"] == "llm_error" and data["error"]["data"]["status"] == 500
        assert [c["title"] for c in data["candidates"]] == ["Staff"] and data["candidates"][0]["span"]["verified"]
        assert d.bad_lines == []


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_reader_is_llm_error_not_an_empty_answer(kb_dir):
    env = {"JSONL_ENGINE_LLM_BASE_URL": f"http://127.0.0.1:{closed_port()}/v1", "JSONL_ENGINE_LLM_MODEL": MODEL,
           "JSONL_ENGINE_LLM_MAX_RETRIES": "1", "JSONL_ENGINE_LLM_RETRY_BACKOFF": "0.01"}
    with Daemon(kb_dir, env=env) as d:
        for stream in (True, False):
            events = d.request("kb.answer", {"query": "harbour tonnage", "stream": stream})
            assert kinds(events)[-2:] == ["error", "done"] and "result" not in kinds(events)
            assert events[-1]["status"] == "error"
            error = events[-2]["error"]
            assert error["code"] == "llm_error" and "cannot reach the LLM endpoint" in error["message"]
            assert error["data"] == {"status": None, "retryable": True, "reason": "connection", "reader": "default"}
        assert d.result("capabilities")["readers"] == ["default"]


def test_a_reader_that_never_answers_is_llm_error(kb_dir, gateway):
    gateway.responder = lambda request: Reply(delay=30, json={})
    env = gateway.env(JSONL_ENGINE_LLM_TIMEOUT="0.3", JSONL_ENGINE_LLM_MAX_RETRIES="1")
    with Daemon(kb_dir, env=env) as d:
        events = d.request("kb.answer", {"query": "harbour tonnage", "max_sections": 1})
    assert kinds(events)[-2:] == ["error", "done"] and events[-1]["status"] == "error"
    assert events[-2]["error"]["data"] == {"status": None, "retryable": True, "reason": "timeout",
                                           "reader": "default"}
    assert len(gateway.requests) == 2  # the span call and its one retry; no answer call


def test_cancel_mid_stream_closes_the_upstream_request(kb_dir, gateway):
    slow = Reply(sse=stream_chunks(["The harbour ", "never finishes"], usage=None), delays=[0, 0, 60])
    gateway.responder = AnswerScript().then("answer", slow)
    with Daemon(kb_dir, env=gateway.env()) as d:
        rid = d.start("kb.answer", {"query": "harbour tonnage", "max_sections": 1})
        assert d.wait_event(rid, "delta")["data"]["text"] == "The harbour "
        assert d.result("cancel", {"target": rid}) == {"cancelled": True}
        events = d.wait_done(rid)
        assert events[-1]["status"] == "cancelled" and "result" not in kinds(events)
        assert gateway.disconnected.wait(10)
        assert d.result("kb.answer", {"query": "harbour staff", "max_sections": 1})["error"] is None
