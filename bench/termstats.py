"""Phrase counts read from the term statistics (store/sqlite/terms.py) against the same counts made on the FTS5
index (what the store did before them): each must be equal, and what each costs per phrase, by phrase length.

The phrases are those of the dev questions (retrieval/query.py: words, adjacent content words, split numbers,
fiscal forms, accounting expansions, and the names the prior counts in documents), in every kind. Run on a KB
the store has migrated (opening it migrates it), read-only otherwise; exits 1 on any difference.

    .venv/bin/python bench/termstats.py --kb bench/out/backends-kb [--questions N] [--kinds pages,documents]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from _common import find_dev, load_questions, pct


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kb", type=Path, required=True)
    ap.add_argument("--dev", default=None)
    ap.add_argument("--questions", type=int, default=0, help="the first N questions (0: all)")
    ap.add_argument("--kinds", default="pages,covers,sections,documents")
    args = ap.parse_args()

    from jsonl_engine.retrieval.query import parse
    from jsonl_engine.store import open_store
    from jsonl_engine.store.sqlite import search, terms

    questions = load_questions(find_dev(args.dev) / "questions.jsonl")
    if args.questions:
        questions = questions[:args.questions]
    phrases: dict[tuple[str, ...], None] = {}
    for q in questions:
        parsed = parse(q["question"])
        phrases.update(dict.fromkeys([*parsed.phrases, *parsed.names, *((w,) for n in parsed.names for w in n)]))
    store = open_store(args.kb)
    differ = 0
    try:
        conn = store._conn()  # noqa: SLF001 (a bench of the store's own statements)
        spans = search.page_spans(conn)
        for kind in args.kinds.split(","):
            cost: dict[str, list[float]] = {}
            with store.snapshot():
                for phrase in phrases:
                    tokens = terms.phrase_tokens([phrase])[phrase]
                    group = "1 word" if len(tokens) == 1 else "2 words" if len(tokens) == 2 else "3+ words"
                    t = time.perf_counter()
                    if kind == "documents":
                        counted = search.document_frequency(conn, phrase, spans)
                    else:
                        counted = search.frequency(conn, kind, phrase)
                    t_count = time.perf_counter() - t
                    t = time.perf_counter()
                    read = terms.lookup(conn, kind, [" ".join(tokens)])[" ".join(tokens)] if terms.counted(tokens) \
                        else None
                    t_read = time.perf_counter() - t
                    if read is not None and read != counted:
                        differ += 1
                        print(f"DIFFERS {kind} {phrase}: counted {counted}, statistics {read}")
                    cost.setdefault(group, []).append(t_count * 1000)
                    if read is not None:
                        cost.setdefault(group + " (stats)", []).append(t_read * 1000)
            for group in sorted(cost):
                v = cost[group]
                print(f"{kind:9s} {group:18s} n={len(v):4d}  mean {sum(v) / len(v):8.3f} ms  "
                      f"p50 {pct(v, 0.5):8.3f}  p95 {pct(v, 0.95):8.3f}  max {max(v):8.3f}")
    finally:
        store.close()
    print(f"{len(phrases)} phrases, {differ} differences")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
