"""Routing: which documents a query is about, read from the document cards before any passage is scored.

A query names an entity ("Z9", "Northern Express", "Good Harbor"), periods ("FY2018", "fiscal 2018", "Q2 of FY2023",
"2022", "as of December 31, 2021", "first quarter", "most recent") and kinds ("10-K", "8-K", "earnings release",
"earnings call", "conference call", "call transcript": a transcript is routed by company and quarter like a 10-Q).
Entities are matched against the cards' entity names word by word, each word weighted by how few entities of the
library carry it (log(1 + E / entities holding it)), so "Northern" alone does not pick Northern Water Works for a
"Northern Express" question. Among the documents of the named entity, the period decides: the filing for the named
fiscal year first (the latest year named: a comparison "FY2023 vs FY2022" is answered by the FY2023 filing), the
next year's annual filing (which reports it as a comparative) after it; a named quarter picks the quarterly filing
of that quarter (fiscal years that end in January, May or June are labelled by the card's own fiscal year, and one
year either side counts a little); a named date picks the filing dated or ending then. A query naming no entity is
not routed (it ranks as it did before cards).
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date

from jsonl_engine.identity import transcript
from jsonl_engine.identity.dates import DATE, parse_date, year_of
from jsonl_engine.identity.kinds import ANNUAL_KINDS, LEGAL_FORMS, QUARTERLY_KINDS
from jsonl_engine.store import Card, Scope, Store
from jsonl_engine.text import STOPWORDS
from jsonl_engine.text import words as text_words

MIN_ENTITY = 0.6     # share of an entity's (IDF-weighted) name words the query must carry
FIRST_WORD = 0.8     # the share given to a name matched by its own first word or an abbreviation
W_FLOOR = 0.3        # a document of the named entity keeps this much of its score whatever its period
KIND_MISS = 0.6      # factor for a document whose kind is not the one named
ROUTED = 4           # documents reported as routed (and searched first)
COVERS = 0.5         # a period fit from which a document counts as covering the named period (kb.synthesize)

_LEGAL = frozenset((*LEGAL_FORMS, "the"))
_ORD = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}
_FY = re.compile(r"\bfy\s*'?(\d{4}|\d{2})\b|\bfiscal\s+(?:year\s+)?(\d{4})\b|\b(\d{4})\s+fiscal\s+(?:year|period)\b")
_YEAR = re.compile(r"(?<![\d/-])((?:19|20)\d{2})(?![\d/-])")
_QUARTER = re.compile(r"\bq([1-4])\b|\b([1-4])q\b|\b(first|second|third|fourth|1st|2nd|3rd|4th)\s+"
                      r"(?:fiscal\s+)?quarter\b|\bh([12])\b|\b(first|second)\s+half\b")
_LATEST = re.compile(r"\b(?:most\s+recent|latest|last\s+(?:fiscal\s+)?year|current\s+(?:fiscal\s+)?year)\b")
_KIND_WORDS = (
    ("10-K", re.compile(r"\b10\s*-?\s*k\b|\bannual\s+(?:report|filing)\b")),
    ("10-Q", re.compile(r"\b10\s*-?\s*q\b|\bquarterly\s+(?:report|filing)\b")),
    ("8-K", re.compile(r"\b8\s*-?\s*k\b|\bcurrent\s+report\b")),
    ("earnings release", re.compile(r"\b(?:earnings|press)\s+release\b")),
    ("proxy statement", re.compile(r"\bproxy\b")),
    (transcript.KIND, re.compile(r"\b(?:earnings|conference|investor)\s+call\b|\bcall\s+transcripts?\b|"
                                          r"\btranscripts?\b|\bon\s+(?:the|its|their)\s+(?:[\w'-]+\s+){0,4}call\b")),
    ("clinical protocol", re.compile(r"\b(?:study|trial|clinical)\s+protocol\b")),
    ("accident report", re.compile(r"\b(?:accident|incident)\s+report\b")),
)
_COMPARES = re.compile(r"\bbetween\b|\bcompar|\bvs\b|\bversus\b|\bfrom\b.*\bto\b|\bchange|\bgr[eo]w|\bincreas|"
                       r"\bdecreas|\bdeclin|\bimprov")
_ANNUAL = ANNUAL_KINDS
_QUARTERLY = QUARTERLY_KINDS
DECIDE_MARGIN = 0.15  # a routed document decides the question when its score leads the next by this much


@dataclass(frozen=True, slots=True)
class Periods:
    """The periods and kinds a query names."""

    years: tuple[int, ...] = ()
    fiscal_years: tuple[int, ...] = ()  # the years named as fiscal years ("FY2021", "fiscal 2021")
    quarter: int | None = None
    dates: tuple[date, ...] = ()
    latest: bool = False
    kinds: tuple[str, ...] = ()
    compares: bool = False  # the query compares periods ("between 2022 and 2021", "FY2021 vs FY2022")
    span: str | None = None  # "quarter" or "year" when the query says which ("the most recent quarter")

    @property
    def target(self) -> int | None:
        """The year the query is about: the latest fiscal year it names, else the latest year; a comparison of
        years is answered by the latest one's filing (it reports the earlier ones as comparatives)."""
        years = self.years if self.compares else self.fiscal_years or self.years
        return max(years) if years else None

    @property
    def named(self) -> bool:
        return bool(self.years or self.quarter or self.dates or self.latest)


def parse_periods(query: str) -> Periods:
    """The fiscal years, quarter, dates, recency and document kinds named in `query`."""
    text = " ".join(query.split())
    dates = []
    for m in DATE.finditer(text):
        when = parse_date(m.group(0))
        if when is not None:
            dates.append(when)
    rest = DATE.sub(" ", text).lower()
    fiscal = [year_of(next(g for g in m.groups() if g)) for m in _FY.finditer(rest)]
    years = fiscal + [int(m.group(1)) for m in _YEAR.finditer(_FY.sub(" ", rest))]
    quarter = None
    if m := _QUARTER.search(rest):
        if m[1] or m[2]:
            quarter = int(m[1] or m[2])
        elif m[3]:
            quarter = _ORD[m[3]]
        else:  # first half: the second quarter closes it
            quarter = 2 if (m[4] == "1" or m[5] == "first") else 4
    kinds = tuple(kind for kind, pattern in _KIND_WORDS if pattern.search(rest))
    span = "quarter" if re.search(r"\bquarter(?:ly)?\b|\b10-?q\b", rest) else \
        "year" if re.search(r"\b(?:annual|year|10-?k)\b", rest) else None
    return Periods(span=span, years=tuple(sorted(set(years))), fiscal_years=tuple(sorted(set(fiscal))), quarter=quarter, dates=tuple(dates),
                   latest=bool(_LATEST.search(rest)), kinds=kinds,
                   compares=len(set(years)) > 1 and bool(_COMPARES.search(rest)))


def name_words(name: str) -> tuple[str, ...]:
    """An entity name's distinctive words (legal forms and "the" left out)."""
    words = [w for w in text_words(name) if w not in _LEGAL]
    return tuple(words)


@dataclass(slots=True)
class Route:
    """Document id -> routing score in [0, 1] (documents of the named entity only), and why, per document."""

    scores: dict[str, float] = field(default_factory=dict)
    why: dict[str, list[str]] = field(default_factory=dict)
    periods: Periods = field(default_factory=Periods)
    fits: dict[str, float] = field(default_factory=dict)  # document id -> how well it covers the named period

    def top(self, n: int = ROUTED) -> list[str]:
        return sorted(self.scores, key=lambda d: (-self.scores[d], d))[:n]

    def decided(self) -> str | None:
        """The one document the query names by entity and period, when exactly one fits the period fully and it
        leads every other routed document by DECIDE_MARGIN; None for a comparison of periods."""
        if not self.periods.named or self.periods.compares or not self.scores:
            return None
        ranked = self.top(2)
        best = ranked[0]
        if self.fits.get(best, 0.0) < 1.0 or sum(1 for f in self.fits.values() if f >= 1.0) != 1:
            return None
        if len(ranked) > 1 and self.scores[best] - self.scores[ranked[1]] < DECIDE_MARGIN:
            return None
        return best

    def covering(self) -> list[str]:
        """The routed documents that cover the period the query names (the best period fit, when it is at least
        COVERS), best score first; empty when the query names no period or no document covers it."""
        if not self.periods.named or not self.fits:
            return []
        best = max(self.fits.values())
        if best < COVERS:
            return []
        return [d for d in sorted(self.scores, key=lambda d: (-self.scores[d], d)) if self.fits[d] == best]


def _query_words(query: str) -> set[str]:
    words = text_words(query)
    out = set(words)
    out.update(a + b for a, b in zip(words, words[1:], strict=False))  # "blue stone" ~ "bluestone"
    out.update(w[:-1] for w in words if w.endswith("s") and len(w) > 3)  # "Zentro's" -> "zentro s" handled
    return out


@functools.lru_cache(maxsize=65536)
def _abbreviates(token: str, words: tuple[str, ...]) -> bool:
    """"zenco" ~ zentro company, "noex" ~ northern express: the token is prefixes of the name's words, in order."""
    if len(token) < 3 or not words or token in words:
        return False
    compact = "".join(words)
    if compact.startswith(token) and len(token) < len(compact):
        return True
    if len(words) < 2:
        return False

    def split(rest: str, i: int) -> bool:
        if not rest:
            return i >= 2
        if i >= len(words):
            return False
        return any(words[i].startswith(rest[:k]) and split(rest[k:], i + 1) for k in range(2, len(rest) + 1))

    return split(token, 0)


# "SnS", "S&S", "B&C": capitals joined by "&" or "n" (for "and"), the way a name with an "&" is shortened
_JOINED_INITIALS = re.compile(r"(?<![\w&])[A-Z](?:[&n][A-Z])+(?![\w&])|(?<![\w&])[A-Z]N[A-Z](?![\w&])")


def _joined_initials(query: str) -> set[str]:
    """The query's joined initialisms, lowercased with the joiner as "n" ("SnS", "S&S", "SNS" -> "sns")."""
    text = unicodedata.normalize("NFKC", query)
    return {m.group(0).lower().replace("&", "n") for m in _JOINED_INITIALS.finditer(text)}


def _initialises(token: str, words: tuple[str, ...]) -> bool:
    """"sns" ~ Smith & Sons, "bnc" ~ Baker & Cole: the initials of a name with an "&" (normalised to
    "and"), that word as "n"."""
    return "and" in words[1:-1] and token == "".join("n" if w == "and" else w[0] for w in words)


def _capitalised(query: str) -> set[str]:
    """Words the query writes with a capital (names: "NHR", "Zentro"), lowercased."""
    text = unicodedata.normalize("NFKC", query).replace("\u2019", "'")
    return {w.lower() for w in re.findall(r"[^\W_]+", text) if w[:1].isupper()}


_JOINERS = frozenset(("of", "and", "the", "for", "&"))


def _capital_runs(query: str) -> list[tuple[str, ...]]:
    """The query's runs of capitalised words, lowercased, joined by "of", "and", "the" ("Freedom of Information
    Act", "General Services Administration"): a name the query writes out."""
    words = re.findall(r"[^\W_]+|&", unicodedata.normalize("NFKC", query).replace("\u2019", "'"))
    runs, run = [], []
    for word in words:
        if word[:1].isupper() or (run and word.lower() in _JOINERS):
            run.append(word.lower())
        else:
            runs.append(tuple(w for w in run if w not in _JOINERS))
            run = []
    runs.append(tuple(w for w in run if w not in _JOINERS))
    return [r for r in runs if r]


def _other_name(runs: list[tuple[str, ...]], token: str, own: set[str]) -> bool:
    """Whether `token` (a capitalised word, not an all-capitals abbreviation such as "JPM") stands in a
    written-out name of two or more words with a word the entity's name lacks: the query names something else
    ("Act" in "Freedom of Information Act" is not "Actaeon Robotics")."""
    return any(token in run and len(run) >= 2 and any(w not in own for w in run) for run in runs)


def acronym(token: str, words: Sequence[str]) -> bool:
    """"nwsb" ~ National Widget Safety Board, "ofm" ~ United States Office of Fleet Management, "dow"
    ~ Department of Widgets: the initials of the name's last two or more words (lower case), with or without its
    small words (three letters at least: "JJ" says too little)."""
    if len(token) < 3:
        return False
    for kept in (words, tuple(w for w in words if w not in _JOINERS)):
        for start in range(len(kept) - 1):
            if len(kept) - start >= 2 and token == "".join(w[0] for w in kept[start:]):
                return True
    return False


@functools.lru_cache(maxsize=8)
def _name_index(names: frozenset[str]) -> tuple[dict[str, tuple[str, ...]], dict[str, int], dict[str, float]]:
    """The library's entity names: their words, how many names hold each word, and its IDF (one library's
    names are the same from query to query: computed once)."""
    words = {n: name_words(n) for n in sorted(names)}
    holders: dict[str, int] = {}
    for ws in words.values():
        for w in set(ws):
            holders[w] = holders.get(w, 0) + 1
    total = len(names) or 1
    idf = {w: math.log(1 + total / k) for w, k in holders.items()}
    return words, holders, idf


def _holders(cards: Mapping[str, Card]) -> dict[str, list[str]]:
    """entity name -> the documents whose card names it; kept with the library's cards (`CardMap.derived`: built
    once per state of the library, not per query)."""
    derived = getattr(cards, "derived", None)
    if derived is not None and "route-holders" in derived:
        return derived["route-holders"]
    out: dict[str, list[str]] = {}
    for doc, card in cards.items():
        for name in dict.fromkeys(card.entities):
            out.setdefault(name, []).append(doc)
    if derived is not None:
        derived["route-holders"] = out
    return out


def entity_scores(query: str, cards: Mapping[str, Card]) -> dict[str, tuple[float, str]]:
    """document id -> (how much of its best entity name the query carries, that name) for matches >= MIN_ENTITY.

    A name also matches on its first word alone when the query capitalises it and no other entity has it
    ("NHR" for NHR Resorts International), on an abbreviation made of its words' prefixes ("NOEX"), and on the
    joined initials of a name with an "&" ("JnJ")."""
    docs_of = _holders(cards)
    words, holders, idf = _name_index(frozenset(docs_of))
    asked = _query_words(query)
    capital = _capitalised(query) - STOPWORDS
    initials = _joined_initials(query)
    acronyms = {w.lower() for w in re.findall(r"\b[A-Z]{2,6}\b", unicodedata.normalize("NFKC", query))}
    runs = [tuple(w for w in run if w not in acronyms and w not in STOPWORDS) for run in _capital_runs(query)]
    matched: dict[str, float] = {}
    for name, ws in words.items():
        if not ws:
            continue
        whole = sum(idf[w] for w in set(ws))
        got = sum(idf[w] for w in set(ws) if w in asked)
        if "".join(ws) in asked and len(ws) > 1:
            got = whole
        share = got / whole if whole else 0.0
        own = set(ws) | _LEGAL
        if share < FIRST_WORD and ws[0] in capital and holders[ws[0]] == 1 and len(ws[0]) >= 2 \
                and not _other_name(runs, ws[0], own):
            share = FIRST_WORD
        if share < FIRST_WORD and (any(_abbreviates(t, ws) and not _other_name(runs, t, own) for t in capital)
                                   or any(_initialises(t, ws) for t in initials)
                                   or any(acronym(t, ws) for t in acronyms)):
            share = FIRST_WORD
        if share >= MIN_ENTITY:
            matched[name] = share
    out: dict[str, tuple[float, str]] = {}
    for name, share in matched.items():  # each document's best name: the highest share, then the greater name
        for doc in docs_of[name]:
            if doc not in out or (share, name) > out[doc]:
                out[doc] = (share, name)
    return out


Fit = tuple[float, str]  # how well a card covers the named period, in [0, 1], and why


def period_fit(card: Card, periods: Periods, latest_year: int | None) -> Fit:
    """How well a card's period matches the named periods, in [0, 1], and the reason: by the dates it names, else
    the quarter, else the years, else (no period, or "latest") the entity's most recent filings first."""
    ends = [parse_date(d) for d in (card.report_date, card.period_end) if d]
    if periods.dates:
        fit = _date_fit(card, periods, ends)
        if fit is not None:
            return fit
    if periods.quarter is not None:
        return _quarter_fit(card, periods)
    if periods.years:
        return _year_fit(card, periods, ends, latest_year)
    if periods.latest or not periods.named:
        fy = card.fiscal_year
        if fy is not None and latest_year is not None:
            return max(0.5, 1.0 - 0.1 * (latest_year - fy)), ("most recent" if fy == latest_year else "")
        return 0.5, ""
    return 0.1, ""


def _date_fit(card: Card, periods: Periods, ends: list[date | None]) -> Fit | None:
    """A named date: the document dated or ending within three days of it; None to judge by quarter or year."""
    for want in periods.dates:
        for when in ends:
            if when and abs((when - want).days) <= 3:
                return 1.0, f"dated {when.isoformat()}"
    fy = card.fiscal_year
    if fy is not None and fy in {d.year for d in periods.dates}:
        return 0.5, f"fiscal year {fy}"
    return None if periods.years or periods.quarter else (0.1, "")


def _quarter_fit(card: Card, periods: Periods) -> Fit:
    """A named quarter: its fiscal label first, then the calendar quarter its period ends in, then a year off;
    the year's annual filing a little."""
    fy, fq, target = card.fiscal_year, card.fiscal_quarter, periods.target
    quarterly = card.kind in _QUARTERLY
    if quarterly and fq == periods.quarter and (target is None or fy == target):
        return 1.0, f"Q{fq} fiscal {fy}"
    end = parse_date(card.period_end) if card.period_end else None
    if quarterly and end is not None and (end.month - 1) // 3 + 1 == periods.quarter \
            and (target is None or end.year == target):
        return 0.9, f"calendar Q{periods.quarter} {end.year} (ended {card.period_end})"
    if quarterly and fq == periods.quarter and fy is not None and target is not None and abs(fy - target) == 1:
        return 0.6, f"Q{fq} fiscal {fy}"
    if card.kind in _ANNUAL and target is not None and fy == target:
        return 0.5, f"fiscal year {fy}"
    return 0.1, ""


def _year_fit(card: Card, periods: Periods, ends: list[date | None], latest_year: int | None) -> Fit:
    """Named years: the filing of the target year, then the next years' annual filings (comparatives), any year
    named, the latest filed when the target is not filed yet; a document with no period of its own is neutral."""
    fy, target = card.fiscal_year, periods.target
    whole_year = card.kind not in (*_QUARTERLY, "8-K") or (card.kind == "earnings release" and card.fiscal_quarter == 4)
    if fy is None and not ends and card.date is None:
        return 0.4, ""  # its year cannot be judged
    if fy == target:
        return (1.0 if whole_year else 0.7), f"fiscal year {fy}"
    if fy is None or target is None:
        return 0.1, ""
    if card.kind in _ANNUAL and 0 < fy - target <= 2:
        return 0.6 - 0.2 * (fy - target - 1), f"fiscal year {fy} (comparatives)"
    if fy in periods.years:
        return 0.4, f"fiscal year {fy}"
    if whole_year and latest_year is not None and fy == latest_year < target:
        return 0.6, f"fiscal year {fy} (latest before {target})"  # an outlook for a year not yet filed
    return 0.1, ""


def recency(card: Card) -> date | None:
    """When a document's period closes: its period end, else its date of report, else its own date, else the end
    of its fiscal quarter or year (approximately: for ordering only)."""
    for value in (card.period_end, card.report_date, card.date):
        if value:
            when = parse_date(value) if len(value) == 10 else parse_date(value + "-28") if len(value) == 7 else None
            if when is not None:
                return when
    if card.fiscal_year is not None:
        return date(card.fiscal_year, 3 * card.fiscal_quarter, 28) if card.fiscal_quarter else date(card.fiscal_year, 12, 31)
    return None


def _latest_fits(cards: dict[str, Card], docs: list[str], periods: Periods) -> dict[str, tuple[float, str]]:
    """"Latest", "most recent", "current": the newest period of the entity's documents of the kind asked (the
    quarter's or the year's documents when the query says which), newest first; the newest 1.0, then 0.1 less
    per step back (at least 0.5)."""
    wanted = _QUARTERLY if periods.span == "quarter" else _ANNUAL if periods.span == "year" else None
    if periods.kinds:
        wanted = periods.kinds
    dated = {d: recency(cards[d]) for d in docs if wanted is None or cards[d].kind in wanted}
    order = sorted({w for w in dated.values() if w is not None}, reverse=True)
    out = {}
    for doc in docs:
        when = dated.get(doc)
        if when is None:
            out[doc] = (0.5, "")
            continue
        step = order.index(when)
        out[doc] = (max(0.5, 1.0 - 0.1 * step), "most recent" if step == 0 else f"{step} period(s) before the latest")
    return out


def route(store: Store, query: str, scope: Scope) -> Route:
    """The documents of `scope` the query names, by entity, period and kind (empty: the query names no entity)."""
    cards = store.cards(None if scope.complete else list(scope.documents))
    entities = entity_scores(query, cards)
    if not entities:
        return Route()
    periods = parse_periods(query)
    # one issuer however a document writes its name ("Acme Robotics Corporation" on a call's title, "Acme Robotics"
    # in the operator's welcome): the words of its name the query carries
    asked = _query_words(query)
    issuer = {doc: tuple(w for w in name_words(name) if w in asked) or name_words(name)
              for doc, (_, name) in entities.items()}
    latest: dict[tuple[str, ...], int] = {}
    for doc in entities:
        fy = cards[doc].fiscal_year
        if fy is not None:
            latest[issuer[doc]] = max(fy, latest.get(issuer[doc], fy))
    out = Route(periods=periods)
    latest_fits: dict[str, tuple[float, str]] = {}
    if periods.latest and not (periods.years or periods.quarter or periods.dates):
        by_name: dict[tuple[str, ...], list[str]] = {}
        for doc in entities:
            by_name.setdefault(issuer[doc], []).append(doc)
        for docs_of in by_name.values():
            latest_fits.update(_latest_fits(cards, docs_of, periods))
    for doc, (share, name) in entities.items():
        card = cards[doc]
        fit, why = latest_fits.get(doc) or period_fit(card, periods, latest.get(issuer[doc]))
        score = share * (W_FLOOR + (1 - W_FLOOR) * fit)
        out.fits[doc] = fit
        reasons = [f"entity {name}"] + ([why] if why else [])
        if periods.kinds:
            if card.kind in periods.kinds:
                reasons.append(f"kind {card.kind}")
            else:
                score *= KIND_MISS
        out.scores[doc] = round(score, 6)
        out.why[doc] = reasons
    return out


def card_matches(card: Card | None, *, entity: str | None = None, kind: str | None = None,
                 fiscal_year: int | None = None, fiscal_quarter: int | None = None) -> bool:
    """Whether a card passes kb.documents' filters (no filter: every document)."""
    if entity is None and kind is None and fiscal_year is None and fiscal_quarter is None:
        return True
    if card is None:
        return False
    if entity is not None:
        wanted = set(name_words(entity)) or {entity.lower()}
        if not any(wanted <= set(name_words(n)) | {"".join(name_words(n))} for n in card.entities):
            return False
    if kind is not None and (card.kind or "").lower() != kind.lower():
        return False
    if fiscal_year is not None and card.fiscal_year != fiscal_year:
        return False
    return fiscal_quarter is None or card.fiscal_quarter == fiscal_quarter
