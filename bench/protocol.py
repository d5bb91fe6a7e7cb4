"""Protocol benchmark: start-up, ping-pong latency and pipelined throughput of the daemon, beside a same-run
baseline (a minimal read-line/orjson/write-line echo loop, the practical floor for a Python daemon), and the
import profile of a start to the first `capabilities` result (python -X importtime, summed per package).

    .venv/bin/python bench/protocol.py [--spawns 10] [--pings 5000] [--pipelined 50000]
    .venv/bin/python bench/protocol.py --startup-only --spawns 15 [--compare /path/to/other/checkout] [--instructions]

`--compare` spawns another checkout's daemon (its `jsonl_engine` first on PYTHONPATH, this interpreter) in the same
rounds: a before/after figure on one machine state. `--instructions` also counts each start's instructions under
valgrind (callgrind), which the machine's load does not move: on a shared machine the steadier before/after.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REQUEST = b'{"id": %d, "method": "capabilities"}\n'


def engine_cmd(kb: str, root: Path = ROOT) -> list[str]:
    return [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(root)!r}); import runpy; "
                                  "runpy.run_module('jsonl_engine', run_name='__main__')", "--kb", kb]


def echo_cmd() -> list[str]:
    return [sys.executable, str(ROOT / "bench" / "_echo_floor.py")]


def spawn(cmd: list[str], core: int | None = None) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    pin = (lambda: os.sched_setaffinity(0, {core})) if core is not None else None
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env, preexec_fn=pin)


def read_until_done(proc: subprocess.Popen) -> None:
    while True:
        line = proc.stdout.readline()
        if not line:
            raise EOFError("process closed stdout")
        if b'"event":"done"' in line:
            return


def import_profile(cmd: list[str], top: int = 12) -> tuple[float, list[tuple[str, float]]]:
    """(ms of all imports, the `top` packages by the ms their modules took themselves) of one start to the first
    `capabilities` result, from python -X importtime (which adds its own overhead: read the shares)."""
    proc = subprocess.Popen([cmd[0], "-X", "importtime", *cmd[1:]], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    out, err = proc.communicate(REQUEST % 1, timeout=60)
    assert b'"event":"done"' in out, "no capabilities result"
    by_package: dict[str, float] = {}
    for line in err.decode().splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, _total, name = line[len("import time:"):].split("|")
        name = name.strip()
        parts = name.split(".")
        key = ".".join(parts[:2]) if parts[0] == "jsonl_engine" else parts[0]
        by_package[key] = by_package.get(key, 0.0) + int(own) / 1000
    ranked = sorted(by_package.items(), key=lambda kv: -kv[1])
    return sum(by_package.values()), ranked[:top]


def instructions(cmd: list[str]) -> int | None:
    """Instructions (valgrind callgrind's `I refs`) of one process from its start to its exit after answering one
    `capabilities` request and reading EOF: a figure the load of a shared machine does not move. None without
    valgrind."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    with tempfile.TemporaryDirectory(prefix="bench-protocol-vg-") as tmp:
        log = Path(tmp) / "callgrind.log"
        proc = subprocess.run([valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", f"--log-file={log}",
                               *cmd], input=REQUEST % 1, capture_output=True, timeout=600,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert b'"event":"done"' in proc.stdout, "no capabilities result under valgrind"
        refs = [line for line in log.read_text().splitlines() if "I   refs:" in line or "I refs:" in line]
        return int(refs[-1].rsplit(":", 1)[1].strip().replace(",", ""))


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


def ping_pong(cmds: list[list[str]], n: int, core: int | None = None) -> list[tuple[float, float]]:
    """p50/p99 round trip in µs; requests alternate between the processes so both see the same machine.

    A round trip is dominated by how the scheduler places the two processes (a wake-up on the same core
    costs a few µs, one across cores tens of µs), so the client runs on core 0 and the servers on `core`.
    """
    procs = [spawn(cmd, core) for cmd in cmds]
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
    parser.add_argument("--startup-only", action="store_true", help="start-up and the import profile only")
    parser.add_argument("--no-bytecode", action="store_true",
                        help="every start compiles the package from source (as under PYTHONDONTWRITEBYTECODE=1)")
    parser.add_argument("--compare", type=Path, metavar="CHECKOUT", help="another checkout, started in the same rounds")
    parser.add_argument("--instructions", action="store_true",
                        help="also count each start's instructions under valgrind (load-independent; ~15 s a process)")
    args = parser.parse_args()
    for root in (ROOT, args.compare):  # the bytecode a user's install has (PYTHONDONTWRITEBYTECODE would
        if root is None:                # otherwise have every start compile the package), or none
            continue
        if args.no_bytecode:
            os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
            for cache in (root / "jsonl_engine").rglob("__pycache__"):
                shutil.rmtree(cache)
        else:
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "jsonl_engine")], check=True)
    kb = tempfile.mkdtemp(prefix="bench-protocol-")
    names = ["echo floor", "jsonl-engine"]
    cmds = [echo_cmd(), engine_cmd(kb)]
    total, ranked = import_profile(engine_cmd(kb))
    print(f"imports to the first capabilities result (-X importtime): {total:.0f} ms; by package (own time):")
    for name, ms in ranked:
        print(f"  {name:34} {ms:6.1f} ms")
    if args.compare:
        names.append(f"{args.compare.name} (compare)")
        cmds.append(engine_cmd(tempfile.mkdtemp(prefix="bench-protocol-"), args.compare.resolve()))
    starts = startup(cmds, args.spawns)
    if args.startup_only:
        print(f"\n{'':24} {'ready ms':>9} {'1st result ms':>14}   median of {args.spawns} spawns, alternating")
        counts = [instructions(cmd) for cmd in cmds] if args.instructions else [None] * len(cmds)
        for name, (ready, first), count in zip(names, starts, counts, strict=True):
            shown = f"   {count / 1e6:8.1f} M instructions" if count is not None else ""
            print(f"{name:24} {ready:9.1f} {first:14.1f}{shown}")
        print(f"\nfirst capabilities result {starts[1][1]:.0f} ms after spawn, {starts[1][1] / starts[0][1]:.1f}x the "
              "echo floor (target <= 150 ms)")
        return
    cmds, names, starts = cmds[:2], names[:2], starts[:2]
    cores = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cores[0]})
    placements = {"same core": ping_pong(cmds, args.pings, cores[0])}
    if len(cores) > 1:
        placements["cross core"] = ping_pong(cmds, args.pings, cores[1])
    os.sched_setaffinity(0, set(cores))
    rates: list[list[float]] = [[] for _ in cmds]
    for _ in range(args.rounds):
        for k, cmd in enumerate(cmds):
            rates[k].append(pipelined(cmd, args.pipelined))
    rps = [statistics.median(r) for r in rates]
    print(f"{'':14} {'ready ms':>9} {'1st result ms':>14} {'req/s':>9}", end="")
    for place in placements:
        print(f" {place + ' p50/p99 us':>26}", end="")
    print()
    for k, name in enumerate(names):
        print(f"{name:14} {starts[k][0]:9.1f} {starts[k][1]:14.1f} {rps[k]:9.0f}", end="")
        for pings in placements.values():
            print(f" {pings[k][0]:17.0f} / {pings[k][1]:6.0f}", end="")
        print()
    ratios = ", ".join(f"{place} {pings[1][0] / pings[0][0]:.2f}x" for place, pings in placements.items())
    print(f"\nvs echo floor: ping-pong p50 {ratios} (target <= 2x); throughput {rps[1] / rps[0]:.1%} "
          f"(target >= 15%); first capabilities result {starts[1][1]:.0f} ms after spawn (target <= 150 ms)")

if __name__ == "__main__":
    main()
