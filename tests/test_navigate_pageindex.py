"""pageindex: structure / pages / done tools, citation forms and confidences, the one finalize_ranges exit
(clamp, merge duplicates, top max_citations by confidence), refusals, and the hop cap."""

from __future__ import annotations

from jsonl_engine.retrieval.navigate.pageindex import (
    PageRange,
    finalize_ranges,
    is_refusal,
    parse_cited_pages,
)
from tests.support import navkb
from tests.support.gateway import chat_reply, json_reply
from tests.support.navkb import run_strategy

nav_kb = navkb.nav_kb  # the module's small KB (fixture)

COUNTS = {"a": 10, "b": 3}


def test_finalize_clamps_merges_and_keeps_the_most_confident() -> None:
    ranges = [PageRange("a", 9, 14, 0.5),   # clamped to 9-10
              PageRange("a", 11, 20, 0.9),  # wholly outside: dropped
              PageRange("a", 7, 5, 0.4),    # reversed: 5-7
              PageRange("a", 9, 10, 0.8),   # duplicate of the first after clamping: keeps 0.8, first position
              PageRange("b", 0, 1, None),   # clamped to 1-1, no confidence: ranks last
              PageRange("zzz", 1, 1, 1.0),  # unknown document: dropped
              PageRange(None, 1, 1, 1.0),
              PageRange("a", 2, 2, 0.4)]    # ties with 5-7: emission order
    out = finalize_ranges(ranges, COUNTS, max_citations=3)
    assert out == [PageRange("a", 9, 10, 0.8), PageRange("a", 5, 7, 0.4), PageRange("a", 2, 2, 0.4)]
    assert finalize_ranges(ranges, COUNTS, max_citations=10)[-1] == PageRange("b", 1, 1, None)
    assert finalize_ranges([PageRange("a", 1, 1, "0.7"), PageRange("a", 1, 1, 3)], COUNTS) == [
        PageRange("a", 1, 1, 1.0)]
    assert finalize_ranges([], COUNTS) == []


def test_cited_pages_in_every_accepted_form() -> None:
    def ranges(value, confidence=None):
        return [(s, e, c) for _, s, e, c in parse_cited_pages(value, confidence)]

    assert ranges([[5, 7]], "0.8") == [(5, 7, 0.8)]
    assert ranges("5-7") == [(5, 7, None)]
    assert ranges("pp. 5\u20137, 9 and 11-12", 0.5) == [(5, 7, 0.5), (9, 9, 0.5), (11, 12, 0.5)]
    assert ranges({"pages": [5, 7], "confidence": 0.9}) == [(5, 7, 0.9)]
    assert ranges([{"pages": "5-7", "confidence": "0.35"}, {"start": 2, "end": 3}, {"page": 4}], 0.6) == [
        (5, 7, 0.35), (2, 3, 0.6), (4, 4, 0.6)]
    assert ranges([5, 7]) == [(5, 5, None), (7, 7, None)]  # a flat list: single pages
    assert ranges([[5], [6, "7"], "8"]) == [(5, 5, None), (6, 7, None), (8, 8, None)]
    assert ranges([{"pages": [5, 7], "confidence": 0}], 0.9) == [(5, 7, 0.0)]
    assert ranges(None) == ranges([]) == ranges("none") == ranges(True) == []
    assert parse_cited_pages([{"pages": [1, 2], "document": 2}])[0][0] == 2


def test_refusals() -> None:
    assert is_refusal({}, "I cannot find this in the document.")
    assert is_refusal({}, "The provided pages do not disclose the figure.")
    assert is_refusal({"found": False}, "Revenue was $5m")
    assert is_refusal({}, "")
    assert not is_refusal({}, "Net sales were $1,234 million; the document does not break them down.")
    assert not is_refusal({"cited_pages": [[1, 1]]}, "")


def test_read_pages_then_cite_with_confidence(nav_kb, gateway) -> None:
    gateway.push(json_reply({"tool": "structure", "section_id": "2"}),
                 json_reply({"tool": "pages", "start": 7, "end": 8}),
                 json_reply({"tool": "done", "answer": "The facility matures in 2027.",
                             "cited_pages": ["7-8", [7, 8], {"pages": [40, 50]}, {"pages": [8, 7], "confidence": "0.95"}],
                             "confidence": "0.7"}))
    progress: list = []
    found = run_strategy("pageindex", nav_kb.store, gateway, document_ids=[nav_kb.pdf_id], progress=progress,
                         query="When does the credit facility mature?")
    assert found.details["answer"] == "The facility matures in 2027." and found.details["refused"] is False
    assert found.details["citations"] == [
        {"document_id": nav_kb.pdf_id, "page_start": 7, "page_end": 8, "confidence": 0.95}]
    assert found.confidence == 0.7 and found.hops_taken == 3 and found.reason is None
    assert [(p.section_id, p.unit, p.confidence) for p in found.passages] == [
        (f"{nav_kb.pdf_id}:p7", "page", 0.95), (f"{nav_kb.pdf_id}:p8", "page", 0.95)]
    assert "revolving credit facility matures in 2027" in found.passages[0].text
    assert found.passages[0].path == ["Item 8. Financial Statements", "Note 5 - Debt"]
    assert [m[3] for m in progress] == ["hop 1: structure", "hop 2: pages 7-8", "hop 3: done"]
    system = gateway.requests[0].messages[0]["content"]
    assert "FEWEST page ranges" in system and "ideally ONE" in system and "confidence" in system
    assert "Structure of a section:\n2 Item 8. Financial Statements" in gateway.requests[1].messages[-1]["content"]
    observed = gateway.requests[2].messages[-1]["content"]
    assert observed.startswith("Document 1, pages 7-8 (of 8):\n--- Page 7 ---") and "--- Page 8 ---" in observed


def test_several_ranges_keep_the_top_max_citations(nav_kb, gateway) -> None:
    gateway.push(json_reply({"tool": "done", "answer": "Spread over the report.", "confidence": 0.5,
                             "cited_pages": [{"pages": [1, 1], "confidence": 0.2}, {"pages": [3, 4], "confidence": 0.9},
                                             {"pages": [5, 5]}, {"pages": [3, 4], "confidence": 0.3},
                                             {"pages": [6, 6], "confidence": 0.6}]}))
    found = run_strategy("pageindex", nav_kb.store, gateway, document_ids=[nav_kb.pdf_id], max_cited_ranges=2,
                         limit=2)
    assert [(c["page_start"], c["page_end"], c["confidence"]) for c in found.details["citations"]] == [
        (3, 4, 0.9), (6, 6, 0.6)]
    assert [p.page_start for p in found.passages] == [3, 6]  # limit 2: each citation's first page first


def test_a_refusal_carries_no_citations(nav_kb, gateway) -> None:
    gateway.push(json_reply({"tool": "done", "answer": "I cannot find the CEO's salary in this document.",
                             "cited_pages": [[2, 3]], "confidence": 0.8}))
    found = run_strategy("pageindex", nav_kb.store, gateway, document_ids=[nav_kb.pdf_id])
    assert found.passages == [] and found.details["citations"] == [] and found.details["refused"] is True
    assert "refusal" in found.reason and found.confidence == 0.8


def test_out_of_range_citations_and_page_reads(nav_kb, gateway) -> None:
    gateway.push(json_reply({"tool": "pages", "start": 30, "end": 40}),
                 json_reply({"tool": "pages", "start": 0, "end": 1}),
                 json_reply({"tool": "done", "answer": "On the last page.", "cited_pages": [[99, 120], "0"]}))
    found = run_strategy("pageindex", nav_kb.store, gateway, document_ids=[nav_kb.pdf_id])
    assert "has pages 1-8; pages 30-40 do not exist" in gateway.requests[1].messages[-1]["content"]
    assert "pages 0-1 do not exist" in gateway.requests[2].messages[-1]["content"]  # never clamped to page 1
    assert found.passages == [] and found.details["citations"] == []
    assert "no page that exists" in found.reason and found.confidence is None


def test_a_loop_without_done_returns_the_pages_read(nav_kb, gateway) -> None:
    gateway.push(json_reply({"tool": "pages", "start": 3, "end": 3}), chat_reply("hmm"),
                 json_reply({"tool": "pages", "start": 5, "end": 12}))
    gateway.responder = lambda request: json_reply({"tool": "structure"})
    found = run_strategy("pageindex", nav_kb.store, gateway, document_ids=[nav_kb.pdf_id], max_hops=5,
                         max_pages_per_call=2)
    assert len(gateway.requests) == 5 and found.hops_taken == 5
    assert "did not call done within max_hops=5" in found.reason and found.details["fallback"] is True
    assert "pages 7-8 not shown" in gateway.requests[3].messages[-1]["content"]
    assert found.details["citations"] == []  # the model cited nothing: what it was shown is under "read"
    assert [(c["page_start"], c["page_end"]) for c in found.details["read"]] == [(5, 6), (3, 3)]
    assert "not cited by the model" in found.reason
    assert [p.page_start for p in found.passages] == [5, 6, 3] and found.confidence is None
    assert "last tool call" in gateway.requests[4].messages[-1]["content"]


def test_several_documents_need_a_document_number(nav_kb, gateway) -> None:
    from jsonl_engine.retrieval.navigate.tree import load_tree

    pdf = next(d.index for d in load_tree(nav_kb.store, None, ("approved",)).docs if d.document_id == nav_kb.pdf_id)
    gateway.push(json_reply({"tool": "pages", "start": 1, "end": 1}),
                 json_reply({"tool": "pages", "start": 7, "end": 7, "document": pdf}),
                 json_reply({"tool": "done", "answer": "2027", "cited_pages": [{"pages": [7, 7], "document": str(pdf),
                                                                                 "confidence": 0.9},
                                                                                {"pages": [1, 1], "document": 9}]}))
    found = run_strategy("pageindex", nav_kb.store, gateway)
    assert "Name the document" in gateway.requests[1].messages[-1]["content"]
    assert f"Document {pdf}, pages 7-7 (of 8)" in gateway.requests[2].messages[-1]["content"]
    assert '"document": 1' in gateway.requests[0].messages[0]["content"]
    assert [(p.document_id, p.page_start) for p in found.passages] == [(nav_kb.pdf_id, 7)]
    assert found.details["invented_ids"] == ["document 9"]


def test_no_pages_in_scope_makes_no_call(nav_kb, gateway) -> None:
    found = run_strategy("pageindex", nav_kb.store, gateway, document_ids=[nav_kb.pdf_id], statuses=("draft",))
    assert found.passages == [] and gateway.requests == [] and found.hops_taken == 0


def test_nonsense_ranges_are_refused_and_never_counted_as_read(nav_kb, gateway) -> None:
    """issue 13 #6: start 999, end -5 was swapped and clamped to pages 1-4, then returned as read."""
    gateway.push(json_reply({"tool": "pages", "start": 999, "end": -5}),
                 json_reply({"tool": "pages", "start": 6, "end": 2}),
                 json_reply({"tool": "pages", "start": 7, "end": 50}))
    gateway.responder = lambda request: json_reply({"tool": "structure"})
    found = run_strategy("pageindex", nav_kb.store, gateway, document_ids=[nav_kb.pdf_id], max_hops=4)
    assert "pages 999--5 do not exist" in gateway.requests[1].messages[-1]["content"]
    assert "pages 6-2 do not exist" in gateway.requests[2].messages[-1]["content"]
    assert gateway.requests[3].messages[-1]["content"].startswith("Document 1, pages 7-8 (of 8)")
    assert [(r["page_start"], r["page_end"]) for r in found.details["read"]] == [(7, 8)]
    assert [p.page_start for p in found.passages] == [7, 8] and found.details["citations"] == []
