"""SQLite vs PostgreSQL on the same library: ingest pages/s, kb.context latency p50/p95 (document-scoped and
corpus-wide, through a daemon), and queries per second from 1, 4 and 8 daemons at once on one KB (--daemons).

The library is the 166 filings of ../shared/financebench-dev/pdfs + ../shared/financebench-more/pdfs; the
queries are the dev questions (scoped to their filing, then across the whole library).

    .venv/bin/python bench/backends.py [--pg postgresql://...] [--docs N] [--questions N] [--qps-seconds S]

Without --pg a throwaway PostgreSQL server is started (tests/support/pg.py: Debian's postgresql package) with
fsync off; pass --pg to measure a real server. The SQLite KB and the PostgreSQL database are built once
(in-process ingest, timed) and reused while they hold every filing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import threading
import time
from pathlib import Path

from _common import ROOT, find_dev, load_questions, pct


def library(dev: Path, docs: int | None) -> list[Path]:
    more = dev.parent / "financebench-more" / "pdfs"
    pdfs = sorted((dev / "pdfs").glob("*.pdf")) + (sorted(more.glob("*.pdf")) if more.is_dir() else [])
    return pdfs[:docs] if docs else pdfs


def build(location: Path | str, pdfs: list[Path]) -> tuple[dict[str, str], float | None, int]:
    """Ingest what is missing (in-process); (doc name -> id, pages/s of this ingest or None, total pages)."""
    from jsonl_engine.ingest.sync import ingest_paths
    from jsonl_engine.store import open_store

    store = open_store(location)
    try:
        have = {Path(d.path).stem for d in store.documents() if d.path}
        missing = [str(p) for p in pdfs if p.stem not in have]
        rate = None
        if missing:
            t = time.perf_counter()
            outcomes = ingest_paths(store, missing)
            elapsed = time.perf_counter() - t
            rate = sum(o.pages or 0 for o in outcomes if not o.error) / elapsed
        docs = store.documents()
        return {Path(d.path).stem: d.document_id for d in docs if d.path}, rate, sum(d.pages for d in docs)
    finally:
        store.close()


def latencies(location: Path | str, ids: dict[str, str], questions: list[dict]) -> dict[str, float]:
    from tests.support.daemon import Daemon

    out: dict[str, float] = {}
    with Daemon(kb_dir=location, timeout=300) as d:
        d.result("kb.context", {"query": "warm up", "limit": 1})
        for scoped in (True, False):
            times = []
            for q in questions:
                params = {"query": q["question"], "limit": 10}
                if scoped:
                    params["document_ids"] = [ids[q["doc_name"]]]
                t = time.perf_counter()
                d.result("kb.context", params)
                times.append((time.perf_counter() - t) * 1000)
            key = "scoped" if scoped else "corpus"
            out[f"{key}_p50_ms"], out[f"{key}_p95_ms"] = pct(times, 0.5), pct(times, 0.95)
    return out


def qps(location: Path | str, questions: list[dict], seconds: float, daemons: int = 4) -> float:
    """kb.context corpus-wide, each daemon answering one request at a time, all daemons at once."""
    from tests.support.daemon import Daemon

    with contextlib.ExitStack() as stack:
        ds = [stack.enter_context(Daemon(kb_dir=location, timeout=300)) for _ in range(daemons)]
        for d in ds:
            d.result("kb.context", {"query": "warm up", "limit": 1})
        counts = [0] * daemons
        start = threading.Barrier(daemons)

        def run(i: int) -> None:
            start.wait()
            deadline = time.perf_counter() + seconds
            k = i
            while time.perf_counter() < deadline:
                ds[i].result("kb.context", {"query": questions[k % len(questions)]["question"], "limit": 10})
                counts[i] += 1
                k += daemons

        threads = [threading.Thread(target=run, args=(i,)) for i in range(daemons)]
        t = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        return sum(counts) / (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dev", default=None)
    ap.add_argument("--pg", default=None, help="a PostgreSQL URL (default: start a throwaway server)")
    ap.add_argument("--sqlite-kb", default=str(ROOT / "bench" / "out" / "backends-kb"))
    ap.add_argument("--docs", type=int, default=None, help="only the first N filings (default all 166)")
    ap.add_argument("--questions", type=int, default=None, help="only the first N dev questions")
    ap.add_argument("--qps-seconds", type=float, default=30.0)
    ap.add_argument("--daemons", default="1,4,8", help="daemon counts to measure QPS with (comma-separated)")
    ap.add_argument("--json", default=str(ROOT / "bench" / "out" / "backends.json"))
    args = ap.parse_args()

    dev = find_dev(args.dev)
    pdfs = library(dev, args.docs)
    names = {p.stem for p in pdfs}
    counts = [int(n) for n in args.daemons.split(",")]
    questions = [q for q in load_questions(dev / "questions.jsonl") if q["doc_name"] in names][:args.questions]
    with contextlib.ExitStack() as stack:
        url = args.pg
        if url is None:
            from tests.support.pg import PgServer

            url = stack.enter_context(PgServer()).new_database("backends")
        report: dict[str, dict] = {}
        for backend, location in (("sqlite", Path(args.sqlite_kb)), ("postgresql", url)):
            ids, rate, pages = build(location, pdfs)
            row: dict = {"documents": len(ids), "pages": pages, "ingest_pages_per_s": rate}
            row.update(latencies(location, ids, questions))
            for n in counts:
                row[f"qps_{n}_daemons"] = qps(location, questions, args.qps_seconds, n)
            report[backend] = row
            print(backend, json.dumps(row), flush=True)
    print(f"\n{len(pdfs)} filings, {len(questions)} questions (kb.context limit 10, daemon round trips)")
    print(f"{'backend':11} {'docs':>5} {'pages':>6} {'ingest p/s':>10} {'scoped p50':>10} {'p95':>7} "
          f"{'corpus p50':>10} {'p95':>7}" + "".join(f" {f'QPS x{n}':>7}" for n in counts))
    for backend, r in report.items():
        rate = f"{r['ingest_pages_per_s']:.1f}" if r["ingest_pages_per_s"] else "(reused)"
        print(f"{backend:11} {r['documents']:5d} {r['pages']:6d} {rate:>10} {r['scoped_p50_ms']:10.1f} "
              f"{r['scoped_p95_ms']:7.1f} {r['corpus_p50_ms']:10.1f} {r['corpus_p95_ms']:7.1f}"
              + "".join(f" {r[f'qps_{n}_daemons']:7.1f}" for n in counts))
    print(f"load average at the end: {Path('/proc/loadavg').read_text().split()[0]} (2 shared cores: noisy)")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
