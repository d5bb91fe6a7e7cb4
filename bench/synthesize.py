"""kb.synthesize benchmark on the FinanceBench dev split, through the daemon.

For every question, document-scoped (document_ids = the question's filing), it measures the share of
answers citing an evidence page, the share with a cited sentence overlapping the gold `evidence_text`, and
request latency p50/p95. Same-run baselines: a "lead" answer (the first units of each retrieved passage,
same passages and max_chars, no scoring), the retrieval ceiling (an evidence page among the passages
considered), and kb.context's latency at the same depth.

The answer-first figures (issue 24), for this code and, with `--baseline-root DIR` (a checkout of another
version, e.g. `git archive main | tar -x -C DIR`), for that version's daemon in the same run:
- figure questions: those whose gold answer holds a number printed on an evidence page (the page's text in the
  dataset; a page's figure of 10,000 or more also counts in thousands: "5,466,312" for "$5466 million"); the
  share whose first claim holds it, whose answer (any claim, or the answer text) holds it; the same per question_type
  (metrics-generated, domain-relevant, novel-generated);
- claims per answer (median, mean); computed answers on metrics-generated questions: right (within 1% or equal at
  the gold's decimals), wrong (a computed value that is not), absent;
- evidence page cited; answer lines without a citation (the "Not in the documents searched" notice excepted);
  quotes verbatim at their offsets (each claim's text against kb.read of its section; each table part against
  kb.read of its page).

    .venv/bin/python bench/synthesize.py [--kb bench/out/dev-kb] [--rebuild] [--depth 5] [--max-chars 4000] [-v]
                                         [--baseline-root DIR] [--questions FILE --pdfs DIR]

`--questions bench/data/figures.jsonl --pdfs /work/shared/financebench-more/pdfs` runs our own held-out figure
questions (bench/data/README.md) on a KB of only the filings they name (bench/out/figures-kb unless --kb);
`--questions bench/data/figures2.jsonl` the 40 in the dev split's mix (domain, novel and computed questions).
`--questions bench/data/figures3.jsonl` 60 more on other held-out filings (10-Ks' quarterly tables, an 8-K).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import re
import statistics
import sys
import time
from decimal import Decimal, InvalidOperation
from pathlib import Path

from _common import DEV, ROOT, gold_pages, load_questions, pct

_NON_WORD = re.compile(r"[^0-9a-z]+")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_CITE = re.compile(r"\[c[0-9a-f]{12}\]\s*$")
NOTICE = "Not in the documents searched"


def numbers(text: str) -> set[Decimal]:
    """Numbers in `text`, sign and separators dropped, trailing zeros normalised ("$1,577.00" -> 1577)."""
    out = set()
    for m in _NUMBER.finditer(text):
        with contextlib.suppress(InvalidOperation):
            out.add(Decimal(m.group(0).replace(",", "")).normalize())
    return out


def scaled(text: str) -> set[Decimal]:
    """`numbers`, and each of 10,000 or more also in thousands (a table in thousands, an answer in millions)."""
    found = numbers(text)
    return found | {(n / 1000).quantize(Decimal(1)).normalize() for n in found if n >= 10000}


def gold_figures(q: dict) -> set[Decimal]:
    """The numbers of the gold answer printed on an evidence page (years left out): a figure question's figure."""
    page = set().union(*(scaled(e.get("evidence_text_full_page") or e["evidence_text"]) for e in q["evidence"]))
    return {n for n in numbers(q["answer"]) if n in page and not (n == n.to_integral() and 1900 <= n <= 2100)}


def in_first(q: dict, r: dict) -> bool:
    """The first claim holds the gold figure."""
    return bool(gold_figures(q) & scaled(r["claims"][0]["text"] if r["claims"] else ""))


def in_answer(q: dict, r: dict) -> bool:
    """Any claim, or the answer text, holds the gold figure."""
    return bool(gold_figures(q) & scaled(r["answer"] + " ".join(c["text"] for c in r["claims"])))


def computed_verdict(q: dict, r: dict) -> str:
    """right / wrong / absent: the computed value against the gold answer's first number."""
    comp = (r.get("_meta") or {}).get("computed")
    if not comp or comp.get("value") is None:
        return "absent"
    gold = sorted(numbers(q["answer"]), key=lambda n: q["answer"].find(str(n)))
    if not gold:
        return "absent"
    want = next(iter(numbers(q["answer"].split()[0]) or gold))
    got = Decimal(str(comp["value"]))
    places = -want.as_tuple().exponent if want.as_tuple().exponent < 0 else 0
    if abs(got - want) <= abs(want) * Decimal("0.01") or round(got, places) == want:
        return "right"
    return "wrong"


def verbatim(d, r: dict, cache: dict) -> tuple[int, int]:
    """(quotes checked, quotes verbatim at their offsets) of one answer."""
    checked = ok = 0
    for c in r["claims"]:
        sid = c["section_id"]
        if sid not in cache:
            cache[sid] = d.call("kb.read", {"section_id": sid})["text"]
        checked += 1
        ok += cache[sid][c["quote_start"]:c["quote_end"]] == c["text"]
        table = c.get("table")
        if not table:
            continue
        for part in [table["label"], table["unit"], *table["headers"], *table["cells"]]:
            if part is None:
                continue
            key = (c["document_id"], part["page"])
            if part["page"] is None:
                text = cache[sid]
            else:
                if key not in cache:
                    cache[key] = d.call("kb.read", {"document_id": c["document_id"], "page": part["page"]})["text"]
                text = cache[key]
            checked += 1
            ok += text[part["start"]:part["end"]] == part["text"]
    return checked, ok


def uncited(answer: str) -> int:
    """Answer lines that do not end with a citation (the not-in-the-KB notice cites nothing by design)."""
    return sum(1 for line in answer.split("\n") if line.strip() and not line.startswith(NOTICE)
               and not _CITE.search(line) and not re.search(r"\[c[0-9a-f]{12}\]", line))


def build_kb(kb: Path, pdfs: Path, names: set[str] | None = None) -> None:
    """Parse the PDFs (only those whose stem is in `names` when given) in a process pool, write them one by one,
    into a temporary KB renamed into place (another bench may build the same shared KB at the same time)."""
    import os
    import shutil
    from concurrent.futures import ProcessPoolExecutor

    from jsonl_engine.ingest import parse_file
    from jsonl_engine.ingest.outcome import file_digest, write_parsed
    from jsonl_engine.store import open_store

    tmp = kb.with_name(kb.name + f".tmp{os.getpid()}")
    store = open_store(tmp)
    t0 = time.perf_counter()
    paths = sorted(str(p) for p in pdfs.glob("*.pdf") if names is None or p.stem in names)
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


def run_questions(d, questions: list[dict], doc_ids: dict[str, str], args,
                  has_context: bool) -> tuple[list[dict], list[float], list[float], list[tuple[int, int]]]:
    """Every question through kb.synthesize (document-scoped); latencies; verbatim checks per answer."""
    latency, ctx_latency, results, checks, cache = [], [], [], [], {}
    for q in questions:
        params = {"query": q["question"], "document_ids": [doc_ids[q["doc_name"]]], "depth": args.depth,
                  "max_chars": args.max_chars}
        t0 = time.perf_counter()
        results.append(d.call("kb.synthesize", params))
        latency.append((time.perf_counter() - t0) * 1000)
        checks.append(verbatim(d, results[-1], cache))
        if has_context:
            t0 = time.perf_counter()
            d.call("kb.context", {"query": q["question"], "document_ids": params["document_ids"],
                                  "limit": args.depth})
            ctx_latency.append((time.perf_counter() - t0) * 1000)
    return results, latency, ctx_latency, checks


def answer_first(questions: list[dict],
                 versions: list[tuple[str, list[dict], list[tuple[int, int]], list[float]]]) -> None:
    """The answer-first figures of each version (module docstring)."""
    figure_qs = [i for i, q in enumerate(questions) if gold_figures(q)]
    metric_qs = [i for i, q in enumerate(questions) if q["question_type"] == "metrics-generated"]
    print(f"\nanswer first: {len(figure_qs)} figure questions, {len(metric_qs)} computed (metrics-generated)")
    print(f"{'':34}" + "".join(f"{name[:26]:>28}" for name, _, _, _ in versions))
    rows: dict[str, list[str]] = {}
    for _name, results, checks, latency in versions:
        first = sum(in_first(questions[i], results[i]) for i in figure_qs)
        anywhere = sum(in_answer(questions[i], results[i]) for i in figure_qs)
        counts = [len(r["claims"]) for r in results]
        verdicts = [computed_verdict(questions[i], results[i]) for i in metric_qs]
        wrong_any = sum(computed_verdict(q, r) == "wrong" for q, r in zip(questions, results, strict=True))
        cited = sum(bool({c["page"] for c in r["claims"]} & gold_pages(q)) for q, r in zip(questions, results,
                                                                                          strict=True))
        n_first = max(1, len(figure_qs))
        add = rows.setdefault
        add("figure in the first claim", []).append(f"{first}/{len(figure_qs)} {first / n_first:.0%}")
        add("figure in the answer", []).append(f"{anywhere}/{len(figure_qs)} {anywhere / n_first:.0%}")
        for kind in sorted({questions[i]["question_type"] for i in figure_qs}):
            of_kind = [i for i in figure_qs if questions[i]["question_type"] == kind]
            first_k = sum(in_first(questions[i], results[i]) for i in of_kind)
            any_k = sum(in_answer(questions[i], results[i]) for i in of_kind)
            add(f"  {kind[:20]}: first, answer", []).append(f"{first_k}/{len(of_kind)}, {any_k}/{len(of_kind)}")
        add("claims per answer: median, mean", []).append(
            f"{statistics.median(counts):.0f}, {statistics.mean(counts):.1f}")
        add("computed right/wrong/absent", []).append(
            f"{verdicts.count('right')}/{verdicts.count('wrong')}/{verdicts.count('absent')}")
        add("wrong computed, all questions", []).append(str(wrong_any))
        add("evidence page cited", []).append(f"{cited}/{len(questions)} {cited / len(questions):.0%}")
        add("uncited answer lines", []).append(str(sum(uncited(r["answer"]) for r in results)))
        add("quotes verbatim at offsets", []).append(f"{sum(ok for _, ok in checks)} of {sum(n for n, _ in checks)}")
        add("kb.synthesize ms p50, p95", []).append(f"{pct(latency, 0.5):.0f}, {pct(latency, 0.95):.0f}")
    for label, values in rows.items():
        print(f"{label:34}" + "".join(f"{v:>28}" for v in values))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kb", type=Path, default=None,
                        help="default bench/out/dev-kb, or bench/out/<questions file stem>-kb with --questions")
    parser.add_argument("--dev", type=Path, default=DEV)
    parser.add_argument("--questions", type=Path, default=None,
                        help="a questions.jsonl (default: the dev split's); the KB then holds only the PDFs it names")
    parser.add_argument("--pdfs", type=Path, default=None, help="the PDFs' folder (default: the dev split's pdfs)")
    parser.add_argument("--depth", type=int, default=5)
    parser.add_argument("--max-chars", type=int, default=4000)
    parser.add_argument("--rebuild", action="store_true", help="rebuild the KB (after ingest changes)")
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("--baseline-root", type=Path, default=None,
                        help="a checkout of another version (e.g. main) whose daemon is measured in the same run")
    args = parser.parse_args()
    if args.kb is None:
        args.kb = ROOT / "bench" / "out" / (f"{args.questions.stem}-kb" if args.questions else "dev-kb")
    args.kb = args.kb.resolve()  # the baseline's daemon runs in --baseline-root: a relative --kb would name another KB
    questions = load_questions(args.questions or args.dev / "questions.jsonl")

    from tests.support.client import engine

    if args.rebuild and args.kb.exists():
        import shutil

        shutil.rmtree(args.kb)
    if not (args.kb / "kb.sqlite3").exists():
        args.kb.parent.mkdir(parents=True, exist_ok=True)
        pdfs, names = args.pdfs or args.dev / "pdfs", {q["doc_name"] for q in questions} if args.questions else None
        if names and (missing := sorted(n for n in names if not (pdfs / f"{n}.pdf").exists())):
            sys.exit(f"{len(missing)} filings the questions name are not in {pdfs} (pass --pdfs): {missing[:3]}")
        build_kb(args.kb, pdfs, names)

    with engine(args.kb, timeout=300) as d:
        docs = d.call("kb.documents", {})
        doc_ids = {Path(doc["path"] or doc["title"]).stem: doc["document_id"] for doc in docs["documents"]}
        if skipped := sum(q["doc_name"] not in doc_ids for q in questions):
            print(f"{skipped} questions skipped: their filing is not in {args.kb} (--rebuild)", file=sys.stderr)
        questions = [q for q in questions if q["doc_name"] in doc_ids]
        has_context = any(m["name"] == "kb.context" for m in d.call("capabilities")["methods"])
        results, latency, ctx_latency, checks = run_questions(d, questions, doc_ids, args, has_context)
    versions = [("this", results, checks, latency)]
    if args.baseline_root:
        from jsonl_engine.client import Client
        from tests.support.client import daemon_env

        root = str(args.baseline_root.resolve())
        with Client(args.kb, env=daemon_env({"PYTHONPATH": root}), cwd=root, timeout=300) as d:
            base, base_latency, _, base_checks = run_questions(d, questions, doc_ids, args, False)
        versions.append((f"baseline {args.baseline_root}", base, base_checks, base_latency))
    answer_first(questions, versions)

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
