"""The document prior's names (retrieval/prior.py) found in the normalised first pages by whole-word patterns,
without tokenizing them: the same answers as the token test they replace (" name " in the page's tokens joined by
spaces), on the first pages of real filings; issuer names read the documents in order only until found."""

from __future__ import annotations

import re
import unicodedata

import pytest

from jsonl_engine.retrieval import prior
from jsonl_engine.retrieval.query import parse
from jsonl_engine.text import normalise

_WORD = re.compile(r"[^\W_]+")
PLANTED = ("Form 10-K (fiscal_2022) M&A, PP&E; café naïve ＡＭＣＯＲ plc’s 3M Company 3Mx x3M 2,018.5 "
           "end-of-year\nNet\tsales Δ sales Best  Buy Co., Inc. best buy")


def _tokens(text: str) -> str:
    return " " + " ".join(_WORD.findall(text)) + " "


def _old_normalise(text: str) -> str:
    """text.normalise before the '&' shortcut."""
    text = unicodedata.normalize("NFKC", text).lower()
    return re.sub(r"(?<=\w)&(?=\w)", " ", text.replace("\u2019", "'")).replace("&", " and ")


def _first_pages(dev_kb) -> list[str]:
    ids = sorted(dev_kb.doc_ids.values())
    return [normalise(" ".join(texts)) for texts in dev_kb.cover_texts(ids).values()] + [normalise(PLANTED)]


def _phrases(text: str) -> list[str]:
    """Phrases found and near misses: each token, each run of two and three, pieces of tokens, words that are
    not tokens (a hyphen, an underscore, a space, nothing)."""
    words = _WORD.findall(text)
    out = set(words) | {" ".join(words[i:i + 2]) for i in range(len(words))} | \
        {" ".join(words[i:i + 3]) for i in range(0, len(words), 7)}
    out |= {w[1:] for w in words if len(w) > 1} | {w[:-1] for w in words if len(w) > 1}
    out |= {f"{a} {b}" for a, b in zip(words[::5], words[3::5], strict=False)}  # not adjacent
    out |= {"10-k", "fiscal_2022", "best  buy", "", " ", "m and a", "pp e", "amcor plc", "3m", "2 018 5", "δ sales"}
    return sorted(out)


def test_a_name_is_held_exactly_when_the_tokens_hold_it(dev_kb) -> None:
    checked = 0
    for text in _first_pages(dev_kb):
        tokens = _tokens(text)
        for phrase in _phrases(text):
            assert prior.holds(phrase, text) == (f" {phrase} " in tokens), phrase
            checked += 1
    assert checked > 5_000


def test_normalise_skips_the_ampersand_pattern_only_without_an_ampersand(dev_kb) -> None:
    texts = [" ".join(t) for t in dev_kb.cover_texts(sorted(dev_kb.doc_ids.values())).values()]
    for text in [*texts, PLANTED, "R&D and S&P 500 & more", "＆ fullwidth", "a &b", "&"]:
        assert normalise(text) == _old_normalise(text), text


def _old_name_scores(store, q, scope) -> dict[str, float]:
    """name_scores as it was, every first page tokenized."""
    import math

    from jsonl_engine.retrieval.weights import MIN_DF_LIMIT, NAME_MAX_DF, W_YEAR

    total = store.count("documents")
    candidates = list(q.names)
    for name in q.names:
        if len(name) > 1 and not store.frequencies("documents", [name])[name]:
            candidates += [(w,) for w in name if (w,) not in candidates]
    df = store.frequencies("documents", candidates)
    names = {n: df[n] for n in candidates if 0 < df[n] <= max(MIN_DF_LIMIT, NAME_MAX_DF * total)}
    docs = sorted(store.search_covers(list(names), scope)) if names else []
    texts = {d: _tokens(normalise(" ".join(t))) for d, t in store.cover_texts(docs).items()}
    weights = {" ".join(name): math.log(1 + total / n) for name, n in names.items()}
    has_name = {d: [t for t in weights if f" {t} " in texts[d]] for d in docs}
    for year in q.years:
        holders = sum(1 for d in docs if f" {year} " in texts[d])
        if holders:
            weights[year] = W_YEAR * math.log(1 + len(docs) / holders)
    return {d: sum(w for t, w in weights.items() if f" {t} " in texts[d]) for d in docs if has_name[d]}


QUESTIONS = ("What was 3M's FY2022 capital expenditure?", "Did AMCOR's Adjusted Non GAAP EBITDA grow in FY 2023?",
             "Which PepsiCo segment had the highest operating profit in 2022 (Form 10-K)?",
             "What did Amcor plc announce in its 8-K dated July 2022?", "Best Buy and 3M revenue in FY2021",
             "What is the Acme Widgets 10-Q for Q2 2022?")


@pytest.mark.parametrize("question", QUESTIONS)
def test_name_scores_and_issuer_names_are_the_tokenized_ones(dev_kb, question: str) -> None:
    q = parse(question)
    with dev_kb.snapshot():
        scope = dev_kb.scope(None, ("approved",))
        assert prior.name_scores(dev_kb, q, scope) == _old_name_scores(dev_kb, q, scope)
        docs = sorted(dev_kb.doc_ids.values())
        texts = {d: _tokens(normalise(" ".join(t))) for d, t in dev_kb.cover_texts(docs).items()}
        old = frozenset(w for name in q.names for w in name if any(f" {' '.join(name)} " in texts[d] for d in docs))
        assert prior.issuer_names(dev_kb, q, docs) == old


def test_issuer_names_read_the_documents_only_until_each_name_is_found(dev_kb, monkeypatch) -> None:
    read: list[str] = []
    original = dev_kb.cover_texts
    monkeypatch.setattr(dev_kb, "cover_texts", lambda ids: read.extend(ids) or original(ids))
    dev_kb._memo.clear()
    docs = [dev_kb.doc_ids["AMCOR_2023_10K"], dev_kb.doc_ids["AMCOR_2022_8K_dated-2022-07-01"],
            dev_kb.doc_ids["3M_2022_10K"], dev_kb.doc_ids["PEPSICO_2022_10K"]]
    with dev_kb.snapshot():
        assert prior.issuer_names(dev_kb, parse("What was AMCOR's revenue?"), docs) == {"amcor"}
        assert read == docs[:1]  # on the first document's cover
        read.clear()
        assert prior.issuer_names(dev_kb, parse("What was AMCOR's Zyxwv revenue?"), docs) == {"amcor"}
        assert read == docs[1:]  # a name on no cover: every document read (the first one kept from before)
