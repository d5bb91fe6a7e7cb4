"""kb.answer engine overhead, through the daemon, with the scripted LLM server answering instantly.

Every dev question is asked once, document-scoped (document_ids = its filing), stream on (the default), one
request at a time. The scripted server (same process as this script) records when it was busy with each
upstream call, from the start of its handler to the last byte written. Per request:

    overhead = done.elapsed_ms (the daemon's own request time)  -  union of the server's busy intervals

so concurrent span calls count once, and what is left is the engine's time: retrieval, prompt building,
httpx and JSON work, event writing, and loopback transit (a client-side measure of "time waiting on the
gateway" would also count the engine's own httpx work as waiting). Token counts are the gateway's estimates (the
scripted replies carry no usage): prompt tokens are those of the real prompts; completion tokens reflect the
scripted replies, not a model's. Same-run baseline: `kb.context` with the same query, documents and limit,
asked right after each kb.answer (the retrieval share of the overhead, through the same daemon).

    .venv/bin/python bench/answer.py [--kb bench/out/dev-kb] [--rounds 1] [--max-sections 5] [--warmup 20] [-v]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from _common import DEV, ROOT, load_questions, pct

FALLBACK_DOCS = ("3M_2022_10K", "AMCOR_2023_10K", "PEPSICO_2022_10K")


def union_ms(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total * 1000


def timed_server():
    """A ScriptedLLM whose handler records (start, end) of every request it serves."""
    from tests.support.gateway import ScriptedLLM, _Handler

    busy: list[tuple[float, float]] = []
    lock = threading.Lock()

    class Timed(_Handler):
        def do_POST(self) -> None:
            t0 = time.perf_counter()
            try:
                super().do_POST()
            finally:
                with lock:
                    busy.append((t0, time.perf_counter()))

    server = ScriptedLLM()
    server._server.RequestHandlerClass = Timed
    server._server.handle_error = lambda *a: None  # a client closing a kept-alive connection is no news
    return server, busy, lock


def prepare_kb(kb: Path | None, work: Path) -> Path:
    """A private copy of the shared dev KB (WAL files stay ours), or a small KB built here."""
    target = work / "kb"
    if kb is not None and (kb / "kb.sqlite3").is_file():
        target.mkdir()
        shutil.copy2(kb / "kb.sqlite3", target / "kb.sqlite3")
        return target
    from jsonl_engine.ingest.sync import ingest_paths
    from jsonl_engine.store import open_store

    t0 = time.perf_counter()
    store = open_store(target)
    ingest_paths(store, [str(DEV / "pdfs" / f"{name}.pdf") for name in FALLBACK_DOCS])
    store.close()
    print(f"built a KB of {len(FALLBACK_DOCS)} dev filings in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return target


def main() -> None:
    from jsonl_engine.store import open_store
    from tests.support.answer_script import AnswerScript
    from tests.support.client import engine

    parser = argparse.ArgumentParser()
    parser.add_argument("--kb", type=Path, default=ROOT / "bench" / "out" / "dev-kb")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--max-sections", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=20, help="questions asked before measuring")
    parser.add_argument("-v", "--verbose", action="store_true", help="list the slowest requests")
    args = parser.parse_args()

    questions = load_questions(DEV / "questions.jsonl")
    with tempfile.TemporaryDirectory(prefix="bench-answer-") as tmp:
        kb = prepare_kb(args.kb, Path(tmp))
        store = open_store(kb)
        docs = {Path(d.path).stem: d.document_id for d in store.documents() if d.path}
        asked = [(q["question"], docs[q["doc_name"]]) for q in questions if q["doc_name"] in docs]

        store.close()

        server, busy, lock = timed_server()
        server.responder = AnswerScript(quote=lambda text: " ".join(text.split()[5:17]) or None)
        with server, engine(kb, env=server.env(JSONL_ENGINE_LLM_MAX_CONCURRENCY="4")) as d:
            for query, doc in asked[: args.warmup]:  # imports, connections, SQLite caches of the handler threads
                d.call("kb.answer", {"query": query, "document_ids": [doc], "max_sections": args.max_sections})
            walls, waits, overheads, usages, cited, verified, context = [], [], [], [], 0, 0, []
            for query, doc in asked * args.rounds:
                with lock:
                    busy.clear()
                request = d.stream("kb.answer", {"query": query, "document_ids": [doc],
                                                 "max_sections": args.max_sections})
                result = [e["data"] for e in request.events() if e["event"] == "result"][-1]
                assert result["error"] is None, result["error"]
                with lock:
                    wait = union_ms(list(busy))
                wall = request.done["elapsed_ms"]
                walls.append(wall)
                waits.append(wait)
                overheads.append(wall - wait)
                usages.append(result["usage"])
                cited += len(result["citations"])
                verified += sum(c["verified"] for c in result["citations"])
                # after kb.answer, so the warmer page cache favours the baseline, not the measured method
                request = d.stream("kb.context", {"query": query, "document_ids": [doc], "limit": args.max_sections})
                request.events()  # raises on an error event
                context.append(request.done["elapsed_ms"])

    n = len(walls)
    if args.verbose:
        for i in sorted(range(n), key=lambda i: -overheads[i])[:8]:
            print(f"  slow: overhead {overheads[i]:6.1f} ms  kb.context {context[i]:6.1f} ms  "
                  f"{(asked * args.rounds)[i][0][:70]}")
    print(f"kb.answer: {n // args.rounds} dev questions x {args.rounds} round(s), document-scoped, "
          f"max_sections={args.max_sections}, stream; KB {args.kb}")
    print(f"  engine overhead      p50 {pct(overheads, .5):6.1f} ms   p95 {pct(overheads, .95):6.1f} ms"
          f"   max {max(overheads):6.1f} ms   (target p95 <= 50 ms)")
    print(f"  request wall         p50 {pct(walls, .5):6.1f} ms   p95 {pct(walls, .95):6.1f} ms")
    print(f"  gateway busy (union) p50 {pct(waits, .5):6.1f} ms   p95 {pct(waits, .95):6.1f} ms")
    print(f"  baseline kb.context  p50 {pct(context, .5):6.1f} ms   p95 {pct(context, .95):6.1f} ms"
          "   (same query, documents and limit: the retrieval share)")
    mean = lambda key: statistics.mean(u[key] for u in usages)  # noqa: E731
    print(f"  per answer: LLM calls {mean('calls'):.1f}, prompt tokens {mean('prompt_tokens'):.0f}, "
          f"completion tokens {mean('completion_tokens'):.0f} (estimates)")
    print(f"  citations per answer {cited / n:.1f}, verified {verified / max(1, cited):.0%}")


if __name__ == "__main__":
    main()
