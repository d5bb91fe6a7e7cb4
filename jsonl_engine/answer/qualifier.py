"""The qualifier a question puts on the item it asks for: the segment, region, division, brand, product line or
customer it names ("the operating profit of the Widgets segment", "net sales in Freedonia", "Gizmo Pro revenue"),
and which candidate units name it.

A qualifier is a phrase the question writes as a name (capitalised, or with a capital inside: "iPhone") that is not
the name of the documents' issuer (the words of their titles, or a shortening of them: "Noex"), not a period ("Q2",
"June", "Fiscal 2023"), not a statement, an accounting item or standard ("Balance Sheet", "Net Income", "EBITDA",
"U.S. GAAP": the search vocabulary), not a part of a document ("Note 5", "Item 7") and not the question's first
word; a question written in title case names nothing by its capitals. It is also the word a question writes in
lower case right before the line item it asks for, past the item's own words ("grocery net sales", "online
revenue"), unless it says how the item went or which measure of it ("improving", "highest", "average").

A filing prints a segment's figure in one of three ways, and a unit names the qualifier when one of them holds it,
printed with a capital when the question writes it so (a name, not the common word: "Domestic segment", not
"domestic taxes"), and not excluded ("Non-U.S.", "outside the United States"):
  - in its own text: a sentence ("Widgets operating profit decreased 5 percent to $446 million"), or a row's label
    (a segment table: "Widgets 445.5 470.6" under "Operating profit:");
  - in its context: the line titling its rows, its table's headers, lead-in and column titles, the nearest title
    above it in its passage (a heading without figures: "WIDGETS SEGMENT"), its passage's title and headings.
It names the qualified item when it also names the item: its label or subject does once the qualifier is read off
it (`strip`: "Widgets operating profit" names "operating profit"), a sentence has the item's words within
NEAR_WORDS of the qualifier, or a row labelled by the qualifier alone is under a title naming the item ("Widgets
$376,593" under "Backlog"). A consolidated figure ("Operating profit $ 3,433.8") names no qualifier. Such a unit
gains W_QUALIFIED in the share of the asked qualifiers it names (`weigh`), the whole ("the largest of rows labelled
alike", answer/order.py) is then not what is asked, and the most direct unit naming the most qualifiers leads
(`lead`) over one naming fewer, unless it is from below the depth shown, states the asked period less, or holds no
figure where one is asked. The question's item is read without the qualifier (`item_tokens`, `kind_words`: "How
much operating profit did Acme's Widgets segment earn" asks for "operating profit").
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TypeVar

from jsonl_engine.answer import order
from jsonl_engine.answer.sentences import Segment, segment
from jsonl_engine.answer.tables import TableRow
from jsonl_engine.retrieval.query import LINE_ITEMS, tokenize
from jsonl_engine.text import STOPWORDS, normalise
from jsonl_engine.text import words as text_words
from jsonl_engine.vocabulary import ACCOUNTING

T = TypeVar("T")
W_QUALIFIED = 0.30  # a unit naming the qualifier the question puts on its item, in its text or its context
NEAR_WORDS = 12  # a sentence names the qualified item when the item's words are this close to the qualifier
MAX_WORDS = 5  # words of a qualifier: a longer capitalised run is a title, not a name
TITLE_CASE = 0.8  # share of a question's content words written capitalised above which capitals name nothing
# a word (its possessive kept: it ends a name), an abbreviation with its dots ("U.S."), "&", a punctuation mark
_WORD = re.compile(r"(?:[^\W\d_]\.){2,}(?:['’]s?\b)?|[^\W_]+(?:['’]s?\b)?|&|[^\w\s]", re.UNICODE)
_JOINERS = frozenset({"&", "and", "of", "the", "for", "to"})  # inside a name: "Asset & Wealth Management"
# words that follow a qualifier and say what it is: not the item asked ("the Widgets segment's operating profit")
KIND_NOUNS = frozenset({"segment", "segments", "business", "businesses", "division", "divisions", "unit", "units",
                        "region", "regions", "brand", "brands", "subsidiary", "operations", "market", "markets",
                        "reportable", "group"})
_ACRONYM = re.compile(r"[A-Z]{2,6}")
_STANDARDS = frozenset({"gaap", "ifrs"})  # "U.S. GAAP", "non-GAAP": how a figure is measured, not a part
_PERIOD_WORD = re.compile(r"^(?:q[1-4]|[1-4]q|h[12]|fy\d*|cy\d*|fiscal|year|years|quarter|quarters|half|month|months|"
                          r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
                          r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|ytd|ttm|ltm)$")
# the parts of a document a question may name: "Item 7", "Note 5", "Part II", "Form 10-K"
_DOCUMENT_PART = frozenset({"item", "note", "notes", "part", "form", "exhibit", "schedule", "section", "table",
                            "page", "annex", "appendix"})
# capitalised words of statements and filings that are no name: "Balance Sheet", "GAAP", "Consolidated"
_GENERIC = frozenset({"consolidated", "balance", "sheet", "sheets", "statement", "statements", "income", "cash",
                      "flow", "flows", "gaap", "non", "ifrs", "sec", "md", "a", "total", "net", "gross", "adjusted",
                      "company", "corporation", "inc", "corp", "co", "ltd", "plc", "llc", "group", "holdings",
                      "report", "annual", "quarterly", "earnings", "release", "call", "transcript", "ceo", "cfo",
                      "board", "directors", "management", "discussion", "analysis", "financial", "usd", "us",
                      "dollars", "eur", "gbp", "fx"})


@functools.cache
def _vocabulary() -> frozenset[str]:
    """The words of the accounting items a question may ask for (the search vocabulary's terms and phrases)."""
    out: set[str] = set()
    for table in (ACCOUNTING, LINE_ITEMS):
        for trigger, phrases in table.items():
            out.update(trigger)
            for phrase in phrases:
                out.update(phrase.split())
    return frozenset(out)


@functools.cache
def _item_words() -> frozenset[str]:
    """The words of the line items themselves: the search vocabulary's terms and the labels statements print for
    an item (not the looser phrases searched for a term: "organic" is a measure of sales, not the item)."""
    return frozenset({w for t in ACCOUNTING for w in t} | {w for t, phrases in LINE_ITEMS.items()
                                                           for w in (*t, *(x for p in phrases for x in p.split()))})


@dataclass(frozen=True, slots=True)
class Qualifier:
    text: str  # as the question writes it ("Asset & Wealth Management")
    words: tuple[str, ...]  # its normalised words ("asset", "and", "wealth", "management")
    pattern: re.Pattern[str]  # finds it in a text, any case (`named_in` checks it is printed capitalised if `cased`)
    cased: bool = True  # a name, printed capitalised; False: a word the question writes in lower case ("grocery")


def _pattern(words: Sequence[str]) -> re.Pattern[str]:
    """A pattern for the phrase's words, separated by spaces or punctuation ("U.S." as "U S"), "and" or "&"
    alike, a word also matched with a plural or possessive "s" ("Widget" in "Widgets")."""
    parts = []
    for w in words:
        parts.append(r"(?:and|&)" if w == "and" else re.escape(w) + r"(?:['’]?s)?")
    sep = r"(?:[\s.,'’\-/]+|\s*&\s*)"
    sep_opt = r"(?:[\s.,'’\-/]*|\s*&\s*)"
    body = ""
    for i, part in enumerate(parts):
        if i:
            body += sep if len(words[i - 1]) > 1 and len(words[i]) > 1 else sep_opt  # "U.S." : "U" "S"
        body += part
    if 2 <= len(words) <= 3 and all(len(w) > 2 and w.isalpha() for w in words):
        body = f"(?:{body}|{_initials(words)})"
    return re.compile(r"(?<![^\W_])" + body + r"(?![^\W_])", re.IGNORECASE)


def _initials(words: Sequence[str]) -> str:
    """A name of words as tables print it, by its initials with their dots: "United States" as "U.S."."""
    return r"\s?".join(re.escape(w[0]) + r"\." for w in words)


def _tokens(query: str) -> list[str]:
    return _WORD.findall(query.replace("\u2019", "'"))


def _capitalised(tok: str) -> bool:
    """Written as a name: capitalised, or with a capital inside ("iWidget", "Z9")."""
    return tok[:1].isupper() or (tok[:1].isalnum() and any(c.isupper() for c in tok[1:]))


def _name_word(tok: str) -> str:
    """A token's normalised form without its possessive ("Widgets'" -> "widgets", "Acme's" -> "acme")."""
    return re.sub(r"['’]s?$", "", normalise(tok))


def _abbreviates(token: str, words: Sequence[str]) -> bool:
    """`token` is the issuer's name shortened: prefixes of its words in order ("Noex" for Northern Express), or
    its initials, an "and" as "n" ("SnS" for Smith and Sons)."""
    words = ["n" if w == "and" else w for w in words]
    if len(token) < 3 or len(words) < 2:
        return False

    def split(rest: str, i: int) -> bool:
        if not rest:
            return i >= 2
        return i < len(words) and any(words[i].startswith(rest[:k]) and split(rest[k:], i + 1)
                                      for k in range(1, len(rest) + 1))

    return split(token, 0)


def _issuer(named: Sequence[str], title_words: Collection[str], names: Sequence[Sequence[str]]) -> bool:
    """The words name the documents' issuer: all are words of their titles, or they are a title's words run
    together ("Blue Stone" for "Bluestone") or shortened ("Noex")."""
    if all(w in title_words for w in named):
        return True
    joined = "".join(named)
    return any("".join(n).startswith(joined) or (len(named) == 1 and _abbreviates(joined, n)) for n in names if n)


def _runs(tokens: Sequence[str]) -> list[list[str]]:
    """The runs of capitalised words of the question (not its first word, periods or numbers), joined by "&",
    "and", "of", "to" between capitalised words; a possessive ends one ("Acme's Widgets segment")."""
    runs: list[list[str]] = []
    run: list[str] = []
    for i, tok in enumerate(tokens):
        word = _name_word(tok)
        is_name = _capitalised(tok) and i > 0 and not _PERIOD_WORD.match(word) and not re.fullmatch(r"\d+", word)
        joins = bool(run) and tok.lower() in _JOINERS and i + 1 < len(tokens) and _capitalised(tokens[i + 1])
        if joins and tok.lower() in ("and", "&") and _ACRONYM.fullmatch(run[-1]) and _ACRONYM.fullmatch(tokens[i + 1]):
            joins = False  # "EMEA and APAC": two names
        if is_name or joins:
            run.append(tok)
            if re.search(r"['’]s?$", tok):
                runs.append(run)
                run = []
            continue
        if run:
            runs.append(run)
        run = []
    if run:
        runs.append(run)
    return runs


def asked(query: str, titles: Collection[str] = ()) -> tuple[Qualifier, ...]:
    """The qualifiers `query` puts on its item (module docstring); `titles` are the titles of the documents read
    (their issuer's name is no qualifier)."""
    tokens = _tokens(query)
    title_words = {w for t in titles for w in text_words(t.replace("_", " "))}
    names = [[w for w in text_words(t.replace("_", " ").split(",")[0]) if w not in _GENERIC] for t in titles]
    content = [t for t in tokens if re.match(r"[^\W\d_]", t) and normalise(t) not in STOPWORDS]
    if content and sum(_capitalised(t) for t in content) / len(content) >= TITLE_CASE:
        return ()  # "What Was The Operating Income ...": capitals name nothing
    vocabulary = _vocabulary()

    def edge(ws: Sequence[str]) -> bool:  # a token that is no part of the name at either end of a run
        return all(w in _JOINERS or w in STOPWORDS or w in KIND_NOUNS or w in title_words or _PERIOD_WORD.match(w)
                   for w in ws) and ws != ["a"]  # "Class A": a letter naming one of a kind

    out: list[Qualifier] = []
    for r in _runs(tokens):
        groups = [text_words(_name_word(tok)) or [tok.lower()] for tok in r]
        if not groups or groups[0][0] in _DOCUMENT_PART or any(w in _STANDARDS for g in groups for w in g):
            continue  # "Item 7", "U.S. GAAP": a part of a document, an accounting standard
        if _issuer([w for g in groups for w in g if w not in _JOINERS], title_words, names):
            continue  # the issuer: "Acme's", "Acme Corp", "Noex"
        first = 0
        while first < len(groups) and edge(groups[first]):
            first += 1  # "Acme Widgets": the Widgets
        while groups and len(groups) > first and edge(groups[-1]):
            groups.pop()  # "Widgets Brand", "Sales for Acme"
        # a name of initials alone ("U.S.") is read with the issuer's words printed before it ("Acme U.S.")
        if 0 < first < len(groups) and all(len(w) < 3 for g in groups[first:] for w in g):
            first = 0
        words = [w for g in groups[first:] for w in g]
        named = [w for w in words if w not in _JOINERS]
        if not named or len(named) > MAX_WORDS or _issuer(named, title_words, names) \
                or all(w in vocabulary or w in _GENERIC or w in STOPWORDS for w in named):
            continue  # an item or a statement: "Net Income", "Balance Sheet", "EBITDA"
        out.append(Qualifier(" ".join(r[first:len(groups)]), tuple(words), _pattern(words)))
    out.extend(q for q in _modifiers(query, title_words) if not any(set(q.words) <= set(o.words) for o in out))
    return tuple(dict.fromkeys(out))


# words before an item that say which measure of it, not which part: "average revenue", "monthly sales"
_MEASURE_WORDS = frozenset({"average", "annual", "annualized", "monthly", "quarterly", "weekly", "daily", "yearly",
                            "reported", "cumulative", "estimated", "expected", "projected", "combined", "overall",
                            "aggregate", "underlying", "core", "current", "prior", "previous", "last", "next", "full",
                            "entire", "whole", "year", "fiscal", "calendar", "worst", "best", "most", "least",
                            "drove", "drive", "drives", "grew", "grow", "grows", "rose", "fell", "made", "make",
                            "paid", "earn", "took", "spent", "spend", "record", "report", "post", "achieve"})
_VERB_FORM = re.compile(r"(?:ing|ed|est)$")  # "improving", "unadjusted", "highest": how it went, not which part


def _modifiers(query: str, title_words: Collection[str]) -> list[Qualifier]:
    """The word the question writes in lower case before the line item it asks for, past the item's own words
    ("grocery net sales", "online revenue", "international revenues"): the part of the item asked (matched in any
    case: "Grocery $ 63,407")."""
    tokens = tokenize(query)
    vocabulary = _item_words()
    out = []
    for trigger in LINE_ITEMS:
        n = len(trigger)
        for i in range(len(tokens) - n + 1):
            if tuple(tokens[i:i + n]) != trigger:
                continue
            j = i - 1
            while j >= 0 and tokens[j] in vocabulary and tokens[j] not in STOPWORDS:
                j -= 1  # "grocery net sales": past "net"
            word = tokens[j] if j >= 0 else ""
            if len(word) >= 4 and word.isalpha() and word not in STOPWORDS and word not in vocabulary \
                    and word not in _GENERIC and word not in KIND_NOUNS and word not in _MEASURE_WORDS \
                    and not _VERB_FORM.search(word) \
                    and word not in title_words and not _PERIOD_WORD.match(word) \
                    and re.search(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])", query):  # written in lower case
                out.append(Qualifier(word, (word,), _pattern((word,)), cased=False))
    return out


# what excludes the name before it: "Non-U.S.", "outside the United States", "excluding Widgets"
_NEGATED = re.compile(r"(?:\bnon[-\s]?|\boutside(?:\s+of)?(?:\s+the)?\s+|\bexcluding\s+(?:the\s+)?|\bex-)$", re.IGNORECASE)


def _found(qualifiers: Sequence[Qualifier], text: str) -> list[re.Match[str]]:
    """Where `text` names one of the qualifiers: printed capitalised (a name, "Widgets", not the word "widgets"),
    not excluded ("Non-U.S.", "outside the United States")."""
    return [m for q in qualifiers for m in q.pattern.finditer(text)
            if (not q.cased or m.group(0)[:1].isupper() or m.group(0)[:1].isdigit())
            and not _NEGATED.search(text, max(0, m.start() - 24), m.start())]


def named_in(qualifiers: Sequence[Qualifier], text: str) -> bool:
    """`text` names one of the qualifiers (`_found`)."""
    return bool(_found(qualifiers, text))


def near(qualifiers: Sequence[Qualifier], text: str, runs: Sequence[str], keys: Callable[[str], list[str]],
         words: int = NEAR_WORDS) -> bool:
    """A qualifier named in `text` has one of the item's `runs` (" key key ", the question's words for the item)
    within `words` words after or before it: "Widgets operating profit decreased", "net sales in Freedonia", not a
    sentence naming the segment in passing."""
    for m in _found(qualifiers, text):
        after, before = keys(text[m.end():])[:words], keys(text[:m.start()])[-words:]
        if any(run in " " + " ".join(side) + " " for run in runs for side in (after, before)):
            return True
    return False


def strip(qualifiers: Sequence[Qualifier], label: str) -> str:
    """`label` without the qualifiers it opens with, and the word saying what one is ("Widgets segment operating
    profit" -> "operating profit", "Domestic online revenue" -> "revenue"): what is left names the item."""
    rest = label.strip()
    while (m := next((m for q in qualifiers if (m := q.pattern.match(rest)) is not None), None)) is not None:
        words = re.sub(r"^['’]?s?\s+", " ", rest[m.end():]).split()
        while len(words) > 1 and words[0].lower().strip(",:;") in KIND_NOUNS:
            words = words[1:]
        rest = " ".join(words)
    return rest


def item_tokens(tokens: Sequence[str], qualifiers: Sequence[Qualifier]) -> list[str]:
    """The question's `tokens` (lowercased, retrieval/query.tokenize) with each qualifier, and the words saying
    what it is ("segment"), replaced by a break (","): the runs of item words are then the item's alone ("How much
    operating profit did Acme's Widgets segment earn" asks for "operating profit", not "widgets segment earn")."""
    out = list(tokens)
    for q in qualifiers:
        words = [w for w in q.words if w != "and"] if "and" not in tokens else list(q.words)
        n = len(words)
        for i in range(len(out) - n + 1):
            if out[i:i + n] == words or [w.rstrip("s") for w in out[i:i + n]] == [w.rstrip("s") for w in words]:
                out[i:i + n] = [","] * n
                j = i + n
                while j < len(out) and out[j] in KIND_NOUNS:
                    out[j] = ","
                    j += 1
    return out


@functools.lru_cache(maxsize=64)
def _names_text(qualifiers: tuple[Qualifier, ...], text: str) -> bool:
    """A passage's text names a qualifier somewhere (else no title in it does), kept as `_segments` is."""
    return named_in(qualifiers, text)


@functools.lru_cache(maxsize=64)
def _segments(text: str) -> list[Segment]:
    """`segment(text)`, kept for the passages of the last questions (a passage's units are read one by one)."""
    return segment(text)


def _title_line(text: str) -> bool:
    """A heading that titles what follows (no figures, a few words): "WIDGETS SEGMENT", "Backlog"."""
    return not re.search(r"\d", text) and 0 < len(text.split()) <= 12


def context(text: str, title: str, seg: Segment, row: TableRow | None,
            segments: Sequence[Segment] | None = None, path: Sequence[str] = ()) -> str:
    """What a unit is read under: its passage's title and the headings above it (`path`), the nearest title
    above it in its passage, and for a row the line titling its rows, its table's header lines and lead-in, and
    its columns' titles."""
    parts = [*path, title]
    if segments != ():  # () when the passage's text names no qualifier: no title above the unit does
        segs = segments if segments is not None else _segments(text)
        above = [s for s in segs if s.kind == "heading" and s.end <= seg.start and _title_line(text[s.start:s.end])]
        if above:
            parts.append(text[above[-1].start:above[-1].end])
    for span in (seg.group, seg.header, seg.lead):
        if span is not None:
            parts.append(text[span[0]:span[1]])
    if row is not None:
        parts.extend(h.text for h in row.headers)
        parts.extend(dict.fromkeys(c.column_text for c in row.cells if c.column))
    return "\n".join(parts)


@dataclass(frozen=True, slots=True)
class Naming:
    """Which asked qualifiers a unit names (their indexes), in its own text or its context, and whether its own
    text (a row's label, a sentence) names one."""
    named: frozenset[int] = frozenset()
    own: bool = False


def weigh(judged: order.Judged, naming: Naming, asked: int) -> order.Judged:
    """`judged` with `W_QUALIFIED` added in the share of the `asked` qualifiers the unit names (of those some unit
    names: "Domestic online revenue" names both of "the Domestic segment's online revenue", "Domestic revenue" one),
    the reason said."""
    if not naming.named:
        return judged
    why = "it names the qualifier the question asks for" if naming.own else \
        "it is under a title naming the asked qualifier"
    return dataclasses.replace(judged, directness=round(judged.directness + W_QUALIFIED * len(naming.named)
                                                        / max(1, asked), 9), reasons=(*judged.reasons, why))


def names(qualifiers: Sequence[Qualifier], text: str, title: str, seg: Segment, row: TableRow | None,
          segments: Sequence[Segment] | None = None, path: Sequence[str] = ()) -> Naming:
    """The qualifiers a unit names: in its own text (a row's label, a sentence) or its `context`."""
    own_text = row.label.text if row is not None and row.label is not None else text[seg.start:seg.end]
    around = context(text, title, seg, row, segments if _names_text(tuple(qualifiers), text) else (), path)
    own = frozenset(i for i, q in enumerate(qualifiers) if named_in([q], own_text))
    return Naming(own | {i for i, q in enumerate(qualifiers) if named_in([q], around)}, bool(own))


def lead(items: list[T], naming: Callable[[T], Naming], judged: Callable[[T], order.Judged],
         group: Callable[[T], object], fits: Callable[[T], bool] = lambda _u: True) -> list[T]:
    """`items` (most direct first) with the most direct unit naming the most asked qualifiers first, when the first
    names fewer: the Widgets segment's row over the consolidated one, whatever else the consolidated row has; not a
    unit from below the depth shown, of another `group` (the documents of the asked period first), stating the
    asked period less (a row without its column over one with it), or not `fits` (holding no figure when one is
    asked)."""
    if not items:
        return items
    top = max(len(naming(u).named) for u in items)
    first = items[0]
    if not top or len(naming(first).named) == top:
        return items
    pick = next((u for u in items if len(naming(u).named) == top and not judged(u).deep and fits(u)
                 and judged(u).period >= judged(first).period and group(u) == group(first)), None)
    if pick is None:
        return items
    return [pick, *(u for u in items if u is not pick)]


def kind_words(query: str, qualifiers: Sequence[Qualifier]) -> frozenset[str]:
    """The words saying what a qualifier is, right after it in the question ("segment" in "the Widgets segment"),
    lowercased: they frame the item, they are not the item."""
    out: set[str] = set()
    for q in qualifiers:
        for m in q.pattern.finditer(query):
            out.update(w for w in itertools.takewhile(lambda w: w in KIND_NOUNS,
                                                      text_words(query[m.end():])[:2]))
    return frozenset(out)
