"""chunked-tree: an outline that fits is one call; one that does not is sliced into sibling subtrees asked in
parallel (bounded), merged keeping each id's highest confidence in relevance order."""

from __future__ import annotations

import re

from jsonl_engine.llm.usage import estimate_messages
from jsonl_engine.retrieval.navigate.chunked_tree import merge
from jsonl_engine.retrieval.navigate.picks import Pick
from jsonl_engine.retrieval.navigate.tree import load_tree
from tests.support import navkb
from tests.support.gateway import InFlight, Reply, chat_reply, json_reply
from tests.support.navkb import run_strategy

nav_kb = navkb.nav_kb  # the module's small KB (fixture)

PART = re.compile(r"This is part (\d+) of (\d+)")


def test_an_outline_that_fits_is_one_single_pass_call(nav_kb, gateway) -> None:
    gateway.push(json_reply({"sections": [{"id": "0.1.1", "confidence": 0.7}]}))
    found = run_strategy("chunked-tree", nav_kb.store, gateway, document_ids=[nav_kb.md_id],
                         query="total assets at year end")
    assert [p.title for p in found.passages] == ["Balance Sheet"]
    assert found.details["slices"] == 1 and found.hops_taken == 1 and len(gateway.requests) == 1
    assert not PART.search(gateway.requests[0].prompt)


def test_slices_are_asked_in_parallel_and_merged(dev_kb, gateway) -> None:
    doc = dev_kb.doc_ids["3M_2022_10K"]
    tree = load_tree(dev_kb, [doc], ("approved",))
    statement = next(n for n in tree.nodes.values() if "statement of income" in n.title.lower())
    other = next(n for n in tree.nodes.values() if n.title.startswith("Item 1A"))
    inflight = InFlight()
    asked: list[tuple[int, int]] = []

    def respond(request) -> Reply:
        inflight.hold(0.05)
        part, parts = map(int, PART.search(request.prompt).groups())
        with inflight.lock:
            asked.append((part, parts))
        text = request.messages[-1]["content"]
        picks = []
        if f"\n{statement.key} " in text or f" {statement.key} " in text:
            picks.append({"id": statement.key, "confidence": "0.9"})
        if f"{other.key} " in text:
            picks.append({"id": other.key, "confidence": 0.3})
        picks.append({"id": "99.99", "confidence": 1.0})  # invented, in every slice
        if part == 1:
            picks.append({"id": statement.key, "confidence": 0.1})  # the same id, lower, from another slice
        return json_reply({"sections": picks})

    gateway.responder = respond
    progress: list = []
    found = run_strategy("chunked-tree", dev_kb, gateway, document_ids=[doc], query="3M net sales 2022",
                         max_tokens_per_call=3000, concurrency=2, progress=progress)
    n = found.details["slices"]
    assert n > 3 and len(gateway.requests) == n == found.hops_taken
    assert sorted(asked) == [(i, n) for i in range(1, n + 1)]
    assert inflight.peak == 2  # asked in parallel, up to the configured concurrency and never beyond
    assert all(estimate_messages(r.messages) <= 3000 for r in gateway.requests)
    assert found.passages[0].section_id.startswith(statement.id) or found.passages[0].path[-1] == statement.title
    assert found.passages[0].confidence == 0.9 and found.confidence == 0.9
    assert found.details["invented_ids"] == ["99.99"]
    assert [p[1] for p in progress[1:]] == list(range(1, n + 1)) and progress[-1][2] == n


def test_a_slice_that_never_answers_in_json_is_left_out(dev_kb, gateway) -> None:
    doc = dev_kb.doc_ids["AMCOR_2023_10K"]

    def respond(request) -> Reply:
        part = int(PART.search(request.prompt).group(1))
        if part == 1:
            return chat_reply("no JSON from me")
        first = re.search(r"\n *(\d[\d.]*) ", request.messages[-1]["content"].split("\n\n", 2)[-1]).group(1)
        return json_reply({"sections": [{"id": first, "confidence": part / 10}]})

    gateway.responder = respond
    found = run_strategy("chunked-tree", dev_kb, gateway, document_ids=[doc], max_tokens_per_call=3000)
    n = found.details["slices"]
    assert found.details["failed_slices"] == 1 and found.hops_taken == n + 2  # two retries of slice 1
    assert found.passages and found.reason is None
    confidences = [p.confidence for p in found.passages]
    assert confidences == sorted(confidences, reverse=True)


def test_every_slice_failing_gives_a_reason(nav_kb, gateway) -> None:
    gateway.responder = lambda request: chat_reply("nope")
    found = run_strategy("chunked-tree", nav_kb.store, gateway, document_ids=[nav_kb.pdf_id], max_tokens_per_call=420)
    assert found.passages == [] and "any outline slice" in found.reason
    assert found.details["failed_slices"] == found.details["slices"] > 1


def test_merge_keeps_the_highest_confidence_and_relevance_order(nav_kb) -> None:
    tree = load_tree(nav_kb.store, [nav_kb.md_id], ("approved",))
    a, b, c, d = (tree.resolve(k) for k in ("0.0.0", "0.1.0", "0.1.1", "0.2"))
    merged = merge([[Pick(a, 0.4), Pick(b, 0.9)], [Pick(c, None), Pick(a, 0.95), Pick(d, 0.9)], [Pick(b, 0.2)]])
    assert [(p.node.key, p.confidence) for p in merged] == [("0.0.0", 0.95), ("0.1.0", 0.9), ("0.2", 0.9),
                                                            ("0.1.1", None)]
    assert [p.rank for p in merged] == [0, 1, 2, 3]
