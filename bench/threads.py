"""Where a daemon's CPU goes per kb.context request, thread by thread: the dev questions asked through a real
daemon (as bench/latency.py `run` does), scoped to their filing then corpus-wide, on each KB given (SQLite
directories and postgresql:// URLs), alternated for --rounds rounds (with --baseline-root, that checkout's daemon
too, in the same rounds).

Per request: each of the daemon's threads' CPU time (/proc/<pid>/task/<tid>/schedstat) from the request's start to
the next one's, so work a request leaves running after its response counts for it; the threads named by their
Python names (bench/_threads/sitecustomize.py, put on the daemon's PYTHONPATH: MainThread, asyncio_0,
retrieval-1, kb-reader-janitor, ...); the garbage collector's CPU time in it (gc.callbacks); for a PostgreSQL KB,
the CPU time of the server processes serving the daemon's connections (read when they are on this machine).
Prints per run the wall and CPU p50/p95, the collector's total and p95, the server's p50/p95, and per thread the
mean/p95/max CPU of a request.

    .venv/bin/python bench/threads.py --kb DIR --kb postgresql://... [--rounds 2] [--baseline-root DIR] [--corpus]
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, document_ids, find_dev, load_questions, pct

SITE = ROOT / "bench" / "_threads"


def _tasks(pid: int, servers: list[int]) -> dict[str, int]:
    """CPU ns so far of each thread of `pid` ("<tid>:<name>") and of each server process ("<pid>:server")."""
    out: dict[str, int] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out[f"{task.name}:{(task / 'comm').read_text().strip()}"] = int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
    for sp in servers:
        try:
            out[f"{sp}:server"] = int(Path(f"/proc/{sp}/schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return out


def _gc_ns(path: Path) -> int:
    try:
        return sum(int(line.split()[1]) for line in path.read_text().splitlines() if line)
    except OSError:
        return 0


def _server_pids(url: str, since: float) -> list[int]:
    """The server processes of connections opened after `since` (epoch seconds) by a jsonl-engine daemon."""
    import psycopg

    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'jsonl-engine' AND datname = current_database()"
            " AND backend_start >= to_timestamp(%s)", (since,))]


def run(kb: str, checkout: Path, questions: list[dict], ids: dict[str, str], corpus: bool, gc_dir: Path) -> dict:
    """One daemon of `checkout` on `kb`: per scope ("scoped", "corpus"), per request wall ms, CPU ms per thread
    name, the collector's ms and the server's ms."""
    from tests.support.daemon import Daemon

    gc_log = gc_dir / "gc"
    started = time.time() - 1
    out: dict = {}
    with Daemon(kb_dir=kb, timeout=600, cwd=checkout,
                env={"PYTHONPATH": f"{checkout}:{SITE}", "BENCH_GC_LOG": str(gc_log)}) as d:
        pid = d.proc.pid
        gc_path = Path(f"{gc_log}.{pid}")
        d.result("kb.context", {"query": "warm up", "limit": 1})
        servers = _server_pids(kb, started) if kb.startswith("postgresql://") else []
        for scoped in (True, False) if corpus else (True,):
            marks, walls = [], []
            for q in questions:
                params = {"query": q["question"], "limit": 10}
                if scoped:
                    params["document_ids"] = [ids[q["doc_name"]]]
                marks.append((_tasks(pid, servers), _gc_ns(gc_path)))
                t = time.perf_counter()
                d.result("kb.context", params)
                walls.append((time.perf_counter() - t) * 1000)
            time.sleep(0.2)  # what the last request left running
            marks.append((_tasks(pid, servers), _gc_ns(gc_path)))
            per: list[dict[str, float]] = []
            for (a, ga), (b, gb) in zip(marks, marks[1:], strict=False):
                threads: dict[str, float] = collections.Counter()
                for key in set(a) | set(b):
                    threads[key.split(":", 1)[1]] += (b.get(key, 0) - a.get(key, 0)) / 1e6
                threads["gc"] = (gb - ga) / 1e6
                per.append(threads)
            out["scoped" if scoped else "corpus"] = {"wall": walls, "per": per}
    return out


def report(label: str, r: dict) -> None:
    for scope, got in r.items():
        per, n = got["per"], len(got["per"])
        cpu = [sum(v for k, v in p.items() if k not in ("server", "gc")) for p in per]
        server = [p.get("server", 0.0) for p in per]
        gcs = [p["gc"] for p in per]
        print(f"{label} {scope}: wall p50/p95 {pct(got['wall'], .5):5.1f}/{pct(got['wall'], .95):5.1f} ms, daemon CPU "
              f"{pct(cpu, .5):5.1f}/{pct(cpu, .95):5.1f}, of it collections {sum(gcs):5.1f} in all (p95 "
              f"{pct(gcs, .95):4.2f}), server CPU {pct(server, .5):4.1f}/{pct(server, .95):4.1f}", flush=True)
        names = {k for p in per for k in p if k not in ("server", "gc")}
        for name in sorted(names, key=lambda k: -sum(p.get(k, 0) for p in per)):
            v = [p.get(name, 0.0) for p in per]
            if sum(v) >= 0.5:
                print(f"    {name:16} mean {sum(v) / n:6.2f}  p95 {pct(v, .95):6.2f}  max {max(v):6.2f} ms")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kb", action="append", required=True, help="a SQLite KB directory or a postgresql:// URL")
    ap.add_argument("--baseline-root", type=Path, default=None, help="also this checkout's daemons, same rounds")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--questions", type=int, default=0, help="the first N questions (0: all)")
    ap.add_argument("--corpus", action="store_true", help="corpus-wide too, after the scoped questions")
    ap.add_argument("--dev", default=None)
    args = ap.parse_args()
    codes = [("this", ROOT)] + ([("base", args.baseline_root.resolve())] if args.baseline_root else [])
    every = load_questions(find_dev(args.dev) / "questions.jsonl")
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.rounds):
            for code, root in codes if i % 2 == 0 else codes[::-1]:
                for kb in args.kb:
                    ids = document_ids(kb)
                    questions = [q for q in every if q["doc_name"] in ids][:args.questions or None]
                    gc_dir = Path(tmp) / f"{i}-{code}"
                    gc_dir.mkdir(exist_ok=True)
                    shown = kb.rsplit("@", 1)[-1] if kb.startswith("postgresql://") else Path(kb).name
                    report(f"round {i + 1} {code} {shown}", run(kb, root, questions, ids, args.corpus, gc_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
