"""kb.ingest throughput through the daemon, beside the same-run raw pdfium floor.

Raw floor: one process, `PdfDocument` -> `get_textpage()` -> `get_text_range()` for every page of every PDF.
Each round runs the floor just before and just after the daemon and compares against their mean: this
machine's speed drifts by several percent within a minute, and bracketing cancels a steady drift.
Daemon: a fresh KB, one `kb.ingest` request for the folder, timed from the request line to its `done`
(extraction in the process pool, tree building, SQLite + FTS writes). Also reported: the engine's CPU
(daemon + pool), the daemon's peak RSS (VmHWM; the pool workers' listed apart), KB size on disk per 1,000
pages, sections per document, median section length, and how much of the FinanceBench gold evidence our
stored page text holds. The target (issue 3) is the daemon's pages/s against the one-process floor's.

    .venv/bin/python bench/ingest.py [--pdfs ../shared/financebench-dev/pdfs] [--workers N] [--rounds 1]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import DEV, children, cpu_s, load_questions


def raw_floor(pdfs: list[Path]) -> tuple[int, float, float]:
    """(pages, wall seconds, CPU seconds of this process)."""
    import pypdfium2 as pdfium

    pages = 0
    cpu0 = time.process_time()
    start = time.perf_counter()
    for path in pdfs:
        doc = pdfium.PdfDocument(str(path))
        for i in range(len(doc)):
            page = doc[i]
            textpage = page.get_textpage()
            textpage.get_text_range()
            textpage.close()
            page.close()
            pages += 1
        doc.close()
    return pages, time.perf_counter() - start, time.process_time() - cpu0


def rss_kb(pid: int, key: str = "VmHWM") -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def descendants(pid: int) -> list[int]:
    out = children(pid)
    return out + [g for child in out for g in descendants(child)]


def busy_s() -> float:
    """CPU seconds all processes on the machine have used so far (from /proc/stat)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(values) - values[3] - values[4]) / os.sysconf("SC_CLK_TCK")


def daemon_ingest(folder: Path, kb: Path, workers: int | None) -> dict:
    """One kb.ingest of the folder; also the engine's CPU seconds (daemon + pool) and everyone else's."""
    from tests.support.client import engine

    env = {"JSONL_ENGINE_WORKERS": str(workers)} if workers else {}
    with engine(kb, env=env, timeout=600) as d:
        d.call("capabilities")
        daemon_pid = d.proc.pid
        daemon_cpu0 = cpu_s(daemon_pid)
        own_cpu0 = time.process_time()  # this bench's own threads read the events: not "other processes"
        busy0 = busy_s()
        start = time.perf_counter()
        request = d.stream("kb.ingest", {"paths": [str(folder)]})
        events = request.events()
        elapsed = time.perf_counter() - start
        busy = busy_s() - busy0
        own_cpu = time.process_time() - own_cpu0
        # The pool (forkserver, its workers) and the resource tracker start with this ingest and live until
        # the daemon exits, so one reading now holds all of their CPU.
        helpers = descendants(daemon_pid)
        daemon_cpu = cpu_s(daemon_pid) - daemon_cpu0
        engine_cpu = daemon_cpu + sum(cpu_s(pid) for pid in helpers)
        results = [e["data"] for e in events if e["event"] == "result"]
        workers = [pid for child in children(daemon_pid) for pid in children(child)]
        worker_hwm = [rss_kb(pid) for pid in workers]
        daemon_hwm = rss_kb(daemon_pid)
        assert request.done and request.done["status"] == "ok", request.done
    return {"elapsed": elapsed, "results": results, "daemon_hwm_kb": daemon_hwm, "worker_hwm_kb": worker_hwm,
            "engine_cpu_s": engine_cpu, "daemon_cpu_s": daemon_cpu,
            "other_cpu_s": max(busy - engine_cpu - own_cpu, 0.0)}


def kb_stats(kb: Path, questions: list[dict]) -> dict:
    from jsonl_engine.ingest.normalize import normalize_text
    from jsonl_engine.store import open_store

    store = open_store(kb)
    docs = store.documents()
    lengths = [len(s.text) for d in docs for s in store.document_sections(d.document_id) if s.text]
    per_doc = [d.sections for d in docs]
    by_name = {Path(d.path).stem: d.document_id for d in docs if d.path}

    def ws(s: str) -> str:
        return re.sub(r"\s+", " ", s).strip()

    def ascii_ws(s: str) -> str:
        return ws(re.sub(r"[^\x00-\x7f]", " ", s))

    def squash(s: str) -> str:
        return re.sub(r"\s+", "", re.sub(r"[^\x00-\x7f]", "", s))

    total = with_text = strict = loose = spaceless = 0
    for q in questions:
        for ev in q["evidence"]:
            doc_id = by_name.get(ev["doc_name"])
            if doc_id is None:
                continue
            total += 1
            page = (doc_id, ev["evidence_page_num"] + 1)
            text = store.page_texts([page]).get(page, "")
            with_text += bool(text.strip())
            gold = normalize_text(ev["evidence_text"])
            strict += ws(gold) in ws(text)
            loose += ascii_ws(gold) in ascii_ws(text)
            spaceless += squash(gold) in squash(text)
    store.close()
    return {"documents": len(docs), "sections": sum(per_doc), "sections_per_doc_mean": statistics.mean(per_doc),
            "sections_per_doc_median": statistics.median(per_doc), "median_section_chars": statistics.median(lengths),
            "p90_section_chars": sorted(lengths)[int(0.9 * (len(lengths) - 1))], "max_section_chars": max(lengths),
            "evidence": {"total": total, "page_has_text": with_text, "found_ws": strict,
                         "found_ws_ascii": loose, "found_spaceless": spaceless}}


def kb_bytes(kb: Path) -> int:
    return sum(p.stat().st_size for p in kb.iterdir() if p.is_file())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pdfs", type=Path, default=DEV / "pdfs")
    parser.add_argument("--questions", type=Path, default=DEV / "questions.jsonl")
    parser.add_argument("--workers", type=int, default=None, help="pool size (default: the daemon's, = cores)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    pdfs = sorted(args.pdfs.glob("*.pdf"))
    if not pdfs:
        print(f"no PDFs in {args.pdfs}", file=sys.stderr)
        return 2
    questions = load_questions(args.questions) if args.questions.exists() else []
    print(f"{len(pdfs)} PDFs from {args.pdfs}; {os.cpu_count()} cores; workers={args.workers or 'default'}")

    rows = []
    for round_no in range(1, args.rounds + 1):
        raw_pages, before_s, before_cpu = raw_floor(pdfs)
        with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
            kb = Path(tmp) / "kb"
            run = daemon_ingest(args.pdfs, kb, args.workers)
            pages = sum(r["pages"] for r in run["results"] if not r["error"])
            errors = [r for r in run["results"] if r["error"]]
            size = kb_bytes(kb)
            stats = kb_stats(kb, questions)
        _pages, after_s, after_cpu = raw_floor(pdfs)
        raw_s, raw_cpu = (before_s + after_s) / 2, (before_cpu + after_cpu) / 2
        raw_rate, rate = raw_pages / raw_s, pages / run["elapsed"]
        rows.append({"round": round_no, "raw_pages": raw_pages, "raw_s": raw_s, "raw_pages_per_s": raw_rate,
                     "raw_s_before": before_s, "raw_s_after": after_s,
                     "ingest_pages": pages, "ingest_s": run["elapsed"], "ingest_pages_per_s": rate,
                     "ratio": rate / raw_rate, "raw_cpu_s": raw_cpu, "engine_cpu_s": run["engine_cpu_s"],
                     "daemon_cpu_s": run["daemon_cpu_s"],
                     "other_cpu_s": run["other_cpu_s"], "daemon_peak_rss_mb": run["daemon_hwm_kb"] / 1024,
                     "worker_peak_rss_mb": [round(k / 1024, 1) for k in run["worker_hwm_kb"]],
                     "kb_mb": size / 1e6, "kb_mb_per_1000_pages": size / 1e6 / pages * 1000,
                     "errors": len(errors), **stats})
        r = rows[-1]
        ev = r["evidence"]
        print(f"round {round_no}")
        print(f"  raw floor (1 process)   {raw_pages:6d} pages in {raw_s:6.2f} s = {raw_rate:7.1f} pages/s"
              f"   (mean of {before_s:.2f} s before and {after_s:.2f} s after the daemon)")
        print(f"  kb.ingest via daemon    {pages:6d} pages in {run['elapsed']:6.2f} s = {rate:7.1f} pages/s"
              f"   ({r['ratio']:.2f}x the raw floor)")
        print(f"  CPU                     raw floor {raw_cpu:.1f} s of {raw_s:.1f} s wall; engine (daemon + pool) "
              f"{r['engine_cpu_s']:.1f} s (daemon {r['daemon_cpu_s']:.1f} s) = {r['engine_cpu_s'] / run['elapsed']:.2f} "
              f"cores over the run; other "
              f"processes {r['other_cpu_s'] / run['elapsed']:.2f} cores (not this bench; when > 0.1, the machine was shared)")
        print(f"  daemon peak RSS         {r['daemon_peak_rss_mb']:.0f} MB (workers: {r['worker_peak_rss_mb']} MB)")
        print(f"  KB on disk              {r['kb_mb']:.1f} MB = {r['kb_mb_per_1000_pages']:.1f} MB per 1,000 pages")
        print(f"  sections                {r['sections']} in {r['documents']} documents: "
              f"{r['sections_per_doc_mean']:.0f} per document (median {r['sections_per_doc_median']:.0f}), "
              f"median {r['median_section_chars']:.0f} chars (p90 {r['p90_section_chars']}, max "
              f"{r['max_section_chars']})")
        if ev["total"]:
            print(f"  gold evidence           {ev['total']} pieces: page has text {ev['page_has_text']}; found "
                  f"{ev['found_ws']} ({ev['found_ws'] / ev['total']:.0%}) after whitespace normalisation, "
                  f"{ev['found_ws_ascii']} ({ev['found_ws_ascii'] / ev['total']:.0%}) also ignoring non-ASCII "
                  f"punctuation, {ev['found_spaceless']} ({ev['found_spaceless'] / ev['total']:.0%}) ignoring "
                  f"all whitespace")
        if errors:
            print(f"  errors: {[(e['path'], e['error']) for e in errors]}")
    if len(rows) > 1:
        ratios = [r["ratio"] for r in rows]
        print(f"ratio over {len(rows)} rounds: median {statistics.median(ratios):.2f}x "
              f"(min {min(ratios):.2f}x, max {max(ratios):.2f}x); engine CPU / floor CPU: median "
              f"{statistics.median(r['engine_cpu_s'] / r['raw_cpu_s'] for r in rows):.2f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
