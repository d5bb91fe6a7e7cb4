"""Protocol benchmark: start-up, ping-pong latency and pipelined throughput of the daemon, beside a same-run
baseline (a minimal read-line/orjson/write-line echo loop, the practical floor for a Python daemon).

    .venv/bin/python bench/protocol.py [--spawns 10] [--pings 5000] [--pipelined 50000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REQUEST = b'{"id": %d, "method": "capabilities"}\n'


def engine_cmd(kb: str) -> list[str]:
    return [sys.executable, "-m", "jsonl_engine", "--kb", kb]


def echo_cmd() -> list[str]:
    return [sys.executable, str(ROOT / "bench" / "_echo_floor.py")]


def spawn(cmd: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env)


def read_until_done(proc: subprocess.Popen) -> None:
    while True:
        line = proc.stdout.readline()
        if not line:
            raise EOFError("process closed stdout")
        if b'"event":"done"' in line:
            return


def startup(cmds: list[list[str]], n: int) -> list[tuple[float, float]]:
    """Median ms to `ready` and to the first `capabilities` result; spawns alternate between the commands."""
    ready: list[list[float]] = [[] for _ in cmds]
    first: list[list[float]] = [[] for _ in cmds]
    for _ in range(n):
        for k, cmd in enumerate(cmds):
            t0 = time.perf_counter()
            proc = spawn(cmd)
            proc.stdout.readline()
            ready[k].append(time.perf_counter() - t0)
            proc.stdin.write(REQUEST % 1)
            proc.stdin.flush()
            read_until_done(proc)
            first[k].append(time.perf_counter() - t0)
            proc.stdin.close()
            proc.wait()
    return [(statistics.median(r) * 1000, statistics.median(f) * 1000) for r, f in zip(ready, first, strict=True)]


def ping_pong(cmds: list[list[str]], n: int) -> list[tuple[float, float]]:
    """p50/p99 round trip in µs; requests alternate between the processes so both see the same machine."""
    procs = [spawn(cmd) for cmd in cmds]
    for proc in procs:
        proc.stdout.readline()
    samples: list[list[float]] = [[] for _ in cmds]
    for i in range(n):
        for k, proc in enumerate(procs):
            t0 = time.perf_counter()
            proc.stdin.write(REQUEST % i)
            proc.stdin.flush()
            read_until_done(proc)
            samples[k].append(time.perf_counter() - t0)
    for proc in procs:
        proc.stdin.close()
        proc.wait()
    out = []
    for sample in samples:
        sample.sort()
        out.append((sample[len(sample) // 2] * 1e6, sample[int(len(sample) * 0.99)] * 1e6))
    return out


def pipelined(cmd: list[str], n: int) -> float:
    proc = spawn(cmd)
    proc.stdout.readline()
    payload = b"".join(REQUEST % i for i in range(n))

    def feed() -> None:
        proc.stdin.write(payload)
        proc.stdin.close()

    t0 = time.perf_counter()
    threading.Thread(target=feed, daemon=True).start()
    done = 0
    for line in proc.stdout:
        if b'"event":"done"' in line:
            done += 1
            if done == n:
                break
    elapsed = time.perf_counter() - t0
    proc.wait()
    assert done == n, f"only {done} of {n} requests finished"
    return n / elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spawns", type=int, default=10)
    parser.add_argument("--pings", type=int, default=5000)
    parser.add_argument("--pipelined", type=int, default=50000)
    parser.add_argument("--rounds", type=int, default=3, help="pipelined runs per process (median kept)")
    args = parser.parse_args()
    kb = tempfile.mkdtemp(prefix="bench-protocol-")
    names = ["echo floor", "jsonl-engine"]
    cmds = [echo_cmd(), engine_cmd(kb)]
    starts = startup(cmds, args.spawns)
    pings = ping_pong(cmds, args.pings)
    rates: list[list[float]] = [[] for _ in cmds]
    for _ in range(args.rounds):
        for k, cmd in enumerate(cmds):
            rates[k].append(pipelined(cmd, args.pipelined))
    rps = [statistics.median(r) for r in rates]
    print(f"{'':14} {'ready ms':>9} {'1st result ms':>14} {'p50 us':>8} {'p99 us':>8} {'req/s':>9}")
    for k, name in enumerate(names):
        print(f"{name:14} {starts[k][0]:9.1f} {starts[k][1]:14.1f} {pings[k][0]:8.0f} {pings[k][1]:8.0f} "
              f"{rps[k]:9.0f}")
    print(f"\nratios vs echo floor: ping-pong p50 {pings[1][0] / pings[0][0]:.2f}x (target <= 2x), "
          f"throughput {rps[1] / rps[0]:.1%} (target >= 15%); "
          f"first capabilities result {starts[1][1]:.0f} ms (target <= 250 ms)")


if __name__ == "__main__":
    main()
