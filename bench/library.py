"""Library benchmark: one KB of many filings, the dev questions asked corpus-wide, through the daemon.

The library is `../shared/financebench-dev/pdfs` plus `../shared/financebench-more/pdfs` (166 filings, about
25,000 pages), ingested twice through kb.ingest: under the real file names, and under neutral names (the sha256
of the name, `<hash>.pdf`: hard links, else copies), so the file name is never the only signal. For the 65 dev
questions, corpus-wide kb.context (limit 10): doc@1 (the first item's document is the question's), hit@1/5/10 of
the evidence page (an item spanning at most 2 pages that holds it; evidence_page_num is zero-indexed), p50/p95
round-trip latency; scoped to the question's document (asked right after it): hit@5 and p50/p95; `sc1.p95`: the
scoped questions asked first, on a fresh daemon (no corpus-wide question counted their phrases before). Also
distinct titles per document (kb.documents) and ingest pages/s. `--copies N` measures latency on a library N times
as large (byte-different copies of each PDF).

    .venv/bin/python bench/library.py [--naming real|neutral|both] [--rebuild] [--copies N] [--out bench/out/library]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path

from _common import ROOT, find_dev, load_questions, on_evidence, pct

LIMIT = 10
KS = (1, 5, 10)


def neutral(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:16] + ".pdf"


def library_dir(out: Path, naming: str, pdfs: list[Path], copies: int = 1) -> tuple[Path, dict[str, str]]:
    """A folder of the library's PDFs under `naming`; returns it and original stem -> file stem. With `copies`
    > 1, each PDF also appears copies-1 more times with a PDF comment appended (other bytes, so other documents
    with the same text): a library that many times as large, for latency."""
    folder = out / (f"pdfs-{naming}" if copies == 1 else f"pdfs-{naming}-x{copies}")
    folder.mkdir(parents=True, exist_ok=True)
    names = {}
    for pdf in pdfs:
        name = pdf.name if naming == "real" else neutral(pdf.name)
        names[pdf.stem] = Path(name).stem
        target = folder / name
        if not target.exists():
            try:
                os.link(pdf, target)
            except OSError:
                shutil.copyfile(pdf, target)
        for k in range(1, copies):
            copy_name = f"{pdf.stem}--copy{k}.pdf"
            target = folder / (copy_name if naming == "real" else neutral(copy_name))
            if not target.exists():
                target.write_bytes(pdf.read_bytes() + f"\n%copy {k}\n".encode())
    return folder, names


def ingest(d, folder: Path) -> tuple[float, int, int]:
    """kb.ingest of the folder: (seconds, pages written, documents written)."""
    t = time.perf_counter()
    events = d.request("kb.ingest", {"paths": [str(folder)]}, timeout=7200)
    seconds = time.perf_counter() - t
    results = [e["data"] for e in events if e["event"] == "result"]
    bad = [r for r in results if r.get("error")]
    if bad:
        print(f"ingest errors: {bad[:3]}", file=sys.stderr)
    written = [r for r in results if not r["skipped"] and not r.get("error")]
    return seconds, sum(r["pages"] for r in written), len(written)


def first_hit(items: list[dict], gold: set[tuple[str, int]]) -> int | None:
    for rank, i in enumerate(items[:LIMIT], 1):
        if any(d == i["document_id"] and on_evidence(i["page_start"], i["page_end"], p) for d, p in gold):
            return rank
    return None


def run(naming: str, out: Path, pdfs: list[Path], questions: list[dict], rebuild: bool, samples: int,
        pg_url: str | None = None, copies: int = 1, env: dict[str, str] | None = None) -> dict:
    """One naming on one KB: the SQLite KB under `out` (kept between runs), or, with `pg_url`, that PostgreSQL
    database (always ingested afresh)."""
    from tests.support.daemon import Daemon

    folder, _names = library_dir(out, naming, pdfs, copies)
    kb = out / (f"kb-{naming}" if copies == 1 else f"kb-{naming}-x{copies}")
    if rebuild and kb.exists():
        shutil.rmtree(kb)
    fresh = pg_url is not None or not kb.exists()
    stats = (out / f"ingest-{naming}-postgresql.json") if pg_url else kb / "ingest.json"
    report: dict = {"naming": naming if copies == 1 else f"{naming}x{copies}"}
    with Daemon(kb_dir=pg_url or kb, timeout=600, env=env) as d:
        if fresh:
            seconds, pages, count = ingest(d, folder)
            stats.write_text(json.dumps({"ingest_s": round(seconds, 1), "ingest_pages": pages, "ingest_docs": count,
                                         "pages_per_s": round(pages / seconds, 1) if seconds else None}))
        if stats.exists():
            report.update(json.loads(stats.read_text()))
        docs = d.result("kb.documents", {})["documents"]
        # a document's id is its content hash: files with the same bytes are one document
        ids = {p.stem: hashlib.sha256(p.read_bytes()).hexdigest()[:16] for p in pdfs}
        titles = [x["title"] for x in docs]
        report["documents"] = len(docs)
        report["pages"] = sum(x["pages"] for x in docs)
        report["distinct_titles"] = len(set(titles))
        rng = random.Random(12)
        report["sample_titles"] = [x["title"] for x in rng.sample(docs, min(samples, len(docs)))]
        d.result("kb.context", {"query": "warm up the reader connections", "limit": 1})
        rows = []
        for q in questions:
            doc = ids[q["doc_name"]]
            gold = {(ids[e["doc_name"]], int(e["evidence_page_num"]) + 1) for e in q["evidence"]}
            row = {"id": q["financebench_id"], "doc": q["doc_name"]}
            for scoped in (False, True):
                params = {"query": q["question"], "limit": LIMIT}
                if scoped:
                    params["document_ids"] = [doc]
                t = time.perf_counter()
                data = d.result("kb.context", params)
                ms = (time.perf_counter() - t) * 1000
                key = "scoped" if scoped else "corpus"
                row[f"{key}_rank"] = first_hit(data["items"], gold)
                row[f"{key}_ms"] = ms
                if not scoped:
                    row["doc1"] = bool(data["items"]) and data["items"][0]["document_id"] == doc
                    row["first_title"] = data["items"][0]["document_title"] if data["items"] else None
                    row["routed"] = data.get("routed")
            rows.append(row)
    # Scoped questions asked first, on a fresh daemon (an editor's questions about its document): no corpus-wide
    # question has counted their phrases before.
    with Daemon(kb_dir=pg_url or kb, timeout=600, env=env) as d:
        d.result("kb.context", {"query": "warm up the reader connections", "limit": 1})
        for q, row in zip(questions, rows, strict=True):
            t = time.perf_counter()
            d.result("kb.context", {"query": q["question"], "limit": LIMIT, "document_ids": [ids[q["doc_name"]]]})
            row["scoped_first_ms"] = (time.perf_counter() - t) * 1000
    n = len(rows) or 1

    def hit(key: str, k: int) -> float:
        return sum(1 for r in rows if r[key] is not None and r[key] <= k) / n

    report["doc@1"] = sum(r["doc1"] for r in rows) / n
    for k in KS:
        report[f"hit@{k}"] = hit("corpus_rank", k)
    report["p50_ms"] = pct([r["corpus_ms"] for r in rows], 0.5)
    report["p95_ms"] = pct([r["corpus_ms"] for r in rows], 0.95)
    report["scoped_hit@5"] = hit("scoped_rank", 5)
    report["scoped_p50_ms"] = pct([r["scoped_ms"] for r in rows], 0.5)
    report["scoped_p95_ms"] = pct([r["scoped_ms"] for r in rows], 0.95)
    report["scoped_first_p95_ms"] = pct([r["scoped_first_ms"] for r in rows], 0.95)
    report["rows"] = rows
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "library"))
    ap.add_argument("--dev", default=None)
    ap.add_argument("--more", default=None, help="folder of further PDFs (default: ../shared/financebench-more)")
    ap.add_argument("--naming", choices=("real", "neutral", "both"), default="both")
    ap.add_argument("--rebuild", action="store_true", help="ingest again (the ingest rate is measured then)")
    ap.add_argument("--samples", type=int, default=10, help="random card titles shown")
    ap.add_argument("--copies", type=int, default=1,
                    help="each PDF this many times (byte-different copies): latency on a larger library; the "
                         "quality columns then count a copy's page as a miss")
    ap.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite",
                    help="postgresql: a throwaway server (tests/support/pg.py), a fresh database per naming")
    ap.add_argument("--sqlite", choices=("auto", "stdlib"), default="auto",
                    help="the SQLite library of the daemons: APSW when installed (auto), or the stdlib's sqlite3")
    args = ap.parse_args()
    env = {"JSONL_ENGINE_SQLITE": "stdlib"} if args.sqlite == "stdlib" else None

    dev = find_dev(args.dev)
    more = Path(args.more) if args.more else dev.parent / "financebench-more"
    pdfs = sorted((dev / "pdfs").glob("*.pdf")) + sorted((more / "pdfs").glob("*.pdf"))
    questions = load_questions(dev / "questions.jsonl")
    out = Path(args.out)
    namings = ("real", "neutral") if args.naming == "both" else (args.naming,)
    with contextlib.ExitStack() as stack:
        pg = None
        if args.backend == "postgresql":
            from tests.support.pg import PgServer

            pg = stack.enter_context(PgServer())
        reports = [run(n, out, pdfs, questions, args.rebuild, args.samples,
                       pg.new_database(f"library_{n}") if pg else None, args.copies, env) for n in namings]

    print(f"library ({args.backend}): {len(pdfs)} PDFs, {len(questions)} dev questions asked corpus-wide "
          f"(limit {LIMIT})")
    header = (f"{'naming':10} {'docs':>5} {'pages':>6} {'titles':>6} {'doc@1':>6} " + " ".join(f"{'hit@' + str(k):>6}" for k in KS)
              + f" {'p50':>6} {'p95':>6} {'sc.hit@5':>8} {'sc.p50':>6} {'sc.p95':>6} {'sc1.p95':>7} {'ingest p/s':>10}")
    print(header)
    print("-" * len(header))
    for r in reports:
        print(f"{r['naming']:10} {r['documents']:5d} {r['pages']:6d} {r['distinct_titles']:6d} {r['doc@1']:6.3f} "
              + " ".join(f"{r[f'hit@{k}']:6.3f}" for k in KS)
              + f" {r['p50_ms']:6.1f} {r['p95_ms']:6.1f} {r['scoped_hit@5']:8.3f} {r['scoped_p50_ms']:6.1f}"
              f" {r['scoped_p95_ms']:6.1f} {r['scoped_first_p95_ms']:7.1f} {r.get('pages_per_s') or '-':>10}")
    for r in reports:
        print(f"\n{r['naming']}: {len(r['sample_titles'])} random titles")
        for title in r["sample_titles"]:
            print(f"  {title}")
    print(f"\nmachine load average at the end: {Path('/proc/loadavg').read_text().split()[0]}")
    out.mkdir(parents=True, exist_ok=True)
    (out / f"library-{args.backend}.json").write_text(json.dumps(reports, indent=1))


if __name__ == "__main__":
    main()
