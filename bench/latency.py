"""kb.context latency of this checkout against a baseline checkout, on one existing KB, in the same run.

The dev questions (those whose filing the KB holds) are asked through a daemon of each checkout in turn, scoped to
their filing then corpus-wide (as bench/backends.py measures a step of --scale), the two codes alternated for
--rounds rounds (the order swapped every round: a machine's load drifts). Prints each round's p50/p95 and the
daemon's peak RSS, then per code the range over the rounds and the ratio this/baseline of each round's figures;
and whether every answer (passages: ids, pages, scores) was the same from both codes.

    .venv/bin/python bench/latency.py --kb /path/to/kb --baseline-root DIR [--rounds 3] [--questions N]
    .venv/bin/python bench/latency.py --kb postgresql://... --baseline-root DIR [--rounds 3]
    .venv/bin/python bench/latency.py --ingest 12 --baseline-root DIR [--rounds 3]

`--ingest N` measures ingest instead: the first N shared filings into a new KB by each code in turn (in-process
ingest in a subprocess, as bench/backends.py builds a library), pages/s by wall and by the process's CPU time.

DIR is a checkout made with `git -C <repo> archive <commit> | tar -x -C DIR`. The KB is only read by the codes of
the same schema (--kb may be a PostgreSQL URL: the same rounds on that database). When this checkout's migrations are newer than the baseline's, the baseline would refuse the KB:
`--hide-newer` deletes the newer migrations' records for the baseline's rounds and puts them back after (the
newer tables stay; the older code never reads them): use it on a copy of a KB only.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import time
from pathlib import Path

import orjson
from _common import ROOT, find_dev, load_questions, pct


def _versions(root: Path) -> list[int]:
    """The SQLite migration versions a checkout knows."""
    code = "from jsonl_engine.store.sqlite import migrations as m; print(' '.join(str(x[0]) for x in m.MIGRATIONS))"
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    return [int(v) for v in out.stdout.split()]


def _digest(result: dict) -> str:
    """The whole kb.context result (items in order with their scores and text, routing, budget): it holds no
    timing."""
    return hashlib.sha256(orjson.dumps(result, option=orjson.OPT_SORT_KEYS)).hexdigest()


def cpu_ns(pid: int) -> int:
    """A process's CPU time so far, every thread's, in ns (/proc/<pid>/task/*/schedstat: not the clock ticks of
    /proc/<pid>/stat, too coarse for one request)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
    return total


def run(kb: Path | str, ids: dict[str, str], questions: list[dict], checkout: Path) -> dict:
    """p50/p95 scoped then corpus-wide through one daemon of `checkout` (wall time, and the daemon's CPU time per
    request: what a loaded machine moves far less), its peak RSS, and each answer's digest."""
    from backends import peak_rss_mb

    from tests.support.daemon import Daemon

    out: dict = {"digests": {}}
    with Daemon(kb_dir=kb, timeout=600, cwd=checkout, env={"PYTHONPATH": str(checkout)}) as d:
        t = time.perf_counter()
        d.result("kb.context", {"query": "warm up", "limit": 1})
        out["first_ms"] = (time.perf_counter() - t) * 1000
        for scoped in (True, False):
            times, cpu = [], []
            for q in questions:
                params = {"query": q["question"], "limit": 10}
                if scoped:
                    params["document_ids"] = [ids[q["doc_name"]]]
                c, t = cpu_ns(d.proc.pid), time.perf_counter()
                result = d.result("kb.context", params)
                times.append((time.perf_counter() - t) * 1000)
                cpu.append((cpu_ns(d.proc.pid) - c) / 1e6)
                out["digests"][(scoped, q["financebench_id"])] = _digest(result)
            key = "scoped" if scoped else "corpus"
            out[f"{key}_p50"], out[f"{key}_p95"] = pct(times, 0.5), pct(times, 0.95)
            out[f"{key}_cpu_p50"], out[f"{key}_cpu_p95"] = pct(cpu, 0.5), pct(cpu, 0.95)
            out[f"{key}_times"] = times
        out["rss_mb"] = peak_rss_mb(d.proc.pid)
    return out


_INGEST = """
import json, sys, time
from jsonl_engine.ingest.sync import ingest_paths
from jsonl_engine.store import open_store
store = open_store(sys.argv[1])
c, t = time.process_time(), time.perf_counter()
outcomes = ingest_paths(store, sys.argv[2:])
cpu, wall = time.process_time() - c, time.perf_counter() - t
store.close()
print(json.dumps({"pages": sum(o.pages or 0 for o in outcomes if not o.error), "cpu": cpu, "wall": wall}))
"""


def ingest_rounds(pdfs: list[Path], codes: list[tuple[str, Path]], rounds: int) -> int:
    """Each code ingests `pdfs` into a new KB, alternated for `rounds` rounds; pages/s by wall and CPU time."""
    import json
    import tempfile

    got: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in codes}
    for i in range(rounds):
        for name, root in codes if i % 2 == 0 else codes[::-1]:
            with tempfile.TemporaryDirectory() as tmp:
                out = subprocess.run([sys.executable, "-c", _INGEST, str(Path(tmp) / "kb"), *map(str, pdfs)], cwd=root,
                                     env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}, capture_output=True,
                                     text=True, check=True)
            r = json.loads(out.stdout.splitlines()[-1])
            got[name].append((r["pages"] / r["wall"], r["pages"] / r["cpu"]))
            print(f"round {i + 1} {name:4}: {r['pages']} pages, {r['pages'] / r['wall']:.1f} pages/s "
                  f"({r['pages'] / r['cpu']:.1f} per CPU second) (load {Path('/proc/loadavg').read_text().split()[0]})",
                  flush=True)
    for name, rs in got.items():
        print(f"{name:4} pages/s {min(r[0] for r in rs):.1f}-{max(r[0] for r in rs):.1f}, "
              f"per CPU second {min(r[1] for r in rs):.1f}-{max(r[1] for r in rs):.1f}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kb", help="a SQLite KB directory or a postgresql:// URL")
    ap.add_argument("--ingest", type=int, default=0, help="measure ingest of the first N shared filings instead")
    ap.add_argument("--baseline-root", required=True, type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--questions", type=int, default=0, help="the first N questions (0: all)")
    ap.add_argument("--dev", default=None)
    ap.add_argument("--hide-newer", action="store_true",
                    help="hide this checkout's newer migrations' records from the baseline (a copy of a KB only)")
    ap.add_argument("--only", choices=("base", "this"), default=None, help="measure one code only")
    args = ap.parse_args()

    from tests.support.sql import sqlite_connect

    if args.ingest:
        pdfs = sorted((find_dev(args.dev) / "pdfs").glob("*.pdf"))[:args.ingest]
        return ingest_rounds(pdfs, [("base", args.baseline_root.resolve()), ("this", ROOT)], args.rounds)
    if args.kb is None:
        sys.exit("--kb or --ingest")
    base, this = args.baseline_root.resolve(), ROOT
    kb: Path | str
    if args.kb.startswith("postgresql://"):  # the migrations' check is the daemon's: an older code refuses the KB
        import psycopg

        kb, newer = args.kb, []
        with psycopg.connect(kb) as pg:
            ids = {Path(p).stem: d for d, p in pg.execute("SELECT id, path FROM documents WHERE path IS NOT NULL")}
    else:
        kb = Path(args.kb).resolve()
        conn = sqlite_connect(kb / "kb.sqlite3")
        try:
            ids = {Path(p).stem: d for d, p in conn.execute("SELECT id, path FROM documents WHERE path IS NOT NULL")}
            records = conn.execute("SELECT * FROM schema_migrations").fetchall()
        finally:
            conn.close()
        newer = [r for r in records if r[0] not in set(_versions(base))]
    if newer and not args.hide_newer and args.only != "this":
        sys.exit(f"the KB has migrations {[r[0] for r in newer]} the baseline does not know: --hide-newer (on a copy)")
    questions = [q for q in load_questions(find_dev(args.dev) / "questions.jsonl") if q["doc_name"] in ids]
    if args.questions:
        questions = questions[:args.questions]

    def hide(hidden: bool) -> None:
        if not newer:
            return
        c = sqlite_connect(kb / "kb.sqlite3")
        try:
            for r in newer:
                c.execute("DELETE FROM schema_migrations WHERE version = ?", (r[0],))
                if not hidden:
                    c.execute(f"INSERT INTO schema_migrations VALUES ({','.join('?' * len(r))})", r)
        finally:
            c.close()

    codes = [("base", base), ("this", this)]
    if args.only:
        codes = [c for c in codes if c[0] == args.only]
    results: dict[str, list[dict]] = {name: [] for name, _ in codes}
    try:
        for i in range(args.rounds):
            for name, root in codes if i % 2 == 0 else codes[::-1]:
                hide(name == "base")
                r = run(kb, ids, questions, root)
                results[name].append(r)
                print(f"round {i + 1} {name:4}: scoped p50/p95 {r['scoped_p50']:6.1f}/{r['scoped_p95']:6.1f} ms "
                      f"(CPU {r['scoped_cpu_p50']:5.1f}/{r['scoped_cpu_p95']:5.1f}), corpus-wide "
                      f"{r['corpus_p50']:6.1f}/{r['corpus_p95']:6.1f} ms (CPU {r['corpus_cpu_p50']:5.1f}/"
                      f"{r['corpus_cpu_p95']:5.1f}), first {r['first_ms']:5.0f} ms, peak RSS {r['rss_mb']:4.0f} MB "
                      f"(load {Path('/proc/loadavg').read_text().split()[0]})", flush=True)
    finally:
        hide(False)
    print(f"\n{len(questions)} questions, {len(ids)} documents, kb.context limit 10, {args.rounds} rounds")
    keys = ("scoped_p50", "scoped_p95", "corpus_p50", "corpus_p95", "scoped_cpu_p50", "scoped_cpu_p95",
            "corpus_cpu_p50", "corpus_cpu_p95", "rss_mb")
    for name, rs in results.items():
        print(f"{name:4} " + "  ".join(f"{k} {min(r[k] for r in rs):.1f}-{max(r[k] for r in rs):.1f}" for k in keys))
    if len(results) == 2:
        pairs = list(zip(results["base"], results["this"], strict=True))
        print("this/base per round: " + "  ".join(
            f"{k} " + ",".join(f"{t[k] / b[k]:.2f}" for b, t in pairs) for k in keys))
        differ = sorted({q for b, t in pairs for q in b["digests"] if b["digests"][q] != t["digests"][q]})
        print(f"answers identical: {not differ}" + (f" (differ: {differ[:10]})" if differ else ""))
        return 1 if differ else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
