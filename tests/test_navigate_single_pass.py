"""single-pass: the outline in one prompt, section ids back; retries on unusable replies, then an empty
selection with a reason; invented ids dropped; passages as sections or pages."""

from __future__ import annotations

from jsonl_engine.llm.usage import estimate_messages
from jsonl_engine.retrieval.navigate.picks import parse_confidence
from tests.support import navkb
from tests.support.gateway import chat_reply, json_reply
from tests.support.navkb import run_strategy

nav_kb = navkb.nav_kb  # the module's small KB (fixture)


def test_picks_become_passages_in_relevance_order(nav_kb, gateway) -> None:
    gateway.push(json_reply({"sections": [{"id": "0.1.2", "confidence": "0.4"}, {"id": "0.1.0", "confidence": 0.9},
                                          {"id": "7.7.7", "confidence": 1}, {"id": "0.1.0", "confidence": 0.2}]}))
    progress: list = []
    found = run_strategy("single-pass", nav_kb.store, gateway, document_ids=[nav_kb.md_id], progress=progress)
    assert [p.title for p in found.passages] == ["Income Statement", "Cash Flows"]
    assert [p.confidence for p in found.passages] == [0.9, 0.4]
    top = found.passages[0]
    assert top.section_id == f"{nav_kb.md_id}:0.1.0" and top.unit == "section"
    assert "Net sales were $1,234 million" in top.text and top.path == ["Acme Annual Report 2023",
                                                                        "Financial Statements"]
    assert found.details["invented_ids"] == ["7.7.7"]
    assert found.reason is None and found.confidence == 0.9
    assert found.hops_taken == 1
    assert found.usage == {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18, "calls": 1,
                           "estimated": False}
    assert progress[-1][0] == "navigate" and progress[-1][1:3] == (1, 1)
    (request,) = gateway.requests
    assert request.body["response_format"] == {"type": "json_object"}
    prompt = request.messages[1]["content"]
    assert prompt.startswith("Question: What were net sales in 2023?")
    assert "0.1.0 Income Statement [p1]: Net sales were $1,234 million" in prompt


def test_non_json_is_retried_twice_with_a_stricter_instruction(nav_kb, gateway) -> None:
    gateway.push(chat_reply("The income statement, I think."), chat_reply('{"answer": "0.1.0"}'),
                 json_reply({"sections": ["0.1.0"]}))
    found = run_strategy("single-pass", nav_kb.store, gateway, document_ids=[nav_kb.md_id])
    assert [p.title for p in found.passages] == ["Income Statement"]
    assert found.passages[0].confidence is None and found.hops_taken == 3
    assert len(gateway.requests) == 3 and found.usage["calls"] == 3
    retry = gateway.requests[1].messages
    assert retry[-2] == {"role": "assistant", "content": "The income statement, I think."}
    assert "ONLY a JSON object" in retry[-1]["content"]
    assert gateway.requests[2].messages[-2]["content"] == '{"answer": "0.1.0"}'  # the last bad reply, not all


def test_a_model_that_never_sends_json_yields_an_empty_selection_with_a_reason(nav_kb, gateway) -> None:
    gateway.push(*(chat_reply("Sorry, I cannot do JSON.") for _ in range(3)))
    found = run_strategy("single-pass", nav_kb.store, gateway, document_ids=[nav_kb.md_id])
    assert found.passages == [] and "did not return a usable JSON selection after 3 attempts" in found.reason
    assert len(gateway.requests) == 3 and gateway.pending == 0 and gateway.unexpected == 0


def test_only_invented_ids_or_nothing_relevant(nav_kb, gateway) -> None:
    gateway.push(json_reply({"sections": [{"id": "42"}]}), json_reply({"sections": []}))
    invented = run_strategy("single-pass", nav_kb.store, gateway, document_ids=[nav_kb.md_id])
    assert invented.passages == [] and "not in the outline" in invented.reason
    nothing = run_strategy("single-pass", nav_kb.store, gateway, document_ids=[nav_kb.md_id])
    assert nothing.passages == [] and "no section" in nothing.reason and nothing.hops_taken == 1


def test_empty_scope_makes_no_call(nav_kb, gateway) -> None:
    found = run_strategy("single-pass", nav_kb.store, gateway, document_ids=[nav_kb.md_id], statuses=("draft",))
    assert found.passages == [] and "no documents in scope" in found.reason
    assert gateway.requests == [] and found.hops_taken == 0 and found.usage["calls"] == 0


def test_internal_and_split_picks_expand_and_page_unit(nav_kb, gateway) -> None:
    gateway.push(json_reply({"sections": [{"id": "2.2", "confidence": 0.8}, {"id": "1", "confidence": 0.5}]}))
    found = run_strategy("single-pass", nav_kb.store, gateway, document_ids=[nav_kb.pdf_id], limit=3)
    titles = [p.title for p in found.passages]
    assert titles == ["Note 5 - Debt (part 1)", "Note 5 - Debt (part 2)",
                      "Item 7. Management's Discussion and Analysis (part 1)"]  # each pick first, then in order
    gateway.push(json_reply({"sections": [{"id": "2.2", "confidence": 0.8}]}))
    pages = run_strategy("single-pass", nav_kb.store, gateway, document_ids=[nav_kb.pdf_id], unit="page")
    assert [p.section_id for p in pages.passages] == [f"{nav_kb.pdf_id}:p7", f"{nav_kb.pdf_id}:p8"]
    assert all(p.unit == "page" and p.confidence == 0.8 and p.path[-1] == "Note 5 - Debt" for p in pages.passages)
    assert "revolving credit facility" in pages.passages[0].text


def test_a_small_budget_sends_a_shallower_outline_within_it(nav_kb, gateway) -> None:
    gateway.push(json_reply({"sections": [{"id": "0.1", "confidence": 0.6}]}))
    found = run_strategy("single-pass", nav_kb.store, gateway, document_ids=[nav_kb.md_id], max_tokens_per_call=330)
    assert estimate_messages(gateway.requests[0].messages) <= 330
    assert "note" in found.details
    assert [p.title for p in found.passages] == ["Income Statement", "Balance Sheet", "Cash Flows"]


def test_confidence_parsing() -> None:
    assert parse_confidence("0.8") == 0.8 and parse_confidence(" 80% ") == 0.8 and parse_confidence(7) == 1.0
    assert parse_confidence(-2) == 0.0 and parse_confidence("high") == 0.85 and parse_confidence("1e9") == 1.0
    for bad in (None, True, "very", "nan", float("inf"), [0.5], {"v": 1}):
        assert parse_confidence(bad) is None
