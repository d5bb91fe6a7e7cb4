"""Determinism benchmark: the same files ingested in two orders (and in one batch vs one file per request) must
give the same titles and the same kb.context rankings.

The library is `../shared/library-kinds/pdfs` and `../shared/financebench-dev/pdfs` (60 PDFs) under neutral names;
KB A ingests the folder in one kb.ingest request, KB B ingests the files one per request in reverse order. Every
question of `bench/data/kinds_questions.jsonl` and the dev questions is asked corpus-wide on both (limit 10); the
script prints how many titles and how many top-10 rankings (document, pages, score) differ.

    .venv/bin/python bench/determinism.py [--out bench/out/determinism]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from _common import ROOT, find_dev, load_questions
from library import library_dir

from tests.support.daemon import Daemon

DATA = ROOT / "bench" / "data"


def ranking(d, question: str) -> list[tuple]:
    data = d.result("kb.context", {"query": question, "limit": 10})
    return [(i["document_id"], i["page_start"], i["page_end"], round(i["score"], 9)) for i in data["items"]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "determinism")
    args = ap.parse_args()
    shared = ROOT.parent / "shared"
    pdfs = sorted((shared / "library-kinds" / "pdfs").glob("*.pdf")) + sorted((find_dev(None) / "pdfs").glob("*.pdf"))
    folder, _ = library_dir(args.out, "neutral", pdfs)
    questions = [json.loads(line)["question"] for line in (DATA / "kinds_questions.jsonl").read_text().splitlines()
                 if line.strip()] + [q["question"] for q in load_questions(find_dev(None) / "questions.jsonl")]
    results = {}
    for name, batches in (("one-batch", [[str(folder)]]),
                          ("reverse-single", [[str(p)] for p in sorted(folder.glob("*.pdf"), reverse=True)])):
        kb = args.out / f"kb-{name}"
        shutil.rmtree(kb, ignore_errors=True)
        with Daemon(kb_dir=kb) as d:
            for paths in batches:
                d.request("kb.ingest", {"paths": paths}, timeout=3600)
            titles = sorted((x["document_id"], x["title"]) for x in d.result("kb.documents", {})["documents"])
            results[name] = (titles, [ranking(d, q) for q in questions])
    (a_titles, a_rank), (b_titles, b_rank) = results.values()
    differ = sum(1 for x, y in zip(a_rank, b_rank, strict=True) if x != y)
    print(f"{len(pdfs)} PDFs, {len(a_titles)} documents; titles differing: "
          f"{len(set(a_titles) ^ set(b_titles)) // 2}; rankings differing: {differ} of {len(questions)}")
    sys.exit(0)


if __name__ == "__main__":
    main()
