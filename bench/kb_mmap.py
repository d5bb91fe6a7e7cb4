"""What reading the KB file through SQLite's page cache (mmap_size 0, since issue 25) costs against mapping it
(the former 2 GiB mmap_size): kb.context's retrieval in process on a copy of a library KB, the dev questions
corpus-wide and then scoped to the first result's document, on 1 and on 4 threads (each thread has its own reader
connection, as the daemon's handler threads do). Runs alternate between the two settings (A B A B) on fresh stores;
the OS page cache is warm for both after the first.

    .venv/bin/python bench/kb_mmap.py --kb /path/to/kb-dir [--rounds 2] [--questions 65]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _common import find_dev, load_questions, pct

# label: (mmap_size, page cache KiB per connection)
SETTINGS = {"mmap 0, cache 32 MB (now)": (0, 32000), "mmap 2 GiB, cache 32 MB (before)": (1 << 31, 32000),
            "mmap 0, cache 128 MiB": (0, 131072)}


def run(kb: Path, setting: tuple[int, int], questions: list[str], threads: int) -> dict[str, float]:
    from jsonl_engine.models.context import ContextParams
    from jsonl_engine.retrieval.strategies import get_strategy
    from jsonl_engine.retrieval.types import NO_PROGRESS
    from jsonl_engine.store.sqlite import db
    from jsonl_engine.store.sqlite.store import SqliteStore

    db.MMAP_BYTES, db.CACHE_KIB = setting
    store = SqliteStore(kb)

    def ask(query: str, docs: list[str] | None = None) -> tuple[float, float, str | None]:
        params = ContextParams.model_validate({"query": query, "limit": 10, **({"document_ids": docs} if docs else {})})
        strategy = get_strategy(params.strategy)
        t, cpu = time.perf_counter(), time.process_time()
        found = asyncio.run(strategy.run(store, params.strategy_request(limit=10, unit=params.unit), None,
                                         NO_PROGRESS))
        ms, cpu_ms = (time.perf_counter() - t) * 1000, (time.process_time() - cpu) * 1000
        return ms, cpu_ms, found.passages[0].document_id if found.passages else None

    out: dict[str, float] = {}
    try:
        with ThreadPoolExecutor(threads) as pool:
            corpus = list(pool.map(ask, questions))
            scoped = list(pool.map(lambda qd: ask(qd[0], [qd[1]]),
                                   [(q, d) for q, (_ms, _cpu, d) in zip(questions, corpus, strict=True) if d]))
        for name, runs in (("corpus", corpus), ("scoped", scoped)):
            out[f"{name} p50"], out[f"{name} p95"] = pct([r[0] for r in runs], 0.5), pct([r[0] for r in runs], 0.95)
            out[f"{name} cpu p50"] = pct([r[1] for r in runs], 0.5)  # the process CPU (1 thread): steadier when busy
    finally:
        store.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kb", required=True, help="a KB directory (copied: the original is not opened)")
    ap.add_argument("--dev", default=None)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--questions", type=int, default=65)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 4])
    args = ap.parse_args()
    questions = [q["question"] for q in load_questions(find_dev(args.dev) / "questions.jsonl")][: args.questions]
    with tempfile.TemporaryDirectory(prefix="kb-mmap-") as tmp:
        kb = Path(tmp) / "kb"
        kb.mkdir()
        shutil.copy(Path(args.kb) / "kb.sqlite3", kb / "kb.sqlite3")
        results: dict[tuple[str, int], list[dict[str, float]]] = {}
        for _ in range(args.rounds):
            for threads in args.threads:
                for label, size in SETTINGS.items():
                    results.setdefault((label, threads), []).append(run(kb, size, questions, threads))
    for (label, threads), runs in results.items():
        best = {k: min(r[k] for r in runs) for k in runs[0]}  # the best round of each figure
        print(f"{label:34s} threads={threads}  " + "  ".join(f"{k} {v:6.1f}" for k, v in best.items()) + "  (ms)")


if __name__ == "__main__":
    main()
