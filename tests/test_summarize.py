"""Section summaries: extractive (leading sentence + salient terms), LLM batches with extractive fallback, and
writing them into the KB where the outline strategies pick them up."""

from __future__ import annotations

import asyncio
import json
import re

from jsonl_engine.ingest import parse_text
from jsonl_engine.ingest.summarize import (
    SUMMARY_CHARS,
    SummaryItem,
    extractive_summary,
    llm_summaries,
    salient_words,
    summarize_documents,
)
from jsonl_engine.llm.gateway import Gateway
from jsonl_engine.llm.usage import Usage
from jsonl_engine.retrieval.navigate.tree import load_tree
from tests.support.gateway import Reply, chat_reply, json_reply
from tests.support.navkb import REPORT_MD, build

LONG = ("Table of Contents Liquidity and Capital Resources The Company generated operating cash flow of "
        "$6.1 billion in 2022. Liquidity remains strong; the revolving credit facility was undrawn. " * 6)


def test_extractive_summary_is_the_leading_sentence_and_salient_terms() -> None:
    summary = extractive_summary("Liquidity and Capital Resources", LONG)
    assert summary.startswith("The Company generated operating cash flow of $6.1 billion in 2022.")
    assert summary.endswith("Terms: generated, operating, cash, flow.")
    assert "Table of Contents" not in summary and len(summary) <= SUMMARY_CHARS
    assert extractive_summary("Title", "") == extractive_summary("Title", "   \n ") == ""
    assert extractive_summary("Risks (part 2)", "Risks Supply may fail often. Supply chains are long.").startswith(
        "Supply may fail often.")
    long_sentence = "word " * 200
    assert len(extractive_summary("T", long_sentence)) <= SUMMARY_CHARS


def test_salient_words_skip_title_words_and_stopwords() -> None:
    text = "Widgets and widgets: the widget plant makes gadgets. Gadgets ship from Ohio. Ohio widgets."
    assert salient_words(text, "Widget Plant") == ["widgets", "gadgets", "ohio", "makes"]


def test_extractive_summary_of_every_section_with_text() -> None:
    parsed = parse_text(REPORT_MD, "Acme", "text/markdown")
    summaries = [extractive_summary(s.title, s.text) for s in parsed.sections]
    income = next(i for i, s in enumerate(parsed.sections) if s.title == "Income Statement")
    assert summaries[income].startswith("Net sales were $1,234 million in 2023")
    leaves = {i for i in range(len(parsed.sections))} - {s.parent for s in parsed.sections}
    assert all(summaries[i] for i in leaves)


def test_llm_summaries_batch_and_fall_back_to_extractive(gateway) -> None:
    items = [SummaryItem(f"doc:{i}", f"Section {i}", f"Section {i} text about topic number {i}. " * 40)
             for i in range(5)]

    def respond(request) -> Reply:
        ids = re.findall(r'<section id="(s\d+)"', request.messages[-1]["content"])
        if "Section 0 text" in request.messages[-1]["content"]:
            return chat_reply("not json at all")  # this batch keeps its extractive summaries
        return json_reply({"summaries": [{"id": i, "summary": f"LLM summary of {i}."} for i in ids]
                          + [{"id": "s99", "summary": "invented"}]})

    gateway.responder = respond
    usage = Usage()
    progress: list = []

    async def go():
        gw = Gateway(gateway.reader())
        try:
            return await llm_summaries(gw, items, usage=usage, max_tokens_per_call=900, concurrency=2,
                                       progress=lambda d, t: progress.append((d, t)))
        finally:
            await gw.aclose()

    out = asyncio.run(go())
    assert len(gateway.requests) > 1  # batched under the budget
    first_batch = len(re.findall(r'<section id="', gateway.requests[0].messages[-1]["content"]))
    assert out["doc:0"] == extractive_summary("Section 0", items[0].text)
    assert all(out[f"doc:{i}"].startswith("LLM summary of s") for i in range(first_batch, 5))
    assert progress[-1] == (5, 5) and usage.calls >= len(gateway.requests)
    body = gateway.requests[0].body
    assert body["response_format"] == {"type": "json_object"} and "ONE sentence" in body["messages"][0]["content"]


def test_summarize_documents_writes_summaries_the_outline_shows(tmp_path, gateway) -> None:
    kb = build(tmp_path)
    try:
        written = asyncio.run(summarize_documents(kb.store, [kb.md_id]))
        assert written >= 6
        tree = load_tree(kb.store, [kb.md_id], ("approved",))
        assert tree.resolve("0.1.0").summary.startswith("Net sales were $1,234 million")

        def respond(request) -> Reply:
            ids = re.findall(r'<section id="(s\d+)" title="([^"]*)"', request.messages[-1]["content"])
            return json_reply({"summaries": [{"id": i, "summary": f"About {t.lower()}."} for i, t in ids]})

        gateway.responder = respond
        progress: list = []

        async def go():
            gw = Gateway(gateway.reader())
            try:
                return await summarize_documents(kb.store, [kb.pdf_id], gw, progress=lambda *a: progress.append(a))
            finally:
                await gw.aclose()

        assert asyncio.run(go()) > 0
        tree = load_tree(kb.store, [kb.pdf_id], ("approved",))
        debt = next(n for n in tree.nodes.values() if n.title == "Note 5 - Debt")
        assert debt.parts and debt.summary == "About note 5 - debt."  # a split section summarised as one
        assert progress and progress[-1][0] == "summarize"
        assert json.dumps(gateway.requests[0].body).count("<section id=") >= 2
    finally:
        kb.store.close()
