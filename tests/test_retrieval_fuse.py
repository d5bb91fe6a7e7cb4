"""rank.fuse: a section's page score is the best score of its pages and the first page giving it (a one-page
section: its page's score, read once), then the fused score; the same ranking as testing each page of each span."""

from __future__ import annotations

import random

from jsonl_engine.retrieval import rank
from jsonl_engine.retrieval.weights import SCORE_DIGITS, W_DOC, W_PAGE, W_SECTION


def reference(cands, sections, page_score, prior):
    best_s = max((s for _, s in sections), default=0.0) or 1.0
    out = {}
    for c in cands.values():
        section = next((s / best_s for i, s in sections if i == c.id), 0.0)
        scores = [(page_score.get((c.document_id, n), 0.0), n) for n in range(c.page_start, c.page_end + 1)]
        page, best = max(scores, key=lambda t: (t[0], -t[1]), default=(0.0, c.page_start))
        doc = prior.get(c.document_id, 0.0) if prior else 0.0
        out[c.id] = (round(W_SECTION * section + W_PAGE * page + W_DOC * doc, SCORE_DIGITS), page, best)
    return out


def test_fused_scores_and_best_pages_match_each_page_tested():
    rng = random.Random(11)
    for _ in range(200):
        page_score = {(d, n): rng.choice([0.0, 0.5, 1.0, rng.random()]) for d in "ab"
                      for n in rng.sample(range(1, 30), 12)}
        cands = {}
        for i in range(40):
            start = rng.randint(1, 28)
            end = start + rng.choice([-1, 0, 0, 0, 1, 2, 5])
            cands[f"s{i}"] = rank.Candidate(id=f"s{i}", document_id=rng.choice("abc"), title="", path=[],
                                            page_start=start, page_end=end)
        sections = [(f"s{i}", rng.random() * 10) for i in rng.sample(range(40), 15)]
        prior = rng.choice([None, {"a": 1.0, "b": 0.25}])
        want = reference(cands, sections, page_score, prior)
        ranked = rank.fuse(cands, sections, page_score, prior, spread_out=False)
        assert {c.id: (c.score, c.page, c.best) for c in ranked} == want
        assert [c.id for c in ranked] == sorted(want, key=lambda i: (-want[i][0], i))
