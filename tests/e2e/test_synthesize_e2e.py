"""kb.synthesize through the daemon: the wire shape (`_meta`), the review gate via kb.review, errors."""

from __future__ import annotations

import re

from tests.support.client import engine, error_of

REPORT = """# Zephyr Airships Annual Report 2031

## Fleet

Zephyr Airships operated 14 airships at the end of fiscal 2031. The fleet flew 2,350 hours during the year.

## Results

| Line item | 2031 | 2030 |
|---|---|---|
| Passenger revenue | 48.2 | 43.0 |

Revenue from passenger flights was $48.2 million in fiscal 2031, up 12% from fiscal 2030.
"""
QUERY = "How many airships did Zephyr operate in fiscal 2031?"


def test_synthesize_over_the_wire_with_review_gate(tmp_path):
    with engine(tmp_path / "kb") as d:
        ingested = d.call("kb.ingest", {"text": REPORT, "title": "Zephyr report", "media_type": "text/markdown",
                                          "status": "draft"})
        doc = ingested["document_id"]

        hidden = d.call("kb.synthesize", {"query": QUERY})
        assert hidden["answer"] == "" and hidden["claims"] == []
        assert hidden["gaps"] == hidden["_meta"]["salient_terms"]
        assert hidden["_meta"]["synthesis_confidence"] == "none"

        d.call("kb.review", {"document_id": doc, "status": "approved"})
        out = d.call("kb.synthesize", {"query": QUERY, "max_chars": 2000})
        assert set(out) == {"answer", "claims", "gaps", "_meta"}
        assert out["_meta"]["synthesis_confidence"] == "high"
        assert out["gaps"] == []
        first = out["claims"][0]
        assert first["text"] == "Zephyr Airships operated 14 airships at the end of fiscal 2031."
        assert set(first) == {"id", "text", "section_id", "document_id", "document_title", "page", "quote_start",
                              "quote_end", "pages", "boxes_status", "table"}
        assert first["table"] is None  # a sentence, not a table row
        assert first["boxes_status"] == "not_pdf" and first["pages"][0]["boxes"] is None  # a text document
        page = d.call("kb.read", {"document_id": first["document_id"], "page": first["pages"][0]["page"]})
        assert page["text"][first["pages"][0]["start"]:first["pages"][0]["end"]] == first["text"]
        assert out["answer"].startswith(f"{first['text']} [{first['id']}]")
        assert re.findall(r"\[(c[0-9a-f]{12})\]", out["answer"]) == [c["id"] for c in out["claims"]]
        section = d.call("kb.read", {"section_id": first["section_id"]})
        assert section["text"][first["quote_start"]:first["quote_end"]] == first["text"]

        again = d.stream("kb.synthesize", {"query": QUERY, "max_chars": 2000}).events()
        assert [e["data"] for e in again if e["event"] == "result"] == [out]  # byte-identical data

        d.call("kb.review", {"document_id": doc, "status": "draft"})
        assert d.call("kb.synthesize", {"query": QUERY})["claims"] == []
        drafted = d.call("kb.synthesize", {"query": QUERY, "statuses": ["approved", "draft"]})
        assert drafted["claims"] and drafted["_meta"]["synthesis_confidence"] == "medium"


def test_synthesize_errors(tmp_path):
    with engine(tmp_path / "kb") as d:
        err = error_of(d, "kb.synthesize", {"query": "revenue", "llm": True})
        assert err["code"] == "llm_unavailable" and "llm=false" in err["message"]
        err = error_of(d, "kb.synthesize", {"query": "revenue", "depth": 0})
        assert err["code"] == "invalid_params" and err["data"]["field"] == "depth"
        err = error_of(d, "kb.synthesize", {"query": "revenue", "statuses": ["published"]})
        assert err["code"] == "invalid_params" and err["data"]["field"].startswith("statuses")
        err = error_of(d, "kb.synthesize", {"query": "revenue", "max_char": 10})
        assert err["code"] == "invalid_params" and err["data"]["field"] == "max_char"
        err = error_of(d, "kb.synthesize", {"query": "revenue", "document_ids": ["0123456789abcdef"]})
        assert err["code"] == "not_found"
