"""Retrieval building blocks without a KB: query parsing, budget clipping, near-duplicates, statement cues."""

from __future__ import annotations

import re
import sqlite3
import unicodedata

import pytest

from jsonl_engine.errors import InvalidParams
from jsonl_engine.identity import statements
from jsonl_engine.retrieval import answer_terms, budget, cues, dedupe, salient_terms
from jsonl_engine.retrieval.query import MAX_PHRASES, parse, tokenize
from jsonl_engine.retrieval.snippet import finder
from jsonl_engine.retrieval.strategies import STRATEGIES, get_strategy
from jsonl_engine.store.sqlite.search import match as fts_match

HOSTILE = [
    "!!!", "???...,,,;;", 'NEAR(', 'NEAR("a" "b", 2)', '"', '""', '"unbalanced', "*", "rev*", "-", "- - -",
    "a AND b OR NOT c", "title: revenue", "{title ancestors}: cash", "^revenue", "(((", ")", "+", "NOT",
    "col:term AND -x", "\\", "'; DROP TABLE sections; --", "\x00\x01", "\u200b\u200d", "🚀💰📈",
    "Zürich naïve façade €1.5 million Δ ≥ 3 %", "日本語の売上高", "إيرادات", "x" * 10_000,
]


def _fts_accepts(match: str) -> None:
    """The MATCH string is valid FTS5 syntax: run it against a real (empty) FTS5 table."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(a, tokenize = 'porter unicode61 remove_diacritics 2')")
    db.execute("INSERT INTO t VALUES ('revenue cash flow 2018 fy2018 1 577')")
    db.execute("SELECT rowid FROM t WHERE t MATCH ?", (match,)).fetchall()


@pytest.mark.parametrize("text", HOSTILE + [" ".join(["revenue", "NEAR(", "*", '"'] * 2500)])
def test_hostile_queries_build_valid_fts(text: str) -> None:
    q = parse(text)
    assert len(q.phrases) <= MAX_PHRASES
    for phrase in q.phrases:
        assert all(re.fullmatch(r"[^\W_]+", tok) for tok in phrase), phrase
    if q.phrases:
        _fts_accepts(fts_match(q.phrases))  # how the SQLite store renders a query's phrases
        _fts_accepts(fts_match(q.phrases[: q.n_words]) or fts_match(q.phrases))


def test_operators_and_punctuation_are_plain_text() -> None:
    assert parse("!!! ??? ---").phrases == []
    assert parse('NEAR( " * -').phrases == []  # "near" is a stopword, the rest punctuation
    q = parse('revenue AND "cash flow" OR NOT capex*')
    assert ("revenue",) in q.phrases and ("cash",) in q.phrases and ("capex",) in q.phrases
    assert not set(q.words) & {"and", "or", "not"}
    assert all(re.fullmatch(r'"[^\W_]+( [^\W_]+)*"', part) for part in fts_match(q.phrases).split(" OR "))


def test_fiscal_forms_numbers_and_years_stay_matchable() -> None:
    q = parse("What was FY2018 capex, $1,577 million, in Q3 and FY18?")
    assert ("fy2018",) in q.phrases and ("2018",) in q.phrases
    assert ("1", "577") in q.phrases  # the index splits "1,577" at the comma: a phrase matches it
    assert ("q3",) in q.phrases and ("third", "quarter") in q.phrases
    assert ("fy18",) in q.phrases
    assert ("purchases", "of", "property", "plant", "and", "equipment") in q.phrases  # capex vocabulary


def test_salient_terms_drop_stopwords_and_keep_order() -> None:
    assert salient_terms("What is the FY2018 capital expenditure of 3M? What is it?") == \
        ["fy2018", "capital", "expenditure", "3m"]
    assert salient_terms("the of and ???") == []
    assert salient_terms("Revenue revenue REVENUE") == ["revenue"]
    assert "1,577" in salient_terms("sales of $1,577 million")


def test_question_framing_words_are_not_salient_and_content_words_stay() -> None:
    query = ("What drove the operating margin change in FY2022? If operating margin is not a useful metric, "
             "explicitly state that. Give a response relying on the details shown in the cash flow statement, "
             "according to the data provided. Round your answer to two decimal places, in USD millions.")
    terms = salient_terms(query)
    assert terms == ["drove", "operating", "margin", "change", "fy2022", "cash", "flow", "statement", "data"]
    # kept for retrieval (filings write "driven by", "data center") but not a term an answer must cover
    assert answer_terms(query) == ["operating", "margin", "change", "fy2022", "cash", "flow", "statement"]
    # a count is an instruction only before "decimal"; finance words that look like framing stay content
    assert salient_terms("two segments, ratio and revenue measure") == ["two", "segments", "ratio", "revenue",
                                                                       "measure"]
    assert answer_terms("Has the quick ratio improved versus FY2021?") == ["quick", "ratio", "fy2021"]
    assert ("useful", "metric") not in parse(query).phrases and ("operating", "margin") in parse(query).phrases


def test_unicode_is_normalised() -> None:
    assert tokenize("ＦＹ２０１８ Café") == ["fy2018", "café"]
    assert parse("日本語の売上高").phrases  # CJK runs stay one searchable token, as unicode61 indexes them


def test_char_limit_takes_the_tighter_budget() -> None:
    assert budget.char_limit(None, None) is None
    assert budget.char_limit(1000, None) == 1000
    assert budget.char_limit(None, 100) == 400
    assert budget.char_limit(1000, 100) == 400


def test_clip_prefers_sentence_then_word_boundaries() -> None:
    text = "Revenue grew strongly this year. Margins improved as costs fell sharply across segments."
    assert budget.clip(text, 50) == "Revenue grew strongly this year."
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
    clipped = budget.clip(words, 30)
    assert words.startswith(clipped) and len(clipped) <= 30 and words[len(clipped)] == " "
    assert budget.clip("short", 100) == "short"


def test_clip_never_splits_a_character() -> None:
    text = "e\u0301" * 50  # base letter + combining acute accent
    for limit in range(1, 40):
        out = budget.clip(text, limit)
        assert len(out) <= limit and text.startswith(out)
        assert not out or not unicodedata.combining(text[len(out)])


def test_fit_drops_whole_items_before_cutting_below_useful() -> None:
    texts = ["A" * 300, "B. " * 200, "C" * 50]
    out = budget.fit(texts, 450)
    assert out.texts[0] == texts[0]
    assert out.texts[1] is None  # 150 chars left: below MIN_USEFUL, dropped whole, never a stub
    assert out.texts[2] == texts[2]  # a later short item still fits whole
    assert out.used_chars == 350 and out.omitted == 1 and out.clipped == 0 and out.truncated
    out = budget.fit(texts, 600)
    assert out.texts[1] is not None and 200 <= len(out.texts[1]) <= 300 and out.clipped == 1
    assert texts[1].startswith(out.texts[1])
    assert out.used_chars <= 600


def test_fit_edges() -> None:
    assert budget.fit(["abc"], None).texts == ["abc"]
    assert budget.fit([], 100).used_chars == 0
    tiny = budget.fit(["word " * 100], 12)  # a budget below the useful length still yields one clipped item
    assert tiny.texts[0] and len(tiny.texts[0]) <= 12 and tiny.clipped == 1
    exact = budget.fit(["x" * 100, "y" * 100], 200)
    assert exact.texts == ["x" * 100, "y" * 100] and not exact.truncated


def test_near_duplicates_collapse_but_other_figures_stay() -> None:
    boiler = "The accompanying notes are an integral part of these consolidated financial statements. " * 3
    items = [("a", boiler + "Page 12"), ("b", boiler + "Page 13"), ("c", "Net sales 34,229 35,355 32,184 " * 5),
             ("d", "Net sales 61,386 60,109 59,420 " * 5)]
    kept = dedupe.collapse(items, lambda x: x[1], keep=10)
    assert [k for k, _ in kept] == ["a", "c", "d"]
    assert [k for k, _ in dedupe.collapse(items, lambda x: x[1], keep=2)] == ["a", "c"]


def test_statement_cues() -> None:
    statement = "Acme Corp\nConsolidated Statements of Cash Flows\n(in millions)\n" + \
        "".join(f"Line item {i} {i * 101:,} {i * 97:,} ({i * 13})\n" for i in range(1, 30))
    contents = "Index to Financial Statements\nConsolidated Statements of Cash Flows 52\n" + \
        "Consolidated Balance Sheets 50\nNotes to the financial statements describe policies and estimates.\n" * 3
    assert statements.statement_kind(statement) == statements.CASH_FLOW
    assert statements.statement_kind(contents) is None
    assert statements.statement_kind("Consolidated Balance Sheets\n" + "Total assets 1,234 5,678\n" * 20) == statements.BALANCE
    assert cues.wanted_statements(tokenize("FY2018 capex as % of revenue")) == {cues.CASH_FLOW, cues.INCOME}
    assert cues.wanted_statements(tokenize("who are the customers")) == frozenset()


def test_snippet_centres_on_query_terms() -> None:
    text = "Intro words. " * 60 + "Purchases of property, plant and equipment were 1,577 in fiscal 2018. " + \
        "Tail words. " * 60
    snip = finder(["purchases", "property", "1,577", "2018"])(text)
    assert "1,577" in snip and len(snip) <= 260 and snip.startswith("…")
    assert finder([])("short text") == "short text"


def test_the_snippet_window_has_the_most_distinct_terms() -> None:
    """snippet.cluster: the start of the first window (the hits within width * SNIPPET_CLUSTER before one) holding
    the most distinct terms, as counting each window's set of terms gives it."""
    import random

    from jsonl_engine.retrieval.snippet import cluster
    from jsonl_engine.retrieval.weights import SNIPPET_CLUSTER

    def by_sets(hits: list[tuple[int, str]], width: int) -> int:
        best, best_n, j = 0, -1, 0
        for i in range(len(hits)):
            while hits[i][0] - hits[j][0] > width * SNIPPET_CLUSTER:
                j += 1
            n = len({t for _, t in hits[j:i + 1]})
            if n > best_n:
                best, best_n = hits[j][0], n
        return best

    rng = random.Random(3)
    for _ in range(2000):
        at, hits = 0, []
        for _ in range(rng.randint(1, 80)):
            at += rng.choice([0, 1, 5, 40, 150, 300])
            hits.append((at, rng.choice(["okapi", "lemur", "aardvark", "2018", "sales"])))
        width = rng.choice([60, 240])
        assert cluster(hits, width) == by_sets(hits, width), hits


def test_strategy_registry() -> None:
    assert "lexical" in STRATEGIES and get_strategy("lexical").needs_llm is False
    with pytest.raises(InvalidParams) as err:
        get_strategy("telepathy")
    assert err.value.data["field"] == "strategy"


def test_names_are_capitalised_runs_without_periods() -> None:
    from jsonl_engine.retrieval.query import parse

    q = parse("How much has the effective tax rate of American Express changed between FY2021 and FY2022?")
    assert q.names == [("american", "express")] and q.years == ["2021", "2022"]
    q = parse("What is 3M's FY2022 capex? See the AMCOR 8k dated July 1st, and Q3 results.")
    assert ("3m",) in q.names and ("amcor",) in q.names
    assert not any(n in q.names for n in [("fy2022",), ("q3",), ("8k",)])
    assert "8 k" in q.years and "july" in q.years
    assert parse("pepsico net sales").names == []  # no capitals: the prior falls back to rare words
    assert "may" not in parse("what Pepsico may borrow").years and "may" in parse("as of May 26, 2023").years
