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


def startup(cmd: list[str], n: int) -> tuple[float, float]:
    ready, first = [], []
    for _ in range(n):
        t0 = time.perf_counter()
        proc = spawn(cmd)
        proc.stdout.readline()
        ready.append(time.perf_counter() - t0)
        proc.stdin.write(REQUEST % 1)
        proc.stdin.flush()
        read_until_done(proc)
        first.append(time.perf_counter() - t0)
        proc.stdin.close()
        proc.wait()
    return statistics.median(ready) * 1000, statistics.median(first) * 1000


def ping_pong(cmd: list[str], n: int) -> tuple[float, float]:
    proc = spawn(cmd)
    proc.stdout.readline()
    samples = []
    for i in range(n):
        t0 = time.perf_counter()
        proc.stdin.write(REQUEST % i)
        proc.stdin.flush()
        read_until_done(proc)
        samples.append(time.perf_counter() - t0)
    proc.stdin.close()
    proc.wait()
    samples.sort()
    return samples[len(samples) // 2] * 1e6, samples[int(len(samples) * 0.99)] * 1e6


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
    args = parser.parse_args()
    kb = tempfile.mkdtemp(prefix="bench-protocol-")
    rows = []
    for name, cmd in (("echo floor", echo_cmd()), ("jsonl-engine", engine_cmd(kb))):
        ready_ms, first_ms = startup(cmd, args.spawns)
        p50, p99 = ping_pong(cmd, args.pings)
        rps = pipelined(cmd, args.pipelined)
        rows.append((name, ready_ms, first_ms, p50, p99, rps))
    print(f"{'':14} {'ready ms':>9} {'1st result ms':>14} {'p50 us':>8} {'p99 us':>8} {'req/s':>9}")
    for name, ready_ms, first_ms, p50, p99, rps in rows:
        print(f"{name:14} {ready_ms:9.1f} {first_ms:14.1f} {p50:8.0f} {p99:8.0f} {rps:9.0f}")
    floor, engine = rows
    print(f"\nratios vs echo floor: ping-pong p50 {engine[3] / floor[3]:.2f}x (target <= 2x), "
          f"throughput {engine[5] / floor[5]:.1%} (target >= 15%); "
          f"first capabilities result {engine[2]:.0f} ms (target <= 250 ms)")


if __name__ == "__main__":
    main()
