"""bench/order_fit.py re-scores the claim order offline from recorded feature vectors: under any weights, the unit it
puts first is the one the engine itself puts first when run with those weights."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from jsonl_engine.answer import order

ROOT = Path(__file__).resolve().parents[1]
DEV_QUESTIONS = next((p / "questions.jsonl" for p in (ROOT.parent / "shared" / "financebench-dev",
                                                        Path("/work/shared/financebench-dev"))
                      if (p / "questions.jsonl").is_file()), None)


def order_fit():
    sys.path.insert(0, str(ROOT / "bench"))
    import order_fit

    return order_fit


# far from the current weights: a label's share, the period's column and the item named weigh differently
PERTURBED = [{"W_LABEL": 0.0, "W_PERIOD_CELL": 0.6, "W_ITEM": 0.5},
             {"W_FIGURE": 0.05, "W_NEAR": 0.6, "W_WHOLE": 0.0, "W_EXTRA": 0.1, "W_STATEMENT": 0.5}]


@pytest.mark.skipif(DEV_QUESTIONS is None, reason="financebench-dev not found")
def test_offline_rescoring_leads_with_the_engines_own_first_unit(dev_kb, monkeypatch):
    fit = order_fit()
    questions = [json.loads(x) for x in DEV_QUESTIONS.read_text(encoding="utf-8").splitlines() if x.strip()]
    recs = fit.record_set("dev", questions, dev_kb, dev_kb.doc_ids)
    ranked = [r for r in recs if len(r["units"]) > 1]
    assert len(ranked) >= 3, "too few figure questions on the test KB's filings"
    names = recs[0]["weights"]
    assert {"W_LABEL", "W_PERIOD_CELL", "W_ITEM", "W_EXTRA"} <= set(names)
    current = [getattr(order, n) for n in names]
    for r in recs:  # the current weights: the recorded lead, and the recorded outcome
        assert r["lead"] is None or r["units"][fit.lead(r, current)]["key"] == r["lead"]
        assert fit.first_hit(r, current) == r["first"]
    moved = 0
    for weights in PERTURBED:
        w = [weights.get(n, c) for n, c in zip(names, current, strict=True)]
        with monkeypatch.context() as m:
            for n, v in weights.items():
                m.setattr(order, n, v)
            again = fit.record_set("dev", questions, dev_kb, dev_kb.doc_ids)
        assert [(r["n"], len(r["units"])) for r in again] == [(r["n"], len(r["units"])) for r in recs]
        for r, r2 in zip(recs, again, strict=True):
            if r["units"]:
                assert r["units"][fit.lead(r, w)]["key"] == r2["lead"]
                moved += r2["lead"] != r["lead"]
    assert moved, "no perturbation changed a lead: the check would not tell a wrong re-scoring"
