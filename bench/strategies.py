"""Strategies benchmark: the cost of letting a model navigate, per dev question, beside lexical retrieval.

For every FinanceBench dev question (scoped to its filing), each strategy runs in-process against the scripted
OpenAI-compatible server on 127.0.0.1 (tests/support/gateway.py) playing a deterministic *heuristic reader*:
it scores outline lines / pages by word overlap with the question and acts like a careful model would (pick
the best sections; expand the best branch, read, then done; read the best section's pages, then cite them).
Replies carry no token usage, so the gateway counts prompt tokens with its own estimate (~4 chars/token),
the same figure a real endpoint's bill would approximate.

Per strategy: LLM calls, prompt and completion tokens, hops per question (mean, p50, max), wall ms per
question (loopback, so it is our own overhead, not model latency), passages and their text tokens (what an
answer step would read next), and evidence hit (an item on an evidence page). The hit rate of the LLM
strategies measures the heuristic reader, not a real model: it shows the plumbing works end to end, not
which strategy is most accurate. The baseline is lexical retrieval in the same run (0 calls).

    .venv/bin/python bench/strategies.py [--kb bench/out/strategies-kb] [--limit N] [--context 8192]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import time
from pathlib import Path

from _common import ROOT, ensure_kb, find_dev, gold_pages, load_questions, on_evidence, pct

STRATEGIES = ("lexical", "single-pass", "chunked-tree", "agentic", "pageindex")
LINE = re.compile(r"^\s*(\S+) (.+?) \[p(\d+)(?:-(\d+))?\](?: \(\+(\d+)\))?(?:: (.*))?$")
PAGE_HEAD = re.compile(r"^Document \d+, pages (\d+)-(\d+)")
WORD = re.compile(r"[a-z0-9]+")


# ---------------------------------------------------------------- the heuristic reader

def _stem(word: str) -> str:
    for suffix in ("ies", "es", "s", "ing", "ed"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _terms(text: str) -> set[str]:
    from jsonl_engine.retrieval import salient_terms

    return {_stem(t) for t in salient_terms(text)}


def _score(terms: set[str], text: str) -> float:
    words = {_stem(w) for w in WORD.findall(text.lower())}
    return len(terms & words) / (1 + 0.02 * len(words))


def _lines(text: str) -> list[dict]:
    out = []
    for raw in text.splitlines():
        m = LINE.match(raw)
        if m and not raw.startswith(("Document ", "Path: ", "Question:")):
            label, title, ps, pe, hidden, summary = m.groups()
            out.append({"id": label, "title": title, "start": int(ps), "end": int(pe or ps),
                        "children": int(hidden or 0), "text": f"{title} {summary or ''}"})
    return out


def _reply(obj: dict):
    from tests.support.gateway import chat_reply

    return chat_reply(json.dumps(obj), prompt_tokens=None, completion_tokens=None)


class HeuristicReader:
    """A deterministic stand-in for a model, answering every navigate prompt from its text alone."""

    def __call__(self, request):
        messages = request.messages
        system = messages[0]["content"]
        question = re.search(r"Question: (.*)", messages[1]["content"]).group(1)
        terms = _terms(question)
        if system.startswith("You choose"):
            lines = _lines(messages[-1]["content"])
            ranked = sorted(lines, key=lambda x: -_score(terms, x["text"]))[:3]
            picks = [{"id": x["id"], "confidence": round(min(1.0, _score(terms, x["text"]) / 3), 2)}
                     for x in ranked if _score(terms, x["text"]) > 0]
            return _reply({"sections": picks})
        hops = sum(1 for m in messages if m["role"] == "assistant")
        last = messages[-1]["content"]
        if system.startswith("You find the sections"):
            return _reply(self._agent(messages, terms, hops, last))
        return _reply(self._pages(messages, terms, hops, last))

    def _agent(self, messages, terms, hops, last) -> dict:
        done = [json.loads(m["content"]) for m in messages if m["role"] == "assistant"]
        visited = {d.get("section_id") for d in done}
        read = [d["section_id"] for d in done if d.get("action") == "read"]
        if read and ("Text of" in last or "last action" in last or hops >= 4):
            return {"action": "done", "picks": [{"id": read[-1], "confidence": 0.7}]}
        if "last action" in last:
            return {"action": "done", "picks": []}
        lines = [x for m in messages if m["role"] == "user" for x in _lines(m["content"])]
        fresh = [x for x in lines if x["id"] not in visited]
        if not fresh:
            return {"action": "done", "picks": [{"id": r, "confidence": 0.4} for r in read[-1:]]}
        best = max(fresh, key=lambda x: (_score(terms, x["text"]), -x["children"]))
        return {"action": "expand" if best["children"] else "read", "section_id": best["id"]}

    def _pages(self, messages, terms, hops, last) -> dict:
        seen = PAGE_HEAD.match(last)
        if seen:
            start, end = int(seen.group(1)), int(seen.group(2))
            return {"tool": "done", "answer": "From the pages read.", "cited_pages": [[start, min(end, start + 1)]],
                    "confidence": 0.6}
        lines = _lines(messages[1]["content"])
        if not lines or "last tool call" in last:
            return {"tool": "done", "answer": "I cannot find this in the document.", "cited_pages": []}
        best = max(lines, key=lambda x: (_score(terms, x["text"]), -x["children"]))
        return {"tool": "pages", "start": best["start"], "end": min(best["end"], best["start"] + 1)}


# ---------------------------------------------------------------- the run

async def run(store, questions: list[dict], doc_ids: dict[str, str], server, context: int) -> dict[str, list[dict]]:
    from jsonl_engine.llm.gateway import Gateway
    from jsonl_engine.llm.usage import estimate_tokens
    from jsonl_engine.retrieval.strategies import StrategyRequest, get_strategy

    gateway = Gateway(server.reader(context_tokens=context, max_tokens=1024))
    out: dict[str, list[dict]] = {name: [] for name in STRATEGIES}
    try:
        for name in STRATEGIES:
            strategy = get_strategy(name)
            for q in questions:
                gold = gold_pages(q)
                request = StrategyRequest(query=q["question"], document_ids=[doc_ids[q["doc_name"]]], limit=5)
                t = time.perf_counter()
                found = await strategy.run(store, request, gateway if strategy.needs_llm else None, None)
                ms = (time.perf_counter() - t) * 1000
                usage = found.usage or {}
                out[name].append({
                    "calls": usage.get("calls", 0), "prompt": usage.get("prompt_tokens", 0),
                    "completion": usage.get("completion_tokens", 0), "hops": found.hops_taken, "ms": ms,
                    "passages": len(found.passages),
                    "text_tokens": sum(estimate_tokens(p.text) for p in found.passages),
                    "hit": any(on_evidence(p.page_start, p.page_end, g) for p in found.passages for g in gold)})
    finally:
        await gateway.aclose()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kb", default=str(ROOT / "bench" / "out" / "strategies-kb"))
    ap.add_argument("--dev")
    ap.add_argument("--limit", type=int, default=0, help="first N questions only")
    ap.add_argument("--context", type=int, default=8192, help="the reader's context window (tokens)")
    ap.add_argument("--json", help="also write the per-strategy summary here")
    args = ap.parse_args()

    from jsonl_engine.store import open_store
    from tests.support.gateway import ScriptedLLM

    dev = find_dev(args.dev)
    questions = load_questions(dev / "questions.jsonl")
    if args.limit:
        questions = questions[: args.limit]
    names = sorted({q["doc_name"] for q in questions})
    doc_ids = ensure_kb(Path(args.kb), [dev / "pdfs" / f"{n}.pdf" for n in names])
    store = open_store(Path(args.kb))
    with ScriptedLLM() as server:
        server.responder = HeuristicReader()
        results = asyncio.run(run(store, questions, doc_ids, server, args.context))
        assert server.unexpected == 0
    store.close()

    print(f"{len(questions)} questions, {len(names)} filings, reader context {args.context} tokens, limit 5, "
          "heuristic scripted reader on 127.0.0.1")
    head = (f"{'strategy':<13} {'calls/q':>7} {'prompt tok/q':>12} {'p50':>6} {'max':>6} {'compl/q':>7} "
            f"{'hops/q':>6} {'ms/q':>6} {'ms p95':>6} {'passages':>8} {'text tok':>8} {'hit':>5}")
    print(head)
    print("-" * len(head))
    summary = {}
    for name, rows in results.items():
        n = len(rows)
        prompt = [r["prompt"] for r in rows]
        row = {"calls": sum(r["calls"] for r in rows) / n, "prompt": statistics.mean(prompt),
               "prompt_p50": pct(prompt, 0.5), "prompt_max": max(prompt),
               "completion": statistics.mean(r["completion"] for r in rows),
               "hops": statistics.mean(r["hops"] for r in rows), "ms": statistics.mean(r["ms"] for r in rows),
               "ms_p95": pct([r["ms"] for r in rows], 0.95),
               "passages": statistics.mean(r["passages"] for r in rows),
               "text_tokens": statistics.mean(r["text_tokens"] for r in rows),
               "hit": sum(r["hit"] for r in rows) / n}
        summary[name] = row
        print(f"{name:<13} {row['calls']:>7.2f} {row['prompt']:>12.0f} {row['prompt_p50']:>6.0f} "
              f"{row['prompt_max']:>6.0f} {row['completion']:>7.0f} {row['hops']:>6.2f} {row['ms']:>6.0f} "
              f"{row['ms_p95']:>6.0f} {row['passages']:>8.2f} {row['text_tokens']:>8.0f} {row['hit']:>5.0%}")
    print("baseline: lexical (same run). hit = an item on an evidence page (LLM rows: the heuristic reader's, "
          "not a real model's)")
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
