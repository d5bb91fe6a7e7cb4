"""The claim order's weights (answer/order.py) fitted across question sets, kept only if they generalise (issue 24).

For every figure question of each set (synthesize.py's gold_figures: a number of the gold answer printed on an
evidence page), document-scoped and in-process (answer/direct.py answer_first, as kb.synthesize serves it), it
records each candidate unit's feature vector: the multiplier of each W_ weight of answer/order.py (found by judging
the unit again with only that weight set to 1: 0 or 1, a label's share, -1 for a penalty, -n for n other words) and
its base (the synthesis score, and what no weight scales); whether the unit holds a gold figure; whether the
answer's first claim is the order's first unit (else a superlative lead, a computed line or a template's rows
lead: the question keeps its recorded outcome whatever the weights). Re-scoring from the vectors is offline and
exact (the same sum, rounding and rank rules), so a fit takes seconds:

- a greedy coordinate search (0.05 steps, 0.01 for W_EXTRA; `--pairs`: two weights at once) maximising first-claim
  hits, a step taken only when it gains `--min-gain` questions or more (`--pairs` takes minutes a fit);
- leave-one-set-out: fitted on every set but one, counted on the one left out, beside the current weights;
- each weight one step down and up: the change of each set's count (a weight no step moves is free; one any step
  loses on is where it was set by hand).

    .venv/bin/python bench/order_fit.py [--set NAME:QUESTIONS:KB ...] [--records FILE] [--load FILE]
                                        [--pairs] [--min-gain 1]

Default sets: the dev split (bench/out/dev-kb), figures, figures3, figures5 and figures6 (bench/out/<stem>-kb, built by
synthesize.py --questions). figures2, figures4 and figures9 are the held-out judges, figures8 a held-out check set run
once: never fitted on (refused here).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections import defaultdict
from itertools import combinations
from pathlib import Path

from _common import DEV, ROOT, load_questions

HELD_OUT = {"figures2", "figures4", "figures8", "figures9"}
STEP, EXTRA_STEP = 0.05, 0.01


def _weights() -> list[str]:
    from jsonl_engine.answer import order

    return sorted(n for n in vars(order) if n.startswith("W_") and isinstance(getattr(order, n), float))


def vector(judge, names: list[str], ask, body: str, **kw) -> tuple[float, list[float]]:
    """(base, multipliers) of one unit: `judge` (order.judge) with every weight 0, then each weight alone at 1."""
    from jsonl_engine.answer import order

    current = {n: getattr(order, n) for n in names}
    try:
        for n in names:
            setattr(order, n, 0.0)
        base = judge(ask, body, **kw).directness
        f = []
        for n in names:
            setattr(order, n, 1.0)
            f.append(round(judge(ask, body, **kw).directness - base, 9))
            setattr(order, n, 0.0)
    finally:
        for n, v in current.items():
            setattr(order, n, v)
    return base, f


def _bench_synthesize():
    spec = importlib.util.spec_from_file_location("bench_synthesize", ROOT / "bench" / "synthesize.py")
    assert spec is not None and spec.loader is not None
    bs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bs)
    return bs


def record_set(name: str, questions: list[dict], store, ids: dict[str, str]) -> list[dict]:
    """One record per figure question of `questions` whose filing (doc name -> document id: `ids`) is in `store`."""
    bs = _bench_synthesize()
    from jsonl_engine.answer import direct, order, qualifier

    names = _weights()
    judge, rank, weigh = order.judge, order.rank, qualifier.weigh
    vectors: dict[int, tuple[float, list[float]]] = {}
    seen: dict = {}

    def judged(ask, body, **kw):
        out = judge(ask, body, **kw)
        vectors[id(out)] = vector(judge, names, ask, body, **kw)
        return out

    def ranked(units, judgement, key, **kw):
        out = rank(units, judgement, key, **kw)
        if "units" not in seen:  # the answer's own order (a template or a computation may synthesize again)
            first = set(kw.get("first", ()))
            seen["units"] = [(u, judgement(u), key(u), kw["document_of"](u) in first) for u in units]
            seen["lead"] = out[0] if out else None  # before a superlative moves its lead to the front
            seen["key"] = key
        return out

    def weighed(judgement, naming, asked):
        # the qualifier's share (qualifier.W_QUALIFIED, no order weight) is added to a new Judged: its vector is the
        # judged one's, its base raised by what was added
        out = weigh(judgement, naming, asked)
        if out is not judgement and id(judgement) in vectors:
            base, f = vectors[id(judgement)]
            vectors[id(out)] = (base + out.directness - judgement.directness, f)
        return out

    order.judge, order.rank, qualifier.weigh = judged, ranked, weighed
    recs = []
    try:
        for n, q in enumerate(questions):
            gold = bs.gold_figures(q)
            if not gold or q["doc_name"] not in ids:
                continue
            seen.clear()
            vectors.clear()
            r = direct.answer_first(store, q["question"], document_ids=[ids[q["doc_name"]]])
            units = []
            for u, j, k, first in seen.get("units", []):
                body = u.passage.text[u.seg.start:u.seg.end]
                base, f = vectors[id(j)]
                units.append({"d": j.directness, "base": base, "f": f, "period": j.period, "deep": j.deep,
                              "key": list(k), "first": first, "gold": bool(gold & bs.scaled(body))})
            lead = seen.get("lead")
            lead_body = lead.passage.text[lead.seg.start:lead.seg.end] if lead is not None else None
            claim = r.claims[0].text if r.claims else None
            recs.append({"set": name, "n": n, "weights": names, "units": units,
                         "lead": list(key(lead)) if (key := seen.get("key")) and lead is not None else None,
                         "first": bool(claim and gold & bs.scaled(claim)),
                         "override": claim is None or lead_body is None
                         or " ".join(claim.split()) != " ".join(lead_body.split())})
    finally:
        order.judge, order.rank, qualifier.weigh = judge, rank, weigh
    return recs


def record(sets: list[tuple[str, Path, Path]], out: Path) -> list[dict]:
    """Run the sets' figure questions in-process (see the module docstring); the records also written to `out`."""
    from jsonl_engine.store import open_store

    recs = []
    with out.open("w", encoding="utf-8") as fh:
        for name, qpath, kb in sets:
            store = open_store(kb)
            try:
                ids = {Path(d.path).stem: d.document_id for d in store.documents() if d.path}
                for rec in record_set(name, load_questions(qpath), store, ids):
                    recs.append(rec)
                    fh.write(json.dumps(rec) + "\n")
            finally:
                store.close()
    return recs


def lead(rec: dict, w: list[float]) -> int | None:
    """The index of the unit order.rank puts first under weights `w` (its rules re-applied to the vectors)."""
    us = rec["units"]
    if not us:
        return None
    ds = [round(u["base"] + sum(a * b for a, b in zip(w, u["f"], strict=True) if b), 9) for u in us]
    ranked = sorted(range(len(us)), key=lambda i: (not us[i]["first"], -ds[i], *us[i]["key"]))
    top = ranked[0]
    if us[top]["period"] < 0:  # a row lacking the asked period gives way to a shown unit stating it
        top = next((i for i in ranked if us[i]["period"] > 0 and not us[i]["deep"]
                    and us[i]["first"] == us[top]["first"]), top)
    return top


def first_hit(rec: dict, w: list[float]) -> bool:
    """Whether the first claim holds a gold figure under weights `w`."""
    if rec["override"] or not rec["units"]:
        return rec["first"]
    return rec["units"][lead(rec, w)]["gold"]


def hits(recs: list[dict], w: list[float]) -> int:
    return sum(first_hit(r, w) for r in recs)


def grid(name: str) -> list[float]:
    return [round(EXTRA_STEP * i, 2) for i in range(9)] if name == "W_EXTRA" else \
        [round(STEP * i, 2) for i in range(15)]


def fit(recs: list[dict], names: list[str], current: list[float], min_gain: int, pairs: bool) -> list[float]:
    """Greedy search from `current`: the move (one weight, or two with `pairs`) gaining most, ties to the fewest
    changed weights and the smallest change, while it gains `min_gain` or more."""
    w, best = list(current), hits(recs, current)
    moves = [(i,) for i in range(len(names))] + (list(combinations(range(len(names)), 2)) if pairs else [])
    while True:
        cand = None
        for mv in moves:
            for vals in _product([grid(names[i]) for i in mv]):
                t = list(w)
                for i, v in zip(mv, vals, strict=True):
                    t[i] = v
                if t == w or (s := hits(recs, t)) < best + min_gain:
                    continue
                k = (s, -sum(a != b for a, b in zip(t, current, strict=True)),
                     -sum(abs(a - b) for a, b in zip(t, current, strict=True)))
                if cand is None or k > cand[0]:
                    cand = (k, t, s)
        if cand is None:
            return w
        w, best = cand[1], cand[2]


def _product(lists: list[list[float]]) -> list[tuple[float, ...]]:
    out: list[tuple[float, ...]] = [()]
    for values in lists:
        out = [(*p, v) for p in out for v in values]
    return out


def _changes(names: list[str], current: list[float], w: list[float]) -> str:
    return ", ".join(f"{n} {a:.2f}->{b:.2f}" for n, a, b in zip(names, current, w, strict=True) if a != b) or "none"


def report(recs: list[dict], min_gain: int, pairs: bool) -> None:
    from jsonl_engine.answer import order

    names = recs[0]["weights"]
    current = [getattr(order, n) for n in names]
    by: dict[str, list[dict]] = defaultdict(list)
    for r in recs:
        by[r["set"]].append(r)
    sets = list(by)
    print(f"{'set':10}{'figure qs':>10}{'recorded':>10}{'re-scored':>10}{'fixed':>7}  (fixed: a superlative, computed"
          " or template lead)")
    for s in sets:
        print(f"{s:10}{len(by[s]):>10}{sum(r['first'] for r in by[s]):>10}{hits(by[s], current):>10}"
              f"{sum(r['override'] for r in by[s]):>7}")
    print(f"\nleave-one-set-out (min gain {min_gain}{', pairs' if pairs else ''}): first-claim hits on the set left out")
    total_cur = total_fit = 0
    for s in sets:
        w = fit([r for t in sets if t != s for r in by[t]], names, current, min_gain, pairs)
        c, f = hits(by[s], current), hits(by[s], w)
        total_cur, total_fit = total_cur + c, total_fit + f
        print(f"  {s:10} current {c:>3}/{len(by[s])}  fitted on the others {f:>3}/{len(by[s])}  "
              f"({_changes(names, current, w)})")
    print(f"  total      current {total_cur}  fitted {total_fit}")
    w = fit(recs, names, current, min_gain, pairs)
    print(f"fitted on all sets: {_changes(names, current, w)}; "
          + ", ".join(f"{s} {hits(by[s], current)}->{hits(by[s], w)}" for s in sets))
    print("\none step down | up, per set (" + " ".join(sets) + ")")
    for i, n in enumerate(names):
        cells = []
        for v in (current[i] - (EXTRA_STEP if n == "W_EXTRA" else STEP),
                  current[i] + (EXTRA_STEP if n == "W_EXTRA" else STEP)):
            t = list(current)
            t[i] = round(max(v, 0.0), 2)
            cells.append(f"{t[i]:.2f}: " + " ".join(f"{hits(by[s], t) - hits(by[s], current):+d}" for s in sets))
        print(f"  {n:18} {current[i]:.2f}   " + "   |   ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--set", action="append", default=None, metavar="NAME:QUESTIONS:KB")
    parser.add_argument("--records", type=Path, default=ROOT / "bench" / "out" / "order-vectors.jsonl")
    parser.add_argument("--load", type=Path, default=None, help="fit from recorded vectors, no questions run")
    parser.add_argument("--pairs", action="store_true", help="also move two weights at once (slower)")
    parser.add_argument("--min-gain", type=int, default=1)
    args = parser.parse_args()
    if args.load:
        recs = [json.loads(x) for x in args.load.read_text(encoding="utf-8").splitlines() if x.strip()]
    else:
        data, out = ROOT / "bench" / "data", ROOT / "bench" / "out"
        specs = args.set or [f"dev:{DEV / 'questions.jsonl'}:{out / 'dev-kb'}"] + \
            [f"{s}:{data / s}.jsonl:{out / s}-kb" for s in ("figures", "figures3", "figures5", "figures6")]
        sets = []
        for spec in specs:
            name, qpath, kb = spec.split(":")
            if Path(qpath).stem in HELD_OUT:
                sys.exit(f"{qpath} is a held-out judge: run it with synthesize.py, never fit on it")
            sets.append((name, Path(qpath), Path(kb)))
        args.records.parent.mkdir(parents=True, exist_ok=True)
        recs = record(sets, args.records)
    report(recs, args.min_gain, args.pairs)


if __name__ == "__main__":
    main()
