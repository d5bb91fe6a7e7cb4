"""kb.synthesize benchmark on the FinanceBench dev split, through the daemon.

For every question, document-scoped (document_ids = the question's filing), it measures the share of
answers citing an evidence page, the share with a cited sentence overlapping the gold `evidence_text`, and
request latency p50/p95. Same-run baselines: a "lead" answer (the first units of each retrieved passage,
same passages and max_chars, no scoring), the retrieval ceiling (an evidence page among the passages
considered), and kb.context's latency at the same depth.

    .venv/bin/python bench/synthesize.py [--kb bench/out/dev-kb] [--rebuild] [--depth 5] [--max-chars 4000] [-v]
"""

from __future__ import annotations

import argparse
import difflib
import re
import statistics
import sys
import time
from pathlib import Path

from _common import DEV, ROOT, gold_pages, load_questions, pct

_NON_WORD = re.compile(r"[^0-9a-z]+")


def build_kb(kb: Path, pdfs: Path) -> None:
    """Parse the PDFs in a process pool, write them one by one, into a temporary KB renamed into place
    (another bench may build the same shared KB at the same time)."""
    import os
    import shutil
    from concurrent.futures import ProcessPoolExecutor

    from jsonl_engine.ingest import parse_file
    from jsonl_engine.ingest.outcome import file_digest, write_parsed
    from jsonl_engine.store import open_store

    tmp = kb.with_name(kb.name + f".tmp{os.getpid()}")
    store = open_store(tmp)
    t0 = time.perf_counter()
    paths = sorted(str(p) for p in pdfs.glob("*.pdf"))
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        for path, parsed in zip(paths, pool.map(parse_file, paths), strict=True):
            sha256, document_id = file_digest(path)
            write_parsed(store, parsed, document_id=document_id, sha256=sha256, path=path, status="approved")
    store.close()
    if (kb / "kb.sqlite3").exists():
        shutil.rmtree(tmp)
    else:
        tmp.rename(kb)
    print(f"built {kb} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)


def squash(text: str) -> str:
    """Lowercase letters and digits only: the gold text sometimes lost its spaces."""
    return _NON_WORD.sub("", text.lower())


def overlaps(claim: str, gold: str) -> bool:
    """The claim and the gold evidence share a run of >= 40 characters (or the whole claim if shorter)."""
    c, g = squash(claim), squash(gold)
    if len(c) < 12 or not g:
        return False
    if c in g:
        return True
    m = difflib.SequenceMatcher(None, c, g, autojunk=False).find_longest_match(0, len(c), 0, len(g))
    return m.size >= 40


def lead_baseline(kb: Path, questions: list[dict], doc_ids: dict[str, str], depth: int,
                  max_chars: int) -> tuple[list[set[int]], list[set[int]], list[list[str]], list[set[int]]]:
    """In-process: cited pages (all, first 3) and texts of a no-scoring answer; pages the passages span."""
    from jsonl_engine.answer.citations import page_at
    from jsonl_engine.answer.sentences import segment
    from jsonl_engine.retrieval import retrieve
    from jsonl_engine.store import open_store

    store = open_store(kb)
    pages, first, texts, spans = [], [], [], []
    for q in questions:
        passages = retrieve(store, q["question"], document_ids=[doc_ids[q["doc_name"]]], limit=depth).passages
        used, cited, cited_texts, order = 0, set(), [], []
        for p in passages:
            units = [s for s in segment(p.text) if s.kind in ("sentence", "row", "bullet")][:3]
            for s in units:
                used += s.end - s.start + 17
                if used > max_chars:
                    break
                cited.add(page_at(p.page_map, s.start, p.page_start))
                order.append(page_at(p.page_map, s.start, p.page_start))
                cited_texts.append(p.text[s.start:s.end])
        pages.append(cited)
        first.append(set(order[:3]))
        texts.append(cited_texts)
        spans.append({n for p in passages for n in range(p.page_start, p.page_end + 1)})
    store.close()
    return pages, first, texts, spans


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kb", type=Path, default=ROOT / "bench" / "out" / "dev-kb")
    parser.add_argument("--dev", type=Path, default=DEV)
    parser.add_argument("--depth", type=int, default=5)
    parser.add_argument("--max-chars", type=int, default=4000)
    parser.add_argument("--rebuild", action="store_true", help="rebuild the KB (after ingest changes)")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()

    from tests.support.client import engine

    if args.rebuild and args.kb.exists():
        import shutil

        shutil.rmtree(args.kb)
    if not (args.kb / "kb.sqlite3").exists():
        args.kb.parent.mkdir(parents=True, exist_ok=True)
        build_kb(args.kb, args.dev / "pdfs")
    questions = load_questions(args.dev / "questions.jsonl")

    with engine(args.kb, timeout=300) as d:
        docs = d.call("kb.documents", {})
        doc_ids = {Path(doc["path"] or doc["title"]).stem: doc["document_id"] for doc in docs["documents"]}
        questions = [q for q in questions if q["doc_name"] in doc_ids]
        has_context = any(m["name"] == "kb.context" for m in d.call("capabilities")["methods"])
        latency, ctx_latency, results = [], [], []
        for q in questions:
            params = {"query": q["question"], "document_ids": [doc_ids[q["doc_name"]]], "depth": args.depth,
                      "max_chars": args.max_chars}
            t0 = time.perf_counter()
            results.append(d.call("kb.synthesize", params))
            latency.append((time.perf_counter() - t0) * 1000)
            if has_context:
                t0 = time.perf_counter()
                d.call("kb.context", {"query": q["question"], "document_ids": params["document_ids"],
                                      "limit": args.depth})
                ctx_latency.append((time.perf_counter() - t0) * 1000)

    base_pages, base_first, base_texts, spans = lead_baseline(args.kb, questions, doc_ids, args.depth, args.max_chars)
    page_hit = text_hit = base_page_hit = base_text_hit = ceiling = early = base_early = 0
    grades: dict[str, int] = {}
    for i, (q, r) in enumerate(zip(questions, results, strict=True)):
        gold = gold_pages(q)
        golds = [e["evidence_text"] for e in q["evidence"]]
        cited = {c["page"] for c in r["claims"]}
        hit = bool(cited & gold)
        thit = any(overlaps(c["text"], g) for c in r["claims"] for g in golds)
        page_hit += hit
        early += bool({c["page"] for c in r["claims"][:3]} & gold)
        base_early += bool(base_first[i] & gold)
        text_hit += thit
        base_page_hit += bool(base_pages[i] & gold)
        base_text_hit += any(overlaps(t, g) for t in base_texts[i] for g in golds)
        ceiling += bool(spans[i] & gold)
        grade = r["_meta"]["synthesis_confidence"]
        grades[grade] = grades.get(grade, 0) + 1
        if args.verbose:
            print(f"{'HIT ' if hit else 'miss'} {'T' if thit else '-'} {'C' if spans[i] & gold else '-'} "
                  f"{grade:6} {q['doc_name']:32} "
                  f"gold {sorted(gold)} cited {sorted(cited)} | {q['question'][:70]}")
    n = len(questions)
    print(f"questions (document-scoped): {n}, depth {args.depth}, max_chars {args.max_chars}")
    print(f"{'':34} {'kb.synthesize':>14} {'lead baseline':>14}")
    print(f"{'evidence page cited':34} {page_hit / n:14.1%} {base_page_hit / n:14.1%}   (target >= 70%)")
    print(f"{'... among the first 3 claims':34} {early / n:14.1%} {base_early / n:14.1%}")
    print(f"{'cited sentence overlaps evidence':34} {text_hit / n:14.1%} {base_text_hit / n:14.1%}")
    print(f"{'evidence page among passages':34} {ceiling / n:14.1%}   (retrieval ceiling)")
    print(f"latency ms  kb.synthesize p50 {pct(latency, 0.5):.1f} p95 {pct(latency, 0.95):.1f}", end="")
    if ctx_latency:
        print(f"   | kb.context (same depth) p50 {pct(ctx_latency, 0.5):.1f} p95 {pct(ctx_latency, 0.95):.1f}")
    else:
        print()
    print(f"mean claims {statistics.mean(len(r['claims']) for r in results):.1f}, "
          f"mean answer chars {statistics.mean(len(r['answer']) for r in results):.0f}, confidence {grades}")


if __name__ == "__main__":
    main()
