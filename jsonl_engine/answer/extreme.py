"""Superlative questions ("Which segment had the highest operating income in 2021?", "which one had the largest
notional value?"): the answer is the row of one table column holding the extreme value.

The rule is about how tables are printed: the rows compared are the rows of the leading claim's table (same page,
same column headers) with a value in its asked column; rows that sum or adjust the others ("Total ...",
"Consolidated ...", "Eliminations", "Corporate ...") are not members. The answer line is built from the winning
row's verbatim parts, the question's own superlative word first: "Highest of 4 (2021): Safety and Industrial:
2,xxx (Millions)" — it cites that row like any table claim, and `first_claim.why` says how many rows it beat.
The leading claim may be a line item naming the measure asked ("Notional value settled" for "the highest notional
value"): then a later member row whose table's lead-in names the measure (`Asked.measure`) leads the comparison.
A superlative is written in lower case inside a question: a capitalised one there is a name ("Best Meadow").
A question naming its candidates ("Among operations, investing, and financing activities, which ...") compares only
the rows naming them (a word starting like each candidate's first word), across the sections of the leading row's
page, and only when every candidate has its row.
A question asking in which quarter the superlative fell compares the leading row's quarters' cells (`pick_cell`):
"Highest of 4 quarters: Net sales, Fourth, 2016: $ 6,857". When no table compares, sibling bullets or sentences stating the same measure's change under their own headings
are compared (`stated`, `pick_stated`): "Worst of 3: Region B: • Net revenues of ... a decrease of 44%"; and when
nothing compares, a sentence saying the superlative of the asked measure in the question's words leads (`says`:
"... is our largest program" for "What is Acme's largest program?").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from jsonl_engine.answer.tables import TableRow, number

_ASK = re.compile(r"\b(highest|largest|biggest|greatest|most|best|strongest|lowest|smallest|least|worst|weakest)\b",
                  re.IGNORECASE)
_LOW = frozenset({"lowest", "smallest", "least", "worst", "weakest"})
_WHICH = re.compile(r"\b(?:which|what|who)\b", re.IGNORECASE)
_NOT_MEMBER = re.compile(r"^\W*(?:total|consolidated|eliminations?|intersegment|inter-segment|corporate|unallocated|"
                         r"reconciling|adjustments?)\b", re.IGNORECASE)
_MEASURE = re.compile(r"\s+((?:(?!(?:in|of|for|on|at|by|during|as|and|or|to|from|among|between)\b)[A-Za-z][\w&'-]*"
                      r"\s*){1,3})")
MIN_ROWS = 2


@dataclass(frozen=True, slots=True)
class Asked:
    word: str  # the question's superlative, as written ("highest", "worst")
    low: bool  # the smallest value wins
    measure: str = ""  # the words after it, up to the next small word ("notional value" in "highest notional value in")
    among: tuple[str, ...] = ()  # the candidates the question names ("Among operations, investing, and financing
    # activities, which ..."), each by its first word's stem (`_stem`): only rows naming one compare


def asked(query: str) -> Asked | None:
    """The superlative a "which ... highest ..." question asks for, if any."""
    m = next((m for m in _ASK.finditer(query) if m.group(1).islower() or not query[:m.start()].strip()), None)
    if m is None or not _WHICH.search(query):  # a capitalised word inside a sentence is a name ("Best Meadow")
        return None
    measure = _MEASURE.match(query, m.end())
    return Asked(m.group(1).lower(), m.group(1).lower() in _LOW, measure.group(1).strip() if measure else "",
                 _among(query))


_AMONG = re.compile(r"\bamong\s+(?:the\s+)?(?P<names>[^?]+?),?\s+(?:which|what|who)\b", re.IGNORECASE)
MAX_NAME_WORDS = 3  # words of one candidate named in a list ("financing activities")


def _among(query: str) -> tuple[str, ...]:
    """The stems of the candidates an "Among A, B and C, which ..." question names (two or more), else ()."""
    m = _AMONG.search(query)
    if m is None:
        return ()
    names = [n for n in re.split(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+", m.group("names")) if n.strip()]
    if len(names) < MIN_ROWS or any(len(n.split()) > MAX_NAME_WORDS or re.match(r"(?i)(?:all|each|every)\b", n)
                                    for n in names):
        return ()  # "among all of the derivative instruments that ...": a description, no list of candidates
    stems = tuple(dict.fromkeys(_stem(w[0]) for n in names if (w := re.findall(r"[A-Za-z]{3,}", n))))
    return stems if len(stems) >= MIN_ROWS else ()


def _stem(word: str) -> str:
    """What a label's word starts with when it names the candidate `word`: "operations" -> "operat" ("Operating
    activities"); "investing" stays whole (not "investments")."""
    word = word.lower()
    word = word[:-1] if word.endswith("s") and not word.endswith("ss") else word
    return word[:-3] if word.endswith("ion") and len(word) > 6 else word


def _names_candidate(ask: Asked, label: str) -> str | None:
    """The candidate of `ask.among` a row's label names (a word of it starts like the candidate's first word)."""
    words = [w.lower() for w in re.findall(r"[A-Za-z]{3,}", label)]
    return next((c for c in ask.among if any(w.startswith(c) for w in words)), None)


def _sole(values: Sequence[tuple[Decimal, int]], low: bool) -> int | None:
    """The index paired with the lowest (`low`) or highest of `values`; None when two share it."""
    best = min(v for v, _ in values) if low else max(v for v, _ in values)
    winners = [i for v, i in values if v == best]
    return winners[0] if len(winners) == 1 else None


def pick_cell(ask: Asked, row: TableRow, cells: Sequence[int], flat: Callable[[str], str]) -> Winner | None:
    """Of one row's `cells` (the columns of the periods compared: a year's quarters), the extreme value's cell;
    None when fewer than MIN_ROWS hold a number or two tie. The line names the row and the winning column: "Highest
    of 4 quarters: Net sales, Fourth, 2016: $ 6,857 (in millions)"."""
    values = [(v, i) for i in cells if (v := number(row.cells[i].text)) is not None]
    if len(values) < MIN_ROWS or row.label is None:
        return None
    won = _sole(values, ask.low)
    if won is None:
        return None
    cell = row.cells[won]
    unit = f" {flat(row.unit.text)}" if row.unit is not None and row.unit.text not in row.label.text else ""
    line = (f"{ask.word.capitalize()} of {len(values)} quarters: {flat(row.label.text).rstrip(' :')}, "
            f"{cell.column_text}: {flat(cell.text)}{unit}")
    why = f"the {ask.word} of its {len(values)} quarters' cells, in column {cell.column_text}"
    return Winner(-1, won, len(values), line, why)


MAX_BETWEEN = 2  # words between the superlative and its measure in a sentence saying it ("largest single program")


def says(ask: Asked, text: str) -> bool:
    """`text` says the asked superlative of the asked measure in the question's words ("... is our largest program"
    for "largest program"): the superlative, at most MAX_BETWEEN words, then the measure's first word (its plural
    too)."""
    words = ask.measure.split()
    if not words:
        return False
    head = re.escape(words[0].lower().rstrip("s"))
    return re.search(rf"\b{re.escape(ask.word)}\s+(?:[\w-]+\s+){{0,{MAX_BETWEEN}}}{head}s?\b", text,
                     re.IGNORECASE) is not None


@dataclass(frozen=True, slots=True)
class Winner:
    index: int  # of the row in the rows given
    cell: int  # the cell of the compared column
    members: int  # rows compared
    line: str  # the answer line (verbatim parts)
    why: str


def _key(row: TableRow) -> tuple[tuple[int, int], ...]:
    return tuple((h.start, h.end) for h in row.headers)


def pick(ask: Asked, lead: TableRow, cell: int, rows: Sequence[TableRow],
         flat: Callable[[str], str]) -> Winner | None:
    """Among `rows` (the lead's page or passage rows, read with their headers), the member of the lead's table whose
    value in the lead's column `cell` is the extreme one; None when fewer than MIN_ROWS rows compare or two tie."""
    column = lead.cells[cell].column_text
    if not lead.headers or not column:
        return None
    members: list[tuple[Decimal, int]] = []
    named: set[str] = set()
    for i, row in enumerate(rows):
        if _key(row) != _key(lead) or row.label is None or _NOT_MEMBER.match(row.label.text) \
                or len(row.cells) != len(lead.cells) or row.cells[cell].column_text != column or row.cells[cell].empty:
            continue
        candidate = _names_candidate(ask, row.label.text) if ask.among else None
        if ask.among and candidate is None:
            continue  # the question names what compares: only its candidates' rows
        value = number(row.cells[cell].text)
        if value is not None:
            members.append((value, i))
            named.add(candidate or "")
    if len(members) < MIN_ROWS or (ask.among and len(named) < len(ask.among)):
        return None  # every candidate named must have its row
    won = _sole(members, ask.low)
    if won is None:
        return None
    row = rows[won]
    assert row.label is not None
    unit = f" {flat(row.unit.text)}" if row.unit is not None and row.unit.text not in row.label.text else ""
    line = (f"{ask.word.capitalize()} of {len(members)} ({column}): {flat(row.label.text).rstrip(' :')}: "
            f"{flat(row.cells[cell].text)}{unit}")
    why = f"the {ask.word} of {len(members)} rows of its table in column {column}"
    return Winner(won, cell, len(members), line, why)


# Superlatives over sentences: sibling bullets or sentences state the same measure's change, one per member, each
# under its own heading ("Regional Operations" / "• Net revenues of $420 million in the current quarter compared to
# $400 million in the prior year quarter, an increase of 5%"). Siblings are written alike: the words before the
# stated change are the same once figures and their units are left out.
_STATED = re.compile(r"\b(?:an?\s+)?(increase|decrease|decline|drop|rise|growth|reduction)\s+of\s+(\d+(?:\.\d+)?)\s?"
                     r"(?:%|percent)|\b(increased|decreased|declined|dropped|grew|rose|fell)\s+(?:by\s+)?"
                     r"(\d+(?:\.\d+)?)\s?(?:%|percent)", re.IGNORECASE)
_DOWN = frozenset({"decrease", "decline", "drop", "reduction", "decreased", "declined", "dropped", "fell"})
_UNIT_WORDS = frozenset({"million", "millions", "billion", "billions", "thousand", "thousands", "percent"})
_SIGN_WORD = re.compile(r"[A-Za-z]+")
_QUARTER = re.compile(r"\bquarters?\b|\bthree months\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Stated:
    """A sentence or bullet stating a measure's change: its signed percentage and how it is written."""
    value: Decimal
    signature: tuple[str, ...]  # the words before the change, figures and units left out
    quarter: bool  # it is about a quarter ("in the current quarter")


def stated(text: str) -> Stated | None:
    """The change `text` states ("an increase of 27%", "decreased 44%"), if it states one."""
    m = _STATED.search(text)
    if m is None:
        return None
    word, num = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    value = Decimal(num) * (-1 if word.lower() in _DOWN else 1)
    words = tuple(w.lower() for w in _SIGN_WORD.findall(text[:m.start()]) if w.lower() not in _UNIT_WORDS)
    return Stated(value, words, bool(_QUARTER.search(text[:m.start()])))


@dataclass(frozen=True, slots=True)
class Sibling:
    key: object  # the caller's handle on the unit
    name: str  # the heading it is under, verbatim
    text: str  # the unit's text, verbatim
    stated: Stated


def pick_stated(ask: Asked, lead: Stated, candidates: Sequence[Sibling], quarter: bool) -> tuple[Sibling, str, str] | None:
    """Among `candidates`, the siblings written like `lead` (or, when the question names no quarter and `lead` is
    about one, like another group of the same measure about a longer period), the one whose stated change is the
    extreme one: (it, the answer line, why); None when fewer than MIN_ROWS compare, two tie, or names repeat."""
    groups: dict[tuple[str, ...], list[Sibling]] = {}
    for c in candidates:
        groups.setdefault(c.stated.signature, []).append(c)
    measure = lead.signature[:2]
    usable = [g for sig, g in groups.items() if sig[:2] == measure and len({s.name for s in g}) == len(g) >= MIN_ROWS]
    if not usable:
        return None
    chosen = next((g for g in usable if g[0].stated.quarter == quarter), None) or \
        next((g for g in usable if g[0].stated.signature == lead.signature), usable[0])
    values = [s.stated.value for s in chosen]
    best = min(values) if ask.low else max(values)
    winners = [s for s in chosen if s.stated.value == best]
    if len(winners) != 1:
        return None
    w = winners[0]
    line = f"{ask.word.capitalize()} of {len(chosen)}: {w.name.rstrip(' :')}: {w.text}"
    why = (f"the {ask.word} of {len(chosen)} changes stated alike under their headings ("
           + ", ".join(f"{s.name.rstrip(' :')} {s.stated.value}%" for s in chosen) + ")")
    return w, line, why
