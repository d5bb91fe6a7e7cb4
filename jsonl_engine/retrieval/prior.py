"""Which documents a query is about, before any passage is scored: the names it carries ("Z9", "ZENTRO",
"Good Harbor") found on a document's first pages (cover, release heading), and the years it names.

Names are weighted by a smoothed document-level IDF, log(1 + N / df), which stays positive when one issuer
files most of a small KB (FTS5's BM25 clamps such a term's IDF to zero). Queries without capitalised names
fall back to BM25 over the first pages with the query words that few first pages share.
"""

from __future__ import annotations

import functools
import math
import re

from jsonl_engine.retrieval.query import Query, normalise
from jsonl_engine.retrieval.weights import COVER_MAX_DF, MIN_DF_LIMIT, NAME_MAX_DF, W_YEAR
from jsonl_engine.store import Scope, Store

_WORD = re.compile(r"[^\W_]+")
MEMO = "cover-normalised"  # document id (a content hash: its pages never change) -> its first pages, normalised


def _cover_text(store: Store, docs: list[str]) -> dict[str, str]:
    """document id -> its first pages, normalised (names and years are found there by `spelled`)."""

    def load(missing: list[str]) -> dict[str, str]:
        return {doc: normalise(" ".join(texts)) for doc, texts in store.cover_texts(missing).items()}

    return store.memo_many(MEMO, docs, load)


def spelled(words: tuple[str, ...]) -> re.Pattern[str]:
    """The words (runs of `_WORD`) as whole words one after the other in a text. The first word comes first so
    that the search looks for its letters; the character before it is tested after."""
    before = r"(?<![^\W_]" + "." * len(words[0]) + ")"
    return re.compile("(?s)" + re.escape(words[0]) + before + "".join(r"[\W_]+" + re.escape(w) for w in words[1:])
                      + r"(?![^\W_])")


def holds(phrase: str, text: str) -> bool:
    """Whether a normalised text holds the phrase (words joined by spaces): whether " phrase " is in the text's
    tokens (`_WORD`) joined by spaces, found without tokenizing the text (which costs more than the whole search
    when an issuer filed many documents)."""
    pattern = _pattern(phrase)
    if pattern is not None:
        return pattern.search(text) is not None
    return f" {phrase} " in " " + " ".join(_WORD.findall(text)) + " "  # not all tokens: as the tokens say


@functools.lru_cache(maxsize=1024)
def _pattern(phrase: str) -> re.Pattern[str] | None:
    words = tuple(phrase.split(" "))
    return spelled(words) if all(_WORD.fullmatch(w) for w in words) else None


def name_scores(store: Store, q: Query, scope: Scope) -> dict[str, float]:
    """document id -> how strongly its first pages carry the query's names (and years).

    A capitalised word found in most documents of the KB ("Adjusted", "Interest Expense") is a financial
    term, not a name: it is left out. The rest weigh log(1 + N / documents holding them).
    """
    if not q.names:
        return {}
    total = store.count("documents")
    candidates = list(q.names)
    for name in q.names:  # a run no filing spells that way ("Adjusted Non GAAP EBITDA"): try its words
        if len(name) > 1 and not store.frequencies("documents", [name])[name]:
            candidates += [(w,) for w in name if (w,) not in candidates]
    df = store.frequencies("documents", candidates)
    names = {n: df[n] for n in candidates if 0 < df[n] <= max(MIN_DF_LIMIT, NAME_MAX_DF * total)}
    if not names:
        return {}
    docs = sorted(store.search_covers(list(names), scope))
    if not docs:
        return {}
    texts = _cover_text(store, docs)
    weights = {" ".join(name): math.log(1 + total / n) for name, n in names.items()}
    has_name = {d: [t for t in weights if holds(t, texts[d])] for d in docs}
    for year in q.years:
        holders = sum(1 for d in docs if holds(year, texts[d]))
        if holders:
            weights[year] = W_YEAR * math.log(1 + len(docs) / holders)
    return {d: sum(w for t, w in weights.items() if holds(t, texts[d])) for d in docs if has_name[d]}


def issuer_names(store: Store, q: Query, docs: list[str]) -> frozenset[str]:
    """The words of the query's names that the first pages of `docs` carry (their issuer, mostly).

    The documents are read in order, the first alone, then twice as many each time, until each name is found
    or none is left: a name is usually on the first document's cover already."""
    if not q.names or not docs:
        return frozenset()
    wanted = {" ".join(name) for name in q.names}
    found: set[str] = set()
    start, size = 0, 1
    while start < len(docs) and found != wanted:
        texts = _cover_text(store, docs[start:start + size]).values()
        found |= {t for t in wanted - found if any(holds(t, text) for text in texts)}
        start, size = start + size, size * 2
    return frozenset(w for name in q.names for w in name if " ".join(name) in found)


def word_scores(store: Store, q: Query, scope: Scope) -> dict[str, float]:
    """Fallback without names: BM25 of first pages for the query words few first pages share."""
    words = q.phrases[: q.n_words]
    if not words:
        return {}
    limit = max(MIN_DF_LIMIT, COVER_MAX_DF * store.count("covers"))
    df = store.frequencies("covers", words)
    rare = [p for p in words if 0 < df[p] <= limit]
    return store.search_covers(rare, scope) if rare else {}


def cover_scores(store: Store, q: Query, scope: Scope) -> tuple[dict[str, float], bool]:
    """(document id -> score, whether the scores come from names the query carries)."""
    named = name_scores(store, q, scope)
    return (named, True) if named else (word_scores(store, q, scope), False)
