"""issue 13 through the daemon: kb.answer's empty and cut-off answers, kb.synthesize llm:true falling back
to the deterministic answer, summarize failures in the document's result (and resummarize), with the
loopback server answering as LiteLLM's proxy and llama-cpp-python's server do."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from jsonl_engine.answer.rewrite import REWRITE_SYSTEM
from jsonl_engine.ingest.summarize import SUMMARY_SYSTEM
from tests.support.answer_script import AnswerScript
from tests.support.daemon import Daemon
from tests.support.gateway import (
    Reply,
    Request,
    chat_reply,
    error,
    json_reply,
    litellm_error,
    litellm_no_db,
    stream_reply,
)
from tests.support.harbour import NOTES, TITLE, harbour_kb
from tests.support.navkb import REPORT_MD

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


# -- issue 26 ----------------------------------------------------------------------------------------------

FILTERED = "Harbour tonnage handled rose to"  # what came before the content filter stopped the reply


def rewrite_citing_claims(finish_reason: str):
    """A responder writing kb.synthesize's rewrite as prose citing the first claim it was offered."""
    def respond(request: Request) -> Reply:
        if request.messages[0]["content"] != REWRITE_SYSTEM:
            return error(500, "unexpected request")
        claim = re.search(r"^\[(c[0-9a-f]{12})\]", request.messages[-1]["content"], re.M).group(1)
        return chat_reply(f"Harbour tonnage rose to 4.2 million tonnes in 2024 [{claim}].",
                          finish_reason=finish_reason)
    return respond


def test_a_content_filtered_reply_is_never_a_complete_answer(kb_dir, gateway):
    """#1: finish_reason "content_filter" with partial text came back truncated: false, warnings [], and
    kb.synthesize llm:true kept it with fallback: false."""
    script = AnswerScript()
    script.then("answer", chat_reply(FILTERED, finish_reason="content_filter"),
                stream_reply(["Harbour ", "tonnage handled ", "rose to"], finish_reason="content_filter"))
    gateway.responder = script
    with Daemon(kb_dir, env=gateway.env()) as d:
        plain = d.result("kb.answer", {"query": QUERY, "max_sections": 1, "stream": False})
        streamed = d.result("kb.answer", {"query": QUERY, "max_sections": 1})
        gateway.responder = rewrite_citing_claims("content_filter")
        synth = d.result("kb.synthesize", {"query": QUERY, "llm": True})
        deterministic = d.result("kb.synthesize", {"query": QUERY})
    for out in (plain, streamed):
        assert out["answer"] == FILTERED and out["truncated"] is True and "content_filtered" in codes(out["warnings"])
    llm = synth["_meta"]["llm"]
    assert llm["fallback"] is True and codes(llm["warnings"]) == ["content_filtered", "llm_fallback"]
    assert synth["answer"] == deterministic["answer"]


def test_a_stream_cut_mid_answer_is_truncated(kb_dir, gateway):
    """#6: the error field and a warning reported the cut, truncated stayed false."""
    script = AnswerScript()
    script.then("answer", stream_reply(["Harbour ", "tonnage ", "rose ", "to 4.2 million"], cut_after=3))
    gateway.responder = script
    with Daemon(kb_dir, env=gateway.env()) as d:
        out = d.result("kb.answer", {"query": QUERY, "max_sections": 1})
    assert out["answer"] == "Harbour tonnage " and out["error"]["data"]["reason"] == "stream_cut"
    assert out["truncated"] is True


def selection_cut_at_max_tokens() -> Reply:
    """A single-pass selection cut by max_tokens in the middle of its JSON list (one item survives)."""
    return chat_reply('{"sections": [{"id": "0.1.0", "confidence": 0.9}, {"id": "0.7', finish_reason="length")


def test_kb_context_and_answer_carry_the_retrieval_stages_warnings(tmp_path, gateway):
    """#2: a dropped temperature, a fitted prompt and a selection cut at max_tokens mid-JSON reached neither
    kb.context's result (it had no warnings) nor kb.answer's (a non-lexical strategy's warnings were lost)."""
    gateway.push(litellm_error(400, "litellm.UnsupportedParamsError: Unsupported parameter: 'temperature'",
                               param="temperature"),
                 litellm_error(400, "litellm.ContextWindowExceededError: This model's maximum context length "
                                    "is 2048 tokens"),
                 selection_cut_at_max_tokens())
    with Daemon(tmp_path / "kb", env=gateway.env()) as d:
        assert d.result("kb.ingest", {"text": REPORT_MD, "title": "Acme", "media_type": "text/markdown"})["error"] is None
        context = d.result("kb.context", {"query": "net sales 2023", "strategy": "single-pass"})
        lexical = d.result("kb.context", {"query": "net sales 2023"})
        gateway.push(selection_cut_at_max_tokens())
        gateway.responder = AnswerScript()
        answer = d.result("kb.answer", {"query": "What were net sales in 2023?", "strategy": "single-pass",
                                        "stream": False})
    assert [(i["title"], i["confidence"]) for i in context["items"]] == [("Income Statement", 0.9)]
    assert codes(context["warnings"]) == ["parameter_dropped", "prompt_fitted", "reply_truncated"]
    assert context["usage"]["calls"] == 3 and lexical["warnings"] == []
    assert answer["citations"] and answer["truncated"] is False  # the answer itself finished
    assert {"parameter_dropped", "reply_truncated"} <= set(codes(answer["warnings"]))
    assert len(answer["warnings"]) == len(set(answer["warnings"]))  # each said once


def summaries_by_llm(request: Request) -> Reply:
    ids = re.findall(r'<section id="(s\d+)" title="([^"]*)"', request.messages[-1]["content"])
    return json_reply({"summaries": [{"id": i, "summary": f"LLM: where {t.lower()} is covered."} for i, t in ids]})


def test_a_failed_resummarize_keeps_the_summaries_the_document_had(tmp_path, gateway):
    """#5: an LLM-written summary was replaced by an extractive one when the server answered 500."""
    gateway.responder = summaries_by_llm
    params = {"text": REPORT_MD, "title": "Acme", "media_type": "text/markdown", "summarize": True}
    with Daemon(tmp_path / "kb", env=gateway.env(JSONL_ENGINE_LLM_MAX_RETRIES="1")) as d:
        assert d.result("kb.ingest", params)["warnings"] == []
        gateway.responder = lambda request: error(500, "upstream failed")
        redone = d.result("kb.ingest", {**params, "resummarize": True})
        gateway.responder = lambda request: json_reply({"sections": []})
        d.result("kb.context", {"query": "net sales 2023", "strategy": "single-pass"})
    assert redone["skipped"] is True and codes(redone["warnings"]) == ["summaries_kept"]
    outline = gateway.requests[-1].messages[-1]["content"]
    assert gateway.requests[-1].messages[0]["content"] != SUMMARY_SYSTEM
    assert "Income Statement [p1]: LLM: where income statement is covered." in outline


def test_litellm_no_connected_db_says_check_the_api_key(kb_dir, gateway):
    """#7: LiteLLM's proxy answers a key it does not know with HTTP 400 "No connected db."."""
    gateway.responder = lambda request: litellm_no_db()
    with Daemon(kb_dir, env=gateway.env()) as d:
        out = d.result("kb.answer", {"query": QUERY, "max_sections": 1})
    err = out["error"]
    assert err["code"] == "llm_error" and err["data"]["status"] == 400 and "(check the API key)" in err["message"]
