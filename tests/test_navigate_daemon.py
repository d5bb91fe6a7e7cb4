"""The navigating strategies, ingest summaries and the LLM synthesis through the real daemon, with the scripted
LLM server as the reader."""

from __future__ import annotations

import re

import pytest

from jsonl_engine.answer.rewrite import REWRITE_SYSTEM
from jsonl_engine.ingest.summarize import SUMMARY_SYSTEM
from tests.support.answer_script import AnswerScript
from tests.support.daemon import Daemon
from tests.support.gateway import Reply, Request, ScriptedLLM, json_reply
from tests.support.navkb import REPORT_MD

CLAIM = re.compile(r"^\[(c[0-9a-f]{12})\] \(", re.M)


class Scripted:
    """Answers each role: summaries, outline selections, page navigation, the rewrite, and kb.answer's roles."""

    def __init__(self) -> None:
        self.answer = AnswerScript()
        self.roles: list[str] = []

    def __call__(self, request: Request) -> Reply:
        system = request.messages[0]["content"] if request.messages else ""
        user = request.messages[-1]["content"] if request.messages else ""
        if system == SUMMARY_SYSTEM:
            self.roles.append("summary")
            ids = re.findall(r'<section id="(s\d+)" title="([^"]*)"', user)
            return json_reply({"summaries": [{"id": i, "summary": f"LLM: where {t.lower()} is covered."}
                                             for i, t in ids]})
        if system.startswith("You choose, from a document outline"):
            self.roles.append("select")
            return json_reply({"sections": [{"id": "0.1.0", "confidence": "0.9"}, {"id": "12.12"}]})
        if system.startswith("You answer a question from a document by looking"):
            self.roles.append("pages")
            return json_reply({"tool": "done", "answer": "Net sales were $1,234 million.",
                               "cited_pages": [[1, 3], "1"], "confidence": "0.8"})
        if system == REWRITE_SYSTEM:
            self.roles.append("rewrite")
            ids = CLAIM.findall(user)
            return json_reply({"sentences": [{"text": "Acme's sales reached $1,234 million in 2023.",
                                              "claims": [ids[0], "cnot-offered"]},
                                             {"text": "Widgets are popular.", "claims": []}]})
        self.roles.append("answer")
        return self.answer(request)


@pytest.fixture(scope="module")
def llm():
    with ScriptedLLM() as server:
        server.responder = Scripted()
        yield server


@pytest.fixture(scope="module")
def daemon(llm, tmp_path_factory: pytest.TempPathFactory):
    with Daemon(tmp_path_factory.mktemp("nav_daemon_kb"), env=llm.env()) as d:
        events = d.request("kb.ingest", {"text": REPORT_MD, "title": "Acme", "media_type": "text/markdown",
                                         "summarize": True})
        (result,) = [e["data"] for e in events if e["event"] == "result"]
        assert result["error"] is None
        assert any(e["event"] == "progress" and e["data"]["stage"] == "summarize" for e in events)
        d.doc = result["document_id"]  # type: ignore[attr-defined]
        yield d
        assert not d.bad_lines


def test_summaries_written_at_ingest_reach_the_outline_prompt(daemon, llm) -> None:
    data = daemon.result("kb.context", {"query": "net sales 2023", "strategy": "single-pass", "reader": "default"})
    assert [i["title"] for i in data["items"]] == ["Income Statement"]
    item = data["items"][0]
    assert item["confidence"] == 0.9 and "Net sales were $1,234 million" in item["text"]
    assert data["strategy"] == "single-pass" and data["hops_taken"] == 1 and data["confidence"] == 0.9
    assert data["usage"]["calls"] == 1 and data["usage"]["prompt_tokens"] > 0
    select = next(r for r in reversed(llm.requests) if r.messages[0]["content"].startswith("You choose"))
    assert "0.1.0 Income Statement [p1]: LLM: where income statement is covered." in select.messages[1]["content"]


def test_pageindex_over_the_wire(daemon) -> None:
    events = daemon.request("kb.context", {"query": "net sales 2023", "strategy": "pageindex", "max_hops": 2,
                                           "max_tokens_per_call": 2000})
    (data,) = [e["data"] for e in events if e["event"] == "result"]
    assert [(i["section_id"], i["confidence"]) for i in data["items"]] == [(f"{daemon.doc}:p1", 0.8)]
    assert data["confidence"] == 0.8 and data["hops_taken"] == 1
    assert [e["data"]["message"] for e in events if e["event"] == "progress"] == ["hop 1: done"]


def test_lexical_results_carry_no_llm_figures(daemon) -> None:
    data = daemon.result("kb.context", {"query": "net sales 2023"})
    assert data["hops_taken"] == 0 and data["usage"] is None and data["confidence"] is None
    assert data["items"] and all(i["confidence"] is None for i in data["items"])


def test_llm_synthesis_keeps_only_cited_sentences(daemon) -> None:
    data = daemon.result("kb.synthesize", {"query": "What were net sales in 2023?", "llm": True})
    meta = data["_meta"]["llm"]
    assert re.fullmatch(r"Acme's sales reached \$1,234 million in 2023\. \[c[0-9a-f]{12}\]", data["answer"])
    assert [c["id"] for c in data["claims"]] == re.findall(r"\[(c[0-9a-f]{12})\]", data["answer"])
    assert meta["dropped_sentences"] == ["Widgets are popular."] and meta["stripped_claim_ids"] == ["cnot-offered"]
    assert meta["reader"] == "default" and meta["usage"]["calls"] == 1
    plain = daemon.result("kb.synthesize", {"query": "What were net sales in 2023?"})
    assert plain["_meta"]["llm"] is None and plain["answer"] != data["answer"]


def test_answer_with_a_navigating_strategy(daemon) -> None:
    data = daemon.result("kb.answer", {"query": "What were net sales in 2023?", "strategy": "single-pass",
                                       "stream": False})
    assert data["strategy"] == "single-pass"
    assert [c["title"] for c in data["citations"]] == ["Income Statement"]
    assert data["citations"][0]["verified"] is True
    assert data["usage"]["calls"] >= 3  # selection + span + answer


def test_llm_strategies_without_an_llm(tmp_path) -> None:
    with Daemon(tmp_path / "kb") as d:
        for strategy in ("single-pass", "chunked-tree", "agentic", "pageindex"):
            err = d.error("kb.context", {"query": "anything", "strategy": strategy})
            assert err["code"] == "llm_unavailable", err
        caps = d.result("capabilities")
        assert {"single-pass", "chunked-tree", "agentic", "pageindex", "lexical"} <= set(caps["strategies"])
        out = d.result("kb.ingest", {"text": REPORT_MD, "title": "Acme", "media_type": "text/markdown",
                                     "summarize": True})  # no LLM: extractive summaries, no error
        assert out["error"] is None
        err = d.error("kb.ingest", {"text": "x y z", "title": "t", "summarize": True, "reader": "nope"})
        assert err["code"] == "llm_unavailable", err  # no LLM at all: nothing to look the reader up in


def test_answer_with_page_citations(daemon) -> None:
    data = daemon.result("kb.answer", {"query": "What were net sales in 2023?", "strategy": "pageindex",
                                       "stream": False})
    assert [(c["section_id"], c["page_start"]) for c in data["citations"]] == [(f"{daemon.doc}:p1", 1)]
    assert data["candidates"][0]["unit"] == "page"
