"""Honest when the KB does not hold what a question names: a name (a run of capitalised words: an issuer, a
product, a place) or a year that no page of the documents in scope holds is said first, on the answer's first
line ("Not in the documents searched: Tesla."), before any quoted text, and the confidence is at most low:
what follows is about something else. Checked against the pages' index (unranked lookups), so a name that
retrieval did not rank is not taken for absent. A run of several words whose phrase no page holds counts only
when it is written as a proper name ("Acme Airlines": each word capitalised, none in capitals) or one of its
words is on no page: "Highest EBITDAR Contribution" is a description whose words the pages hold, not a name.
An abbreviation that documents spell out ("EPS", "PP&E", "CFO") is held when a page holds a phrase it stands for
(retrieval's vocabulary, or an office's title). A gloss the question itself writes is held when what it glosses
is: an abbreviation in parentheses after a word ("the domestic (USA) market": the pages say "Domestic"), or an
abbreviation followed by its words in parentheses ("ROA (return on assets)").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from jsonl_engine.identity.route import parse_periods
from jsonl_engine.retrieval.query import EXPANSIONS, LINE_ITEMS, names

if TYPE_CHECKING:
    from jsonl_engine.store import Store

NOTICE = "Not in the documents searched: "  # the one line of an answer that quotes nothing (it cites nothing)
_WORD = re.compile(r"[^\W_]+")
_GLOSS_AFTER = re.compile(r"([^\W\d_][\w'’-]*)\s*\(\s*([A-Z][A-Z.&]{1,7})\s*\)")  # "domestic (USA)"
_GLOSS_BEFORE = re.compile(r"\b([A-Z][A-Z.&]{1,7})\s*\(([^()]{3,80})\)")  # "ROA (return on assets)"
_OFFICES = {("ceo",): ("chief executive officer",), ("cfo",): ("chief financial officer",),
            ("coo",): ("chief operating officer",)}


def _spelled(phrase: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The phrases an abbreviation stands for ("eps" -> ("earnings", "per", "share"), ...), none for a name."""
    found = [*LINE_ITEMS.get(phrase, ()), *EXPANSIONS.get(phrase, ()), *_OFFICES.get(phrase, ())]
    return [tuple(_WORD.findall(p.lower())) for p in found]


def _surface(query: str, tokens: Sequence[str]) -> str | None:
    """The words as the question writes them, joined by spaces or the marks inside names ("S&S", "O'Neil",
    "Zen-Co"); None when the question writes them apart ("(USA) Market": two names)."""
    m = re.search(r"\b" + r"[\s&.'’-]+".join(re.escape(t) for t in tokens) + r"(?:&\w+)?\b", query, re.IGNORECASE)
    return m.group(0) if m else None


def glosses(query: str) -> list[tuple[str, list[str]]]:
    """The abbreviations the question glosses, each with the (lowercase) words it glosses: "domestic (USA)" ->
    ("USA", ["domestic"]), "ROA (return on assets)" -> ("ROA", ["return", "on", "assets"])."""
    out = [(m.group(2), [m.group(1).lower()]) for m in _GLOSS_AFTER.finditer(query)
           if m.group(1).lower() != m.group(2).lower()]
    out += [(m.group(1), words) for m in _GLOSS_BEFORE.finditer(query) if (words := _WORD.findall(m.group(2).lower()))]
    return out


def _glossed(store: Store, query: str, docs: Sequence[str]) -> set[str]:
    """The abbreviations the question glosses whose glossed words the pages hold."""
    return {abbr for abbr, words in glosses(query) if all(store.pages_holding([(w,)], docs) for w in words)}


def _names(query: str) -> list[tuple[str, ...]]:
    """The names of each sentence of the query; a sentence's first word is a name only when it is written in
    capitals or mixes in digits ("NOEX", "Z9"), not merely capitalised ("Fixed asset turnover ...")."""
    out: list[tuple[str, ...]] = []
    for sentence in re.split(r"(?<=[.?!;:])\s+", query):
        first = re.match(r"\W*([^\W_]+)", sentence)
        for name in names(sentence):
            if first and name[0] == first.group(1).lower() and not (first.group(1).isupper()
                                                                    or any(c.isdigit() for c in first.group(1))):
                name = name[1:]
            if name and name not in out:
                out.append(name)
    return out


def absent(store: Store, query: str, *, document_ids: Sequence[str] | None,
           statuses: Sequence[str]) -> list[str]:
    """The names and years `query` names that no page of the documents in scope holds, as the query writes them."""
    scope = store.scope(list(document_ids) if document_ids else None, tuple(statuses))
    docs = sorted(scope.documents)
    if not docs:
        return []
    wanted: list[tuple[str, tuple[str, ...]]] = []
    for name in _names(query):
        tokens = tuple(w for t in name for w in _WORD.findall(t.lower()))
        if tokens and tokens[-1] == "s" and len(tokens) > 1:  # "Tesla's"
            tokens = tokens[:-1]
        if not tokens:
            continue
        surface = _surface(query, tokens)
        if surface is not None:
            wanted.append((surface, tokens))
        else:  # written apart: each word is its own name
            wanted.extend((_surface(query, (t,)) or t, (t,)) for t in tokens)
    for year in parse_periods(query).years:
        wanted.append((str(year), (str(year),)))
    out = []
    glossed = _glossed(store, query, docs)
    for surface, phrase in dict.fromkeys(wanted):
        if surface in glossed:
            continue
        if store.pages_holding([phrase], docs) or ((spelled := _spelled(phrase)) and store.pages_holding(spelled, docs)):
            continue
        words = surface.split()
        proper = len(words) > 1 and all(w[:1].isupper() and not w[1:].isupper() for w in words)
        if proper or len(phrase) == 1 or any(not store.pages_holding([(w,)], docs) for w in phrase):
            out.append(surface)
    return out


def say_absent(store: Store, query: str, out: Any, *, document_ids: Sequence[str] | None,
               statuses: Sequence[str]) -> Any:
    """`out` with what the KB does not hold said on its first line (and in `not_in_kb`, and as gaps)."""
    missing = absent(store, query, document_ids=document_ids, statuses=statuses)
    if not missing:
        return out
    out.not_in_kb = missing
    line = NOTICE + ", ".join(missing) + "."
    out.answer = line + ("\n" + out.answer if out.answer else "")
    out.gaps.extend(m for m in missing if m.lower() not in {g.lower() for g in out.gaps})
    if out.confidence in ("high", "medium"):
        out.confidence = "low"
    return out
