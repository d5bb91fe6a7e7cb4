"""The SQLite store through either library (store/sqlite/driver.py): APSW when it is installed (the `fast` extra),
else the stdlib's `sqlite3`. One KB file, written through one and read through the other, answers the same: the
same kb.context items with the same scores (APSW's cached BM25 gives bm25()'s scores to the bit)."""

from __future__ import annotations

import pytest

from tests.support.daemon import Daemon

apsw = pytest.importorskip("apsw", reason="APSW is not installed (pip install -e '.[fast]')")

STDLIB = {"JSONL_ENGINE_SQLITE": "stdlib"}
DOCS = ("AMCOR_2023Q2_10Q", "BESTBUY_2024Q2_10Q", "AMCOR_2022_8K_dated-2022-07-01")


def contexts(d: Daemon, questions: list[str], doc_ids: list[str]) -> list[dict]:
    """kb.context for each question corpus-wide, then scoped to each document."""
    out = []
    for q in questions:
        out.append(d.result("kb.context", {"query": q, "limit": 8}))
        for doc in doc_ids:
            out.append(d.result("kb.context", {"query": q, "limit": 8, "document_ids": [doc]}))
    return out


def library(d: Daemon) -> str:
    line = next((x for x in d.stderr.splitlines() if "SQLite" in x and "through" in x), "")
    return line.rsplit("through ", 1)[-1].strip()


def test_a_kb_written_through_sqlite3_answers_the_same_through_apsw(tmp_path, dev_pdfs, dev_questions):
    kb = tmp_path / "kb"
    questions = [q["question"] for q in dev_questions if q["doc_name"] in DOCS]
    assert len(questions) >= 4
    with Daemon(kb, env=STDLIB, args=["--log-level", "info"], timeout=300) as d:
        events = d.request("kb.ingest", {"paths": [str(dev_pdfs / f"{n}.pdf") for n in DOCS]}, timeout=300)
        ingested = [e["data"] for e in events if e["event"] == "result"]
        assert events[-1]["status"] == "ok" and all(r["error"] is None for r in ingested)
        doc_ids = [r["document_id"] for r in ingested]
        through_stdlib = contexts(d, questions, doc_ids)
        assert library(d) == "sqlite3"
    with Daemon(kb, args=["--log-level", "info"]) as d:
        through_apsw = contexts(d, questions, doc_ids)
        assert library(d) == "apsw"
        d.result("kb.remove", {"document_id": doc_ids[-1]})  # a write through APSW, read back through sqlite3
        after_apsw = d.result("kb.documents", {})
    assert sum(len(c["items"]) for c in through_stdlib) > len(through_stdlib)  # answers, not empty lists
    assert through_apsw == through_stdlib
    with Daemon(kb, env=STDLIB) as d:
        assert d.result("kb.documents", {}) == after_apsw
        assert {x["document_id"] for x in after_apsw["documents"]} == set(doc_ids[:2])
