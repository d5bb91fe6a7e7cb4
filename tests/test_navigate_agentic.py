"""agentic: one JSON action per turn (outline, expand, read, done), observations fed back, up to max_hops;
malformed actions, loops that never finish, invented ids and the per-call budget."""

from __future__ import annotations

from jsonl_engine.llm.usage import estimate_messages
from tests.support import navkb
from tests.support.gateway import chat_reply, json_reply
from tests.support.navkb import run_strategy

nav_kb = navkb.nav_kb  # the module's small KB (fixture)


def last_user(request) -> str:
    return request.messages[-1]["content"]


def test_navigation_ends_with_done_and_reports_every_hop(nav_kb, gateway) -> None:
    gateway.push(json_reply({"action": "expand", "section_id": "0.1"}),
                 json_reply({"action": "read", "section_id": "0.1.0"}),
                 json_reply({"action": "done", "picks": [{"id": "0.1.0", "confidence": "0.85"}, {"id": "0.1.0"},
                                                         {"id": "3.3.3", "confidence": 1}]}))
    progress: list = []
    found = run_strategy("agentic", nav_kb.store, gateway, document_ids=[nav_kb.md_id], progress=progress)
    assert [(p.title, p.confidence) for p in found.passages] == [("Income Statement", 0.85)]
    assert found.hops_taken == 3 and found.usage["calls"] == 3 and found.reason is None
    assert found.details["invented_ids"] == ["3.3.3"]
    assert [(m[1], m[2], m[3]) for m in progress] == [(1, 6, "hop 1: expand 0.1"), (2, 6, "hop 2: read 0.1.0"),
                                                       (3, 6, "hop 3: done")]
    opening = gateway.requests[0].messages[1]["content"]
    assert "Top-level outline:" in opening and "0.1 Financial Statements" in opening
    assert "Subsections of 0.1 Financial Statements [p1]:\n0.1.0 Income Statement" in last_user(gateway.requests[1])
    assert "Net sales were $1,234 million in 2023" in last_user(gateway.requests[2])
    assert "(actions left: 4)" in last_user(gateway.requests[2])


def test_malformed_actions_cost_a_hop_and_get_an_error_observation(nav_kb, gateway) -> None:
    gateway.push(chat_reply("let me think about it"), json_reply({"action": "teleport", "section_id": "0.1"}),
                 json_reply({"read": "0.1.2"}),
                 json_reply({"tool": "done", "args": {"picks": ["0.1.2"]}}))
    found = run_strategy("agentic", nav_kb.store, gateway, document_ids=[nav_kb.md_id])
    assert [p.title for p in found.passages] == ["Cash Flows"] and found.hops_taken == 4
    assert "Not a valid action (the reply is not a JSON object)" in last_user(gateway.requests[1])
    assert "unknown action 'teleport'" in last_user(gateway.requests[2])
    assert "Capital expenditures were $95 million" in last_user(gateway.requests[3])


def test_three_malformed_replies_in_a_row_end_the_loop(nav_kb, gateway) -> None:
    gateway.push(json_reply({"action": "read", "section_id": "0.2"}),
                 *(chat_reply("I refuse to speak JSON") for _ in range(3)))
    found = run_strategy("agentic", nav_kb.store, gateway, document_ids=[nav_kb.md_id])
    assert len(gateway.requests) == 4 and found.hops_taken == 4
    assert "3 replies in a row that were not valid JSON actions" in found.reason
    assert [p.title for p in found.passages] == ["Risk Factors"]  # what it read, as the best so far
    assert found.details["fallback"] is True


def test_a_loop_that_never_calls_done_stops_at_max_hops_with_the_best_so_far(nav_kb, gateway) -> None:
    gateway.responder = lambda request: json_reply({"action": "expand", "section_id": "0.1"})
    gateway.push(json_reply({"action": "read", "section_id": "0.1.1"}),
                 json_reply({"action": "read", "section_id": "0.1.0"}))
    found = run_strategy("agentic", nav_kb.store, gateway, document_ids=[nav_kb.md_id], max_hops=5)
    assert len(gateway.requests) == 5 and found.hops_taken == 5
    assert "did not call done within max_hops=5" in found.reason
    assert [p.title for p in found.passages] == ["Income Statement", "Balance Sheet"]  # latest read first
    assert all(p.confidence is None for p in found.passages)
    assert "(You already did this.)" in last_user(gateway.requests[4])
    assert "last action" in last_user(gateway.requests[4])
    assert "last action" not in last_user(gateway.requests[3])


def test_a_shortlist_attached_to_an_action_is_the_fallback(nav_kb, gateway) -> None:
    gateway.push(json_reply({"action": "read", "section_id": "0.0.0"}),
                 json_reply({"action": "expand", "section_id": "0.1",
                             "picks": [{"id": "0.1.2", "confidence": 0.6}, {"id": "8.8"}]}))
    found = run_strategy("agentic", nav_kb.store, gateway, document_ids=[nav_kb.md_id], max_hops=2)
    assert [(p.title, p.confidence) for p in found.passages] == [("Cash Flows", 0.6)]
    assert found.details["invented_ids"] == ["8.8"] and "best pick(s) so far" in found.reason


def test_unknown_ids_and_reads_of_internal_nodes(nav_kb, gateway) -> None:
    gateway.push(json_reply({"action": "expand", "section_id": "4.4"}),
                 json_reply({"action": "read", "section_id": "0.1"}),
                 json_reply({"action": "expand", "section_id": "0.2"}),
                 json_reply({"action": "outline"}),
                 json_reply({"action": "done", "picks": []}))
    found = run_strategy("agentic", nav_kb.store, gateway, document_ids=[nav_kb.md_id])
    assert found.passages == [] and "no section" in found.reason and found.hops_taken == 5
    assert "Unknown section id '4.4'" in last_user(gateway.requests[1])
    internal = last_user(gateway.requests[2])
    assert "0.1 Financial Statements [p1] is a section with subsections" in internal
    assert "0.1.0 Income Statement [p1] (+0)" not in internal and "0.1.0 Income Statement [p1]" in internal
    assert "has no subsections; read it or pick it" in last_user(gateway.requests[3])
    assert "Top-level outline:" in last_user(gateway.requests[4])


def test_done_with_only_invented_ids(nav_kb, gateway) -> None:
    gateway.push(json_reply({"action": "done", "picks": ["5.5", {"id": "6.6", "confidence": 0.9}]}))
    found = run_strategy("agentic", nav_kb.store, gateway, document_ids=[nav_kb.md_id])
    assert found.passages == [] and "not in the outline" in found.reason
    assert found.details["invented_ids"] == ["5.5", "6.6"] and found.hops_taken == 1


def test_an_empty_tree_makes_no_call(nav_kb, gateway) -> None:
    found = run_strategy("agentic", nav_kb.store, gateway, document_ids=[nav_kb.md_id], statuses=("archived",))
    assert found.passages == [] and found.reason and gateway.requests == [] and found.hops_taken == 0


def test_every_hop_stays_within_max_tokens_per_call(dev_kb, gateway) -> None:
    doc = dev_kb.doc_ids["PEPSICO_2022_10K"]
    from jsonl_engine.retrieval.navigate.tree import load_tree

    tree = load_tree(dev_kb, [doc], ("approved",))
    big = sorted((n for n in tree.nodes.values() if n.is_leaf or n.parts), key=lambda n: -n.text_len)[:4]
    gateway.push(*(json_reply({"action": "read", "section_id": n.key}) for n in big),
                 json_reply({"action": "expand", "section_id": "2"}),
                 json_reply({"action": "done", "picks": [{"id": big[0].key, "confidence": 0.5}]}))
    budget = 1500
    found = run_strategy("agentic", dev_kb, gateway, document_ids=[doc], max_tokens_per_call=budget)
    assert len(gateway.requests) == 6 and found.hops_taken == 6
    for request in gateway.requests:
        assert estimate_messages(request.messages) <= budget
        assert request.body["max_tokens"] <= 384
    assert any("earlier observation removed" in m["content"] for m in gateway.requests[-1].messages)
    assert found.passages and found.passages[0].confidence == 0.5
