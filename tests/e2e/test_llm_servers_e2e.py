"""issue 13 through the daemon: kb.answer's empty and cut-off answers, kb.synthesize llm:true falling back
to the deterministic answer, summarize failures in the document's result (and resummarize), with the
loopback server answering as LiteLLM's proxy and llama-cpp-python's server do."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.answer_script import AnswerScript
from tests.support.daemon import Daemon
from tests.support.gateway import chat_reply, error, json_reply, stream_reply
from tests.support.harbour import NOTES, TITLE, harbour_kb

QUERY = "harbour tonnage Tilbury 2024"


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return harbour_kb(tmp_path_factory.mktemp("llm_servers_kb"))


def codes(warnings: list[str]) -> list[str]:
    return [w.split(":", 1)[0] for w in warnings]


def test_empty_and_cut_off_answers_are_flagged(kb_dir, gateway):
    """#2: content "" / null gave answer "" with no warning; finish_reason "length" was ignored."""
    script = AnswerScript()
    script.then("answer", chat_reply(""), chat_reply("Harbour tonnage rose to 4.2 mill", finish_reason="length"),
                stream_reply(["Harbour ", "tonnage ", "rose to 4."], finish_reason="length"))
    gateway.responder = script
    with Daemon(kb_dir, env=gateway.env()) as d:
        empty = d.result("kb.answer", {"query": QUERY, "max_sections": 1, "stream": False})
        cut = d.result("kb.answer", {"query": QUERY, "max_sections": 1, "stream": False})
        streamed = d.result("kb.answer", {"query": QUERY, "max_sections": 1})
    assert empty["answer"] == "" and "empty_reply" in codes(empty["warnings"]) and empty["truncated"] is False
    assert cut["truncated"] is True and "reply_truncated" in codes(cut["warnings"])
    assert streamed["truncated"] is True and "reply_truncated" in codes(streamed["warnings"])
    assert empty["usage"]["estimated"] is True  # AnswerScript sends no usage: the daemon's estimate, marked


@pytest.mark.parametrize("reply", [
    chat_reply("The harbour had a strong year overall."),  # plain prose, no citation
    json_reply({}),
    chat_reply('{"sentences": [{"text": "Harbour tonnage rose to', finish_reason="length"),  # cut-off JSON
], ids=["prose", "empty-object", "truncated-json"])
def test_synthesize_llm_falls_back_to_the_deterministic_answer(kb_dir, gateway, reply):
    """#3: an unusable rewrite gave answer "", claims [] and confidence "high"."""
    gateway.push(reply)
    with Daemon(kb_dir, env=gateway.env()) as d:
        plain = d.result("kb.synthesize", {"query": QUERY})
        out = d.result("kb.synthesize", {"query": QUERY, "llm": True})
    assert plain["claims"] and out["answer"] == plain["answer"] and out["claims"] == plain["claims"]
    assert out["_meta"]["synthesis_confidence"] == plain["_meta"]["synthesis_confidence"]
    llm = out["_meta"]["llm"]
    assert llm["fallback"] is True and "llm_fallback" in codes(llm["warnings"])
    assert all(not s.lstrip().startswith("{") for s in llm["dropped_sentences"])  # sentences, never the raw reply
    assert llm["usage"]["calls"] == 1


@pytest.mark.parametrize("failure", [error(500), error(401, "invalid key"), error(429, retry_after="0")],
                         ids=["500", "401", "429"])
def test_summarize_failures_are_in_the_document_result_and_resummarize_regenerates(tmp_path, gateway, failure):
    """#4: a failing reader ended ingest ok with warnings []; re-ingesting the same bytes never re-summarised."""
    gateway.responder = lambda request: failure
    env = gateway.env(JSONL_ENGINE_LLM_MAX_RETRIES="2")
    params = {"text": NOTES, "title": TITLE, "media_type": "text/markdown", "summarize": True}
    with Daemon(tmp_path / "kb", env=env) as d:
        first = d.result("kb.ingest", params)
        assert "summaries_extractive" in codes(first["warnings"]) and first["skipped"] is False
        assert first["summary_usage"]["calls"] >= 1
        calls = len(gateway.requests)
        again = d.result("kb.ingest", params)
        assert again["skipped"] is True and len(gateway.requests) == calls  # same bytes: nothing to do
        gateway.responder = lambda request: json_reply({"summaries": [
            {"id": f"s{n}", "summary": "Harbour figures for 2024."} for n in range(1, 9)]})
        redone = d.result("kb.ingest", {**params, "resummarize": True})
    assert redone["skipped"] is True and redone["summary_usage"]["calls"] >= 1 and len(gateway.requests) > calls
    assert "summaries_extractive" not in codes(redone["warnings"])
