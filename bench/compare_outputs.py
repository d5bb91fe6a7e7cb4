"""Record the deterministic outputs of the daemon on the FinanceBench dev split, to compare two versions.

Ingests the dev PDFs into a fresh KB through the daemon (kb.ingest, one file at a time so that the rows are
written in a repeatable order), then writes one JSON line per request:
kb.context (lexical; document-scoped and corpus-wide; sections and pages; a tight budget), kb.synthesize
(document-scoped and corpus-wide), kb.documents, kb.outline, kb.read, kb.review, kb.remove, and the four
navigating strategies against a scripted LLM whose replies are a pure function of the prompt (so the prompts,
and what the strategies make of the replies, are compared too). `elapsed_ms` lives in `done` only and
`ingested_at` is a wall-clock time: both are left out.

    .venv/bin/python bench/compare_outputs.py --out /tmp/new_outputs.jsonl [--dev ../shared/financebench-dev]
    diff /tmp/baseline_outputs.jsonl /tmp/new_outputs.jsonl && echo identical

`--kb postgresql://.../empty_db` records the same on the PostgreSQL backend (the database must be empty), to
compare the two backends.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import tempfile
from pathlib import Path
from typing import Any

import orjson
from _common import find_dev, load_questions

LLM_QUESTIONS = 12  # questions also run through each navigating strategy
_ID = re.compile(r"^\s*(\S+) .*\[p\d+", re.M)
_PAGES = re.compile(r"pages? (\d+)")


def _ids(text: str) -> list[str]:
    return [m for m in _ID.findall(text) if not m.startswith("(")]


def responder(request: Any) -> Any:
    """A reply that depends on the messages only: select the first outline ids, navigate twice, then finish."""
    from tests.support.gateway import json_reply

    messages = request.messages
    system = messages[0]["content"] if messages else ""
    first_user = next((m["content"] for m in messages if m["role"] == "user"), "")
    last = messages[-1]["content"] if messages else ""
    turns = sum(1 for m in messages if m["role"] == "assistant")
    ids = _ids(first_user)
    if "navigating its outline" in system:  # agentic
        if turns == 0 and ids:
            return json_reply({"action": "expand", "section_id": ids[0]})
        if turns == 1:
            inner = _ids(last)
            return json_reply({"action": "read", "section_id": (inner or ids or ["x"])[0]})
        return json_reply({"action": "done", "picks": [{"id": i, "confidence": 0.7} for i in ids[:2]]})
    if "reading its pages" in system:  # pageindex
        if turns == 0:
            return json_reply({"tool": "pages", "start": 1, "end": 2})
        return json_reply({"tool": "done", "answer": "scripted", "cited_pages": [[1, 2]], "confidence": 0.6})
    return json_reply({"sections": [{"id": i, "confidence": round(0.9 - 0.1 * n, 2)}
                                    for n, i in enumerate(ids[:3])]})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--dev", default=None)
    ap.add_argument("--kb", default=None, help="an empty PostgreSQL database URL (default: a fresh SQLite KB)")
    args = ap.parse_args()

    from tests.support.daemon import Daemon
    from tests.support.gateway import ScriptedLLM

    dev = find_dev(args.dev)
    questions = load_questions(dev / "questions.jsonl")
    out = open(args.out, "wb")  # noqa: SIM115

    def record(key: str, value: Any) -> None:
        out.write(orjson.dumps({"key": key, "value": value}, option=orjson.OPT_SORT_KEYS) + b"\n")

    with tempfile.TemporaryDirectory() as tmp, ScriptedLLM() as llm:
        llm.responder = responder
        kb = args.kb or Path(tmp) / "kb"
        with Daemon(kb_dir=kb, timeout=600, env=llm.env()) as d:
            def call(key: str, method: str, params: dict[str, Any]) -> Any:
                events = d.request(method, params)
                value = [{k: v for k, v in e.items() if k not in ("id", "elapsed_ms")} for e in events
                         if e["event"] != "progress"]
                record(key, value)
                return value

            ids = {}
            for pdf in sorted((dev / "pdfs").glob("*.pdf")):  # one at a time: rowids (tie order) are repeatable
                ingest = call(f"ingest/{pdf.stem}", "kb.ingest", {"paths": [str(pdf)]})
                ids[pdf.stem] = next(e["data"]["document_id"] for e in ingest if e["event"] == "result")
            docs = d.result("kb.documents", {})["documents"]
            for doc in docs:
                doc.pop("ingested_at", None)
            record("documents", sorted(docs, key=lambda doc: doc["document_id"]))  # listed by ingested_at
            for name in ("3M_2022_10K", "AMCOR_2022_8K_dated-2022-07-01", "PEPSICO_2022_10K"):
                if name not in ids:
                    continue
                tree = call(f"outline/{name}", "kb.outline", {"document_id": ids[name]})
                call(f"outline1/{name}", "kb.outline", {"document_id": ids[name], "max_depth": 1})
                first = tree[0]["data"]["sections"][:3] if tree[0]["event"] == "result" else []
                for node in first + [c for s in first for c in s["children"][:2]]:
                    call(f"read/{node['section_id']}", "kb.read", {"section_id": node["section_id"]})
                call(f"read/{name}/p3", "kb.read", {"document_id": ids[name], "page": 3})
            for q in questions:
                doc = ids[q["doc_name"]]
                qid, text = q["financebench_id"], q["question"]
                call(f"context/doc/{qid}", "kb.context", {"query": text, "limit": 10, "document_ids": [doc]})
                call(f"context/all/{qid}", "kb.context", {"query": text, "limit": 10})
                call(f"context/page/{qid}", "kb.context", {"query": text, "limit": 5, "unit": "page",
                                                           "document_ids": [doc]})
                call(f"context/pageall/{qid}", "kb.context", {"query": text, "limit": 5, "unit": "page"})
                call(f"context/budget/{qid}", "kb.context", {"query": text, "limit": 6, "max_chars": 900,
                                                             "include_text": False})
                call(f"synth/doc/{qid}", "kb.synthesize", {"query": text, "document_ids": [doc], "depth": 5,
                                                           "max_chars": 4000})
                call(f"synth/all/{qid}", "kb.synthesize", {"query": text, "max_chars": 1500})
            for q in questions[:LLM_QUESTIONS]:
                doc = ids[q["doc_name"]]
                for strategy in ("single-pass", "chunked-tree", "agentic", "pageindex"):
                    before = len(llm.requests)
                    call(f"nav/{strategy}/{q['financebench_id']}", "kb.context",
                         {"query": q["question"], "limit": 4, "document_ids": [doc], "strategy": strategy})
                    prompts = sorted(hashlib.sha256(orjson.dumps(r.messages)).hexdigest()[:16]
                                     for r in llm.requests[before:])
                    record(f"prompts/{strategy}/{q['financebench_id']}", prompts)
            target = ids.get("3M_2022_10K")
            if target:
                call("review", "kb.review", {"document_id": target, "status": "contested"})
                call("synth/contested", "kb.synthesize", {"query": "3M capital expenditure 2022",
                                                          "document_ids": [target],
                                                          "statuses": ["approved", "contested"]})
                call("context/contested-out", "kb.context", {"query": "3M capital expenditure 2022"})
                call("remove", "kb.remove", {"document_id": target})
                call("read/removed", "kb.read", {"document_id": target, "page": 1})
                call("context/after-remove", "kb.context", {"query": "3M capital expenditure 2022"})
            call("ingest/text", "kb.ingest", {"text": "# Note\n\nCapital expenditure was $5 million.\n",
                                              "title": "note", "media_type": "text/markdown"})
            call("context/text", "kb.context", {"query": "capital expenditure note"})
    out.close()


if __name__ == "__main__":
    main()
