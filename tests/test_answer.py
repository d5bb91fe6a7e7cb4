"""kb.answer's pipeline against a real scripted chat-completions server on 127.0.0.1 (no daemon)."""

from __future__ import annotations

import asyncio
import re

import pytest

from jsonl_engine.answer.llm_answer import answer_messages, answer_question, cited_ids, excerpt
from jsonl_engine.answer.pages import place_citations
from jsonl_engine.answer.spans import Span
from jsonl_engine.errors import InvalidParams, NotFound
from jsonl_engine.ingest.sync import ingest_text
from jsonl_engine.llm.gateway import Gateway
from jsonl_engine.models.answer import AnswerParams, AnswerResult
from jsonl_engine.retrieval import retrieve
from jsonl_engine.store import Store, open_store
from tests.support.answer_script import AnswerScript, offered_ids
from tests.support.gateway import Reply, chat_reply, error, stream_reply

REPORT = """# Widget Holdings Annual Report 2023

## Revenue

Widget revenue rose 5% to $10.4 million in fiscal 2023.
The increase was driven by higher widget volumes in Europe and by price increases.

## Operating costs

Operating costs fell to $7.1 million in fiscal 2023 as the widget plant in Leeds was automated.

## Capital expenditure

Capital expenditure on widget tooling was $1.2 million in fiscal 2023, up from $0.9 million.

## Dividends

The board proposes a widget dividend of 12 pence per share for fiscal 2023.
"""
DRAFT = "# Draft memo\n\n## Zephyr project\n\nThe zephyr project will double widget revenue by 2030.\n"
FAKE_ID = "0123456789abcdef:9.9"


@pytest.fixture(scope="module")
def text_kb(tmp_path_factory: pytest.TempPathFactory):
    store = open_store(tmp_path_factory.mktemp("answer_kb"))
    report = ingest_text(store, REPORT, "Widget Holdings Annual Report 2023", "text/markdown")
    draft = ingest_text(store, DRAFT, "Draft memo", "text/markdown", status="draft")
    store.doc_ids = {"report": report.document_id, "draft": draft.document_id}  # type: ignore[attr-defined]
    yield store
    store.close()


def ask(store: Store, gw: Gateway, query: str, deltas: list[str] | None = None, progress: list | None = None,
        **params) -> dict:
    """Run the pipeline; return the result as the wire would carry it (validated by the result model)."""

    async def go() -> dict:
        try:
            out = await answer_question(store, gw, AnswerParams(query=query, **params).request(),
                                        on_delta=None if deltas is None else deltas.append,
                                        progress=None if progress is None else (lambda *a, **k: progress.append(a)))
        finally:
            await gw.aclose()
        result = out.as_dict()
        place_citations(store, result["citations"])  # what the kb.answer handler adds (issue 15)
        return AnswerResult.model_validate(result).model_dump(mode="json")

    return asyncio.run(go())


def check_citation(store: Store, citation: dict) -> None:
    section = store.section(citation["section_id"])
    assert (citation["document_id"], citation["title"]) == (section.document_id, section.title)
    assert section.page_start <= citation["page_start"] <= citation["page_end"] <= section.page_end
    if citation["verified"]:
        assert section.text[citation["quote_start"]:citation["quote_end"]] == citation["quote"] != ""
    else:
        assert (citation["quote_start"], citation["quote_end"]) == (-1, -1)


# ---------------------------------------------------------------- happy paths


def test_json_reply_cites_offered_sections_with_verified_quotes(text_kb, gateway):
    script = AnswerScript()
    gateway.responder = script
    out = ask(text_kb, Gateway(gateway.reader()), "widget revenue capital expenditure 2023", stream=False,
              max_citations=5)
    ids = [c["section_id"] for c in out["candidates"]]
    assert 2 <= len(ids) <= 5 and len(script.seen["span"]) == len(ids) and len(script.seen["answer"]) == 1
    assert [c["section_id"] for c in out["citations"]] == cited_ids(out["answer"]) == ids
    spans = {c["section_id"]: c["span"] for c in out["candidates"]}
    for citation in out["citations"]:
        check_citation(text_kb, citation)
        assert citation["verified"] == spans[citation["section_id"]]["found"]  # a heading-only section: none
        assert citation["document_title"] == "Widget Holdings Annual Report 2023"
    assert sum(c["verified"] for c in out["citations"]) >= 3 and all(c["cited"] for c in out["candidates"])
    assert (out["strategy"], out["reader"], out["model"]) == ("lexical", "default", "test-model")
    assert out["usage"]["calls"] == len(ids) + 1 and out["usage"]["prompt_tokens"] > 0
    assert out["error"] is None and out["invented_ids"] == [] and out["warnings"] == []
    request = script.seen["answer"][0]
    assert offered_ids(request) == ids and "stream" not in request.body
    assert request.body["max_tokens"] == 1024
    for citation in filter(lambda c: c["verified"], out["citations"]):  # the verified quote is in the prompt
        assert f'Evidence: "{citation["quote"]}"' in request.prompt
    assert all(text_kb.doc_ids["draft"] not in i for i in ids)  # the review gate: approved only


def test_stream_forwards_deltas_and_the_result_has_the_full_answer(text_kb, gateway):
    script = AnswerScript()
    gateway.responder = script
    deltas: list[str] = []
    progress: list = []
    out = ask(text_kb, Gateway(gateway.reader()), "operating costs Leeds plant", deltas, progress,
              max_answer_tokens=200)
    assert len(deltas) > 3 and "".join(deltas) == out["answer"] != ""
    assert script.seen["answer"][0].body["stream"] is True
    assert script.seen["answer"][0].body["max_tokens"] == 200
    stages = [p[0] for p in progress]
    assert stages[0] == "retrieve" and "spans" in stages and stages[-1] == "answer"
    assert ("spans", len(out["candidates"]), len(out["candidates"])) in progress
    assert out["citations"] and out["citations"][0]["section_id"] == out["candidates"][0]["section_id"]


def test_dev_filing_answer_cites_quotes_on_their_pages(dev_kb, dev_questions, gateway):
    gateway.responder = AnswerScript(quote=lambda text: " ".join(text.split()[10:22]) or None)
    doc = dev_kb.doc_ids["3M_2022_10K"]
    question = next(q["question"] for q in dev_questions if q["doc_name"] == "3M_2022_10K")
    out = ask(dev_kb, Gateway(gateway.reader()), question, [], document_ids=[doc], max_citations=5)
    assert len(out["citations"]) == len(out["candidates"]) >= 3
    for citation in out["citations"]:
        check_citation(dev_kb, citation)
        assert citation["verified"], citation  # whitespace-normalised quotes of real PDF text are located
        page = dev_kb.page(doc, citation["page_start"]).text
        squash = lambda s: re.sub(r"\W+", "", s.lower())  # noqa: E731
        assert squash(citation["quote"])[:20] in squash(page)


# ---------------------------------------------------------------- quotes


def test_paraphrased_quote_is_cited_unverified_and_kept_out_of_the_prompt(text_kb, gateway):
    paraphrase = "Sales of widgets went up by five percent"
    script = AnswerScript(quote=lambda text: paraphrase if "revenue rose" in text else None)
    gateway.responder = script
    out = ask(text_kb, Gateway(gateway.reader()), "widget revenue rose", max_sections=3)
    cited = {c["section_id"]: c for c in out["citations"]}
    revenue = next(c for c in out["candidates"] if c["title"] == "Revenue")
    assert revenue["span"] == {"found": True, "quote": paraphrase, "quote_start": -1, "quote_end": -1,
                               "verified": False}
    citation = cited[revenue["section_id"]]
    assert (citation["quote"], citation["verified"]) == (paraphrase, False)
    check_citation(text_kb, citation)
    others = [c for c in out["citations"] if c["section_id"] != revenue["section_id"]]
    assert others and all(c["quote"] == "" and not c["verified"] for c in others)  # found: false
    assert "Evidence:" not in script.seen["answer"][0].prompt


def test_quote_with_different_line_breaks_is_located_in_the_original_text(text_kb, gateway):
    given = "in fiscal 2023. The increase\nwas driven by\n  higher widget volumes"
    gateway.responder = AnswerScript(quote=lambda text: given if "rose 5%" in text else None)
    out = ask(text_kb, Gateway(gateway.reader()), "widget revenue rose", max_sections=2)
    citation = next(c for c in out["citations"] if c["title"] == "Revenue")
    check_citation(text_kb, citation)
    assert citation["verified"]
    assert citation["quote"] == "in fiscal 2023.\nThe increase was driven by higher widget volumes"


def test_invented_ids_are_dropped_and_reported(text_kb, gateway):
    gateway.responder = AnswerScript(answer=lambda ids: (
        f"Revenue rose [{ids[0]}] and [{FAKE_ID}]. Again [{ids[0]}, {FAKE_ID}]. Also (ffffeeeeddddcccc:p3)."))
    out = ask(text_kb, Gateway(gateway.reader()), "widget revenue")
    assert [c["section_id"] for c in out["citations"]] == [out["candidates"][0]["section_id"]]
    assert out["invented_ids"] == [FAKE_ID, "ffffeeeeddddcccc:p3"]
    assert any(FAKE_ID in w for w in out["warnings"])
    assert FAKE_ID in out["answer"]  # the answer is the model's text, as streamed


def test_citations_are_deduplicated_in_order_and_capped(text_kb, gateway):
    gateway.responder = AnswerScript(answer=lambda ids: " ".join(
        f"Claim [{ids[i]}]." for i in (3, 1, 3, 0, 1, 2)))
    out = ask(text_kb, Gateway(gateway.reader()), "widget fiscal 2023", max_citations=2, max_sections=4)
    ids = [c["section_id"] for c in out["candidates"]]
    assert len(ids) == 4
    assert [c["section_id"] for c in out["citations"]] == [ids[3], ids[1]]
    assert any("max_citations" in w and ids[0] in w and ids[2] in w for w in out["warnings"])
    assert all(c["cited"] for c in out["candidates"])


def test_excerpt_keeps_the_quote_when_the_section_is_cut():
    text = "filler words here. " * 400 + "The quoted figure is 42 million." + " tail words." * 400
    start = text.index("The quoted")
    span = Span("s", "The quoted figure is 42 million.", start, start + 32, verified=True, found=True)
    cut = excerpt(text, span, 100)
    assert cut.startswith("... ") and cut.endswith(" ...") and "The quoted figure is 42 million." in cut
    assert len(cut) < 500
    assert excerpt(text, None, 100).startswith("filler words")


def test_the_prompt_fits_the_readers_context(dev_kb):
    passages = retrieve(dev_kb, "total revenue and net income", limit=8).passages
    assert passages
    messages = answer_messages("total revenue and net income", passages, {}, context_tokens=2048,
                               answer_tokens=512)
    from jsonl_engine.llm.usage import estimate_tokens

    assert estimate_tokens(messages[0]["content"] + messages[1]["content"]) <= 2048 - 512
    assert all(f"[{p.section_id}]" in messages[1]["content"] for p in passages)


# ---------------------------------------------------------------- upstream failures


def test_429_with_retry_after_is_honoured_then_succeeds(text_kb, gateway):
    script = AnswerScript().then("answer", error(429, retry_after="0.04"))
    gateway.responder = script
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    out = ask(text_kb, Gateway(gateway.reader(retry_max_wait_s=1.0), sleep=sleep), "widget dividend", [])
    assert slept == [0.04]
    assert out["error"] is None and out["citations"]
    assert out["usage"]["calls"] == len(out["candidates"]) + 2


def test_500s_then_success(text_kb, gateway):
    gateway.responder = AnswerScript().then("answer", error(500), error(502)).then("span", error(503))
    out = ask(text_kb, Gateway(gateway.reader()), "widget dividend", [], max_sections=2)
    assert out["error"] is None and out["citations"]
    assert out["usage"]["calls"] == len(out["candidates"]) + 1 + 3


def test_timeout_after_retrieval_returns_the_candidates_with_the_error(text_kb, gateway):
    script = AnswerScript().then("answer", Reply(delay=5, json={}))
    gateway.responder = script
    out = ask(text_kb, Gateway(gateway.reader(timeout_s=0.3, max_retries=0)), "widget capital expenditure", [])
    assert out["error"]["code"] == "llm_error"
    assert out["error"]["data"] == {"status": None, "retryable": True, "reason": "timeout"}
    assert out["answer"] == "" and out["citations"] == []
    assert out["candidates"] and all(c["span"] is not None and not c["cited"] for c in out["candidates"])
    assert any("during the answer" in w for w in out["warnings"])


def test_span_failure_keeps_the_candidates_without_spans(text_kb, gateway):
    gateway.responder = AnswerScript().then("span", error(401, "bad key"))
    out = ask(text_kb, Gateway(gateway.reader()), "widget capital expenditure", max_sections=1)
    assert out["error"]["code"] == "llm_error" and out["error"]["data"]["status"] == 401
    assert len(out["candidates"]) == 1 and out["candidates"][0]["span"] is None
    assert any("during span extraction" in w for w in out["warnings"])


def test_malformed_json_span_reply_counts_as_not_found(text_kb, gateway):
    script = AnswerScript().then("span", chat_reply("I think the quote is: revenue"), chat_reply("{'found': yes"))
    gateway.responder = script
    out = ask(text_kb, Gateway(gateway.reader()), "widget dividend pence", max_sections=1)
    assert out["error"] is None
    assert out["candidates"][0]["span"]["found"] is False
    assert out["citations"][0]["quote"] == "" and out["citations"][0]["verified"] is False
    assert out["usage"]["calls"] == 3  # the span call, its one repair turn, the answer


def test_malformed_answer_bodies_end_in_an_error_result(text_kb, gateway):
    bad = Reply(body=b"<html>gateway</html>")
    gateway.responder = AnswerScript().then("answer", bad, bad, bad)
    out = ask(text_kb, Gateway(gateway.reader()), "widget dividend pence", stream=False, max_sections=1)
    assert out["error"]["data"]["reason"] == "malformed_body" and out["candidates"]


def test_stream_cut_midway_keeps_the_partial_answer(text_kb, gateway):
    script = AnswerScript()
    gateway.responder = script
    ids = [p.section_id for p in retrieve(text_kb, "widget operating costs", limit=2).passages]
    script.then("answer", stream_reply(["Costs fell ", f"[{ids[0]}]. ", "Then more", " never sent"], cut_after=4))
    deltas: list[str] = []
    out = ask(text_kb, Gateway(gateway.reader()), "widget operating costs", deltas, max_sections=2)
    assert out["error"]["data"]["reason"] == "stream_cut" and out["error"]["data"]["retryable"] is True
    assert out["answer"] == "".join(deltas) == f"Costs fell [{ids[0]}]. Then more"
    assert out["truncated"] is True  # issue 26: the answer did not finish (it kept truncated false)
    assert [c["section_id"] for c in out["citations"]] == [ids[0]]
    assert len(out["candidates"]) == 2 and "partial answer" in out["warnings"][-1]


# ---------------------------------------------------------------- before any call


def test_no_sources_means_no_llm_call(text_kb, gateway):
    out = ask(text_kb, Gateway(gateway.reader()), "widget revenue", statuses=["archived"])
    assert gateway.requests == [] and out["answer"] == "" and out["candidates"] == []
    assert out["warnings"][0].startswith("no sources to answer from")
    assert out["usage"] == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, "calls": 0,
                            "estimated": False}


def test_statuses_param_opens_the_review_gate(text_kb, gateway):
    gateway.responder = AnswerScript()
    out = ask(text_kb, Gateway(gateway.reader()), "zephyr project", statuses=["approved", "draft"])
    assert out["citations"][0]["document_id"] == text_kb.doc_ids["draft"]


def test_unknown_strategy_and_document_fail_before_any_call(text_kb, gateway):
    with pytest.raises(InvalidParams) as info:
        ask(text_kb, Gateway(gateway.reader()), "widget", strategy="psychic")
    assert info.value.data["field"] == "strategy"
    with pytest.raises(NotFound):
        ask(text_kb, Gateway(gateway.reader()), "widget", document_ids=["ffffffffffffffff"])
    assert gateway.requests == []


def test_strategies_plug_in_with_the_gateway_and_their_usage_counts(text_kb, gateway, monkeypatch):
    from jsonl_engine.retrieval import Retrieval
    from jsonl_engine.retrieval.strategies import STRATEGIES

    seen: dict = {}

    class Recording:
        name, needs_llm = "recording", True

        async def run(self, store, request, llm, progress):
            seen.update(request=request, llm=llm)
            progress("hop", 1, 2)
            found = retrieve(store, request.query, statuses=request.statuses, limit=request.limit)
            return Retrieval(found.passages, usage={"prompt_tokens": 100, "completion_tokens": 10, "calls": 2})

    monkeypatch.setitem(STRATEGIES, "recording", Recording())
    gateway.responder = AnswerScript()
    gw = Gateway(gateway.reader())
    progress: list = []
    out = ask(text_kb, gw, "widget dividend", None, progress, strategy="recording", max_sections=2, max_hops=3)
    assert seen["llm"] is gw and seen["request"].limit == 2 and seen["request"].max_hops == 3
    assert seen["request"].max_tokens_per_call is None and ("hop", 1, 2) in progress
    assert out["strategy"] == "recording" and out["usage"]["calls"] == 2 + len(out["candidates"]) + 1
    assert out["usage"]["prompt_tokens"] > 100
