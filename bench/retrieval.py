"""Retrieval benchmark: kb.context on the FinanceBench dev questions, through the daemon.

For every question, kb.context (limit 10) scoped to its document and again across all dev documents.
A hit is an item whose page range contains an evidence page (evidence_page_num is zero-indexed: +1) and
spans at most 2 pages, so a long section cannot score by covering many pages. Reports hit@1/3/5/10,
MRR@10 and round-trip latency p50/p95 per question type, beside the same-run baseline: plain BM25 over
whole pages (one FTS5 table of page texts, default tokenizer, default bm25(), the question's words OR-ed).
The daemon's own CPU time per request (Linux schedstat, all threads) is printed too: unlike round trips it
does not grow when other work on the machine holds the cores.

    .venv/bin/python bench/retrieval.py [--kb bench/out/retrieval-kb | --kb postgresql://...] [--dev ...]

The KB is built once (in-process ingest of the 30 PDFs) and reused while it holds them all; pass
--rebuild after a change to ingest.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import statistics
import time
from pathlib import Path

from _common import ROOT, ensure_kb, find_dev, load_questions, on_evidence, pct

KS = (1, 3, 5, 10)
LIMIT = 10


def first_hit(items: list[tuple[str, int, int]], gold: set[tuple[str, int]]) -> int | None:
    for rank, (doc, start, end) in enumerate(items[:LIMIT], 1):
        if any(d == doc and on_evidence(start, end, page) for d, page in gold):
            return rank
    return None


def metrics(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks) or 1
    out = {f"hit@{k}": sum(1 for r in ranks if r is not None and r <= k) / n for k in KS}
    out["mrr@10"] = sum(1 / r for r in ranks if r is not None and r <= LIMIT) / n
    return out


def cpu_ns(pid: int) -> int | None:
    """CPU time the daemon has used so far, all threads (Linux schedstat; None elsewhere)."""
    total = 0
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            total += int((task / "schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return total


class PageBM25:
    """The baseline: one FTS5 table of page texts with the default tokenizer and default bm25()."""

    def __init__(self, kb: Path | str) -> None:
        from jsonl_engine.store import open_store

        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE p USING fts5(doc UNINDEXED, num UNINDEXED, text)")
        store = open_store(kb)  # either backend: the baseline is always this in-memory FTS5 table
        for doc in store.documents():
            self.db.executemany("INSERT INTO p VALUES (?, ?, ?)", ((doc.document_id, n, text) for n, text in
                                                                    store.page_range(doc.document_id, 1, doc.pages).items()))
        store.close()

    def search(self, question: str, doc: str | None) -> list[tuple[str, int, int]]:
        words = dict.fromkeys(re.findall(r"\w+", question.lower()))
        match = " OR ".join(f'"{w}"' for w in words)
        sql = "SELECT doc, num FROM p WHERE p MATCH ?" + (" AND doc = ?" if doc else "") + \
              " ORDER BY bm25(p) LIMIT ?"
        rows = self.db.execute(sql, (match, doc, LIMIT) if doc else (match, LIMIT)).fetchall()
        return [(d, n, n) for d, n in rows]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kb", default=str(ROOT / "bench" / "out" / "retrieval-kb"))
    ap.add_argument("--dev", default=None)
    ap.add_argument("--json", default=str(ROOT / "bench" / "out" / "retrieval.json"))
    ap.add_argument("--rebuild", action="store_true", help="ingest the PDFs again (after ingest changes)")
    args = ap.parse_args()

    from tests.support.client import engine

    dev = find_dev(args.dev)
    pdfs = sorted((dev / "pdfs").glob("*.pdf"))
    questions = load_questions(dev / "questions.jsonl")
    from jsonl_engine.store import is_url

    kb: Path | str = args.kb if is_url(args.kb) else Path(args.kb)
    if args.rebuild and isinstance(kb, Path) and kb.exists():
        import shutil

        shutil.rmtree(kb)
    ids = ensure_kb(kb, pdfs)
    baseline = PageBM25(kb)

    rows: list[dict] = []
    with engine(kb, timeout=120) as d:
        d.call("kb.context", {"query": "warm up the reader connections", "limit": 1})
        for scoped in (True, False):
            for q in questions:
                doc = ids[q["doc_name"]]
                gold = {(ids[e["doc_name"]], e["evidence_page_num"] + 1) for e in q["evidence"]}
                params = {"query": q["question"], "limit": LIMIT}
                if scoped:
                    params["document_ids"] = [doc]
                c0, t = cpu_ns(d.proc.pid), time.perf_counter()
                data = d.call("kb.context", params)
                rtt = (time.perf_counter() - t) * 1000
                c1 = cpu_ns(d.proc.pid)
                cpu = (c1 - c0) / 1e6 if c0 is not None and c1 is not None else None
                got = [(i["document_id"], i["page_start"], i["page_end"]) for i in data["items"]]
                t = time.perf_counter()
                base = baseline.search(q["question"], doc if scoped else None)
                base_ms = (time.perf_counter() - t) * 1000
                rows.append({"id": q["financebench_id"], "type": q["question_type"], "scoped": scoped,
                             "rank": first_hit(got, gold), "base_rank": first_hit(base, gold),
                             "ms": rtt, "cpu_ms": cpu, "base_ms": base_ms})

    types = sorted({r["type"] for r in rows})
    print(f"kb.context vs page-BM25 baseline on {len(questions)} dev questions "
          f"({len(pdfs)} documents), limit {LIMIT}")
    header = f"{'scope':7} {'type':18} {'n':>3} {'method':9} " + " ".join(f"{'hit@' + str(k):>6}" for k in KS) + \
             f" {'mrr@10':>7} {'p50 ms':>7} {'p95 ms':>7}"
    print(header)
    print("-" * len(header))
    summary: dict = {}
    for scoped in (True, False):
        scope = "doc" if scoped else "corpus"
        for t in [*types, "ALL"]:
            sel = [r for r in rows if r["scoped"] == scoped and (t == "ALL" or r["type"] == t)]
            for method, rank_key, ms_key in (("context", "rank", "ms"), ("page-bm25", "base_rank", "base_ms")):
                m = metrics([r[rank_key] for r in sel])
                lat = [r[ms_key] for r in sel]
                m["p50_ms"], m["p95_ms"] = pct(lat, 0.5), pct(lat, 0.95)
                summary[f"{scope}/{t}/{method}"] = m
                print(f"{scope:7} {t[:18]:18} {len(sel):3d} {method:9} " +
                      " ".join(f"{m[f'hit@{k}']:6.3f}" for k in KS) +
                      f" {m['mrr@10']:7.3f} {m['p50_ms']:7.1f} {m['p95_ms']:7.1f}")
        print()
    doc_gain = summary["doc/ALL/context"]["hit@5"] - summary["doc/ALL/page-bm25"]["hit@5"]
    cor_gain = summary["corpus/ALL/context"]["hit@5"] - summary["corpus/ALL/page-bm25"]["hit@5"]
    print(f"hit@5 gain over page-BM25: document-scoped {doc_gain * 100:+.1f} points, corpus-wide "
          f"{cor_gain * 100:+.1f} points")
    print("latency: kb.context is a daemon round trip (request written -> done read); page-bm25 is an "
          "in-process query on an in-memory table")
    for scoped in (True, False):
        sel = [r for r in rows if r["scoped"] == scoped]
        cpu = [r["cpu_ms"] for r in sel if r["cpu_ms"] is not None]
        line = (f"{'document-scoped' if scoped else 'corpus-wide'} kb.context round trip p50 "
                f"{pct([r['ms'] for r in sel], 0.5):.1f} ms, p95 {pct([r['ms'] for r in sel], 0.95):.1f} ms "
                f"(mean {statistics.mean(r['ms'] for r in sel):.1f} ms)")
        if cpu:
            line += f"; daemon CPU per request p50 {pct(cpu, 0.5):.1f} ms, p95 {pct(cpu, 0.95):.1f} ms"
        print(line)
    print(f"machine load average at the end: {Path('/proc/loadavg').read_text().split()[0] if Path('/proc/loadavg').exists() else '?'}"
          " (round trips include waiting for a core when other work runs)")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
