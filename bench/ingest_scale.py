"""Ingest speed as the library grows: the same batch of new PDFs ingested into a copy of a small library and of a
large one (issue 28: pages/s at 10x within 20% of the 1x figure), alternated over rounds on this machine.

Each round copies each KB (a SQLite directory with `cp -a`; a PostgreSQL database with CREATE DATABASE ...
TEMPLATE, on the same server) and ingests the batch into the copy in a process of its own (`backends.build_apart`:
the same in-process ingest the scale bench times), then drops the copy. The batch must be new to both libraries
(e.g. a synthetic variant number neither holds: `bench/synthetic.py`).

Per ingest it prints pages/s, the ingest process's CPU ms per page (parsing and the store's writes: what the load
moves far less than pages/s) and, for a PostgreSQL server on this machine, its processes' CPU ms per page (the
backends connected to the copy), and the load average; and pages/s with the seconds the ingest (and those server
processes) waited runnable for a CPU taken out ("unqueued": what the other processes on the machine took from this
ingest, /proc/.../schedstat; the figure a machine of its own would give, near enough, as the client and its
server process take turns). At the end the medians and each round's large/small ratios of the three.

    .venv/bin/python bench/ingest_scale.py --small KB1 --large KB10 --pdfs DIR [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from backends import build_apart


def _copy(location: str, scratch: Path, n: int) -> str:
    """A copy of the KB, its writes settled (not timed): the server's dirty buffers checkpointed and the OS's
    written back, else the copy's gigabytes are written out during the ingest that follows, which a large copy
    slows more than a small one (a library in use is not a fresh copy)."""
    if not location.startswith("postgresql://"):
        target = scratch / f"kb{n}"
        subprocess.run(["cp", "-a", location, str(target)], check=True)
        os.sync()
        return str(target)
    import psycopg

    base, _, name = location.rpartition("/")
    copy = f"{name}_ingest_scale_{n}"
    with psycopg.connect(location.replace(f"/{name}", "/postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{copy}"')
        conn.execute(f'CREATE DATABASE "{copy}" TEMPLATE "{name}"')
        conn.execute("CHECKPOINT")
    os.sync()
    return f"{base}/{copy}"


def _drop(location: str) -> None:
    if not location.startswith("postgresql://"):
        shutil.rmtree(location, ignore_errors=True)
        return
    import psycopg

    _base, _, name = location.rpartition("/")
    with psycopg.connect(location.replace(f"/{name}", "/postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", required=True, help="the small library: a SQLite KB directory or a PostgreSQL URL")
    ap.add_argument("--large", required=True, help="the large library, same backend")
    ap.add_argument("--pdfs", required=True, type=Path, help="a folder of PDFs new to both")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--scratch", type=Path, default=None, help="where SQLite copies go (default: a temp dir)")
    args = ap.parse_args()
    pdfs = sorted(args.pdfs.glob("*.pdf"))
    rates: dict[str, list[float]] = {"small": [], "large": []}
    cpu: dict[str, list[float]] = {"small": [], "large": []}  # ms per page, the ingest process and the server
    unqueued: dict[str, list[float]] = {"small": [], "large": []}  # pages/s without the time waited for a CPU
    with tempfile.TemporaryDirectory(dir=args.scratch) as tmp:
        n = 0
        for r in range(args.rounds):
            order = ["small", "large"] if r % 2 == 0 else ["large", "small"]
            for which in order:
                n += 1
                t = time.perf_counter()
                copy = _copy(getattr(args, which), Path(tmp), n)
                copied = time.perf_counter() - t
                stats: dict = {}
                try:
                    _ids, rate, pages, peak = build_apart(copy, pdfs, stats)
                finally:
                    _drop(copy)
                rates[which].append(rate or 0.0)
                done = max(stats.get("ingested_pages", 0), 1)
                client_ms, server_ms = 1000 * stats.get("cpu_s", 0.0) / done, 1000 * stats.get("server_cpu_s", 0.0) / done
                cpu[which].append(client_ms + server_ms)
                queued = stats.get("queued_s", 0.0) + stats.get("server_queued_s", 0.0)
                alone = done / max(stats.get("elapsed_s", 0.0) - queued, 1e-9)
                unqueued[which].append(alone)
                server = f" + server {server_ms:.1f}" if "server_cpu_s" in stats else ""
                print(f"round {r + 1} {which:5s}: {rate or 0:7.1f} pages/s ({alone:.1f} unqueued, waited {queued:.1f} s "
                      f"for a CPU) ingesting {len(pdfs)} PDFs into a "
                      f"library of {pages} pages; CPU ms/page: ingest {client_ms:.1f}{server}; peak RSS {peak:.0f} MB "
                      f"(copy {copied:.0f} s); load {os.getloadavg()[0]:.2f}", flush=True)
    small, large = statistics.median(rates["small"]), statistics.median(rates["large"])
    ratios = [x / y for x, y in zip(rates["large"], rates["small"], strict=True)]
    cpu_ratios = [y / x for x, y in zip(cpu["large"], cpu["small"], strict=True)]
    print(f"median pages/s: small {small:.1f}, large {large:.1f}; large/small {large / small:.2f} "
          f"(target >= 0.80); per round: {[round(x, 2) for x in ratios]}, range {min(ratios):.2f}-{max(ratios):.2f}, "
          f"median {statistics.median(ratios):.2f}")
    unq = [x / y for x, y in zip(unqueued["large"], unqueued["small"], strict=True)]
    print(f"median unqueued pages/s: small {statistics.median(unqueued['small']):.1f}, large "
          f"{statistics.median(unqueued['large']):.1f}; per round: {[round(x, 2) for x in unq]}, range "
          f"{min(unq):.2f}-{max(unq):.2f}, median {statistics.median(unq):.2f}")
    print(f"median CPU ms/page: small {statistics.median(cpu['small']):.1f}, large {statistics.median(cpu['large']):.1f}; "
          f"small/large (as pages/s) per round: {[round(x, 2) for x in cpu_ratios]}, median "
          f"{statistics.median(cpu_ratios):.2f}")


if __name__ == "__main__":
    main()
