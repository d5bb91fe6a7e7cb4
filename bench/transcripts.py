"""Earnings-call transcripts in a library of filings: do questions naming a company and a quarter find the call?

Twelve transcripts (3 invented companies x 4 quarters, four layouts: tests/support/transcripts.py) and the 30 dev
filings (`../shared/financebench-dev/pdfs`), all under neutral names (`<hash>.pdf`), ingested through the daemon
into a fresh KB. Three questions per call naming the company and the quarter (the CFO's gross margin, the revenue
guidance, a figure from an answer in the Q&A), four in other words than the call's ("paraphrased"), and per company
one on its most recent call naming no quarter ("latest"). For each: corpus-wide kb.context (limit 10) doc@1 (the
first item is from the right call) and the evidence in the top 5 (an item of the right call spanning at most 2
pages that holds the page carrying the answer's figure); the same scoped to the call. Baseline in the same run:
plain Okapi BM25 (k1 1.2, b 0.75) in pure Python over the same page texts (read back from the KB), the question's
words without stopwords; its doc@1 is the document of its first page, its evidence a page carrying the figure.

The transcripts are ours, written for this purpose: a weaker check than real transcripts (see the generator).

    .venv/bin/python bench/transcripts.py [--out bench/out/transcripts]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import shutil
import time
from collections import Counter
from pathlib import Path

from _common import ROOT, find_dev, on_evidence, pct
from library import ingest, neutral

from jsonl_engine.text import STOPWORDS, words

LIMIT = 10
QUARTERS = [(3, 2023), (4, 2023), (1, 2024), (2, 2024)]


class PageBM25:
    """Okapi BM25 over whole pages: (document id, page number) -> text."""

    def __init__(self, pages: dict[tuple[str, int], str], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.keys = list(pages)
        self.tf = [Counter(words(pages[k])) for k in self.keys]
        self.len = [sum(c.values()) for c in self.tf]
        self.avg = sum(self.len) / max(1, len(self.len))
        df: Counter[str] = Counter()
        for c in self.tf:
            df.update(c.keys())
        n = len(self.keys)
        self.idf = {w: math.log(1 + (n - k + 0.5) / (k + 0.5)) for w, k in df.items()}

    def search(self, query: str, limit: int, document: str | None = None) -> list[tuple[str, int]]:
        terms = [w for w in dict.fromkeys(words(query)) if w not in STOPWORDS and w in self.idf]
        scored = []
        for i, key in enumerate(self.keys):
            if document is not None and key[0] != document:
                continue
            tf, norm = self.tf[i], self.k1 * (1 - self.b + self.b * self.len[i] / self.avg)
            score = sum(self.idf[w] * tf[w] * (self.k1 + 1) / (tf[w] + norm) for w in terms if w in tf)
            if score > 0:
                scored.append((-score, key))
        return [key for _s, key in sorted(scored)[:limit]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "transcripts"))
    ap.add_argument("--dev", default=None)
    args = ap.parse_args()

    from jsonl_engine.store import open_store
    from tests.support import transcripts as gen
    from tests.support.daemon import Daemon

    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    folder = out / "pdfs"
    folder.mkdir(parents=True)
    calls = gen.library(gen.staff(), QUARTERS)
    ids: dict[int, str] = {}
    for k, call in enumerate(calls):
        path = gen.write(call, out / "calls" / f"{call.company.ticker}-Q{call.quarter}-{call.fiscal_year}.pdf")
        ids[k] = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        shutil.copyfile(path, folder / neutral(path.name))
    for pdf in sorted((find_dev(args.dev) / "pdfs").glob("*.pdf")):
        shutil.copyfile(pdf, folder / neutral(pdf.name))

    kb = out / "kb"
    rows = []
    with Daemon(kb_dir=kb, timeout=600) as d:
        seconds, pages_written, docs_written = ingest(d, folder)
        titles = {x["document_id"]: x["title"] for x in d.result("kb.documents", {})["documents"]}
        d.result("kb.context", {"query": "warm up the reader connections", "limit": 1})
        index = {id(call): k for k, call in enumerate(calls)}
        asked = [("company+quarter", k, q) for k, call in enumerate(calls) for q in gen.questions(call)]
        asked += [("paraphrased", k, q) for k, call in enumerate(calls) for q in gen.paraphrases(call)]
        asked += [("latest", index[id(call)], q) for call, q in gen.latest_questions(calls)]
        for group, k, q in asked:
            row = {"group": group, "question": q["question"], "doc": ids[k], "answer": q["answer"]}
            for scoped in (False, True):
                params = {"query": q["question"], "limit": LIMIT} | ({"document_ids": [ids[k]]} if scoped else {})
                t = time.perf_counter()
                row["scoped" if scoped else "corpus"] = d.result("kb.context", params)["items"]
                row[("scoped" if scoped else "corpus") + "_ms"] = (time.perf_counter() - t) * 1000
            rows.append(row)
    store = open_store(kb)
    try:
        texts = {}
        for doc in store.documents():
            for number, text in store.page_range(doc.document_id, 1, doc.pages).items():
                texts[(doc.document_id, number)] = text
    finally:
        store.close()
    baseline = PageBM25(texts)

    def gold(row: dict) -> set[int]:
        return {n for (doc, n), text in texts.items() if doc == row["doc"] and row["answer"] in " ".join(text.split())}

    def engine_hit(items: list[dict], row: dict, k: int) -> bool:
        pages = gold(row)
        return any(i["document_id"] == row["doc"] and any(on_evidence(i["page_start"], i["page_end"], p) for p in pages)
                   for i in items[:k])

    missing_gold = sum(1 for r in rows if not gold(r))
    corpus = [baseline.search(r["question"], LIMIT) for r in rows]
    scoped = [baseline.search(r["question"], LIMIT, r["doc"]) for r in rows]
    for r, c, s in zip(rows, corpus, scoped, strict=True):
        pages = gold(r)
        r["engine"] = {"doc@1": bool(r["corpus"]) and r["corpus"][0]["document_id"] == r["doc"],
                       "ev@5": engine_hit(r["corpus"], r, 5), "sc.ev@5": engine_hit(r["scoped"], r, 5),
                       "sc.ev@3": engine_hit(r["scoped"], r, 3)}
        r["page-bm25"] = {"doc@1": bool(c) and c[0][0] == r["doc"],
                          "ev@5": any(key[0] == r["doc"] and key[1] in pages for key in c[:5]),
                          "sc.ev@5": any(key[1] in pages for key in s[:5]), "sc.ev@3": any(key[1] in pages for key in s[:3])}
    columns = ("doc@1", "ev@5", "sc.ev@5", "sc.ev@3")
    figures: dict[str, dict[str, float]] = {}
    call_titles = [titles[ids[k]] for k in range(len(calls))]
    print(f"transcripts: {len(calls)} generated calls (3 companies x 4 quarters, 4 layouts) + dev filings, "
          f"{len(titles)} documents, {len(texts)} pages; ingest {seconds:.1f}s "
          f"({pages_written} pages, {docs_written} documents)")
    print(f"{len(rows)} questions; kb.context limit {LIMIT}; gold pages missing for {missing_gold}")
    header = f"{'questions':16} {'n':>3} {'method':10} " + " ".join(f"{c:>8}" for c in columns)
    print(header)
    print("-" * len(header))
    for group in dict.fromkeys(r["group"] for r in rows):
        chosen = [r for r in rows if r["group"] == group]
        for method in ("engine", "page-bm25"):
            f = {c: sum(r[method][c] for r in chosen) / len(chosen) for c in columns}
            figures[f"{group}/{method}"] = f
            print(f"{group:16} {len(chosen):3d} {method:10} " + " ".join(f"{f[c]:8.3f}" for c in columns))
    print(f"kb.context p50/p95 {pct([r['corpus_ms'] for r in rows], 0.5):.1f}/"
          f"{pct([r['corpus_ms'] for r in rows], 0.95):.1f} ms (corpus), "
          f"{pct([r['scoped_ms'] for r in rows], 0.5):.1f}/{pct([r['scoped_ms'] for r in rows], 0.95):.1f} ms (scoped)")
    print(f"distinct call titles: {len(set(call_titles))} of {len(call_titles)}; e.g. {call_titles[0]!r}")
    print(f"documents titled as transcripts: {sum('earnings call transcript' in t for t in titles.values())} "
          f"(of {len(calls)} calls and {len(titles) - len(calls)} filings)")
    for r in [r for r in rows if not r["engine"]["doc@1"]][:8]:
        print(f"  doc miss: {r['question']} -> {r['corpus'][0]['document_title'] if r['corpus'] else None}")
    for r in [r for r in rows if not r["engine"]["sc.ev@3"]][:8]:
        print(f"  scoped top-3 miss: {r['question']} -> {[i['title'] for i in r['scoped'][:3]]}")
    (out / "transcripts.json").write_text(json.dumps({"figures": figures, "titles": call_titles}, indent=1))


if __name__ == "__main__":
    main()
