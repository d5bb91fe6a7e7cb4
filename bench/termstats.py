"""Phrase counts read from the term statistics (store/sqlite/terms.py) against the same counts made on the FTS5
index (what the store did before them): each must be equal, and what each costs per phrase, by phrase length.

The phrases are those of the dev questions (retrieval/query.py: words, adjacent content words, split numbers,
fiscal forms, accounting expansions, and the names the prior counts in documents), in every kind. Run on a KB
the store has migrated (opening it migrates it), read-only otherwise; exits 1 on any difference.

    .venv/bin/python bench/termstats.py --kb bench/out/backends-kb [--questions N] [--kinds pages,documents]

With `--rounds N --baseline-root DIR` (a checkout made before the statistics: `git archive <commit> | tar -x -C
DIR`) it measures instead kb.context p50/p95 through a daemon of each checkout on the same KB, alternated N
rounds, scoped to each question's filing then corpus-wide (as bench/backends.py). The older code refuses a KB of a
newer schema: its rounds run with migration 7's record hidden (PostgreSQL: the newest one's; its table stays; the
older code never reads it).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from _common import find_dev, load_questions, pct


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kb", required=True, help="a SQLite KB directory (--rounds: or a PostgreSQL URL)")
    ap.add_argument("--dev", default=None)
    ap.add_argument("--questions", type=int, default=0, help="the first N questions (0: all)")
    ap.add_argument("--kinds", default="pages,covers,sections,documents")
    ap.add_argument("--rounds", type=int, default=0, help="kb.context latencies, old and new code alternated")
    ap.add_argument("--baseline-root", type=Path, default=None)
    args = ap.parse_args()
    if args.rounds:
        return compare_latencies(args)

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
                    if len(tokens) > 2 and terms.listed_among(conn, [" ".join(tokens)]):
                        group = "3+ words listed"
                    t = time.perf_counter()
                    if kind == "documents":
                        counted = search.document_frequency(conn, phrase, lambda: spans)
                    else:
                        counted = search.frequency(conn, kind, phrase)
                    t_count = time.perf_counter() - t
                    t = time.perf_counter()
                    keys = terms.keys(tokens)
                    read = terms.count(tokens, terms.lookup(conn, kind, keys), lambda: None,
                                       terms.listed_among(conn, keys))
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


def compare_latencies(args: argparse.Namespace) -> int:
    from backends import latencies

    from jsonl_engine.store import open_store
    from jsonl_engine.store.postgres import migrations as pg_migrations
    from jsonl_engine.store.sqlite import migrations as sqlite_migrations
    from tests.support.sql import sqlite_connect

    if args.baseline_root is None:
        sys.exit("--rounds needs --baseline-root")
    postgres = str(args.kb).startswith("postgresql://")
    kb = args.kb if postgres else Path(args.kb).resolve()  # the daemons run in their checkouts
    store = open_store(kb)  # migrates it
    ids = {Path(d.path).stem: d.document_id for d in store.documents() if d.path}
    path = None if postgres else store.path
    store.close()
    questions = [q for q in load_questions(find_dev(args.dev) / "questions.jsonl") if q["doc_name"] in ids]
    if args.questions:
        questions = questions[:args.questions]
    # the statistics' migration: hidden from the older code, which refuses a newer schema
    version, description, _ = (pg_migrations.MIGRATIONS[-1] if postgres else sqlite_migrations.MIGRATIONS[6])

    def record(present: bool) -> None:
        if postgres:
            import psycopg

            with psycopg.connect(kb, autocommit=True) as pg:
                pg.execute("DELETE FROM schema_migrations WHERE version = %s", (version,))
                if present:
                    pg.execute("INSERT INTO schema_migrations (version, description) VALUES (%s, %s)",
                               (version, description))
            return
        conn = sqlite_connect(path)
        try:
            conn.execute("DELETE FROM schema_migrations WHERE version = ?", (version,))
            if present:
                conn.execute("INSERT INTO schema_migrations VALUES (?, ?, datetime('now'))", (version, description))
        finally:
            conn.close()

    try:
        for i in range(args.rounds):
            for name, root in (("old", args.baseline_root), ("new", Path(__file__).resolve().parents[1])):
                record(name == "new")
                r = latencies(kb, ids, questions, root)
                print(f"round {i + 1} {name}: scoped p50/p95 {r['scoped_p50_ms']:.1f}/{r['scoped_p95_ms']:.1f} ms, "
                      f"corpus-wide {r['corpus_p50_ms']:.1f}/{r['corpus_p95_ms']:.1f} ms "
                      f"(load {Path('/proc/loadavg').read_text().split()[0]})", flush=True)
    finally:
        record(True)
    print(f"{len(questions)} questions, kb.context limit 10")
    return 0


if __name__ == "__main__":
    sys.exit(main())
