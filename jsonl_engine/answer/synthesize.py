"""kb.synthesize: an extractive answer, no LLM. Every sentence is verbatim source text with its citation.

From the passages retrieval finds (`depth` of them shown, and POOL x `depth` whose units are candidates too: the deeper
ones, of the same documents, come after the shown ones and lose order.W_DEEP; how rare a term is and the floor are
measured on the shown ones; each shown passage followed by the other sections of the page of the statement the question
names, or of the statement holding a metric's figure, that it reaches: `_whole_statement`), each candidate unit
(sentence, table row, bullet; not a line of column titles, nor a table of contents' entries with dot leaders) is scored by
  0.55 coverage   weighted share of the query's salient terms it contains (rarer terms weigh more; terms
                  found only in its context, section title or table header, count half; the words naming the
                  statement to read, "... in the balance sheet", or the document, "its 8-K dated March 1,
                  2023", are no terms)
  0.10 proximity  how close together its matched terms are
  0.15 figures    it carries an amount or count ($, %, 1,234, 1.2, 14) and the query asks for one
  0.20 rank       1 / (1 + retrieval rank of its passage)
 +0.15 unit       it prints a figure in the unit the question asks ("how many hours": "119 hours", answer/units.py)
A question's term also matches the words documents print for it (answer/wording.py: "participants": "subjects").
Each passage contributes its best few units above a relative threshold (and every table row whose label names the
asked item: `_item_rows`); the answer lists them most direct first
(answer/order.py: the unit that answers the question leads, the reasons in `first_claim`; answer/qualifier.py: of a
question naming a segment, a region or a product, the unit naming it and the item leads), at most `max_claims`
of them (`more` counts the others) and, while other sections have some, at most PER_SECTION_SHOWN of one section, and `max_chars` drops trailing units (a first unit that does not fit is cut
at a word and marked "…", never dropped). A table row is read with the headers above it on its page
(answer/tables.py) and its line names the asked period's column and the unit: "Label, 2022: (1,749) (Millions)".

Confidence (the rule, in order):
  none    nothing found: no passage, or no unit contains any salient term;
  low     a cited document is `contested`, or the section of the strongest unit covers fewer than half
          the salient terms (a weak match);
  medium  a salient term is not covered by any approved passage considered, or a cited document is not
          approved (draft/archived), or the best passages disagree: the strongest units of two different
          documents (both within 80% of the top score) carry figures and share none;
  high    otherwise.
A question asking for an amount that no claim of the answer states a figure for has the gap "a figure: no claim
states one" and at most medium confidence.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Literal

from jsonl_engine.answer import extreme, order, qualifier, wording
from jsonl_engine.answer.absent import glosses
from jsonl_engine.answer.citations import Claim, make_claim, page_at
from jsonl_engine.answer.sentences import MAX_SENTENCE_CHARS, Segment, segment
from jsonl_engine.answer.tables import (
    TableRow,
    cells_of,
    contents_line,
    number,
    quarter_of,
    read_row,
    table_line,
)
from jsonl_engine.answer.units import Asked, carries, counts_only, framed, names_in, unnamed
from jsonl_engine.answer.units import asked as asked_units
from jsonl_engine.identity.dates import MONTH_WORDS, YEAR
from jsonl_engine.identity.route import parse_periods
from jsonl_engine.ingest.normalize import collapse_ws
from jsonl_engine.retrieval import cues
from jsonl_engine.retrieval.query import EXPANSIONS, LINE_ITEMS, ngrams, tokenize
from jsonl_engine.text import STOPWORDS
from jsonl_engine.vocabulary import ANALYST_ITEMS, HOLDING

if TYPE_CHECKING:
    from collections.abc import Callable

    from jsonl_engine.retrieval import Passage
    from jsonl_engine.store import Store
    from jsonl_engine.store.types import Card

_TOKEN = re.compile(r"[A-Za-z0-9]+(?:[.,]\d+)*")
_NUMBER = re.compile(r"(\$\s?\(?)?(?<![\w.,])(\d[\d,]*(?:\.\d+)?)(?![\w])(\s?%)?")
_DAY = re.compile(r"(?i)\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{1,2},$")  # "July 13,"
_DAY_BEFORE = re.compile(r"(?i)\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{1,2},?\s+$")
_PAGE_LINE = re.compile(r"^\s*\d{1,3}\s*\n(?=\s*[A-Z])")  # a page number on its own line, before a sentence
_COUNT = re.compile(r"(?<![\w.,$])(?!(?:19|20)\d\d\b)\d+(?![\w.,%])")  # "14 airships", not a year
_WORD = re.compile(r"[A-Za-z]{2,}")
_LEADER = re.compile(r"\.{6,}|(?:\.\s){5,}|…{3,}")  # a table of contents' dot leaders
_SECTION_NUMBER = re.compile(r"^\d+(?:\.\d+)+\.?\s")
_GROUP_MARKS = re.compile(r"\((?:\d{1,2}|[a-z])\)")  # footnote marks of a group line: "Units shipped: (2)"
_AMPERSAND = re.compile(r"(?<=\s)&(?=\s)")
_PERIOD = re.compile(r"^(?:fy|cy|q[1-4]|h[12])'?(\d{2}|\d{4})$")
_FIGURE = re.compile(r"\$\s?\(?\d|\d\s?%|\d,\d{3}|\d\.\d|\b\d+\s+(?:million|billion|thousand|percent|basis points)\b",
                     re.IGNORECASE)
_AMOUNT_CUES = frozenset({
    "amount", "total", "much", "many", "revenue", "revenues", "sales", "income", "margin", "margins",
    "ratio", "ratios", "percent", "percentage", "usd", "dollar", "dollars", "million", "millions",
    "billion", "billions", "cost", "costs", "expense", "expenses", "capex", "expenditure", "expenditures",
    "eps", "earnings", "dividend", "dividends", "cash", "debt", "value", "rate", "rates", "growth", "price",
    "prices", "profit", "profits", "assets", "liabilities", "equity", "turnover",
    # the verbs an analyst asks an amount with: "What did Acme pay to buy back its stock?"
    "pay", "paid", "spend", "spent", "raise", "raised", "earn", "earned", "bring", "brought",
})
_SUFFIXES = (("ational", "ate"), ("ations", "ate"), ("ation", "ate"), ("ings", ""), ("ing", ""),
             ("ies", "y"), ("ied", "y"), ("es", ""), ("ed", ""), ("s", ""))
# keys of the words naming the asked period ("year end", "six months ended June 30", "second quarter"), not the item
_PERIOD_WORDS = frozenset({"year", "end", "fiscal", "month", "week", "quarter", "half", "thre", "six", "nine",
                           "twelv", "first", "second", "third", "fourth", "january", "february", "march", "april",
                           "may", "june", "july", "august", "september", "october", "november", "december"})
_STATEMENT_NAMES = re.compile(r"\bstatements?\b|\bsheets?\b|\bfinancial position\b")
W_COVERAGE, W_PROXIMITY, W_FIGURE, W_RANK = 0.55, 0.10, 0.15, 0.20
PLAN_KINDS = ("clinical protocol",)  # documents stating what will be done (identity/kinds.py): "Subjects will receive ..."
MAX_CLAIMS = 5  # claims of a default answer; the others are counted in `more`
PER_SECTION_SHOWN = 2  # claims of one section among the first MAX_CLAIMS, while other sections have some
PER_PASSAGE = 3
POOL = 2  # candidate units come from POOL x depth passages (the deeper ones: order.W_DEEP)
SUBJECT_KEYS = 8  # the first words of a sentence, where its subject is
MAX_SIBLING_PAGES = 3  # pages whose other sections a superlative over stated changes reads
MAX_STATEMENT_PAGES = 2  # statement pages whose other sections join the passages that reach them
RELATIVE_FLOOR = 0.35
AGREE_BAND = 0.8
_LONGEST_TRIGGER = max(map(len, [*EXPANSIONS, *LINE_ITEMS]))
_NOT_ITEM = frozenset({"usd", "million", "millions", "billion", "billions", "thousand", "thousands", "dollar",
                       "dollars", "amount", "amounts", "value", "figure", "number"})  # the unit asked, not the item
_JOINS = frozenset({"of", "and", "to"})  # inside an item's name: "cost of goods sold", "additions to content assets"
_LABEL_LEAD = frozenset({"total", "consolidated"})  # "Total net sales" names the item "net sales"
_QUALIFIERS = _LABEL_LEAD | {"net", "gross"}  # words of an item's name that qualify it
_HEADER_TEXT = """
as of at fiscal year years ended ending months weeks three six nine twelve quarter
quarters in millions thousands billions except per share shares amounts amount data and dollars unaudited
"""
_HEADER_WORDS = MONTH_WORDS | frozenset(_HEADER_TEXT.split())  # the words of a line of column titles
Confidence = Literal["high", "medium", "low", "none"]  # the rule: the module docstring


@dataclass(slots=True)
class Synthesis:
    answer: str
    claims: list[Claim]
    gaps: list[str]
    confidence: Confidence
    passages: int
    salient_terms: list[str]
    truncated: bool = False
    more: int = 0  # further claims beyond max_claims (a larger max_claims returns them)
    first_claim: dict | None = None  # {"id", "why"}: why the first claim leads
    tables: dict[str, Reading] = dataclasses.field(default_factory=dict)  # claim id -> its row read as a table
    not_in_kb: list[str] = dataclasses.field(default_factory=list)  # names/periods no document in scope holds
    computed: dict | None = None  # answer/compute.py: the computed line, its value, inputs and what is missing
    warnings: list[str] = dataclasses.field(default_factory=list)  # "other_period: ...": another period answered


@dataclass(frozen=True, slots=True)
class Reading:
    """A table row claim read as a table: on `page` (offsets into its text), or on the section (page None)."""
    page: int | None
    row: TableRow
    asked: tuple[int, ...]  # the cells of the asked period's column
    line: str | None  # the answer line built from the row's parts, when its columns are known




@dataclass(slots=True)
class _Unit:
    passage: Passage
    rank: int
    seg: Segment
    score: float
    matched: frozenset[int]
    figures: frozenset[str] = frozenset()
    context: frozenset[int] = frozenset()  # terms found only in its context (titles, table header, lead-in, group line)


def stem(word: str) -> str:
    """A light suffix stripper, applied alike to query and text ("increased", "increases" -> "increas")."""
    if len(word) <= 3 or word.isdigit():
        return word
    for suffix, repl in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                continue
            word = word[: len(word) - len(suffix)] + repl
            if suffix in ("ed", "ing", "ings") and len(word) >= 5 and word[-1] == word[-2] and word[-1] not in "aeiouylsz":
                word = word[:-1]  # "planned", "committed": "plan", "commit"
            break
    return word[:-1] if word.endswith("e") and len(word) > 4 else word


def keys(text: str) -> list[str]:
    """Comparable keys of the tokens of `text`, in order: stems, numbers without commas, periods as years."""
    return [k for tok in _TOKEN.findall(_AMPERSAND.sub(" and ", text)) if (k := _key(tok))]


@functools.lru_cache(maxsize=1 << 16)
def _key(tok: str) -> str:
    """One token's key ("" for none): `keys`, cached (a passage's words repeat)."""
    low = tok.lower().replace(",", "")
    period = _PERIOD.match(low)
    if period:
        year = period.group(1)
        return year if len(year) == 4 else "20" + year
    if low[0].isdigit():
        return low
    return stem(low) if len(low) > 1 else ""


def figures_of(text: str) -> frozenset[str]:
    """Numbers in `text` that look like amounts: with $, %, separators or decimals, or 3+ digits; not years."""
    found = set()
    for m in _NUMBER.finditer(text):
        money, num, pct = m.groups()
        if not money and _DAY.search(text, max(0, m.start() - 12), m.end()):
            continue  # "July 13, 2023,": the day of a date, not an amount
        if not money and not pct and num.endswith(",") and YEAR.fullmatch(num.rstrip(",")) \
                and not _DAY_BEFORE.search(text, max(0, m.start() - 16), m.start()):
            continue  # "in fiscal 2022, primarily ...": a year, the comma ending the clause (a date's year stays)
        plain = num.replace(",", "")
        if money or pct or "," in num or "." in num or (len(plain) >= 3 and not YEAR.fullmatch(plain)):
            found.add(plain)
    return frozenset(found)


# other ways a question asks for an amount: "How large was the backlog", "how big", "how high", "the size of",
# "what portion of"
_AMOUNT_ASKED = re.compile(r"\bhow\s+(?:large|big|high|small|low)\b|\bsize\s+of\b|\bwhat\s+(?:portion|proportion)\b"
                           # the question's own verb, after its "did": "What did Acme's Widgets business sell in ...?"
                           r"|\bwhat\s+did\s+(?:\S+\s+){1,9}?(?:sell|generate|collect|receive|make|book)\b",
                           re.IGNORECASE)


def asks_for_amount(query: str) -> bool:
    """The question asks for an amount: a word naming one ("revenue", "how much", "ratio"), "$" or "%", or a way
    of asking for a size ("How large was the backlog ...?", `_AMOUNT_ASKED`)."""
    low = query.lower()
    return "$" in low or "%" in low or any(w in _AMOUNT_CUES for w in re.findall(r"[a-z]+", low)) \
        or bool(_AMOUNT_ASKED.search(low)) or bool(asked_units(query))


def _min_window(positions: list[list[int]]) -> int:
    """Length in tokens of the shortest window holding one position from each list."""
    events = sorted((p, i) for i, plist in enumerate(positions) for p in plist)
    need, have, counts, best, left = len(positions), 0, [0] * len(positions), math.inf, 0
    for pos, i in events:
        counts[i] += 1
        have += counts[i] == 1
        while have == need:
            best = min(best, pos - events[left][0] + 1)
            j = events[left][1]
            counts[j] -= 1
            have -= counts[j] == 0
            left += 1
    return int(best) if best != math.inf else 1


def _candidate(seg: Segment, text: str) -> bool:
    if seg.kind == "header":
        return False
    body = text[seg.start:seg.end]
    if len(body) > MAX_SENTENCE_CHARS or len(body.split()) < 2:
        return False
    if seg.kind != "row" and len(_WORD.findall(body)) < 2:
        return False  # "(b) (c) (b)", "$ 1 $ 2": no words to read
    if seg.kind == "row" and contents_line(body):
        return False  # "3.2.1 Primary Endpoint 13": a table of contents entry
    if _LEADER.search(body):
        return False  # "Widget Safety ........ 26 WXYZ 2.3.": contents entries, run together
    if _column_header(body):
        return False  # "April 30, January 31, April 30,": a table's column titles, no answer
    if seg.kind == "heading":  # titles are context, unless a short line carries a figure or is labelled
        if re.fullmatch(r"[^:]+:\s*(?:\((?:\d{1,2}|[a-z])\)\s*)*", body):
            return False  # "Units shipped: (2)": a title of the rows under it, its mark no value
        numbered = _SECTION_NUMBER.sub("", body)  # "9.7 ANALYSIS OF ...": a section's number is no figure
        return (len(body.split()) >= 4 and bool(_FIGURE.search(numbered))) or order.label_of(body) is not None
    return True


@dataclass(frozen=True, slots=True)
class _Term:
    name: str
    keys: tuple[str, ...]
    alts: tuple[str, ...]  # " key key " phrases that name the same thing (capex: purchases of property ...)
    items: tuple[str, ...] = ()  # " key key " labels statements print for the line item the term is part of
    printed: tuple[str, ...] = ()  # of those, the labels of an item the question names in everyday words

    def found(self, keyset: set[str], joined: str) -> bool:
        return all(k in keyset for k in self.keys) or any(a in joined for a in self.alts)

    def positions(self, seq: list[str], joined: str) -> list[int]:
        at = [j for j, k in enumerate(seq) if k in self.keys]
        for alt in self.alts:
            start = joined.find(alt)
            if start >= 0:
                at.append(joined.count(" ", 0, start))
        return at


def _joined(seq: list[str]) -> str:
    return " " + " ".join(seq) + " "


def _keyed(table: Mapping[tuple[str, ...], Sequence[str]]) -> dict[tuple[str, ...], tuple[str, ...]]:
    """trigger -> its phrases as joined keys, a phrase without a key left out: "u s" ("United States" is printed
    "U.S.", which retrieval searches) is single letters, no label a unit's keys can hold."""
    return {trigger: tuple(_joined(keys(p)) for p in phrases if keys(p)) for trigger, phrases in table.items()}


# retrieval's related phrases (vocabulary.py EXPANSIONS) but a statement's name, and the labels an analyst's words
# name (ANALYST_ITEMS), as keys: built once, not per question
_EXPANDED = _keyed({t: [p for p in phrases if not _STATEMENT_NAMES.search(p)] for t, phrases in EXPANSIONS.items()})
_ANALYST_LABELS = _keyed(ANALYST_ITEMS)


def _terms(query: str, terms: Sequence[str]) -> list[_Term]:
    """Salient terms with their keys and, from retrieval's vocabulary, the phrases filings use instead."""
    tokens = tokenize(query)
    grams = ngrams(tokens, _LONGEST_TRIGGER)
    ending = _ending_items(tokens, {k for t in terms for k in keys(t)})
    out = []
    for t in terms:
        k = tuple(dict.fromkeys(keys(t)))
        if not k:
            continue
        alts: list[str] = []
        items: list[str] = []
        for trigger, phrases in _EXPANDED.items():
            if t in trigger and trigger in grams:
                alts.extend(phrases)
        for trigger, phrases in LINE_ITEMS.items():
            if t in trigger and trigger in ending:
                items.extend(_joined(keys(phrase)) for phrase in phrases)
                alts.extend(_joined(keys(phrase)) for phrase in phrases if " " in phrase)
        printed = _analyst_items(t, grams, held=bool(ending))
        items.extend(printed)
        alts.extend(_joined(keys(word)) for word in wording.alternates(t))  # "participants": "subjects"
        out.append(_Term(t, k, tuple(dict.fromkeys(alts)), tuple(dict.fromkeys(items)), tuple(dict.fromkeys(printed))))
    return out


def _analyst_items(term: str, grams: Collection[tuple[str, ...]], held: bool = False) -> list[str]:
    """The labels a question's everyday words for an item are printed under (vocabulary.py ANALYST_ITEMS: "buy back
    its own stock" -> "Repurchases of common stock"), for a term of those words: a row or a sentence opening with
    one names the asked item. Words only saying an item is held (vocabulary.py HOLDING: "sitting on") name none
    when the question names its line item itself (`held`: "how much inventory was Acme sitting on")."""
    return [label for trigger, labels in _ANALYST_LABELS.items() if term in trigger and trigger in grams
            and not (held and trigger in HOLDING) for label in labels]


def _item_word(tok: str, term_keys: Collection[str]) -> list[str]:
    """The keys of `tok` when it is a word of the asked item (a word of the question's terms, not a number, a
    period, the period's or the unit's word, nor a word asking for a change), else []."""
    k = keys(tok) if tok and tok not in STOPWORDS and len(tok) > 1 and not tok[0].isdigit() else []
    if k and set(k) <= set(term_keys) and not _PERIOD.match(tok) and not set(k) <= _PERIOD_WORDS \
            and tok not in _NOT_ITEM and not order.asks_change(tok):
        return k
    return []


def _ending_items(tokens: Sequence[str], term_keys: Collection[str]) -> set[tuple[str, ...]]:
    """The LINE_ITEMS triggers the question names as a whole item: not followed by another item word
    ("operating income margin" names no "operating income"), nor inside a longer one ("cost of sales" names no
    "sales")."""
    found = [(i, len(trigger), trigger) for trigger in LINE_ITEMS for i in range(len(tokens) - len(trigger) + 1)
             if tuple(tokens[i:i + len(trigger)]) == trigger
             and (i + len(trigger) == len(tokens) or not _item_word(tokens[i + len(trigger)], term_keys))]
    return {t for i, n, t in found
            if not any(j <= i and i + n <= j + m and m > n for j, m, _ in found)}


def _item_runs(tokens: Sequence[str], term_keys: Collection[str], issuer: Collection[str] = ()) -> list[str]:
    """The runs of consecutive item words of the question (" total current liabil "): `_item_word`s joined by
    "of"/"and", broken by other words ("operating margin change": the item is "operating margin"); a run ending
    in "of" and words of the documents' titles (`issuer`) ends before them: "the effective tax rate of Acme" asks
    for the effective tax rate."""
    runs: list[list[str]] = []
    current: list[str] = []
    for tok in [*tokens, ""]:
        k = _item_word(tok, term_keys)
        if k:
            current.extend(k)
        elif tok in _JOINS and current:
            current.append(tok)
        else:
            while current and current[-1] in _JOINS:
                current.pop()
            cut = next((i for i in range(1, len(current)) if current[i] == "of"
                        and current[i + 1:] and all(w in issuer for w in current[i + 1:])), None)
            if cut is not None:
                current = current[:cut]
            if current:
                runs.append(current)
            current = []
    return [_joined(r) for r in runs]


# the word a question puts after a kind of goods or services that tables print without it: "health and wellness
# products" is the category "Health and wellness"; "consulting services" is "Consulting"
_GOODS_WORDS = frozenset(k for w in ("product", "products", "services", "goods", "merchandise", "items")
                         for k in keys(w))


def _without_goods_word(runs: Sequence[str]) -> list[str]:
    """`runs`, each ending in a word for goods or services also without it (when words remain), after it."""
    out = []
    for run in runs:
        out.append(run)
        words = run.split()
        if len(words) > 1 and words[-1] in _GOODS_WORDS and words[-2] not in _JOINS:
            out.append(_joined(words[:-1]))
    return out


def names_item(label_keys: list[str], tk: Sequence[_Term], runs: Sequence[str], printed: bool = True,
               ) -> frozenset[int]:
    """The terms of the line item a row's label names: its label starts (after "Total") with a run of the
    question's item words (or the run's last two words or more: a name may lead it), or with a label statements
    print for a line item the question names ("Purchases of property ..." for capex; not with `printed` False: a
    sentence's subject is named in the question's words, "Sales of the Company's largest product" is no revenue)."""
    lead = list(label_keys)
    while len(lead) > 1 and lead[0] in _LABEL_LEAD:
        lead = lead[1:]
    joined, whole = _joined(lead), _joined(label_keys)
    found: set[int] = set()
    for run in _without_goods_word(runs):
        words = run.split()
        # the run, or its end of two words or more: "Acme's total revenues" names "total revenues" (a word that
        # qualifies the item, "total", "net", is never cut off)
        cut = next((i for i, w in enumerate(words) if w in _QUALIFIERS), len(words))
        # (never a tail after "of" or "to": "content assets" is not the item "additions to content assets" names)
        for tail in [run] + [_joined(words[i:]) for i in range(1, min(cut + 1, len(words) - 1))
                             if words[i] not in _JOINS and words[i - 1] not in _JOINS]:
            if joined.startswith(tail) or whole.startswith(tail):
                tail_keys = set(tail.split())
                found |= {i for i, t in enumerate(tk) if t.keys and set(t.keys) <= tail_keys}
                break
    if printed:
        found |= {i for i, t in enumerate(tk) if any(joined.startswith(item) for item in t.items)}
    return frozenset(found)


def grouped_label(text: str, seg: Segment, label: str) -> list[str]:
    """The keys of a row's label read with the line titling its rows, when it has one (sentences.segment:
    "Products" under "Revenues:" is "products revenues", "Total" under "Units shipped: (2)" is "total units
    shipped"): the row's own words first, as a label naming the item starts with them."""
    own = keys(label)
    if seg.group is None:
        return own
    return own + [k for k in keys(_GROUP_MARKS.sub("", text[seg.group[0]:seg.group[1]])) if k not in own]


def _keys_of_lines(parts: Sequence[str], part_keys: Sequence[list[str]]) -> list[str]:
    """`keys("\\n".join(parts))` from each part's own keys: no token spans a line break, and only a lone "&"
    reads past its line (it needs whitespace either side), so that case is tokenised whole."""
    if any(a.endswith("&") or b.startswith("&") for a, b in itertools.pairwise(parts)):
        return keys("\n".join(parts))
    return [k for ks in part_keys for k in ks]


def _keys_at(text: str, span: tuple[int, int], memo: dict[tuple[int, int], list[str]]) -> list[str]:
    found = memo.get(span)
    if found is None:
        found = memo[span] = keys(text[span[0]:span[1]])
    return found


def _covered(tk: Sequence[_Term], seq: list[str]) -> frozenset[int]:
    """Indexes of the terms in `tk` that the key sequence `seq` contains."""
    keyset, joined = set(seq), _joined(seq)
    return frozenset(i for i, t in enumerate(tk) if t.found(keyset, joined))


@dataclass(slots=True)
class _Cover:
    """What each passage covers as a whole (full text, titles, path, document title), by rank."""
    passage: list[frozenset[int]]  # terms in the passage's text or titles
    title_keys: list[list[str]]    # keys of its title, path and document title
    doc_keys: list[list[str]]      # keys of its document title
    any: frozenset[int]            # terms some passage covers (the others are gaps)
    approved: frozenset[int]       # terms some approved passage covers


def _passage_cover(tk: Sequence[_Term], passages: Sequence[Passage], issuer: Collection[str] = ()) -> _Cover:
    passage_cover, title_keys_of, doc_keys_of = [], [], []
    for p in passages:
        titles = [p.title, *p.path, p.document_title.replace("_", " ")]
        title_part_keys = [keys(t) for t in titles]
        title_keys_of.append(_keys_of_lines(titles, title_part_keys))
        doc_keys_of.append(title_part_keys[-1] + list(issuer))
        passage_cover.append(_covered(tk, _keys_of_lines([p.text, *titles], [keys(p.text), *title_part_keys])))
    any_cover = frozenset().union(*passage_cover)
    approved_cover = frozenset().union(*(c for c, p in zip(passage_cover, passages, strict=True)
                                         if p.status == "approved"))
    return _Cover(passage_cover, title_keys_of, doc_keys_of, any_cover, approved_cover)


@dataclass(slots=True)
class _Match:
    """A candidate unit that contains a content term, before scoring."""
    passage: Passage
    rank: int
    seg: Segment
    matched: frozenset[int]  # terms in the unit itself
    in_ctx: frozenset[int]   # further terms only in its context (titles, table header, lead-in)
    body_keys: list[str]


def _matches(tk: Sequence[_Term], passages: Sequence[Passage], cover: _Cover, titled: bool = False) -> list[_Match]:
    """Candidate units and their matched terms, in passage rank then source order.

    A unit must contain a content term: not only a year or number, nor only its document's name (unless `titled`:
    no unit holds another of the question's terms, which are gaps then)."""
    numeric = {i for i, t in enumerate(tk) if all(k[0].isdigit() for k in t.keys)}
    raw: list[_Match] = []
    for rank, p in enumerate(passages):
        doc_terms = _covered(tk, cover.doc_keys[rank])
        weak = numeric | (set() if titled else doc_terms)
        weak = weak if len(weak) < len(tk) else set()
        title_keys = cover.title_keys[rank]
        memo: dict[tuple[int, int], list[str]] = {}  # keys of this passage's units, table headers, lead-ins
        ctx_cover: dict[tuple[tuple[int, int] | None, tuple[int, int] | None], frozenset[int]] = {}
        for seg in segment(p.text):
            if not _candidate(seg, p.text):
                continue
            body_keys = _keys_at(p.text, (seg.start, seg.end), memo)
            matched = _covered(tk, body_keys)
            # the line titling the rows ("Units shipped:") is part of a row's label: the whole of it when the row's
            # own words name nothing asked ("Total 2,014.2"), else its context ("Products" under "Revenues:")
            grouped = _covered(tk, _keys_at(p.text, seg.group, memo) + body_keys) - matched if seg.group else set()
            if not matched and not grouped - weak:
                continue
            context = (seg.header, seg.lead)
            if context not in ctx_cover:  # rows of one table share their header and lead-in
                ctx_cover[context] = _covered(tk, title_keys + [k for span in context if span
                                                                for k in _keys_at(p.text, span, memo)])
            if not matched - weak:
                matched, grouped = matched | grouped, frozenset()
            in_ctx = (ctx_cover[context] | grouped) - matched
            # a row may match only a year ("2024 1,097 862") when its table's header or lead-in names the rest
            if not matched - weak and not (seg.kind == "row" and in_ctx - weak):
                continue
            raw.append(_Match(p, rank, seg, matched, in_ctx, body_keys))
    return raw


def _score(tk: Sequence[_Term], raw: list[_Match], wants_amount: bool,
           deep: frozenset[str] = frozenset()) -> list[_Unit]:
    """Each match scored by coverage (rarer terms weigh more), proximity, figures and rank (module docstring).
    How rare a term is, is counted among the units of the passages shown (not the `deep` ones, when there are)."""
    shown = [r for r in raw if r.passage.section_id not in deep] or raw
    n = len(shown)
    df = [sum(1 for r in shown if i in r.matched) for i in range(len(tk))]
    weight = [1.0 + math.log((n + 1) / (d + 1)) for d in df]
    total_weight = sum(weight)
    units: list[_Unit] = []
    named = _named_numbers(tk)
    for r in raw:
        p, rank, seg, matched, in_ctx, body_keys = r.passage, r.rank, r.seg, r.matched, r.in_ctx, r.body_keys
        body = p.text[seg.start:seg.end]
        coverage = (sum(weight[i] for i in matched) + 0.5 * sum(weight[i] for i in in_ctx)) / total_weight
        if len(matched) > 1:
            joined = _joined(body_keys)
            window = _min_window([tk[i].positions(body_keys, joined) for i in sorted(matched)])
            proximity = min(1.0, 2 * len(matched) / window)
        else:
            proximity = 0.5
        figures = figures_of(body)
        has_figure = _has_figure(unnamed(body, named))  # not "Kestrel 152" for "the Kestrel 152 accident"
        score = W_COVERAGE * coverage + W_PROXIMITY * proximity + W_FIGURE * (wants_amount and has_figure) \
            + W_RANK / (1 + rank)
        words = len(body_keys)
        if words < 4:
            score *= 0.6
        elif words > 120:
            score *= 0.85
        units.append(_Unit(p, rank, seg, round(score, 9), matched, figures, in_ctx))
    return units


def compose(query: str, terms: Sequence[str], passages: Sequence[Passage], *, max_chars: int,
            first: Collection[str] = (), max_claims: int = MAX_CLAIMS,
            read_table: Callable[[Passage, Segment], tuple[int | None, TableRow] | None] | None = None,
            statement_pages: dict[str, dict[int, str]] | None = None, deep: Collection[str] = (),
            page_sections: Callable[[Passage, int, set[str]], list[Passage]] | None = None, ends: Collection[str] = (),
            annual: bool = False, issuers: Collection[str] = (), plans: Collection[str] = ()) -> Synthesis:
    """The pure part of kb.synthesize: pick, order and cite units of the passages' text.

    The steps: the salient terms (`_terms`), what each passage covers (`_passage_cover`, giving the gaps),
    candidate units (`_matches`), their scores (`_score`), the best of them (`_choose`), table rows read
    (`read_table`, default: on the passage text), most direct first (`_order`), rendered within `max_claims`
    and `max_chars` (`_render`), and the confidence (`_grade`). Units of the `first` documents (the filings
    covering the period the query names) come before all others; `statement_pages` (document id -> page ->
    statement kind) tells which units sit on a financial statement's page; `ends` are the asked period's end
    dates in the documents read (`period_ends`), `annual` says they are all annual reports (a column whose
    table does not say how long its period is is a year's); `issuers` are the names of the entities their cards
    name (a question naming one by its initials asks about the documents' issuer, not a part of it); `plans` are
    the documents written as a plan of what will be done (a trial protocol, PLAN_KINDS), whose sentences stating
    it are not "a plan, not what was" (answer/order.py)."""
    tokens = tokenize(query)
    named, rest = cues.named_statement(tokens)
    item_keys = set(keys(" ".join(rest)))
    # the statement the question names says where to read: its words are no term a unit should hold (unless
    # they are all the question holds: "What does the balance sheet show?")
    tk = _terms(query, terms)
    item = [t for t in tk if all(k in item_keys for k in t.keys)]
    if named and any(not k[0].isdigit() for t in item for k in t.keys):
        tk = item
    # so does the document it names ("in its 8-K dated February 21, 2023"): a page's date line is no answer
    source = set(keys(" ".join(m.group(0) for m in _DOCUMENT_NAMED.finditer(query))))
    kept = [t for t in tk if not set(t.keys) <= source]
    if source and any(not k[0].isdigit() for t in kept for k in t.keys):
        tk = kept
    # an abbreviation the question glosses ("the domestic (USA) market") is the glossed words, not a term of its own
    glossed = {abbr.lower() for abbr, words in glosses(query) if set(words) & {t.name for t in tk}}
    tk = [t for t in tk if t.name not in glossed] or tk
    names = [t.name for t in tk]
    nothing = Synthesis("", [], names, "none", len(passages), list(terms))
    if not tk or not passages:
        return nothing
    # the issuer the question names by its initials ("OFA's"; answer/wording.py) is named like the document's title
    issuer = _issuer_keys(query, issuers)
    cover = _passage_cover(tk, passages, issuer)
    gaps = [names[i] for i in range(len(names)) if i not in cover.any
            and not wording.measured_by(query, names[i])]  # "how long": the figure's unit says it, not a word
    # a question whose other words no passage holds is answered from the units holding the document's name's words
    # ("How many patients will the study enrol?" of "A study of ... in patients with ...": "enrol" is its gap)
    raw = _matches(tk, passages, cover) or _matches(tk, passages, cover, titled=True)
    if not raw:
        return Synthesis("", [], gaps, "none", len(passages), list(terms))
    periods = parse_periods(query)
    quarter, half = order.asks_span(query)
    full = order.asks_full_year(query)
    quarter, half = quarter and not full, half and not full  # "full-year 2023 EPS ... when it reported Q2"
    quarters = order.asks_which_quarter(query) and not quarter and not half
    quarter = quarter or quarters  # "which quarter of 2016": a quarter's figure, not the year's
    ask = order.Ask(asks_for_amount(query), order.asked_years(query, [str(y) for y in periods.years]), quarter,
                    statements=frozenset([named]) if named else cues.wanted_statements(tokens), named=bool(named),
                    change=order.asks_change(query), ends=tuple(sorted({*ends, *(d.isoformat() for d in periods.dates)})),
                    half=half, annual=annual, dated=tuple(sorted({str(d.year) for d in periods.dates} - {str(y) for y in periods.years})),
                    which=periods.quarter if quarter and not half else None, share=order.asks_share(query), quarters=quarters,
                    forward=order.asks_forward(query), kind=order.asks_kind(query),
                    nine=order.asks_nine(query) and not quarter and not half and not full, full=full,
                    ranges=order.asked_ranges(query))
    units = _score(tk, raw, ask.figure, frozenset(deep))
    in_unit = _in_asked_unit(units, asked_units(query))
    # the segment, region or product the question names (answer/qualifier.py): the item is read without it
    quals = qualifier.asked(query, {p.document_title for p in passages})
    quals = tuple(q for q in quals if not set(q.words) <= issuer)  # "OFA's resources": the issuer's
    item_rest = qualifier.item_tokens(rest, quals) if quals else rest
    if not _item_runs(item_rest, {k for t in tk for k in t.keys}):
        item_rest = rest
    chosen = _choose(units, frozenset(first), frozenset(deep), _item_rows(units, tk, item_rest, quals, issuer))
    readings = _read_tables(chosen, ask, read_table)
    kind_words = qualifier.kind_words(query, quals)
    framing = frozenset(i for i, t in enumerate(tk) if set(t.keys) <= _PERIOD_WORDS or t.name in kind_words)
    titled = {k for p in passages for k in keys(p.document_title.replace("_", " "))} | issuer  # the titles' words
    items, judged = _order(chosen, tk, ask, readings, frozenset(first), framing, statement_pages or {},
                           _item_runs(item_rest, {k for t in tk for k in t.keys}, titled), frozenset(deep), quals,
                           main_item_runs(item_rest, tk, titled), in_unit, issuer, _head_keys(query), plans)
    superlative = extreme.asked(query)
    lead_why = _superlative_across(superlative, items[:1], readings) if superlative and ask.quarters else None
    if superlative and lead_why is None:
        lead_why = _superlative(superlative, items, readings, read_table, judged)
    lines: dict[int, str] = {}
    if superlative and lead_why is None:
        lead_why = _superlative_stated(superlative, items, passages, ask.quarter, lines, page_sections)
    if superlative and lead_why is None:
        lead_why = _superlative_said(superlative, items)
    items = _spread(items, max_claims)
    shown = items[:max_claims]
    answer, claims, truncated = _render(shown, max_chars, readings, lines)
    best = chosen[0]
    cited_status = {u.passage.status for u in (shown[:len(claims)] if claims else chosen)}
    grade = _grade(best, chosen, cited_status, cover.passage[best.rank], cover.approved, len(tk))
    if ask.figure and claims and not any(_has_figure(c.text) for c in claims):
        gaps.append("a figure: no claim states one")
        grade = "medium" if grade == "high" else grade
    why = lead_why if lead_why is not None else "; ".join(judged[id(items[0])].reasons) if claims else ""
    first_claim = {"id": claims[0].id, "why": why} if claims else None
    tables = {c.id: readings[id(u)] for c, u in zip(claims, shown, strict=False) if id(u) in readings}
    return Synthesis(answer, claims, gaps, grade, len(passages), list(terms), truncated,
                     more=len(items) - len(shown), first_claim=first_claim, tables=tables)


W_IN_UNIT = 0.15  # a unit printing a figure in the unit the question asks (answer/units.py): a candidate like a figure


def _in_asked_unit(units: list[_Unit], want: Asked) -> dict[int, int]:
    """The units (id()) printing a figure in the unit the question asks for ("119 hours" for "how many hours"), 2 when
    it is after the word framing it in the question ("after 15 interviews"), their score raised by W_IN_UNIT: they
    are the answer's candidates before the figures in other units; -1: a sentence only counting things when the
    question asks an amount of money."""
    if not want and not want.money:
        return {}
    out = {}
    for u in units:
        text, seg = u.passage.text, u.seg
        body = text[seg.start:seg.end]
        if want.money:  # a count of things is no amount of money ("1.7 million calls")
            if seg.kind != "row" and counts_only(body):
                out[id(u)] = -1
            continue
        row = seg.kind == "row" and names_in(want, " ".join(
            [body, *(text[span[0]:span[1]] for span in (seg.group, seg.header, seg.lead) if span)]))
        if row or carries(want, body):
            u.score = round(u.score + W_IN_UNIT, 9)
            out[id(u)] = 2 if framed(want, body) else 1
    return out


def _column_header(body: str) -> bool:
    """A line of a table's column titles: only dates, periods and the unit ("October 29, October 30, January 29,
    ($ in millions) 2022 2021"); its numbers are days and years."""
    words = [w.lower() for w in re.findall(r"[A-Za-z]+", body)]
    numbers = [n.rstrip(",.") for n in re.findall(r"\d[\d,.]*", body)]
    return bool(words) and all(w in _HEADER_WORDS for w in words) \
        and all(len(n) <= 2 or YEAR.fullmatch(n) for n in numbers)


_DOCUMENT_NAMED = re.compile(r"\b(?:8|10)-?[KQ]\b|\bdated\s+(?:[A-Z][a-z]+\.?\s+\d{1,2},?\s+\d{4}|\d{4}-\d{2}-\d{2})",
                             re.IGNORECASE)  # "8-K", "10-K", "dated March 1, 2023": the document to read
_MONTH_KEYS = frozenset(k for word in MONTH_WORDS for k in keys(word))


_PER_UNIT = re.compile(r"\bper\s+(?:\w+\s+){0,2}(?:share|unit)s?\b", re.IGNORECASE)  # "per common share"
_SHARE_OF = re.compile(r"\d+(?:\.\d+)?\s?(?:%|percent)\s+of\b", re.IGNORECASE)


def _figure_near(tk: Sequence[_Term], content: set[int], body: str) -> bool:
    """A figure (not a year, nor the day of a date: "August 30, 2023", nor a share of something: "35% of ...")
    within order.NEAR_TOKENS keys of a content term of the question."""
    seq = keys(_SHARE_OF.sub(" ", body))  # "35% of our total workforce": a share of the item, not its figure
    joined = _joined(seq)
    at = [j for i in content for j in tk[i].positions(seq, joined)]
    figures = [j for j, k in enumerate(seq) if k[0].isdigit() and not YEAR.fullmatch(k)
               and not (j and seq[j - 1] in _MONTH_KEYS and k.isdigit() and int(k) <= 31)]  # "August 30": a date
    return any(abs(a - f) <= order.NEAR_TOKENS for a in at for f in figures)


def _head_keys(query: str) -> tuple[str, ...]:
    """The keys of the item a "What is the ... of ...?" question asks for (wording.asked_item), its period's words
    and numbers left out: "assets" of "What are the assets of the plans ... estimated at?"."""
    return tuple(k for k in keys(" ".join(wording.asked_item(query))) if not k[0].isdigit() and k not in _PERIOD_WORDS)


def _part_unasked(body: str, query_keys: Collection[str]) -> bool:
    """A sentence's first count is of a part of a whole (order.part_words: "1,100 employees in North America were
    covered by ...") whose words (not its numbers, dates or periods) the question does not have."""
    words = order.part_words(body)
    if words is None:
        return False
    return not {k for k in keys(words) if not k[0].isdigit() and k not in _MONTH_KEYS and k not in _PERIOD_WORDS
                and k not in STOPWORDS} & set(query_keys)


def _figure_by(head: Sequence[str], body: str) -> bool:
    """A figure within order.NEAR_TOKENS keys after the asked item's last word, or before its first ("these plans
    hold estimated assets of $12.9 trillion", "$12.9 trillion in assets")."""
    if not head:
        return False
    seq = keys(_SHARE_OF.sub(" ", body))
    n = len(head)
    at = [j for j in range(len(seq) - n + 1) if tuple(seq[j:j + n]) == tuple(head)]
    figures = [j for j, k in enumerate(seq) if k[0].isdigit() and not YEAR.fullmatch(k)]
    return any(0 < f - (a + n - 1) <= order.NEAR_TOKENS or 0 < a - f <= order.NEAR_TOKENS for a in at for f in figures)


def _spread(items: list[_Unit], n: int) -> list[_Unit]:
    """The first `n` of `items` take at most PER_SECTION_SHOWN from one section (more sources in a short
    answer), in their order; the others follow in theirs."""
    taken: dict[str, int] = {}
    head, rest = [], []
    for u in items:
        sid = u.passage.section_id
        if len(head) < n and taken.get(sid, 0) < PER_SECTION_SHOWN:
            head.append(u)
            taken[sid] = taken.get(sid, 0) + 1
        else:
            rest.append(u)
    fill = rest[:max(0, n - len(head))]  # the other sections ran out: the same section again
    return head + fill + rest[len(fill):]


def _named_numbers(tk: Sequence[_Term]) -> frozenset[str]:
    """The numbers the question itself writes (its numeric keys: "152" of "the Kestrel 152"), which are no answer; not
    its years (the asked period, which order.py weighs)."""
    return frozenset(k for t in tk for k in t.keys if k[0].isdigit() and not YEAR.fullmatch(k))


def _has_figure(text: str) -> bool:
    text = _PAGE_LINE.sub("", text)  # "28\nThe restructuring charges ...": a page's number glued to a sentence
    return bool(figures_of(text) or _FIGURE.search(text) or _COUNT.search(text))


def _read_tables(chosen: list[_Unit], ask: order.Ask,
                 read_table: Callable[[Passage, Segment], tuple[int | None, TableRow] | None] | None,
                 ) -> dict[int, Reading]:
    """The chosen table rows read as tables (keyed by id() of the unit)."""
    out: dict[int, Reading] = {}
    for u in chosen:
        if u.seg.kind != "row":
            continue
        found = read_table(u.passage, u.seg) if read_table is not None else None
        if found is None:
            found = (None, read_row(u.passage.text, u.seg.start, u.seg.end))
        page, row = found
        asked = order.asked_cells(row, ask.years, ask.quarter, ask.change, ask.ends, ask.half, ask.annual,
                                    ask.dated, ask.which, ask.quarters, ask.nine, ask.full)
        out[id(u)] = Reading(page, row, asked, table_line(row, asked, page))
    return out


def main_item_runs(rest: Sequence[str], tk: Sequence[_Term], titles: Collection[str]) -> list[str]:
    """The question's longest runs of item words (`_item_runs`) that are not the document's name (its `titles`
    keys): "How much net income attributable to Acme did the company earn ..." asks for " net incom attributabl ",
    not " earn "."""
    runs = _item_runs(rest, {k for t in tk for k in t.keys}, titles)
    runs = [r for r in runs if not set(r.split()) <= set(titles)] or runs  # the issuer's name is no item
    longest = max((len(r.split()) for r in runs), default=0)
    runs = [r for r in runs if len(r.split()) == longest]  # the item, not a lone verb ("... did it earn")
    return runs + _printed_runs(runs, tk)


def _printed_runs(runs: Sequence[str], tk: Sequence[_Term]) -> list[str]:
    """The labels an item named in an analyst's everyday words is printed under (`_Term.items` from vocabulary.py
    ANALYST_ITEMS), for the `runs` holding such a word: "How much did Acme sell in Freedonia" asks for the "net
    sales" a row under that title prints."""
    words = {k for r in runs for k in r.split()}
    return list(dict.fromkeys(item for t in tk if set(t.keys) <= words for item in t.printed if item not in runs))


def _item_rows(units: list[_Unit], tk: Sequence[_Term], rest: Sequence[str],
               quals: Sequence[qualifier.Qualifier] = (), issuer: frozenset[str] = frozenset()) -> frozenset[int]:
    """The table rows (id() of the unit) whose label names the line item the question asks for (`names_item`:
    "Total debt" for "... increased its debt"; not a word of the document's title, its issuer's name; a label
    opening with the asked qualifier read without it, "Widgets" under "Operating profit:"): a statement
    prints many rows sharing the question's words, and the one asked may come after three of them."""
    runs = main_item_runs(rest, tk, {k for u in units for k in keys(u.passage.document_title.replace("_", " "))} | issuer)
    if not runs:
        return frozenset()
    content = {i for i, t in enumerate(tk) if not all(k[0].isdigit() for k in t.keys)}
    out, titled = set(), {}
    for u in units:
        if u.seg.kind != "row" or not u.matched:
            continue
        label, _ = cells_of(u.passage.text, u.seg.start, u.seg.end)
        if label is None:
            continue
        doc = u.passage.document_id
        if doc not in titled:
            titled[doc] = _covered(tk, keys(u.passage.document_title.replace("_", " ")) + list(issuer))
        if names_item(grouped_label(u.passage.text, u.seg, label.text), tk, runs) & (content - titled[doc]) \
                or (quals and _qualified_row(u, label.text, None, quals, tk, runs, content - titled[doc])):
            out.add(id(u))
    return frozenset(out)


def _choose(units: list[_Unit], first: frozenset[str] = frozenset(), deep: frozenset[str] = frozenset(),
            item_rows: frozenset[int] = frozenset()) -> list[_Unit]:
    """Best units per passage above a floor relative to the best overall (of the passages shown, not the `deep`
    ones, when they have any), strongest first, no duplicates. Units of the `first` documents lead, above a floor
    relative to the best of them. The `item_rows` (rows whose label names the asked item) are not held to
    PER_PASSAGE (they count in it: a passage's other units come after them only within it)."""
    units.sort(key=lambda u: (u.passage.document_id not in first, -u.score, u.rank, u.seg.start))
    top = [u for u in units if u.passage.section_id not in deep] or units
    floor = max(u.score for u in top) * RELATIVE_FLOOR
    first_floor = top[0].score * RELATIVE_FLOOR  # the best unit of the first documents, when there is one
    taken: dict[int, int] = {}
    seen: set[str] = set()
    chosen = []
    for u in units:
        if u.score < (first_floor if u.passage.document_id in first else floor) \
                or (taken.get(u.rank, 0) >= PER_PASSAGE and id(u) not in item_rows):
            continue
        text = collapse_ws(u.passage.text[u.seg.start:u.seg.end]).lower()
        if text in seen:
            continue
        seen.add(text)
        taken[u.rank] = taken.get(u.rank, 0) + 1
        chosen.append(u)
    return chosen


def _order(chosen: list[_Unit], tk: Sequence[_Term], ask: order.Ask, readings: dict[int, Reading],
           first: frozenset[str], framing: frozenset[int] = frozenset(),
           statement_pages: dict[str, dict[int, str]] | None = None, runs: Sequence[str] = (),
           deep: frozenset[str] = frozenset(), quals: Sequence[qualifier.Qualifier] = (),
           item_runs: Sequence[str] = (), in_unit: dict[int, int] | None = None, issuer: frozenset[str] = frozenset(),
           head: Sequence[str] = (), plans: Collection[str] = ()) -> tuple[list[_Unit], dict[int, order.Judged]]:
    """The chosen units most direct first (answer/order.py), and each one's judgement (keyed by id()). The
    `framing` terms (the statement to read, the period's words) are not the item a row's label should name. With
    `quals` (the qualifier the question puts on its item, `item_runs` the item's words), a unit naming the
    qualified item gains (answer/qualifier.py; `_qualified`), a label or sentence opening with the qualifier names
    the item that follows it, and the whole is not asked."""
    judged: dict[int, order.Judged] = {}
    content = {i for i, t in enumerate(tk) if not all(k[0].isdigit() for k in t.keys)}
    named = _named_numbers(tk)
    planned = dataclasses.replace(ask, forward=True)  # a protocol states what will be done: its plan is the answer
    query_keys = {k for t in tk for k in t.keys} | {k for t in tk for alt in (*t.alts, *t.items) for k in alt.split()}
    named_by_title: dict[str, frozenset[int]] = {}  # terms a document's title holds: its name, not the item asked
    notes_memo: dict[int, list[Segment]] = {}
    titled_by: dict[str, frozenset[int]] = {}  # section title -> the terms it holds
    for u in chosen:
        doc = u.passage.document_id
        if doc not in named_by_title:
            named_by_title[doc] = _covered(tk, keys(u.passage.document_title.replace("_", " ")) + list(issuer))
    # the asked terms a row names in its label or its context (the segment's section, its table's lead-in)
    named_by_row = {id(u): (u.matched | u.context) & (content - named_by_title[u.passage.document_id] - framing)
                    for u in chosen}
    # the rows naming the asked item, whatever their label's other words ("Net sales" under a segment's heading for
    # "the Aeronautics segment's net sales", beside the statement's "Total net sales")
    of_item = {id(u) for u in chosen if (r := readings.get(id(u))) is not None and r.row.label is not None
               and names_item(grouped_label(u.passage.text, u.seg, r.row.label.text), tk, runs)
               & (content - named_by_title[u.passage.document_id] - framing)}
    # the whole of the parts shown may be a deeper passage's row (the consolidated statement's, ranked below the
    # segments' tables): rows alike are compared across them, a group of deeper rows alone left out
    parts: set[int] = set()
    shown = {id(u) for u in chosen if u.passage.section_id not in deep}
    whole = _largest_alike([u for u in chosen if id(u) in shown or _whole_like(u, readings.get(id(u)), statement_pages)],
                           readings, named_by_row, of_item, shown=shown, parts=parts)
    naming = _naming(chosen, readings, quals)
    qualified: dict[int, qualifier.Naming] = {}
    judging: dict[int, Callable[..., order.Judged]] = {}
    for u in chosen:
        doc = u.passage.document_id
        body = u.passage.text[u.seg.start:u.seg.end]
        reading = readings.get(id(u))
        label_share, labelled, label_extra, item, by_period = 0.0, False, 0, False, False
        if reading is not None and reading.row.label is not None and u.matched:
            label_keys = grouped_label(u.passage.text, u.seg, reading.row.label.text)
            by_period = YEAR.fullmatch(reading.row.label.text.strip()) and u.seg.lead is not None
            if by_period:  # "2024 1,097 862": a row labelled by its period is about what its table's lead-in names
                label_keys = keys(u.passage.text[u.seg.lead[0]:u.seg.lead[1]])
            asked = content - named_by_title[u.passage.document_id] - framing
            # the heading of the section the row is in names what its label need not: "Net sales" under "Acme
            # International Segment" (not its table's header or lead-in, which text extraction confuses with rows)
            title = u.passage.title
            if title not in titled_by:
                titled_by[title] = _covered(tk, keys(title))
            # words of the row's own label; the line titling its rows ("Investing activities:") names their group:
            # a term only it holds counts half for a member of the group ("Property additions"), whose total names
            # it in its own words, but whole for a row labelled only "Total" (the group's total)
            own = label_keys if by_period else keys(reading.row.label.text)
            whole_group = not set(own) - _LABEL_LEAD
            item, label_share = _label_share(label_keys, tk, runs, asked, titled_by[title],
                                             label_keys if whole_group else own)
            label_extra = 0 if by_period else len({k for k in own if not k[0].isdigit()} - query_keys)
        label = order.label_of(body) if reading is None else None  # a row's "Market price: High" heads its cells
        if label is not None and _covered(tk, label_keys := keys(label)):
            # a labelled statement's label is read as a row's: its share of the asked terms, its other words
            _named, label_share = _label_share(label_keys, tk, runs, content - named_by_title[doc] - framing)
            labelled = label_share > 0
            label_extra = len({k for k in label_keys if not k[0].isdigit()} - query_keys)
        if reading is None and u.seg.kind == "sentence" and u.matched and _has_figure(body):
            # "Total workforce level at December 31, 2019 was approximately 161,100.": its subject is the item
            asked = content - named_by_title[u.passage.document_id] - framing
            subject = list(itertools.dropwhile(lambda k: k in issuer, keys(body)))  # "OFA's discretionary budget"
            item = bool(names_item(subject[:SUBJECT_KEYS], tk, runs, printed=False) & asked)
        item = item or _qualified_item(u, naming.get(id(u)), reading, quals, tk, item_runs,
                                       content - named_by_title[doc] - framing)
        page = reading.page if reading is not None and reading.page is not None else \
            page_at(u.passage.page_map, u.seg.start, u.passage.page_start)
        judging[id(u)] = functools.partial(
            order.judge, planned if doc in plans else ask, body, score=u.score, has_figure=_has_figure(unnamed(body, named)),
            table=reading.row if reading else None, label_share=label_share,
            labelled_hit=labelled,
            figure_near=_figure_near(tk, content, unnamed(body, named)) + _figure_by(head, unnamed(body, named)),
            words=len(body.split()),
            note=reading is None and (_under_table(u, notes_memo) or order.points_elsewhere(body)),
            label_extra=label_extra, names_item=item, label_from_lead=bool(by_period),
            statement=(statement_pages or {}).get(u.passage.document_id, {}).get(page),
            deep=u.passage.section_id in deep, in_unit=(in_unit or {}).get(id(u), 0),
            part_stated=reading is None and u.seg.kind == "sentence" and _part_unasked(body, query_keys))
        if id(u) in naming and _qualified(u, naming[id(u)], item, reading, quals, item_runs):
            qualified[id(u)] = naming[id(u)]
    asked_named = len({i for n in qualified.values() for i in n.named})
    for u in chosen:  # a part asked (a segment's, a region's) leads, and the whole is not asked
        judged[id(u)] = qualifier.weigh(judging[id(u)](whole=0 if qualified else whole.get(id(u), 0),
                                                       part=not qualified and id(u) in parts),
                                        qualified.get(id(u), qualifier.Naming()), asked_named)
    items = order.rank(chosen, lambda u: judged[id(u)], lambda u: (u.rank, u.seg.start), first=first,
                       document_of=lambda u: u.passage.document_id)
    items = qualifier.lead(items, lambda u: qualified.get(id(u), qualifier.Naming()), lambda u: judged[id(u)],
                           lambda u: u.passage.document_id in first,
                           lambda u: not ask.figure or _has_figure(unnamed(u.passage.text[u.seg.start:u.seg.end], named)))
    return items, judged


def _label_share(label_keys: list[str], tk: Sequence[_Term], runs: Sequence[str], asked: Collection[int],
                 context: Collection[int] = (), own: list[str] | None = None) -> tuple[bool, float]:
    """(whether a label names the asked line item, the share of the `asked` terms it holds): a term its `own` words
    hold (default: all its words), or the item it names, counts 1; one found through a phrase it stands for ("capex"
    as "purchases of property ..."), or only in the rest of `label_keys` (the line titling its rows), half, and so
    does one only its `context` names (the heading of the segment whose table it is in)."""
    named = names_item(label_keys, tk, runs) & set(asked)
    own = label_keys if own is None else own
    direct = {i for i, t in enumerate(tk) if all(k in own for k in t.keys)} | named
    through = (_covered(tk, label_keys) | set(context)) - direct  # a phrase the term stands for, or its context: half
    return bool(named), (len(direct & set(asked)) + 0.5 * len(through & set(asked))) / max(1, len(asked))


def _naming(chosen: list[_Unit], readings: dict[int, Reading],
            quals: Sequence[qualifier.Qualifier]) -> dict[int, qualifier.Naming]:
    """id() of each chosen unit -> the asked qualifiers it names, in its own text or its context: empty when the
    question asks none."""
    if not quals:
        return {}
    return {id(u): qualifier.names(quals, u.passage.text, u.passage.title, u.seg,
                                   readings[id(u)].row if id(u) in readings else None, path=u.passage.path)
            for u in chosen}


def _qualified_item(u: _Unit, naming: qualifier.Naming | None, reading: Reading | None,
                    quals: Sequence[qualifier.Qualifier], tk: Sequence[_Term], item_runs: Sequence[str],
                    asked: Collection[int]) -> bool:
    """A row's label or a sentence opening with the asked qualifier names the item that follows it: "Widgets
    operating profit 445.5", "Widgets" under "Operating profit:", "Widgets operating profit decreased ... to $4"."""
    if naming is None or not naming.own:
        return False
    if reading is not None and reading.row.label is not None:
        return _qualified_row(u, reading.row.label.text, reading.row, quals, tk, item_runs, asked)
    body = u.passage.text[u.seg.start:u.seg.end]
    return u.seg.kind == "sentence" and _has_figure(body) \
        and bool(names_item(keys(qualifier.strip(quals, body))[:SUBJECT_KEYS], tk, item_runs, printed=False)
                 & set(asked))


def _qualified_row(u: _Unit, label: str, row: TableRow | None, quals: Sequence[qualifier.Qualifier],
                   tk: Sequence[_Term], item_runs: Sequence[str], asked: Collection[int]) -> bool:
    """A row labelled by the asked qualifier names the item: its label's other words, with the line titling its
    rows, do ("Widgets operating profit", "Widgets" under "Operating profit:"), or, labelled by the qualifier
    alone, the titles it is under do ("Widgets $376,593" under "Backlog", "Grocery $ 63,407" under "Acme net
    sales by merchandise category")."""
    if not qualifier.named_in(quals, label):
        return False
    bare = qualifier.strip(quals, label)
    if names_item(grouped_label(u.passage.text, u.seg, bare), tk, item_runs) & set(asked):
        return True
    if keys(bare) or _headed_otherwise(row, item_runs):
        return False
    around = _joined(keys(qualifier.context(u.passage.text, u.passage.title, u.seg, row, None, u.passage.path)))
    return any(run in around for run in item_runs)


# words of the labels statements print for a line item (retrieval/query.py LINE_ITEMS), as keys: a table's header
# holding one names what its rows are ("Property, Plant and Equipment - net"); not the words qualifying any item
_LINE_ITEM_KEYS = frozenset(k for phrases in LINE_ITEMS.values() for p in phrases for w in p.split()
                            if w not in STOPWORDS and w not in _QUALIFIERS for k in keys(w)) \
    - set(keys("shares"))  # "(in millions, except per share data)": a table's unit, no item


def _headed_otherwise(row: TableRow | None, item_runs: Sequence[str]) -> bool:
    """A table whose own header lines name another line item than the asked one: its rows are that item's (a
    region's "Asia Pacific 1,582" under "Property, Plant and Equipment - net" is no net sales, whatever the lead-in
    says in passing); a header naming no item ("(Millions) 2021 2020") says nothing."""
    if row is None or not row.headers:
        return False
    head = keys(" ".join(h.text for h in row.headers))
    return not any(run in _joined(head) for run in item_runs) and bool(set(head) & _LINE_ITEM_KEYS)


def _qualified(u: _Unit, naming: qualifier.Naming, item: bool, reading: Reading | None,
               quals: Sequence[qualifier.Qualifier], item_runs: Sequence[str]) -> bool:
    """`u` names the qualified item: it names the qualifier (`naming`) and the item: its label or subject does
    (`item`), a sentence has the item's words next to the qualifier ("Widgets operating profit decreased ...", "net
    sales in Freedonia"), or a row labelled by the qualifier alone is under a title naming the item ("Widgets
    $376,593" under "Backlog")."""
    if not naming.named:
        return False
    if item:
        return True
    body = u.passage.text[u.seg.start:u.seg.end]
    return reading is None and naming.own and qualifier.near(quals, body, item_runs, keys)


def _under_table(u: _Unit, memo: dict[int, list[Segment]]) -> bool:
    """`u` opens with a footnote mark and follows a table's rows (other notes between): a note on the table's
    figures ("(1) Total revenues of the segment include ..."), not an item of a list ("(b) On April 24, ...")."""
    p = u.passage
    if not order.is_note(p.text[u.seg.start:u.seg.end]):
        return False
    if id(p) not in memo:
        memo[id(p)] = segment(p.text)
    before = [s for s in memo[id(p)] if s.end <= u.seg.start and s.kind != "header"
              and not order.is_note(text := p.text[s.start:s.end]) and any(c.isalnum() for c in text)]  # a rule
    return bool(before) and before[-1].kind == "row"


def _superlative(ask: extreme.Asked, items: list[_Unit], readings: dict[int, Reading],
                 read_table: Callable[[Passage, Segment], tuple[int | None, TableRow] | None] | None,
                 judged: dict[int, order.Judged]) -> str | None:
    """A superlative question (answer/extreme.py): the row with the extreme value in the asked column among the
    rows compared is put first (in `items`, in place), its line naming it. The rows compared: when the leading
    table row (among the first claims) is a member (its label does not name the asked item: "Customer deposits"
    for "the largest liability"), its run of rows in its passage; when it is the total of the asked item ("Total
    current liabilities" for "the largest current liability"), the rows it sums (the run just above it); a line
    item that is no total compares nothing; then a later member row whose table's lead-in names the measure asked
    leads ("Cross currency swaps" below "the notional amounts of our derivative instruments:" for "the highest
    notional value", after "Notional value settled"). Returns why, or None when no table compares."""
    leads = [u for u in items if id(u) in readings and readings[id(u)].asked]
    for n, lead in enumerate(leads):
        reading = readings[id(lead)]
        total = reading.row.label is not None and reading.row.label.text.lower().startswith("total")
        later = bool(n) or lead not in items[:PER_SECTION_SHOWN + 1]
        if (judged[id(lead)].names_item and not total) or (later and (total or not _leads_into(lead, ask.measure))):
            continue  # past the leading row, only a member of a table whose lead-in names the measure asked
        why = _superlative_at(ask, lead, total, items, readings, read_table, judged if later else None)
        if why is not None:
            return why
    return None


def _superlative_stated(ask: extreme.Asked, items: list[_Unit], passages: Sequence[Passage], quarter: bool,
                        lines: dict[int, str],
                        page_sections: Callable[[Passage, int, set[str]], list[Passage]] | None = None) -> str | None:
    """A superlative question answered by sibling bullets or sentences (answer/extreme.py `pick_stated`): when one
    of the first claims states a change ("..., a decrease of 44%"), the units of its document's passages, and of
    the other sections on the pages where that measure's changes are stated (`page_sections`), stating the same measure's change under their own headings
    are compared, and the extreme one leads (in `items`, in place), its line naming its heading (`lines`). Returns
    why, or None when nothing compares."""
    picked = None
    for lead in items[:PER_SECTION_SHOWN + 1]:
        lead_stated = extreme.stated(lead.passage.text[lead.seg.start:lead.seg.end])
        if lead.seg.kind not in ("bullet", "sentence") or lead_stated is None:
            continue
        candidates = _stated_units(passages, lead.passage.document_id, 0)
        # the other sections on the pages of the same measure's statements: a sibling's heading may be its own section
        pages = sorted({page_at(c.key[1].page_map, c.key[2].start, c.key[1].page_start)  # type: ignore[index]
                        for c in candidates if c.stated.signature[:2] == lead_stated.signature[:2]})
        have = {p.section_id for p in passages}
        nearby = [q for page in pages[:MAX_SIBLING_PAGES] for q in page_sections(lead.passage, page, have)] \
            if page_sections else []
        candidates += _stated_units(nearby, lead.passage.document_id, len(passages))
        picked = extreme.pick_stated(ask, lead_stated, candidates, quarter)
        if picked is not None:
            break
    if picked is None:
        return None
    winner, line, why = picked
    rank, p, seg = winner.key  # type: ignore[misc]
    unit = next((u for u in items if u.passage is p and u.seg.start == seg.start), None)
    if unit is None:
        unit = _Unit(p, rank, seg, lead.score, lead.matched)
    else:
        items.remove(unit)
    items.insert(0, unit)
    lines[id(unit)] = line
    return why


def _superlative_across(ask: extreme.Asked, leads: list[_Unit], readings: dict[int, Reading]) -> str | None:
    """A question asking in which quarter a superlative fell ("In which quarter of 2016 did Acme record its highest
    net sales?"): the leading row's quarters' cells are compared, and its line names the extreme one. Returns why,
    or None when the leading row holds no two quarters' cells."""
    reading = readings.get(id(leads[0])) if leads else None
    if reading is None or len(reading.asked) < 2 \
            or not all(any(quarter_of(p.text) for p in reading.row.cells[i].column) for i in reading.asked):
        return None
    winner = extreme.pick_cell(ask, reading.row, reading.asked, collapse_ws)
    if winner is None:
        return None
    readings[id(leads[0])] = Reading(reading.page, reading.row, (winner.cell,), winner.line)
    return winner.why


def _superlative_said(ask: extreme.Asked, items: list[_Unit]) -> str | None:
    """A superlative question no table or stated change answers: the first sentence or bullet among the claims
    saying it in the question's words ("... is our largest program, generating 23% of ..." for "What is Acme's
    largest program?") is put first (in `items`, in place). Returns why, or None."""
    for n, u in enumerate(items):
        if u.seg.kind in ("sentence", "bullet") and extreme.says(ask, u.passage.text[u.seg.start:u.seg.end]):
            items.insert(0, items.pop(n))
            return f"it says the {ask.word} {ask.measure} in the question's words"
    return None


def _stated_units(passages: Sequence[Passage], document_id: str, first_rank: int) -> list[extreme.Sibling]:
    """The bullets and sentences of `document_id`'s passages stating a change, each with the heading it is under
    (the last heading above it in its passage, else the passage's title); keyed by (rank, passage, segment)."""
    out: list[extreme.Sibling] = []
    for rank, p in enumerate(passages, first_rank):
        if p.document_id != document_id:
            continue
        heading = p.title
        for seg in segment(p.text):
            body = p.text[seg.start:seg.end]
            if seg.kind == "heading":
                heading = body
            elif seg.kind in ("bullet", "sentence") and (found := extreme.stated(body)) is not None:
                out.append(extreme.Sibling((rank, p, seg), collapse_ws(heading), collapse_ws(body), found))
    return out


def _leads_into(unit: _Unit, measure: str) -> bool:
    """The sentence leading into `unit`'s table names `measure` ("the notional amounts of our ... instruments:" for
    "notional value"): its first word."""
    if unit.seg.lead is None or not (want := keys(measure)):
        return False
    lead_in = set(keys(unit.passage.text[unit.seg.lead[0]:unit.seg.lead[1]]))
    return want[0] in lead_in


def _rows_before_break(p: Passage, segs: Sequence[Segment], reading: Reading,
                       read_table: Callable[[Passage, Segment], tuple[int | None, TableRow] | None] | None,
                       ) -> list[tuple[Passage, Segment, int | None, TableRow]]:
    """A lead row of a table continued from the page before (its headers printed there): the passage's rows on
    that page (`segs`, before the lead's run), whose members under the same headers compare too (`extreme.pick`)."""
    if reading.page is None or read_table is None or not any(h.pages_back for h in reading.row.headers):
        return []
    out: list[tuple[Passage, Segment, int | None, TableRow]] = []
    for seg in (s for s in segs if s.kind == "row"):
        placed = read_table(p, seg)
        if placed is not None and placed[0] == reading.page - 1:
            out.append((p, seg, placed[0], placed[1]))
    return out


def _superlative_at(ask: extreme.Asked, lead: _Unit, total: bool, items: list[_Unit], readings: dict[int, Reading],
                    read_table: Callable[[Passage, Segment], tuple[int | None, TableRow] | None] | None,
                    judged: dict[int, order.Judged] | None) -> str | None:
    """`_superlative` with `lead` the table row whose run of rows is compared; with `judged` (a lead past the first),
    none when a row of the run names the asked item (a statement printing the item among other lines, not a
    comparison of its members)."""
    reading = readings[id(lead)]
    p = lead.passage
    segs = segment(p.text)
    at = next(i for i, seg in enumerate(segs) if seg.start == lead.seg.start)
    first, last = at, at
    while first > 0 and segs[first - 1].kind == "row" \
            and not p.text[segs[first - 1].start:segs[first - 1].end].lower().startswith("total"):
        first -= 1
    while not total and last + 1 < len(segs) and segs[last + 1].kind == "row":
        last += 1
    if ask.among:  # the candidates the question names may sit under their own sub-headings: the whole table
        first, last = 0, len(segs) - 1
    found: list[tuple[Passage, Segment, int | None, TableRow]] = []
    for seg in (s for s in segs[first:last + 1] if s.kind == "row"):
        placed = read_table(p, seg) if read_table is not None else None
        page, row = placed if placed is not None else (None, read_row(p.text, seg.start, seg.end))
        if page == reading.page:
            found.append((p, seg, page, row))
    found[:0] = _rows_before_break(p, segs[:first], reading, read_table)
    if ask.among:  # and the rows of the other sections of that page among the claims
        found += [(u.passage, u.seg, r.page, r.row) for u in items if u.passage is not p
                  and u.passage.document_id == p.document_id and (r := readings.get(id(u))) is not None
                  and r.page == reading.page and r.page is not None]
    if judged is not None and any(u.passage is p and judged[id(u)].names_item and any(u.seg.start == seg.start
                                                                                        for _, seg, _, _ in found)
                                  for u in items):
        return None
    winner = extreme.pick(ask, reading.row, reading.asked[0], [row for _, _, _, row in found], collapse_ws)
    if winner is None:
        return None
    wp, seg, page, row = found[winner.index]
    unit = next((u for u in items if u.passage is wp and u.seg.start == seg.start), None)
    if unit is None:
        unit = _Unit(wp, lead.rank, seg, lead.score, lead.matched)
    else:
        items.remove(unit)
    items.insert(0, unit)
    readings[id(unit)] = Reading(page, row, (winner.cell,), winner.line)
    return winner.why


_TOTAL_WORDS = frozenset({"total", "consolidat", "combin"})  # keys() of "Total", "Consolidated", "Combined"


def _whole_key(label: str) -> str:
    """The key rows are labelled alike by: the label's words, less the words opening it that say it is the whole
    ("Total net sales", "Consolidated net sales" are labelled like each segment's "Net sales": the whole of the
    parts printed beside it, not another item)."""
    found = keys(label)
    i = 0
    while i < len(found) - 1 and found[i] in _TOTAL_WORDS:
        i += 1
    return " ".join(found[i:])


# a table's title saying it is the company's ("Consolidated Statements of Earnings", "Condensed Consolidated
# Balance Sheets"), on a line of its own above the row
_CONSOLIDATED_TITLE = re.compile(r"(?im)^[ \t]*(?:condensed\s+)?consolidated\b[^\n.]{0,80}$")
TITLE_REACH = 1500  # characters above a row read for its table's title


def _whole_like(u: _Unit, reading: Reading | None, statement_pages: dict[str, dict[int, str]] | None) -> bool:
    """A row that says it is the company's figure: labelled a total ("Total net sales", "Consolidated ..."),
    printed on a page of a financial statement (identity/statements.py), or under a consolidated table's title."""
    if reading is None or reading.row.label is None:
        return False
    if keys(reading.row.label.text)[:1] and keys(reading.row.label.text)[0] in _TOTAL_WORDS:
        return True
    page = reading.page if reading.page is not None else page_at(u.passage.page_map, u.seg.start, u.passage.page_start)
    if (statement_pages or {}).get(u.passage.document_id, {}).get(page) is not None:
        return True
    return bool(_CONSOLIDATED_TITLE.search(u.passage.text, max(0, u.seg.start - TITLE_REACH), u.seg.start))


def _deep_copies(winners: Sequence[int], shown: Collection[int] | None) -> bool:
    """Rows printing the same largest figure, one of them from a deeper passage: the consolidated statement's row
    and its copy in a summary (each the whole of the parts shown), not two parts alike."""
    return shown is not None and any(i not in shown for i in winners)


def _largest_alike(chosen: list[_Unit], readings: dict[int, Reading],
                   named: dict[int, frozenset[int]] | None = None, of_item: Collection[int] = (),
                   shown: Collection[int] | None = None, parts: set[int] | None = None) -> dict[int, int]:
    """Rows labelled alike ("Total current liabilities" of the consolidated balance sheet and of a condensed
    subsidiary's, a segment's or a per-share table): the one whose asked cell is the largest in magnitude among
    those whose asked period's column is known (never compared with another period's figure), as long as no row
    whose columns are not known prints a larger figure than its largest; when no row's asked cell is known, the
    one whose largest cell is the largest (the whole, not a part) -> how many rows are labelled like it (keyed
    by id() of the unit). Rows of percentages (the asked cell one, or any cell when no column is known; the
    percent changes beside a row's amounts are no figure of it) or of amounts per share are neither: a segment's rate is no part of
    the company's, and the larger rate is not the whole; a year's dividend per share is no whole of the dividends.
    Nor is the largest the whole asked when another row alike, or another row naming the asked item (`of_item`),
    names an asked term it does not (in its label or context, `named`: the question names the part, "the
    International segment's net sales", whose table is under that segment's heading). With `shown` (the units of
    the passages shown), only groups holding one of them are read (a deeper row may be their whole); `parts`
    gets the other rows of the groups whose whole is found."""
    groups: dict[str, list[tuple[Decimal | None, Decimal, int]]] = {}
    for u in chosen:
        reading = readings.get(id(u))
        if reading is None or reading.row.label is None or _PER_UNIT.search(reading.row.label.text) \
                or any("%" in reading.row.cells[i].text for i in reading.asked[:1]) \
                or (not reading.asked and any("%" in c.text for c in reading.row.cells)):
            continue  # a row of percentages (its asked cell one, or any cell when none is asked)
        values = [abs(v) for c in reading.row.cells if not c.empty and "%" not in c.text
                  and (v := number(c.text)) is not None]  # the amounts, not the changes printed beside them
        asked = [abs(v) for i in reading.asked[:1] if (v := number(reading.row.cells[i].text)) is not None]
        if values:
            groups.setdefault(_whole_key(reading.row.label.text), []).append(
                (asked[0] if asked else None, max(values), id(u)))
    rows_read = [id(u) for u in chosen if id(u) in of_item]
    out = {}
    for alike in groups.values():
        known = [(v, i) for v, _top, i in alike if v is not None]
        rows = known or [(top, i) for _v, top, i in alike]
        top = max(v for v, _ in rows)
        winners = [i for v, i in rows if v == top]
        if len(alike) < 2 or (len(winners) != 1 and not _deep_copies(winners, shown)) \
                or (shown is not None and not any(i in shown for *_, i in alike)):
            continue
        if named is not None and any(named.get(i, frozenset()) - named.get(winners[0], frozenset())
                                     for i in [*rows_read, *(i for *_, i in alike)]):
            continue  # the question names a part: the whole is not what it asks
        if not any((v if v is not None else t) < top for v, t, _i in alike):
            continue  # no part: the rows alike print the same figure (a statement's row and its copy elsewhere)
        if max(t for _v, t, i in alike if i in winners) >= max((t for v, t, _i in alike if v is None), default=0):
            out.update((w, len(alike)) for w in winners)
            if parts is not None:
                parts.update(i for v, t, i in alike if i not in winners and (v if v is not None else t) < top)
    return out


def _render(items: list[_Unit], max_chars: int, readings: dict[int, Reading] | None = None,
            lines: dict[int, str] | None = None) -> tuple[str, list[Claim], bool]:
    """The answer text and its claims: one line per claim (a table row's line from its reading, or one of `lines`),
    the longest prefix of the items that fits. A first claim longer than `max_chars` is cut at a word and marked
    "…" (the claim itself stays whole)."""
    readings, lines = readings or {}, lines or {}
    pieces: list[str] = []
    claims: list[Claim] = []
    length = 0
    for u in items:
        p = u.passage
        claim = make_claim(section_id=p.section_id, document_id=p.document_id, document_title=p.document_title,
                           section_text=p.text, page_map=p.page_map, page_start=p.page_start,
                           start=u.seg.start, end=u.seg.end)
        reading = readings.get(id(u))
        line = reading.line if reading is not None and reading.line else lines.get(id(u)) or collapse_ws(claim.text)
        sep = "\n" if pieces else ""
        piece = f"{sep}{line} [{claim.id}]"
        if length + len(piece) > max_chars:
            if not pieces:
                cite = f"… [{claim.id}]"
                room = max_chars - len(cite)
                cut = line[:room].rsplit(" ", 1)[0] if room > 0 else ""
                if cut:
                    return f"{cut}{cite}", [claim], True
            return "".join(pieces), claims, True
        pieces.append(piece)
        claims.append(claim)
        length += len(piece)
    return "".join(pieces), claims, False


def _grade(best: _Unit, chosen: list[_Unit], cited_status: set[str], best_cover: frozenset[int],
           approved_cover: frozenset[int], n_terms: int) -> Confidence:
    if "contested" in cited_status or len(best_cover) * 2 < n_terms:
        return "low"
    if len(approved_cover) < n_terms or cited_status - {"approved"}:
        return "medium"
    top = {}
    for u in chosen:
        if u.score >= best.score * AGREE_BAND:
            top.setdefault(u.passage.document_id, u)
    if best.figures:
        for u in top.values():
            if u.figures and not (u.figures & best.figures):
                return "medium"
    return "high"


def pool_depth(depth: int) -> int:
    """Passages whose units are candidates: POOL x `depth` (the answer or table a question needs is often ranked a
    little below the passages a reader is shown; deeper ones weigh less through their rank)."""
    return depth * POOL


def synthesize(store: Store, query: str, *, depth: int = 5, max_chars: int = 4000,
               document_ids: list[str] | None = None, statuses: Sequence[str] = ("approved",),
               max_claims: int = MAX_CLAIMS) -> Synthesis:
    from jsonl_engine.answer.pages import PageTexts, table_row_on_page
    from jsonl_engine.identity.statements import statement_pages
    from jsonl_engine.retrieval import answer_terms, retrieve

    found = retrieve(store, query, document_ids=document_ids, statuses=tuple(statuses), limit=pool_depth(depth))
    passages, warnings = _one_period(query, found.passages[:depth], found.period_documents, found.routed)
    pages = statement_pages(store, sorted({p.document_id for p in passages}))
    passages = _whole_statement(store, query, passages, pages)
    # deeper passages of the same documents give candidates too, after the shown ones (whose ranks stay)
    have, docs = {p.section_id for p in passages}, {p.document_id for p in passages}
    deep = [p for p in found.passages[depth:] if p.section_id not in have and p.document_id in docs]
    passages = passages + deep
    cards = store.cards(sorted({p.document_id for p in passages})) if passages else {}  # read once for the four below
    texts = PageTexts(store)  # the answer's pages, each read once for all its table rows
    out = compose(query, answer_terms(query), passages, max_chars=max_chars, first=found.period_documents,
                  max_claims=max_claims,
                  read_table=lambda p, seg: table_row_on_page(store, p, seg.start, seg.end, texts),
                  statement_pages=pages, deep={p.section_id for p in deep},
                  page_sections=lambda p, page, have: _page_sections(store, p, page, have),
                  ends=period_ends(query, cards), annual=annual_reports(cards), issuers=entities(cards),
                  plans=plan_documents(cards))
    out.warnings = warnings
    return out


def period_ends(query: str, cards: Mapping[str, Card]) -> frozenset[str]:
    """The end dates (ISO) of the period the question names, in the documents whose card is that period: the
    quarter's end in a quarterly report of the fiscal quarter named ("Q2 of FY2024": July 29, 2023), the year's
    end in an annual report of the fiscal year named (a fiscal year is not always its columns' calendar year)."""
    periods = parse_periods(query)
    if not periods.years or not cards:
        return frozenset()
    years = {int(y) for y in order.asked_years(query, [str(y) for y in periods.years])}  # not the document's year
    out = set()
    for card in cards.values():
        if card.period_end and card.fiscal_year in years and card.fiscal_quarter == periods.quarter:
            out.add(card.period_end)
    return frozenset(out)


def plan_documents(cards: Mapping[str, Card]) -> frozenset[str]:
    """The documents read whose kind is a plan of what will be done (PLAN_KINDS, by their `cards`)."""
    return frozenset(doc for doc, card in cards.items() if card.kind in PLAN_KINDS)


def entities(cards: Mapping[str, Card]) -> list[str]:
    """The entities (issuer, agency, sponsor) the `cards` of the documents read name."""
    return sorted({e for card in cards.values() for e in card.entities or ()})


def _issuer_keys(query: str, issuers: Collection[str]) -> frozenset[str]:
    """The keys of the question's words in capitals that are the initials of one of the documents' `issuers`
    ("OFA's" of "... Office of Farm Affairs", answer/wording.py): the issuer's name, not the item asked."""
    if not issuers:
        return frozenset()
    return frozenset(k for word in re.findall(r"\b[A-Z]{3,}\b", query) if wording.initials_of(word, list(issuers))
                     for k in keys(word))


def annual_reports(cards: Mapping[str, Card]) -> bool:
    """The documents read are all annual reports (10-K, 20-F, ...), by their `cards`."""
    from jsonl_engine.identity.kinds import ANNUAL_KINDS

    return bool(cards) and all(card.kind in ANNUAL_KINDS for card in cards.values())


def _whole_statement(store: Store, query: str, passages: list[Passage],
                     pages: dict[str, dict[int, str]]) -> list[Passage]:
    """`passages`, each followed by the other sections of the page of the statement the question names (or,
    when it names none and asks for an amount, of a statement holding the asked item) that it reaches (a page
    judged to be that statement, or the page of a section titled as it): a statement's title may be one section
    and its rows others, and the row asked must be among the units."""
    from jsonl_engine.identity.statements import head_kind

    tokens = tokenize(query)
    named, _ = cues.named_statement(tokens)
    wanted = frozenset([named]) if named else cues.wanted_statements(tokens) if asks_for_amount(query) else frozenset()
    if not wanted:
        return passages
    have = {p.section_id for p in passages}
    out: list[Passage] = []
    expanded = 0
    for p in passages:
        out.append(p)
        kinds = pages.get(p.document_id, {})
        titled = any(head_kind(t) in wanted for t in (p.title, *p.path))  # a section titled as the statement
        reach = [(p.document_id, n) for n in range(p.page_start, p.page_end + 1) if kinds.get(n) in wanted or titled]
        if not reach or expanded >= MAX_STATEMENT_PAGES:
            continue
        expanded += 1
        out.extend(_page_sections(store, p, reach[0][1], have))
    return out


def _page_sections(store: Store, like: Passage, page: int, have: set[str]) -> list[Passage]:
    """The sections of `like`'s document reaching `page` that are not in `have` (added to it), as passages with
    `like`'s score and status."""
    from jsonl_engine.retrieval.types import Passage as _Passage

    refs = [r for r in store.sections_on_pages([(like.document_id, page)], 0) if r.section_id not in have
            and r.page_start <= page <= r.page_end]
    texts = store.section_texts([r.section_id for r in refs])
    out = []
    for r in refs:
        if r.section_id in texts:
            text, page_map = texts[r.section_id]
            have.add(r.section_id)
            out.append(_Passage(section_id=r.section_id, document_id=r.document_id, document_title=like.document_title,
                                title=r.title, path=r.path, page_start=r.page_start, page_end=r.page_end,
                                score=like.score, text=text, snippet="", status=like.status, page_map=page_map))
    return out


def _one_period(query: str, passages: list[Passage], period_documents: list[str],
                routed: list[dict]) -> tuple[list[Passage], list[str]]:
    """A question about one period is answered from that period's documents (never another quarter's or year's
    figures); when none of them offered a passage, or no document of the named issuer covers the period, the
    answer says which documents it came from instead (a comparison of periods reads them all)."""
    periods = parse_periods(query)
    if periods.compares or not periods.named or not routed:
        return passages, []
    own = [p for p in passages if p.document_id in period_documents]
    if own:
        return own, []
    used = sorted({p.document_title for p in passages if any(r["document_id"] == p.document_id for r in routed)})
    if not used:
        return passages, []
    named = "no document covers the period the question names" if not period_documents else \
        "the documents covering the period the question names offered no passage"
    return passages, [f"other_period: {named}; answered from {'; '.join(used)}"]
