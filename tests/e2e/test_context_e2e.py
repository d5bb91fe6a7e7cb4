"""kb.context through the real daemon: result shape, budgets, determinism, params errors, scope, units."""

from __future__ import annotations

import orjson
import pytest

from jsonl_engine.client import Client
from tests.conftest import BACKENDS
from tests.support.client import engine, error_of

ITEM_KEYS = {"section_id", "document_id", "document_title", "title", "path", "page_start", "page_end", "score",
             "text", "snippet", "confidence"}

REPORT = "# Borealis Freight 2021 Annual Report\n\n" + "".join(
    f"## Section {i}: {topic}\n\n" + " ".join(
        f"Sentence {j} about {topic} at Borealis, where fleet capacity and diesel costs shaped results in 2021."
        for j in range(1, 14)) + "\n\n"
    for i, topic in enumerate(("Revenue", "Fleet", "Fuel", "Legal Proceedings", "Liquidity", "Outlook"), 1))
OTHER = ("# Northwind Bakeries 2022 Review\n\n## Revenue\n\nNet sales of bread rose to $812 million in FY2022.\n\n"
         "## Ovens\n\nCapital expenditure on ovens was $41 million.\n")


@pytest.fixture(scope="module", params=BACKENDS)
def daemon(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    kb = tmp_path_factory.mktemp("context_kb") if request.param == "sqlite" else \
        request.getfixturevalue("pg_server").new_database()
    with engine(kb) as d:
        ids = {}
        for title, text in (("borealis", REPORT), ("northwind", OTHER)):
            out = [e["data"] for e in d.stream("kb.ingest", {"text": text, "title": title,
                                                              "media_type": "text/markdown"}).events()
                   if e["event"] == "result"]
            assert out and out[0]["error"] is None, out
            ids[title] = out[0]["document_id"]
        d.ids = ids  # type: ignore[attr-defined]
        yield d
        assert not d.unrouted


def test_result_shape_and_ranking(daemon: Client) -> None:
    data = daemon.call("kb.context", {"query": "diesel fuel costs", "limit": 3})
    assert set(data) == {"query", "strategy", "items", "budget", "reason", "hops_taken", "usage", "confidence",
                         "routed", "warnings"}
    assert data["query"] == "diesel fuel costs" and data["strategy"] == "lexical" and data["reason"] is None
    assert data["warnings"] == []
    assert data["budget"] == {"max_chars": None, "used_chars": sum(len(i["text"]) for i in data["items"]),
                              "truncated": False, "omitted": 0}
    assert 1 <= len(data["items"]) <= 3
    top = data["items"][0]
    assert set(top) >= ITEM_KEYS and top["title"] == "Section 3: Fuel"
    assert top["document_id"] == daemon.ids["borealis"]  # type: ignore[attr-defined]
    assert top["path"] == ["Borealis Freight 2021 Annual Report"] and top["page_start"] == top["page_end"] == 1
    assert "diesel" in top["snippet"].lower()
    scores = [i["score"] for i in data["items"]]
    assert scores == sorted(scores, reverse=True)


def test_identical_requests_give_byte_identical_data(daemon: Client) -> None:
    params = {"query": "Borealis revenue 2021 fleet capacity", "limit": 6, "max_chars": 2500}
    first = daemon.call("kb.context", params)
    second = daemon.call("kb.context", params)
    assert orjson.dumps(first) == orjson.dumps(second)


def test_budget_clips_then_drops(daemon: Client) -> None:
    data = daemon.call("kb.context", {"query": "Borealis fleet fuel revenue liquidity", "limit": 6,
                                        "max_chars": 1500})
    budget = data["budget"]
    assert budget["max_chars"] == 1500 and budget["used_chars"] <= 1500 and budget["truncated"]
    assert budget["used_chars"] == sum(len(i["text"]) for i in data["items"])
    assert budget["omitted"] >= 1 and "max_chars=1500" in data["reason"]
    full = {i["section_id"]: i["text"] for i in daemon.call("kb.context", {"query": "Borealis fleet fuel revenue "
                                                                             "liquidity", "limit": 6})["items"]}
    clipped = [i for i in data["items"] if i["text"] != full[i["section_id"]]]
    assert len(clipped) <= 1 and all(len(i["text"]) >= 200 for i in clipped)  # never cut below useful
    for item in data["items"]:
        assert full[item["section_id"]].startswith(item["text"])  # a prefix: offsets stay valid
    tokens = daemon.call("kb.context", {"query": "Borealis fleet", "limit": 6, "max_tokens": 100,
                                          "max_chars": 5000})
    assert tokens["budget"]["max_chars"] == 400 and tokens["budget"]["used_chars"] <= 400


def test_snippets_only(daemon: Client) -> None:
    data = daemon.call("kb.context", {"query": "ovens capital expenditure", "include_text": False})
    assert data["items"] and all(i["text"] is None and i["snippet"] for i in data["items"])
    assert data["items"][0]["document_id"] == daemon.ids["northwind"]  # type: ignore[attr-defined]
    assert data["budget"]["used_chars"] == sum(len(i["snippet"]) for i in data["items"])


def test_scope_statuses_and_units(daemon: Client) -> None:
    ids = daemon.ids  # type: ignore[attr-defined]
    data = daemon.call("kb.context", {"query": "revenue net sales", "document_ids": [ids["northwind"]]})
    assert {i["document_id"] for i in data["items"]} == {ids["northwind"]}
    none = daemon.call("kb.context", {"query": "revenue", "statuses": ["draft"]})
    assert none["items"] == [] and "status" in none["reason"]
    pages = daemon.call("kb.context", {"query": "bread net sales", "unit": "page", "limit": 2})
    top = pages["items"][0]
    assert top["section_id"] == f"{ids['northwind']}:p1" and top["title"] == "Page 1"
    assert top["page_start"] == top["page_end"] == 1 and "Net sales of bread" in top["text"]


@pytest.mark.parametrize("query", ['NEAR(', '"', "*", "-", "!!! ???", "a OR b AND NOT", "🚀" * 50,
                                   "x" * 10_000, "日本語", "{title}: ^start"])
def test_hostile_queries_answer_with_a_reason(daemon: Client, query: str) -> None:
    data = daemon.call("kb.context", {"query": query})
    assert data["items"] == [] or data["items"][0]["section_id"]
    if not data["items"]:
        assert data["reason"]


@pytest.mark.parametrize(("params", "field"), [
    ({}, "query"), ({"query": ""}, "query"), ({"query": "   "}, "query"), ({"query": "x", "limit": 0}, "limit"),
    ({"query": "x", "limit": 101}, "limit"), ({"query": "x", "max_chars": 0}, "max_chars"),
    ({"query": "x", "max_tokens": -1}, "max_tokens"), ({"query": "x", "statuses": []}, "statuses"),
    ({"query": "x", "statuses": ["gone"]}, "statuses.0"), ({"query": "x", "unit": "chapter"}, "unit"),
    ({"query": "x", "strategy": "telepathy"}, "strategy"), ({"query": "x", "colour": "red"}, "colour"),
])
def test_invalid_params_name_the_field(daemon: Client, params: dict, field: str) -> None:
    error = error_of(daemon, "kb.context", params)
    assert error["code"] == "invalid_params" and error["data"]["field"] == field, error


def test_unknown_document_is_not_found(daemon: Client) -> None:
    error = error_of(daemon, "kb.context", {"query": "revenue", "document_ids": ["ffffffffffffffff"]})
    assert error["code"] == "not_found" and "ffffffffffffffff" in error["message"]


def test_capabilities_lists_the_strategy(daemon: Client) -> None:
    caps = daemon.call("capabilities")
    assert "lexical" in caps["strategies"]
    assert any(m["name"] == "kb.context" for m in caps["methods"])
