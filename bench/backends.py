"""SQLite vs PostgreSQL on the same library: ingest pages/s, kb.context latency p50/p95 (document-scoped and
corpus-wide, through a daemon), and queries per second from 1, 4 and 8 daemons at once on one KB (--daemons).

The library is the 166 filings of ../shared/financebench-dev/pdfs + ../shared/financebench-more/pdfs; the
queries are the dev questions (scoped to their filing, then across the whole library).

    .venv/bin/python bench/backends.py [--pg postgresql://...] [--docs N] [--questions N] [--qps-seconds S]
    .venv/bin/python bench/backends.py --scale 10 [--qps-seconds 0]
    .venv/bin/python bench/backends.py --measure-only --sqlite-kb DIR --pg URL [--rounds 3] [--baseline-root DIR]

`--scale N` grows the library to N times the filings in steps (1x, 3x, 10x, up to N), each step adding synthetic
variants of every filing (bench/synthetic.py: the filing's own pages, its text layer's digits and years changed,
"synthetic" in the name and the metadata; made once into bench/out/synthetic/), and prints per backend and step:
the ingest pages/s of the step's new documents (in a subprocess, with its peak RSS), the KB size per page,
scoped/corpus-wide kb.context p50/p95 and the querying daemon's peak RSS (VmHWM), with the ratios to 1x and
PostgreSQL's to SQLite's. SQLite is built and measured through every step first, then PostgreSQL.

Without --pg a throwaway PostgreSQL server is started (tests/support/pg.py: Debian's postgresql package) with
fsync off and the settings a team would give a server holding this library (SERVER_SETTINGS: shared_buffers
sized to hold the postings table and the rows a query reads, 1 GB per 1x of the library up to a quarter of the
RAM, instead of the stock 128 MB; effective_cache_size); `--pg-stock` starts it with the stock 128 MB instead.
Pass --pg to measure a real server. The SQLite KB and the PostgreSQL database are built once (in-process ingest,
timed, then VACUUM ANALYZE as after any bulk load: autovacuum would do it in the middle of the measurements) and
reused while they hold every filing.

`--measure-only` builds nothing: the KBs given (the SQLite directory as given, no -scaleN suffix; the --pg
database) are measured as they are, scoped/corpus-wide kb.context p50/p95 and the daemon's peak RSS, the backends
alternated for --rounds rounds (the order swapped every round: a machine's load drifts), then each backend's range
and the postgresql/sqlite ratio of each round's figures; with --baseline-root, each round also runs that
checkout's daemons on both KBs (same schema; --baseline-pg: a copy of the database at the baseline's schema),
and the answers of both codes are compared (--baseline-sqlite-kb: a copy of the SQLite KB at the baseline's schema,
as --baseline-pg).

The QPS phase (--daemons 1,4,8: that many daemons per contender, each answering one kb.context at a time,
corpus-wide) starts every contender's daemons at once (sqlite and postgresql; with --baseline-root, each also
served by the baseline's code) and runs --qps-rounds cold rounds, then as many warm ones, the contenders in turn
in each round, their order reversed every other round: a machine's load drifts, and a ratio of two runs minutes
apart measured the drift. Cold round r: every daemon asks each question of the r-th slice of the questions once
(none of the daemons has been asked them: fixed work, what a question new to the daemons costs); warm round: for
--qps-seconds / --qps-rounds, each daemon asks from all the questions (all asked before: a long-running
daemon's memos and postings cache in use). A single timed window mixed the two in a proportion set by how many
queries the daemons got through, so by the machine's load. It prints per contender the median QPS over the
rounds (and the range) and the CPU time per query, the daemons' and the PostgreSQL server processes' (the
throwaway server's, or a --pg server's on this machine): a count of work done that the load moves far less than
QPS; and per pair the median of the same rounds' QPS ratios and the ratio of CPU per query (what the QPS ratio
is when the daemons and the server have the CPU to themselves). On 2 cores a PostgreSQL query also waits for its
server process to be scheduled at each round trip, which a loaded machine makes long: the QPS ratio falls
below the CPU ratio as the load rises.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from _common import ROOT, children, cpu_s, document_ids, find_dev, load_questions, pct


def server_settings(scale: int) -> dict[str, str]:
    """The throwaway server's settings (module docstring): shared_buffers 1 GB per 1x of the library (its postings
    table is ~380 MB at 1x, the database ~800 MB), at most a quarter of the RAM; the planner told of the OS cache."""
    ram_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1 << 20)
    shared = max(128, min(1024 * scale, ram_mb // 4))
    return {"shared_buffers": f"{shared}MB", "effective_cache_size": f"{max(shared, ram_mb // 2)}MB"}


def library(dev: Path, docs: int | None) -> list[Path]:
    more = dev.parent / "financebench-more" / "pdfs"
    pdfs = sorted((dev / "pdfs").glob("*.pdf")) + (sorted(more.glob("*.pdf")) if more.is_dir() else [])
    return pdfs[:docs] if docs else pdfs


def build(location: Path | str, pdfs: list[Path],
          stats: dict | None = None) -> tuple[dict[str, str], float | None, int]:
    """Ingest what is missing (in-process); (doc name -> id, pages/s of this ingest or None, total pages). `stats`,
    when given, gets the timed ingest's pages, seconds and this process's CPU seconds (user + system)."""
    from jsonl_engine.ingest.sync import ingest_paths
    from jsonl_engine.store import open_store

    store = open_store(location)
    try:
        have = {Path(d.path).stem for d in store.documents() if d.path}
        missing = [str(p) for p in pdfs if p.stem not in have]
        rate = None
        if missing:
            server0 = _backends_cpu(location) if stats is not None and isinstance(location, str) else None
            t, cpu, queued = time.perf_counter(), time.process_time(), _queued_s("thread-self")
            outcomes = ingest_paths(store, missing)
            elapsed = time.perf_counter() - t
            ingested = sum(o.pages or 0 for o in outcomes if not o.error)
            rate = ingested / elapsed
            if stats is not None:
                stats.update(ingested_pages=ingested, elapsed_s=elapsed, cpu_s=time.process_time() - cpu,
                             queued_s=_queued_s("thread-self") - queued)
                if server0 is not None:
                    server1 = _backends_cpu(location) or {}
                    zero = (0.0, 0.0)
                    stats["server_cpu_s"] = sum(c - server0.get(pid, zero)[0] for pid, (c, _q) in server1.items())
                    stats["server_queued_s"] = sum(q - server0.get(pid, zero)[1] for pid, (_c, q) in server1.items())
            if isinstance(location, str):  # after a bulk load, as a team would (not timed)
                import psycopg

                with psycopg.connect(location, autocommit=True) as conn:
                    conn.execute("VACUUM ANALYZE")
        docs = store.documents()
        return {Path(d.path).stem: d.document_id for d in docs if d.path}, rate, sum(d.pages for d in docs)
    finally:
        store.close()


def _queued_s(task: str) -> float:
    """Seconds a task (`thread-self`, a pid) has so far waited runnable for a CPU (/proc/.../schedstat): the time
    the machine's other load took from it; 0 when unknown."""
    try:
        return int(Path(f"/proc/{task}/schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def _backends_cpu(url: str) -> dict[int, tuple[float, float]] | None:
    """CPU seconds so far and seconds waited runnable (`_queued_s`) of the server processes connected to `url`'s
    database (its backends and autovacuum workers), by pid, when the server runs on this machine; else None. A
    backend that exits between two readings is not counted."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        pids = [r[0] for r in conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                                           "AND pid <> pg_backend_pid()")]
    try:
        if pids and b"postgres" not in Path(f"/proc/{pids[0]}/cmdline").read_bytes():
            return None
    except OSError:
        return None
    return {pid: (cpu_s(pid), _queued_s(str(pid))) for pid in pids}


def build_apart(location: Path | str, pdfs: list[Path],
                stats: dict | None = None) -> tuple[dict[str, str], float | None, int, float]:
    """build() in a subprocess of its own: (as build, the ingest process's peak RSS in MB); `stats` as build's."""
    out = subprocess.run([sys.executable, __file__, "--ingest-worker", str(location)],
                         input="\n".join(map(str, pdfs)), capture_output=True, text=True, check=False)
    if out.returncode:
        sys.exit(f"ingest failed:\n{out.stderr[-4000:]}")
    r = json.loads(out.stdout.splitlines()[-1])
    if stats is not None:
        stats.update(r.get("stats", {}))
    return r["ids"], r["rate"], r["pages"], r["peak_rss_mb"]


def ingest_worker(location: str) -> None:
    where: Path | str = location if location.startswith("postgresql://") else Path(location)  # build() tells by type
    stats: dict = {}
    ids, rate, pages = build(where, [Path(line) for line in sys.stdin.read().splitlines() if line], stats)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"ids": ids, "rate": rate, "pages": pages, "peak_rss_mb": peak, "stats": stats}))


def kb_bytes(location: Path | str) -> int:
    """The KB's size on disk: the SQLite directory's files, or the PostgreSQL database's."""
    if isinstance(location, Path):
        return sum(f.stat().st_size for f in location.rglob("*") if f.is_file())
    import psycopg

    with psycopg.connect(location) as conn:
        return conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]


def peak_rss_mb(pid: int) -> float:
    """A running process's peak resident set (VmHWM), MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def latencies(location: Path | str, ids: dict[str, str], questions: list[dict],
              checkout: Path | None = None) -> dict[str, float]:
    """kb.context p50/p95 scoped then corpus-wide through a daemon (of another `checkout`'s code when given)."""
    from tests.support.daemon import Daemon

    out: dict[str, float] = {}
    with Daemon(kb_dir=location, timeout=300, cwd=checkout) as d:  # `python -m jsonl_engine` runs the cwd's code
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
        out["daemon_peak_rss_mb"] = peak_rss_mb(d.proc.pid)
    return out


def qps(location: Path | str, questions: list[dict], seconds: float, daemons: int = 4,
        server_pid: int | None = None, root: Path | None = None) -> tuple[float, float, float | None]:
    """kb.context corpus-wide, each daemon answering one request at a time, all daemons at once: (queries per
    second, the daemons' CPU ms per query, the server's (the processes under `server_pid`) CPU ms per query).
    With `root`, the daemons run the code of that checkout (--baseline-root)."""
    from tests.support.daemon import Daemon

    code = {"env": {"PYTHONPATH": str(root)}, "cwd": root} if root else {}

    with contextlib.ExitStack() as stack:
        ds = [stack.enter_context(Daemon(kb_dir=location, timeout=300, **code)) for _ in range(daemons)]
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
        server = children(server_pid) if server_pid else []
        cpu0 = [cpu_s(d.proc.pid) for d in ds], {p: cpu_s(p) for p in server}
        t = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        elapsed = time.perf_counter() - t
        done = max(1, sum(counts))
        daemon_ms = 1000 * (sum(cpu_s(d.proc.pid) for d in ds) - sum(cpu0[0])) / done
        server_ms = None
        if server_pid:  # the backends of this run's daemons started after cpu0: they count from 0
            server_ms = 1000 * sum(cpu_s(p) - cpu0[1].get(p, 0.0) for p in children(server_pid)) / done
        return sum(counts) / elapsed, daemon_ms, server_ms


class Fleet:
    """`n` daemons of one contender of the QPS phase: a backend's KB served by this code or by --baseline-root's,
    the PostgreSQL server's processes (its postmaster's children) counted with them when `server_pid` is given."""

    def __init__(self, stack: contextlib.ExitStack, label: str, location: Path | str, n: int,
                 root: Path | None, server_pid: int | None) -> None:
        from tests.support.daemon import Daemon

        code = {"env": {"PYTHONPATH": str(root)}, "cwd": root} if root else {}
        self.label, self.server_pid = label, server_pid
        self.ds = [stack.enter_context(Daemon(kb_dir=location, timeout=300, **code)) for _ in range(n)]
        for d in self.ds:
            d.result("kb.context", {"query": "warm up", "limit": 1})

    def cpu(self) -> tuple[float, dict[int, float]]:
        return sum(cpu_s(d.proc.pid) for d in self.ds), {p: cpu_s(p) for p in children(self.server_pid or 0)}

    def ask(self, questions: list[dict], seconds: float | None) -> dict[str, float]:
        """Every daemon asks kb.context corpus-wide, one request at a time, all at once, each from its own place
        in the questions: for `seconds`, or (None) each the whole list once (a fixed amount of work). Queries per
        second, and CPU ms per query of the daemons and of the server's processes (None without a server)."""
        n, total = len(self.ds), len(questions)
        counts = [0] * n
        start = threading.Barrier(n + 1)

        def run(i: int) -> None:
            start.wait()
            deadline = None if seconds is None else time.perf_counter() + seconds
            k = i * total // n
            while counts[i] < total if deadline is None else time.perf_counter() < deadline:
                self.ds[i].result("kb.context", {"query": questions[k % total]["question"], "limit": 10})
                counts[i] += 1
                k += 1

        threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
        for th in threads:
            th.start()
        daemons0, server0 = self.cpu()
        start.wait()
        t = time.perf_counter()
        for th in threads:
            th.join()
        elapsed = time.perf_counter() - t
        daemons1, server1 = self.cpu()
        done = max(1, sum(counts))
        server = None
        if self.server_pid:
            server = 1000 * sum(c - server0.get(p, 0.0) for p, c in server1.items()) / done
        return {"qps": sum(counts) / elapsed, "daemon_cpu_ms": 1000 * (daemons1 - daemons0) / done,
                "server_cpu_ms": server}


def qps_rounds(contenders: list[tuple[str, Path | str, Path | None, int | None]], questions: list[dict],
               n: int, seconds: float, rounds: int) -> dict[str, dict]:
    """The QPS phase for `n` daemons: every contender's daemons (label, KB, code root, server pid) started at
    once, then `rounds` cold rounds and `rounds` warm rounds, the contenders in turn in each, their order reversed
    every other round (a machine's load drifts). Cold round r: every daemon asks each question of the r-th slice
    of the questions once, questions none of them has been asked (a fixed amount of work); warm round: each
    daemon asks from all the questions, which it has all been asked, for seconds/rounds. The daemons stay up
    throughout. Per contender: each round's figures, and per kind the medians over the rounds."""
    out: dict[str, dict] = {}
    slices = [questions[r * len(questions) // rounds:(r + 1) * len(questions) // rounds] for r in range(rounds)]
    with contextlib.ExitStack() as stack:
        fleets = [Fleet(stack, label, loc, n, root, pid) for label, loc, root, pid in contenders]
        for fleet in fleets:
            out[fleet.label] = {"cold": [], "warm": []}
        for kind in ("cold", "warm"):
            for r in range(rounds):
                for fleet in fleets if r % 2 == 0 else fleets[::-1]:
                    if kind == "cold":
                        out[fleet.label][kind].append(fleet.ask(slices[r], None))
                    else:
                        out[fleet.label][kind].append(fleet.ask(questions, seconds / rounds))
    for res in out.values():
        for kind in ("cold", "warm"):
            rows = res[kind]
            res[f"{kind}_median"] = {key: None if rows[0][key] is None else statistics.median(x[key] for x in rows)
                                     for key in rows[0]}
    return out


def round_ratios(results: dict[str, dict], a: str, b: str, kind: str = "warm") -> list[float]:
    """Each round's QPS of contender `b` over contender `a`'s, same round."""
    return [y["qps"] / x["qps"] for x, y in zip(results[a][kind], results[b][kind], strict=True) if x["qps"]]


def cpu_per_query(r: dict) -> float:
    """CPU ms per query, the daemons' and the server's together."""
    return r["daemon_cpu_ms"] + (r["server_cpu_ms"] or 0.0)


def local_server_pid(url: str) -> int | None:
    """The postmaster's pid of the server at `url` when it runs on this machine (its backend's parent, seen in
    /proc as a postgres process), else None: its processes' CPU is then not counted."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        try:
            if b"postgres" not in Path(f"/proc/{backend}/cmdline").read_bytes():
                return None
            return int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            return None


def measure_existing(backends: list[tuple[str, Path | str]], questions: list[dict], rounds: int,
                     baseline: Path | None, baseline_pg: str | None = None,
                     baseline_sqlite: Path | None = None) -> dict[str, list[dict]]:
    """kb.context latencies of KBs already built (--measure-only): the backends (and with `baseline`, the two
    codes) alternated for `rounds` rounds, the order reversed every other round; what each round measured.
    `baseline_pg`: the database the baseline code reads instead of the PostgreSQL one (a copy at its schema
    version, when this code's migrations are newer); `baseline_sqlite` likewise, a copy of the SQLite KB."""
    from latency import run

    codes = [("base", baseline.resolve()), ("this", ROOT)] if baseline else [("this", ROOT)]
    copies = {"postgresql": baseline_pg, "sqlite": baseline_sqlite}
    runs = [(backend, copies[backend] if code == "base" and copies[backend] else location, code, root)
            for backend, location in backends for code, root in codes]
    known = {backend: document_ids(location) for backend, location in backends}
    results: dict[str, list[dict]] = {f"{b} {c}": [] for b, _, c, _ in runs}
    for i in range(rounds):
        for backend, location, code, root in runs if i % 2 == 0 else runs[::-1]:
            asked = [q for q in questions if q["doc_name"] in known[backend]]
            r = run(location, known[backend], asked, root)
            results[f"{backend} {code}"].append(r)
            print(f"round {i + 1} {backend:10} {code:4}: {len(known[backend])} docs, scoped p50/p95 "
                  f"{r['scoped_p50']:6.1f}/{r['scoped_p95']:6.1f} ms, corpus-wide {r['corpus_p50']:6.1f}/"
                  f"{r['corpus_p95']:6.1f} ms (daemon CPU p95 {r['scoped_cpu_p95']:5.1f}/{r['corpus_cpu_p95']:5.1f}"
                  f"), first {r['first_ms']:5.0f} ms, peak RSS {r['rss_mb']:4.0f} MB "
                  f"(load {Path('/proc/loadavg').read_text().split()[0]})", flush=True)
    keys = ("scoped_p50", "scoped_p95", "corpus_p50", "corpus_p95", "rss_mb")
    print(f"\n{len(questions)} questions, kb.context limit 10, {rounds} rounds: range over the rounds")
    for name, rs in results.items():
        print(f"{name:16} " + "  ".join(f"{k} {min(r[k] for r in rs):.1f}-{max(r[k] for r in rs):.1f}" for k in keys))
    _print_pooled(results, rounds)
    names = [b for b, _ in backends]
    if names == ["sqlite", "postgresql"]:
        for code, _ in codes:
            pairs = list(zip(results[f"sqlite {code}"], results[f"postgresql {code}"], strict=True))
            differ = sorted({q for s, p in pairs for q in s["digests"] if s["digests"][q] != p["digests"].get(q)})
            print(f"postgresql/sqlite per round ({code}): " + "  ".join(
                f"{k} " + ",".join(f"{p[k] / s[k]:.2f}" for s, p in pairs) for k in keys[:4])
                + f"; answers identical across backends (only if both KBs hold one ingest's rows): {not differ}" + (f" (differ: {differ[:5]})" if differ else ""))
    if baseline:
        for backend in names:
            pairs = list(zip(results[f"{backend} base"], results[f"{backend} this"], strict=True))
            differ = sorted({q for b, t in pairs for q in b["digests"] if b["digests"][q] != t["digests"][q]})
            print(f"{backend} this/base per round: " + "  ".join(
                f"{k} " + ",".join(f"{t[k] / b[k]:.2f}" for b, t in pairs) for k in keys[:4])
                + f"; answers identical: {not differ}" + (f" (differ: {differ[:5]})" if differ else ""))
    return results


def _print_pooled(results: dict[str, list[dict]], rounds: int) -> None:
    """p50/p95 over every question of the warm rounds together (all rounds but the first, whose daemons meet a
    server and page cache cold after a restart; all of them when there is one): a round's p95 is its 4th-slowest
    of 65 questions, which one slow moment of the machine moves; pooled, the 5% tail holds ~20 questions per 6 rounds.
    Then the same ratios as per round, from the pooled figures."""
    warm = slice(1, None) if rounds > 1 else slice(None)
    pooled = {name: {f"{key}_{q}": pct([t for r in rs[warm] for t in r[f"{key}_times"]], p)
                     for key in ("scoped", "corpus") for q, p in (("p50", 0.5), ("p95", 0.95))}
              for name, rs in results.items()}
    keys = ("scoped_p50", "scoped_p95", "corpus_p50", "corpus_p95")
    print(f"pooled over rounds {'2' if rounds > 1 else '1'}-{rounds}:")
    for name, p in pooled.items():
        print(f"  {name:16} " + "  ".join(f"{k} {p[k]:.1f}" for k in keys))
    pairs = [(f"postgresql/sqlite ({c})", f"postgresql {c}", f"sqlite {c}") for c in ("base", "this")]
    pairs += [(f"{b} this/base", f"{b} this", f"{b} base") for b in ("sqlite", "postgresql")]
    for label, a, b in pairs:
        if a in pooled and b in pooled:
            print(f"  {label}: " + "  ".join(f"{k} {pooled[a][k] / pooled[b][k]:.2f}" for k in keys))


def scale_steps(scale: int) -> list[int]:
    return sorted({k for k in (1, 3, 10) if k < scale} | {1, scale})


def scale_run(backends: list[tuple[str, Path | str]], pdfs: list[Path], questions: list[dict], scale: int,
              qps_seconds: float, save: Path) -> dict[str, dict[int, dict]]:
    """Each backend through each step of `scale_steps` (the library at k times the filings: variants 1..k-1 of
    each added to the filings), built step by step: a step's ingest is its new documents only."""
    from synthetic import make_variants

    variants_dir = ROOT / "bench" / "out" / "synthetic"
    report: dict[str, dict[int, dict]] = {}
    for backend, location in backends:
        report[backend] = {}
        for k in scale_steps(scale):
            library = pdfs + make_variants(pdfs, variants_dir, range(1, k))
            ids, rate, pages, ingest_rss = build_apart(location, library)
            row: dict = {"documents": len(ids), "pages": pages, "ingest_pages_per_s": rate,
                         "ingest_peak_rss_mb": ingest_rss, "kb_bytes_per_page": kb_bytes(location) / max(1, pages)}
            row.update(latencies(location, ids, questions))
            if qps_seconds:
                row["qps_4_daemons"] = qps(location, questions, qps_seconds)[0]
            report[backend][k] = row
            print(backend, f"{k}x", json.dumps(row), flush=True)
            save.parent.mkdir(parents=True, exist_ok=True)
            save.write_text(json.dumps(report, indent=1))
    return report


def print_scale(report: dict[str, dict[int, dict]], questions: int) -> None:
    def ratio(a: float | None, b: float | None) -> str:
        return f"{a / b:.2f}" if a and b else "-"

    print(f"\n{questions} questions (kb.context limit 10, daemon round trips); ingest p/s: the step's new "
          f"documents, in-process ingest; RSS: peak (VmHWM) of the ingest process and of the querying daemon")
    cols = ("ingest_pages_per_s", "kb_bytes_per_page", "scoped_p50_ms", "scoped_p95_ms", "corpus_p50_ms",
            "corpus_p95_ms", "ingest_peak_rss_mb", "daemon_peak_rss_mb")
    print(f"{'backend':11} {'scale':>5} {'docs':>5} {'pages':>7} {'ingest p/s':>10} {'KB/page':>8} "
          f"{'scoped p50':>10} {'p95':>6} {'corpus p50':>10} {'p95':>6} {'ingest RSS':>10} {'daemon RSS':>10}")
    for backend, steps in report.items():
        for k, r in steps.items():
            rate = f"{r['ingest_pages_per_s']:.1f}" if r["ingest_pages_per_s"] else "(reused)"
            print(f"{backend:11} {k:4d}x {r['documents']:5d} {r['pages']:7d} {rate:>10} "
                  f"{r['kb_bytes_per_page'] / 1024:8.1f} {r['scoped_p50_ms']:10.1f} {r['scoped_p95_ms']:6.1f} "
                  f"{r['corpus_p50_ms']:10.1f} {r['corpus_p95_ms']:6.1f} {r['ingest_peak_rss_mb']:10.0f} "
                  f"{r['daemon_peak_rss_mb']:10.0f}")
    print("\nratios (same run): each step to 1x of its backend; postgresql to sqlite at each step")
    print(f"{'':20} " + " ".join(f"{c.replace('_ms', '').replace('_mb', ''):>18}" for c in cols))
    for backend, steps in report.items():
        for k, r in steps.items():
            if k != 1 and 1 in steps:
                print(f"{backend + f' {k}x/1x':20} " + " ".join(f"{ratio(r.get(c), steps[1].get(c)):>18}" for c in cols))
    if len(report) == 2:
        (_, a), (_, b) = report.items()
        for k in a:
            if k in b:
                print(f"{f'pg/sqlite {k}x':20} " + " ".join(f"{ratio(b[k].get(c), a[k].get(c)):>18}" for c in cols))


def main() -> None:
    if sys.argv[1:2] == ["--ingest-worker"]:
        return ingest_worker(sys.argv[2])
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dev", default=None)
    ap.add_argument("--pg", default=None, help="a PostgreSQL URL (default: start a throwaway server)")
    ap.add_argument("--sqlite-kb", default=str(ROOT / "bench" / "out" / "backends-kb"))
    ap.add_argument("--docs", type=int, default=None, help="only the first N filings (default all 166)")
    ap.add_argument("--questions", type=int, default=None, help="only the first N dev questions")
    ap.add_argument("--qps-seconds", type=float, default=30.0)
    ap.add_argument("--daemons", default="1,4,8", help="daemon counts to measure QPS with (comma-separated)")
    ap.add_argument("--qps-rounds", type=int, default=6,
                    help="the QPS phase's --qps-seconds per contender split into this many alternated rounds")
    ap.add_argument("--json", default=str(ROOT / "bench" / "out" / "backends.json"))
    ap.add_argument("--scale", type=int, default=1, help="grow the library to N times the filings (1x, 3x, 10x)")
    ap.add_argument("--backends", default="sqlite,postgresql", help="which backends, in order")
    ap.add_argument("--print-json", nargs="*", help="print the --scale table of saved --json files and stop")
    ap.add_argument("--pg-stock", action="store_true", help="the throwaway server with stock shared_buffers (128 MB)")
    ap.add_argument("--measure-only", action="store_true",
                    help="build nothing: measure the existing KBs (--sqlite-kb as given, --pg), backends alternated")
    ap.add_argument("--rounds", type=int, default=3, help="--measure-only: rounds")
    ap.add_argument("--baseline-pg", default=None,
                    help="--measure-only: the database the --baseline-root code reads (default --pg)")
    ap.add_argument("--baseline-sqlite-kb", type=Path, default=None,
                    help="--measure-only: the SQLite KB the --baseline-root code reads (default --sqlite-kb): a copy at "
                         "its schema version, when this code's migrations are newer")
    ap.add_argument("--baseline-root", type=Path, default=None,
                    help="a checkout of other code (git archive C | tar -x -C DIR): the QPS phase alternates its "
                         "daemons with this code's, on the same KBs (same schema)")
    args = ap.parse_args()

    dev = find_dev(args.dev)
    pdfs = library(dev, args.docs)
    names = {p.stem for p in pdfs}
    counts = [int(n) for n in args.daemons.split(",")]
    questions = [q for q in load_questions(dev / "questions.jsonl") if q["doc_name"] in names][:args.questions]
    with contextlib.ExitStack() as stack:
        url = args.pg
        if args.print_json:
            report = {}
            for f in args.print_json:
                report.update({b: {int(k): r for k, r in steps.items()}
                               for b, steps in json.loads(Path(f).read_text()).items()})
            return print_scale(report, len(questions))
        server_pid = None
        if args.measure_only:
            if url is None and "postgresql" in args.backends:
                sys.exit("--measure-only measures an existing database: --pg URL")
            chosen = [(b, loc) for b, loc in (("sqlite", Path(args.sqlite_kb)), ("postgresql", url))
                      if b in args.backends.split(",")]
            results = measure_existing(chosen, questions, args.rounds, args.baseline_root, args.baseline_pg,
                                       args.baseline_sqlite_kb)
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json).write_text(json.dumps({k: [{f: v for f, v in r.items() if f != "digests"} for r in rs]
                                                   for k, rs in results.items()}, indent=1))
            print(f"load average at the end: {Path('/proc/loadavg').read_text().split()[0]} (2 shared cores: noisy)")
            return
        if url is None and "postgresql" in args.backends:
            from tests.support.pg import PgServer

            server = stack.enter_context(PgServer(settings=None if args.pg_stock else server_settings(args.scale)))
            url = server.new_database("backends")
            server_pid = int((server.data / "postmaster.pid").read_text().split()[0])
            print("PostgreSQL settings:", "stock" if args.pg_stock else server_settings(args.scale), flush=True)
        kb = Path(args.sqlite_kb + (f"-scale{args.scale}" if args.scale > 1 else ""))
        chosen = [(b, loc) for b, loc in (("sqlite", kb), ("postgresql", url)) if b in args.backends.split(",")]
        if args.scale > 1:
            report = scale_run(chosen, pdfs, questions, args.scale, args.qps_seconds, Path(args.json))
            print_scale(report, len(questions))
            print(f"load average at the end: {Path('/proc/loadavg').read_text().split()[0]} (2 shared cores: noisy)")
            return
        if url is not None and server_pid is None and "postgresql" in args.backends:
            server_pid = local_server_pid(url)
        report: dict[str, dict] = {}
        for backend, location in chosen:
            ids, rate, pages = build(location, pdfs)
            row: dict = {"documents": len(ids), "pages": pages, "ingest_pages_per_s": rate}
            row.update(latencies(location, ids, questions))
            report[backend] = row
            print(backend, json.dumps(row), flush=True)
        codes = (("baseline_", args.baseline_root), ("", None)) if args.baseline_root else (("", None),)
        for n in counts if args.qps_seconds else ():
            contenders = [(code + backend, location, root, server_pid if backend == "postgresql" else None)
                          for backend, location in chosen for code, root in codes]
            results = qps_rounds(contenders, questions, n, args.qps_seconds, args.qps_rounds)
            for backend in report:
                for code, _root in codes:
                    res = results[code + backend]
                    row = report[backend]
                    for kind in ("cold", "warm"):
                        med = res[f"{kind}_median"]
                        row[f"{code}{kind}_qps_{n}_daemons"] = med["qps"]
                        row[f"{code}{kind}_cpu_ms_{n}"] = cpu_per_query(med)
                    row[f"{code}qps_rounds_{n}"] = res
            print_qps(results, n, len(questions), args.qps_seconds / args.qps_rounds, args.qps_rounds, flush=True)
    print_report(report, len(pdfs), len(questions), counts if args.qps_seconds else [])
    print(f"load average at the end: {Path('/proc/loadavg').read_text().split()[0]} (2 shared cores: noisy)")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(report, indent=1))


def _cpu(r: dict) -> str:
    return f"{r['daemon_cpu_ms']:5.1f}" + (f" + {r['server_cpu_ms']:4.1f}" if r["server_cpu_ms"] is not None else "")


def print_qps(results: dict[str, dict], n: int, questions: int, seconds: float, rounds: int,
              flush: bool = False) -> None:
    """One daemon count's QPS phase: each contender's cold and warm rounds (medians, ranges), then the ratios of
    the same rounds' QPS and of the CPU per query (what the QPS ratio is when the CPU is all the daemons and
    the server get: the figure a loaded machine moves least)."""
    print(f"\nQPS x{n} daemons ({rounds} cold rounds: each daemon asks a new slice of the {questions} questions, "
          f"fixed work; {rounds} warm rounds of {seconds:.1f} s; contenders alternated); CPU ms/query daemons + server")
    for label, res in results.items():
        line = []
        for kind in ("cold", "warm"):
            med, qpss = res[f"{kind}_median"], [x["qps"] for x in res[kind]]
            line.append(f"{kind} {med['qps']:6.1f} QPS ({min(qpss):.1f}-{max(qpss):.1f}), CPU {_cpu(med)}")
        print(f"  {label:20} " + "   ".join(line))
    labels = list(results)
    pairs = [(a, b) for a in labels for b in labels if b == a.replace("sqlite", "postgresql") != a]
    pairs += [(a, b) for a in labels for b in labels if a == "baseline_" + b]
    for a, b in pairs:
        line = []
        for kind in ("cold", "warm"):
            ratios = round_ratios(results, a, b, kind)
            cpu = cpu_per_query(results[a][f"{kind}_median"]) / cpu_per_query(results[b][f"{kind}_median"])
            line.append(f"{kind} {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}), by CPU {cpu:.2f}")
        print(f"  QPS {b}/{a}: " + "; ".join(line))
    if flush:
        sys.stdout.flush()


def print_report(report: dict[str, dict], filings: int, questions: int, counts: list[int]) -> None:
    print(f"\n{filings} filings, {questions} questions (kb.context limit 10, daemon round trips); QPS: the median over "
          "the warm rounds")
    print(f"{'backend':11} {'docs':>5} {'pages':>6} {'ingest p/s':>10} {'scoped p50':>10} {'p95':>7} "
          f"{'corpus p50':>10} {'p95':>7}" + "".join(f" {f'QPS x{n}':>7}" for n in counts))
    for backend, r in report.items():
        rate = f"{r['ingest_pages_per_s']:.1f}" if r["ingest_pages_per_s"] else "(reused)"
        print(f"{backend:11} {r['documents']:5d} {r['pages']:6d} {rate:>10} {r['scoped_p50_ms']:10.1f} "
              f"{r['scoped_p95_ms']:7.1f} {r['corpus_p50_ms']:10.1f} {r['corpus_p95_ms']:7.1f}"
              + "".join(f" {r[f'warm_qps_{n}_daemons']:7.1f}" for n in counts))
    if len(report) == 2:
        (_, a), (_, b) = report.items()
        print("postgresql/sqlite p95: " + f"scoped {b['scoped_p95_ms'] / a['scoped_p95_ms']:.2f}, corpus-wide "
              f"{b['corpus_p95_ms'] / a['corpus_p95_ms']:.2f}")
        for kind in ("cold", "warm") if counts else ():
            print(f"postgresql/sqlite QPS, {kind} (median of the rounds' ratios; by CPU per query): " + ", ".join(
                f"x{n} {statistics.median(round_ratios({'a': a[f'qps_rounds_{n}'], 'b': b[f'qps_rounds_{n}']}, 'a', 'b', kind)):.2f}"
                f"; {a[f'{kind}_cpu_ms_{n}'] / b[f'{kind}_cpu_ms_{n}']:.2f}" for n in counts))


if __name__ == "__main__":
    main()
