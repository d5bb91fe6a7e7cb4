"""A section's page score (rank.fuse): the best score among its pages and the first page giving it, looked up
among the scored pages for a long span; the same pair as testing each of its pages."""

from __future__ import annotations

import random

from jsonl_engine.retrieval import rank


def each_page(page_score, doc, start, end):
    scores = [(page_score.get((doc, n), 0.0), n) for n in range(start, end + 1)]
    return max(scores, key=lambda t: (t[0], -t[1]), default=(0.0, start))


def test_the_best_page_of_a_span_is_the_one_testing_each_page_finds():
    rng = random.Random(7)
    checked = long = 0
    for _ in range(300):
        page_score = {}
        for doc in ("a", "b"):
            for n in rng.sample(range(1, 120), rng.randint(0, 40)):
                # equal scores and zeros too (ties go to the first page), a boost above 1
                page_score[(doc, n)] = rng.choice([0.0, 0.25, 0.5, 1.0, 1.3, rng.random()])
        best = rank._best_page(page_score)
        for _ in range(40):
            doc = rng.choice(("a", "b", "c"))
            start = rng.randint(1, 110)
            end = start + rng.choice([-1, 0, 1, 3, 7, 8, 9, 30, 100])
            assert best(doc, start, end) == each_page(page_score, doc, start, end), (doc, start, end)
            checked += 1
            long += end - start >= rank.SHORT_SPAN
    assert checked == 12_000 and long > 3000


def test_a_chapter_takes_its_best_scored_page():
    page_score = {("d", 12): 0.5, ("d", 30): 1.0, ("d", 31): 1.0, ("e", 20): 2.0}
    best = rank._best_page(page_score)
    assert best("d", 1, 100) == (1.0, 30)
    assert best("d", 31, 80) == (1.0, 31)
    assert best("d", 40, 80) == (0.0, 40)
    assert best("e", 20, 60) == (2.0, 20)
