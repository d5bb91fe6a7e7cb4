"""snippet.finder: a question's words (letters and digits) are found without the pattern's lookbehind, the
matches inside a word dropped after; the snippets are those of the pattern with the lookbehind."""

from __future__ import annotations

import random
import re

from jsonl_engine.retrieval import snippet
from jsonl_engine.retrieval.weights import SNIPPET_TERMS

PIECES = ["net", "revenue", "revenues", "internet", "prerevenue", "net2", "2023", "12023", "fy2023", "érevenue",
          "_net", "total", "sales", "of", "the", "widgets", "Net", "REVENUE", "İnet", "a", "netnet"]
GLUE = [" ", "  ", "\n", ", ", "-", "(", ")", ".", "/", "$", "é", "_", "9"]


def with_lookbehind(terms: list[str]) -> re.Pattern[str]:
    words = sorted({t for t in terms[:SNIPPET_TERMS] if t}, key=lambda t: (-len(t), t))
    return re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, words)) + ")")


def test_plain_words_give_the_snippets_of_the_lookbehind_pattern():
    rng = random.Random(5)
    inside = 0
    for _ in range(400):
        terms = rng.sample(["net", "revenue", "2023", "fy2023", "total", "sales", "widgets", "netnet", "e"], 4)
        text = "".join(rng.choice(PIECES) + rng.choice(GLUE) for _ in range(rng.randint(20, 400)))
        for width in (40, 120, 300):
            want = snippet.snippet(text, with_lookbehind(terms), width)
            assert snippet.finder(terms, width)(text) == want
        low = text.lower()
        plain = re.compile("(?:" + "|".join(sorted(set(terms), key=lambda t: (-len(t), t))) + ")")
        inside += len(plain.findall(low)) > len(snippet._hits(low, plain, True))
    assert inside > 300  # most texts had matches inside words, dropped


def test_terms_that_are_not_plain_words_keep_the_lookbehind():
    text = "Purchases of property were 1,577 in 2018. " * 20 + "More text about other things. " * 20
    assert snippet.finder(["1,577", "property"], 60)(text) == snippet.snippet(
        text, with_lookbehind(["1,577", "property"]), 60)
