"""Claim order: the claim that answers the question comes first, by how directly each unit answers it.

Each chosen unit keeps its synthesis score (coverage, proximity, figures, rank) and gains or loses for what makes
an answer direct, judged from how the text is written, never from what it is about:
  +0.30 the question asks for an amount and the unit holds a figure      (-0.30 when it holds none)
  +0.30 (a question asking for a figure) a table row whose column for the asked period (a year the question
        names, a date it names, the end of
        the asked fiscal period in the document read; with a quarter named, a quarter's column: "Three Months
        Ended ...", with a half year, "Six Months Ended ...") holds a value, or a row
        whose label is the asked year ("2024 1,097 862")
        (-0.15 when the row's columns are known and none is the asked period); a question asking how something
        changed also takes the change column the table prints and the periods it compares ("2022 2021 Change");
        a question naming no shorter span takes, of a table printing each column's span, the whole year's
        columns ("Twelve Months Ended ..." beside "Three Months Ended ..."); the first nine months asked
        ("nine months ended", "39 weeks") the year-to-date column; a lone group line ending in a month and day
        dates the years under it ("Three Months Ended April 30," over
        "2023 2022": the 2023 column ends April 30, 2023); a year naming the document to read ("... in 2022, per
        its 2020 annual report") is not the asked period, unless the question names no other
  -0.15 a row of another kind of figure than the one asked: a count ("Total number of shares repurchased") when
        money is asked ("How much cash did ... spend", "What did ... pay"), amounts printed with "$" when a count
        is ("How many stores ...")
  +0.15 a sentence that names the asked period and holds a figure (and its span, "quarterly", when a quarter
        is asked; not when it names a later year too, unless it gives each year's figure, "respectively"; nor
        when it states a plan and the question asks what was)
  -0.15 a sentence holding a figure that names years, none of them asked ("In fiscal 2017, net sales were ...",
        "FY17", "the year ended December 31, 2017" for 2018; the year of the asked period's end in the document,
        or a date in January or February, "the year ended February 2, 2019", for fiscal 2018, is asked): its
        figure is another period's ("2018 compared with 2017" names the asked year, and is not; nor is a sentence
        naming one year after a comparison's word, "up 4% from fiscal 2017": its own period goes unsaid); so is a
        sentence naming quarters, none the asked one ("the second quarter of 2018" for the third)
  +0.40 x the share of the question's content terms found in a row's label (the row is about the asked item;
        a term found through a phrase it stands for, "capex" as "purchases of property ...", counts half;
        a term only the heading of the row's section names, "International" of "Net sales" under "Acme
        International Segment", counts half, and so does one only the line titling its rows names ("Investing
        activities:" over "Property additions": a member of the group, whose total names it in its own words),
        unless its own label is only "Total"; terms of the document's title, its issuer's name, the words naming
        the statement to read ("balance sheet") and the period's words ("year end") do not count; a row labelled
        by its period, "2024 1,097 862", is judged by its table's lead-in, "The benefit payments to retirees are
        expected to be ...")
  +0.20 a unit on a page of the statement the question names ("... shown in the cash flow statement"), or
  +0.10 on a page of the statement that holds the asked item when none is named (capex: the cash flow
        statement; identity/statements.py judged the pages, retrieval/cues.py says which statement)
  +0.15 a row whose label names the asked line item: it starts (after "Total") with the question's words for it
        ("Total current liabilities") or with a label statements print for it ("Net earnings" for net income,
        "Purchases of property, plant and equipment" for capex: retrieval/query.py LINE_ITEMS), or a sentence
        holding a figure that opens with the asked item (its subject: "Total workforce level at ... was ...")
  +0.25 of rows labelled alike naming the asked item, the largest in magnitude (its asked cell, else its
        largest cell): the whole (the consolidated statement's total), not a part (a subsidiary's, a segment's,
        a per-share figure; nor rows of percentages), unless another row alike, or another row naming the asked
        item, names an asked term the largest does not (in its label or context: the question names the part,
        "the International segment's net sales")
  -0.15 of those rows labelled alike, the others (the parts: a segment's "Net sales" beside the consolidated
        "Total net sales", "Total" and "Consolidated" opening a label read as saying it is the whole), when
        the largest is the whole: a question naming no part asks for the company's figure
  -0.03 per word of a row's label that the question does not have (at most 5): the closest label first
  +0.30 x the share of the question's content terms found in the label of a labelled statement ("Probable cause:
        ...", "Primary endpoint: ...", "2. Age: >= 18 years", a form's field "Lowest Ceiling: Overcast / 200 ft"
        before an empty one; not a table row: "Market price of common stock: High ..." heads its cells),
        read as a row's label (-0.03 per other word of it): a paragraph's run-in heading naming another item
        ("In-Process Research and Development (IPR&D): ..." for research and development) leads no more than a row
  +0.30 a unit stating a percentage when the question asks a share ("what share of total assets ...") or a rate
        ("the churn rate": a row of percentages over the row of counts labelled alike)
  +0.25 a unit printing a figure in the unit the question asks ("how many hours": "119 hours"; "how long": "8500 ft";
        "how many trials": "24 trials"; a table row whose label, group line, header or lead-in names it;
        answer/units.py), which synthesis also scores higher (synthesize.W_IN_UNIT) so that it is a candidate
  +0.15 a sentence with a figure within 3 words of a question's term ("$13.2 billion in cash proceeds"), +0.10 more
        of the item a "What is the ... of ...?" question asks ("What are the assets of the plans ...?": "these plans
        hold estimated assets of $12.9 trillion"; answer/wording.py); the numbers the question writes ("the Kestrel
        152"), a name's ("ZX-401") and a part's ("2.3.2.") are no figure (answer/units.py)
  -0.10 a sentence of more than 45 words (the answer is in it, with much else)
  -0.15 a sentence stating a plan, an authorization or an expectation ("we announced our plan to repurchase up to
        $2.5 billion ...", "we expect to close ..."), when the question asks for a figure, or how something
        changed, and not what is planned ("will" of an instrument's terms is none: "the Notes will be exchangeable
        at ...", "will mature on ...", "will expire in ...")
  -0.15 a sentence whose first count is of a part of a whole ("approximately 1,100 employees in North America were
        covered by ...", "1,100 of our employees are ...", "57,000 employees, which constitute 35% of our total
        workforce, ..."; not "86,200 employees, respectively, of which 10,100 ...") whose words the question does
        not have, when it asks for a figure and not a share (`part_words`)
  -0.15 a row counting things ("Total number of shares repurchased") when the question asks how much, not how
        many ("How much cash did Acme spend repurchasing its shares?"): its figure is a count, not the amount
  -0.15 a note opening with a footnote mark ("(1) Total revenues of the segment include ..."): it qualifies a
        table's figures
  -0.15 a unit of a passage below the depth shown (synthesize.POOL): it leads only when clearly more direct
A row with no column for the asked period never leads over a unit stating it (the most direct such unit leads).
A superlative question ("which ... the largest ...") then leads with the row of the extreme value (or, asking
in which quarter, the row's quarter of the extreme value), the sibling bullet stating the extreme change, or a
sentence saying the superlative in the question's words (answer/extreme.py). A question asking which quarter
("In which quarter of 2016 ...") asks every quarter's column of a table of the year's quarters. Units of the documents covering the named period stay ahead of the others (as in compose).
Ties break by the
retrieval rank, then the position in the passage: the order is deterministic, and the reasons of the first unit
are reported (`_meta.first_claim`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TypeVar

from jsonl_engine.answer.tables import COUNT_WORD, VERSUS, TableRow, quarter_of, year_of
from jsonl_engine.identity.dates import DATE, MONTH, YEAR, parse_date

T = TypeVar("T")
W_FIGURE, W_PERIOD_CELL, W_NO_PERIOD_CELL, W_PERIOD_SENTENCE, W_LABEL, W_LABELLED = 0.30, 0.30, 0.15, 0.15, 0.40, 0.30
W_NEAR, W_LONG, LONG_WORDS, NEAR_TOKENS = 0.15, 0.10, 45, 3
W_NEAR_ITEM = 0.10  # the figure next to the item a "What is the ... of ...?" question asks (answer/wording.py)
W_NAMED_STATEMENT, W_STATEMENT, W_ITEM, W_WHOLE = 0.20, 0.10, 0.15, 0.25
W_OTHER_PERIOD = 0.15  # a sentence holding a figure naming only other years than the asked ones
W_PLANNED = 0.15  # a sentence stating a plan or an expectation, when the question asks what was
W_SHARE = 0.30  # a unit stating a percentage, when the question asks what share of something
W_NOTE = 0.15  # a note under a table ("(1) Revenues include ..."): it qualifies the table's figures, not the answer
W_KIND = 0.15  # a row of counts when money is asked ("Number of shares repurchased"), of money when a count is
W_PART = 0.15  # a row alike smaller than the whole of its group (a segment's "Net sales" beside "Total net sales")
W_DEEP = 0.15  # a unit of a passage below the depth shown (synthesize.POOL): it leads only when clearly more direct
W_COUNTED = 0.15  # a sentence only counting things ("1.7 million calls") when the question asks an amount of money
W_FRAMED = 0.10  # and after the word framing it in the question ("After how many interviews": "after 15 interviews")
W_IN_UNIT = 0.25  # a figure in the unit the question asks ("how many hours": "119 hours"; answer/units.py)
W_EXTRA, MAX_EXTRA = 0.03, 5  # per word of a row's label the question does not have (the closest label first)
_LABELLED = re.compile(r"^(?:\d{1,2}[.)]\s+)?([A-Z][^:.;!?\n]{1,60}?):\s+[A-Z0-9$\"“(≥≤<>~]")  # the value starts like one: "Probable cause: The ..."
MAX_LABEL_WORDS = 6
# a form's field without a value ending a line: its label's capitalised words (and a parenthesis), then the colon
_EMPTY_FIELD = re.compile(r"(?:^|\s)(?:[A-Z][\w/&'’-]*|\([^)]*\))(?:\s+(?:[A-Z][\w/&'’-]*|\([^)]*\)|of|and|or|the|"
                          r"from|to|for|in|at))*\s*:\s*$")
_STATEMENT_NAME = {"income": "income statement", "balance": "balance sheet", "cash_flow": "cash flow statement"}


@dataclass(frozen=True, slots=True)
class Ask:
    """What the question asks for, as far as ordering needs it."""
    figure: bool
    years: tuple[str, ...]
    quarter: bool = False  # the question names a quarter: a year's column is not its period
    statements: frozenset[str] = frozenset()  # the statements holding the asked item (identity/statements.py)
    named: bool = False  # the question names that statement as its source
    change: bool = False  # the question asks how something changed: a table's change column is part of the answer
    ends: tuple[str, ...] = ()  # end dates (ISO) of the asked period in the documents read: a column dated so is it
    half: bool = False  # the question names a half year ("first half", "six months ended ..."), not a quarter
    dated: tuple[str, ...] = ()  # years of the dates it names ("... ended June 30, 2023"): their columns are asked
    annual: bool = False  # the documents read are annual reports: a column not saying its span is a year's
    share: bool = False  # the question asks for a share ("what percentage of ...", "what share of ...")
    which: int | None = None  # the quarter asked (3 for "the third quarter"): of a table of a year's quarters, its column
    quarters: bool = False  # the question asks which quarter ("In which quarter of 2016 ..."): every quarter's column
    forward: bool = False  # the question asks what is planned or expected ("What is Acme forecasting ...?")
    nine: bool = False  # the question names the first nine months of a year ("nine months ended ...", "39 weeks")
    kind: str | None = None  # "money" ("How much cash did ... spend"), "count" ("How many stores ..."), else None
    ranges: tuple[tuple[str, str], ...] = ()  # spans of years it names ("over 2026-2030"): ("2026", "2030")
    full: bool = False  # the question asks for a whole year ("full-year 2023 ..."): a shorter span's column is not it


@dataclass(frozen=True, slots=True)
class Judged:
    directness: float
    reasons: tuple[str, ...]
    asked_cells: tuple[int, ...] = ()  # indexes of the row's cells in the asked period's column(s)
    names_item: bool = False  # a row whose label names the asked line item
    period: int = 0  # 1: states the asked period (a row's column or label, a sentence with a figure naming it);
    # -1: a row whose columns are known and none is the asked period; 0: neither
    deep: bool = False  # from a passage below the depth shown


_NOTE = re.compile(r"^\s*(?:\((?:\d{1,2}|[a-z])\)|[*†‡])\s*[A-Z]")  # "(1) Total revenues of ...", "(a) Includes ..."


# a sentence sending the reader elsewhere, after a footnote's mark if any: "1 Please refer to the Glossary for ...",
# "See Note 7 for ...", "Refer to Item 7": a pointer to where the figures are, not a statement of one
_POINTER = re.compile(r"^\s*(?:\d{1,2}\s+|\(\w{1,2}\)\s*|[*†‡]\s*)?(?:please\s+)?(?:refer\s+to|see)\b",
                      re.IGNORECASE)


def points_elsewhere(body: str) -> bool:
    """A sentence opening by sending the reader elsewhere ("1 Please refer to the Glossary ...", "See Note 7 ..."):
    it qualifies figures given elsewhere, as a note under a table does."""
    return bool(_POINTER.match(body))


def is_note(body: str) -> bool:
    """A unit opening with a footnote mark: a note qualifying a table's figures ("(1) Revenues include ...")."""
    return bool(_NOTE.match(body))


def label_of(body: str) -> str | None:
    """The label of a labelled statement ("Probable cause: The pilot's ..." -> "Probable cause"), if any. A form
    prints two labelled fields on one line, the second one's value sometimes empty: "Lowest Ceiling: Overcast / 200
    ft agl Visibility (RVR):" is labelled, "Pilot: Last Flight Review:" is two labels and no value."""
    m = _LABELLED.match(body)
    if m is None or len(m.group(1).split()) > MAX_LABEL_WORDS:
        return None
    if body.rstrip().endswith(":") and not re.search(r"\w", _EMPTY_FIELD.sub("", body[m.end(1) + 1:])):
        return None  # "Pilot: Last Flight Review:": a form's labels, no value
    return m.group(1)


# a quarter's span: three months, or 12, 13 or 16 weeks (a retailer's quarters of 12 weeks, its last of 16 or 17)
_QUARTER_WEEKS = r"(?:12|twelve|13|thirteen|16|sixteen|17|seventeen)\s+weeks"
_HALF_WEEKS = r"(?:24|twenty[-\s]four|26|twenty[-\s]six|28|twenty[-\s]eight)\s+weeks"  # two quarters of weeks
_NINE_WEEKS = r"(?:36|thirty[-\s]six|39|thirty[-\s]nine|40|forty)\s+weeks"  # three quarters of weeks
_QUARTER_COLUMN = re.compile(rf"\b(?:three|3)\s+months\b|\bquarter|\bq[1-4]\b|(?<![\w-]){_QUARTER_WEEKS}\b",
                             re.IGNORECASE)
_HALF_COLUMN = re.compile(rf"\b(?:six|6)\s+months\b|\b{_HALF_WEEKS}\b|\bhalf\b|\bh[12]\b", re.IGNORECASE)
_NINE_COLUMN = re.compile(rf"\b(?:nine|9)[-\s]months?\b|\b{_NINE_WEEKS}\b|\bthree\s+quarters\b", re.IGNORECASE)
# words naming how long a column's period is: its span ("Three Months Ended", "For the Years Ended", "Q2", "First Half")
_SPAN = re.compile(rf"\b{COUNT_WORD}\s+(?:months|weeks)\b"
                   r"|\bquarters?\b|\bq[1-4]\b|\bh[12]\b|\bhalf\b|\byears?\s+ended\b|\bfiscal\s+years?\b"
                   r"|\byear[- ]to[- ]date\b", re.IGNORECASE)
_RESPECTIVELY = re.compile(r"\brespectively\b", re.IGNORECASE)
_YEAR_IN_TEXT = re.compile(r"(?<![\d,.$])(?:19|20)\d\d(?![\d,%])")
YEAR_NAMED = re.compile(r"(?<![\d,.$])(?:19|20)\d\d(?!\d|%|,\d)")  # "In fiscal 2017, net sales ..." (not "2,017")
_FISCAL_IN_TEXT = re.compile(r"\bFY\s?'?(\d\d)\b|\bfiscal\s+(?:year\s+)?'(\d\d)\b", re.IGNORECASE)  # "FY17", "fiscal '17"
_HALF_ASKED = re.compile(rf"\b(?:six|6)\s+months\b|\b{_HALF_WEEKS}\b|\b(?:first|second)\s+half\b|\bh[12]\b",
                         re.IGNORECASE)
_QUARTER_ASKED = re.compile(rf"\b(?:three|3)\s+months\b|(?<![\w-]){_QUARTER_WEEKS}\b|\bq[1-4]\b|\b[1-4]q\b"
                            r"|\b(?:first|second|third|fourth|1st|2nd|3rd|4th)\s+(?:fiscal\s+)?quarter\b", re.IGNORECASE)
_NINE_ASKED = re.compile(rf"\b(?:nine|9)[-\s]months?\b|\b{_NINE_WEEKS}\b|\b(?:first\s+)?three\s+quarters\b",
                         re.IGNORECASE)


# a year naming the document to read, not the period asked: "per its 2020 annual report", "in the 2019 10-K",
# "according to its annual report for fiscal 2019"
_DOCUMENT_YEAR = re.compile(r"\b((?:19|20)\d\d)\s+(?:annual\s+report|(?:form\s+)?10-?[KQ]|proxy(?:\s+statement)?)\b"
                            r"|\b(?:annual\s+report|10-?[KQ]|filing)\s+for\s+(?:the\s+)?(?:fiscal\s+)?(?:year\s+)?"
                            r"((?:19|20)\d\d)\b", re.IGNORECASE)


def asked_years(query: str, years: Sequence[str]) -> tuple[str, ...]:
    """The `years` a question names as the period it asks about: not a year naming only the document to read ("How
    much does Acme expect to pay in 2022, per its 2020 annual report?" asks about 2022), unless no other is named."""
    documents = {m.group(1) or m.group(2) for m in _DOCUMENT_YEAR.finditer(query)}
    if not documents:
        return tuple(years)
    rest = [y for y in years if y not in documents or len(re.findall(rf"\b{y}\b", query)) > 1]
    return tuple(rest) if rest else tuple(years)


_WHICH_QUARTER = re.compile(r"\b(?:which|what)\s+(?:fiscal\s+)?quarter\b", re.IGNORECASE)


def asks_which_quarter(query: str) -> bool:
    """The question asks which quarter of a period something happened in ("In which quarter of 2016 did ... record
    its highest net sales?"): the answer is among the columns of a year's quarters."""
    return bool(_WHICH_QUARTER.search(query))


def asks_span(query: str) -> tuple[bool, bool]:
    """(a quarter, a half year) the question asks for: "Q2", "second quarter", "three months ended ..."; "first
    half", "six months ended ..." (a half is no quarter, though the quarter closing it names the same report);
    both when it names both."""
    return bool(_QUARTER_ASKED.search(query)), bool(_HALF_ASKED.search(query))


# a whole year asked in so many words: "full-year 2023 EPS", "for the full year", "the entire fiscal year"
_FULL_YEAR = re.compile(r"\b(?:full|whole|entire)[-\s]+(?:fiscal[-\s]+)?year\b", re.IGNORECASE)


def asks_full_year(query: str) -> bool:
    """The question asks for a whole year's figure in so many words ("What full-year 2023 core EPS did Acme's
    guidance point to when it reported the second quarter?"): a quarter it names says when the figure was
    reported, not its span."""
    return bool(_FULL_YEAR.search(query))


def asks_nine(query: str) -> bool:
    """The question asks for the first nine months of a year ("the first nine months of 2022", "39 weeks ended
    ...", "the first three quarters"): a third quarter's year-to-date column, neither a quarter's nor a half's."""
    return bool(_NINE_ASKED.search(query))


def _span(table: TableRow, i: int) -> str | None:
    """What names how long the period of cell `i`'s column is: its column ("Three Months Ended July 29, 2023"),
    else a header line of its table ("For the Six Months Ended June 30,"); None when nothing says."""
    column = table.cells[i].column_text
    if _SPAN.search(column):
        return column
    return next((h.text for h in table.headers if _SPAN.search(h.text)), None)


def _later_year(ask: Ask, body: str) -> bool:
    """A sentence naming a year after every asked one ("... to $0.605 per share effective in 2023" for 2022): its
    figure may be that later period's; not a sentence giving each year's figure ("In 2023, 2022 and 2021, we
    paid $723 million, $732 million and $742 million, respectively")."""
    latest = max(int(y) for y in ask.years)
    return not _RESPECTIVELY.search(body) and any(int(m.group(0)) > latest for m in _YEAR_IN_TEXT.finditer(body))


def years_named(body: str) -> set[str]:
    """The years a sentence names: "2017", "December 31, 2017", and fiscal short forms ("FY17", "fiscal '17"); a
    date in January or February also names the year before (a retailer's fiscal 2018 ends "February 2, 2019")."""
    out = {m.group(0) for m in YEAR_NAMED.finditer(body)}
    out |= {str(when.year - 1) for m in DATE.finditer(body)
            if (when := parse_date(m.group(0))) is not None and when.month <= 2}
    return out | {"20" + (m.group(1) or m.group(2)) for m in _FISCAL_IN_TEXT.finditer(body)}


# a comparison's base: "up 4% from $5.0 billion in fiscal 2017", "compared with 2017" (the sentence's own period unsaid)
_COMPARED = re.compile(r"\b(?:from|compared|versus|vs\.?|over|than|prior|previous)\b", re.IGNORECASE)


_QUARTER_NAMED = re.compile(r"\b(first|second|third|fourth|1st|2nd|3rd|4th)\s+(?:fiscal\s+)?quarter\b|\bQ([1-4])\b",
                            re.IGNORECASE)
_ORDINAL = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}


def _other_quarter(ask: Ask, body: str) -> bool:
    """A sentence naming quarters, none of them the asked one ("the second quarter of 2018" for the third)."""
    named = {_ORDINAL[m.group(1).lower()] if m.group(1) else int(m.group(2)) for m in _QUARTER_NAMED.finditer(body)}
    return ask.which is not None and bool(named) and ask.which not in named


def _other_period(ask: Ask, body: str) -> bool:
    """A sentence naming years, none of them asked: a year the question names (or a date's), or the year the asked
    period ends in the documents read ("fiscal 2018" ending "February 2, 2019"); not one naming a single year after
    a comparison's word ("net sales rose 4% from fiscal 2017"): its own period, unsaid, may be the asked one."""
    named = years_named(body)
    asked = {*ask.years, *ask.dated, *(e[:4] for e in ask.ends)}
    if not named or named & asked:
        return False
    first = min((m.start() for m in YEAR_NAMED.finditer(body)), default=len(body))
    first = min([first] + [m.start() for m in _FISCAL_IN_TEXT.finditer(body)])
    return len(named) > 1 or not _COMPARED.search(body, 0, first)


def _span_named(ask: Ask, body: str) -> bool:
    """A sentence names the asked span, if one is: "quarter", "quarterly", "three months" for a quarter asked."""
    return not (ask.quarter or ask.half or ask.nine) or bool(ask.quarter and _QUARTER_COLUMN.search(body)) \
        or bool(ask.half and _HALF_COLUMN.search(body)) or bool(ask.nine and _NINE_COLUMN.search(body))


def _row_quarter(table: TableRow) -> int | None:
    """The quarter a row's label is, whole ("Fourth quarter", "Q4"): a row of a table of a year's quarters by row."""
    return quarter_of(table.label.text) if table.label is not None else None


def _span_fits(table: TableRow, i: int, quarter: bool, half: bool, annual: bool = False, nine: bool = False) -> bool:
    """Cell `i`'s column is of the asked span (a quarter's, a half year's), or nothing says how long it is
    outside an annual report."""
    if not quarter and not half and not nine:
        return True
    if any(quarter_of(p.text) for p in table.cells[i].column) or _row_quarter(table):
        return quarter  # a column of a table of a year's quarters ("Third Quarter"), or a row of one
    span = _span(table, i)
    if span is None:
        return not annual
    return bool(quarter and _QUARTER_COLUMN.search(span)) or bool(half and _HALF_COLUMN.search(span)) \
        or bool(nine and _NINE_COLUMN.search(span))


# a sentence stating a plan, an authorization or an expectation ("we announced our plan to repurchase up to $2.5
# billion", "we expect to close 20 to 30 stores"): its figure is not what was spent, earned or held
# "will" of an instrument's terms states no plan: "The Notes will be exchangeable at ...", "will mature on ...",
# "will bear interest at ..." (what the contract is, not what someone means to do)
_TERMS_WILL = r"(?:mature|bear|accrue|expire|vest|be\s+(?:exchangeable|convertible|redeemable|payable|due))\b"
_PLANNED = re.compile(r"\b(?:expects?|expecting|anticipates?|anticipating|plans?\s+to|intends?\s+to|"
                      rf"will\s+(?!{_TERMS_WILL})\w+|up\s+to|(?:repurchase|buyback)\s+program|(?:board|directors)\s+(?:\w+\s+){0,2}"
                      r"(?:approved|authorized))\b", re.IGNORECASE)
_FORWARD_ASKED = re.compile(r"\b(?:expect\w*|forecast\w*|plan\w*|outlook|guidance|anticipat\w*|project\w*|"
                            r"target\w*|will|intend\w*|authoriz\w*|program)\b", re.IGNORECASE)


_MONEY_ASKED = re.compile(r"\bhow\s+much\b|\b(?:spend|spent|spending|pay|paid|cost)\b|\$"
                          r"|\b(?:dollars?|usd)\b", re.IGNORECASE)
_COUNT_ASKED = re.compile(r"\bhow\s+many\b(?!\s+(?:dollars|usd|\$))", re.IGNORECASE)
_COUNT_LABEL = re.compile(r"^(?:total\s+|aggregate\s+)?number\s+of\b", re.IGNORECASE)  # "Total number of shares repurchased"


def asks_kind(query: str) -> str | None:
    """The kind of figure a question asks for: "count" ("How many branches ..."), "money" ("How much cash did Acme
    spend ...", "How much did Acme return ...", "What did Acme pay ..."), else None (a rate, a share, or not said)."""
    if _COUNT_ASKED.search(query):
        return "count"
    return "money" if _MONEY_ASKED.search(query) else None


def _other_kind(ask: Ask, table: TableRow) -> bool:
    """A row of another kind of figure than the asked one: a count ("Number of shares repurchased") when money is
    asked, an amount of money (cells printed with "$") when a count is."""
    if ask.kind == "money":
        return table.label is not None and bool(_COUNT_LABEL.match(table.label.text.strip()))
    if ask.kind == "count":
        return any("$" in c.text for c in table.cells)
    return False


def asks_forward(query: str) -> bool:
    """The question asks what is planned, expected or authorized ("What production rate changes is Acme forecasting
    for FY2023?"), not what was."""
    return bool(_FORWARD_ASKED.search(query))


_CHANGE_ASKED = re.compile(r"\b(?:chang|increas|decreas|grow|drop|declin|differ|improv|deteriorat|rise|rose|fell|fall)"
                           r"\w*", re.IGNORECASE)
_CHANGE_COLUMN = re.compile(r"^(?:%\s*|percent(?:age)?\s+)?(?:change|increase|decrease|variance|inc\.?|dec\.?)\b"
                            r"|\bchange\b|\bincrease\s*/?\s*\(?decrease\)?"
                            rf"|\S{VERSUS.pattern}\S", re.IGNORECASE)  # "2022 vs. 2021": tables.VERSUS


_SHARE_ASKED = re.compile(r"\b(?:what|which)\s+(?:share(?!\s+(?:price|prices|count|repurchases?|buybacks?)\b)|"
                          r"percentage|proportion|portion|fraction|percent)\b"
                          r"|\b(?:share|percentage|proportion|portion|fraction)\s+of\b|\bas\s+an?\s+(?:%|percent(?:age)?)"
                          r"\s+of\b|\bwhat\s+%", re.IGNORECASE)
_PERCENT_FIGURE = re.compile(r"\d\s?%|\d\s+percent\b", re.IGNORECASE)


_RATE_ASKED = re.compile(r"(?<!exchange )\brates?\b", re.IGNORECASE)  # "the churn rate" (an exchange rate is no %)


def asks_share(query: str) -> bool:
    """The question asks for a share of something ("What share of total assets did cash make up?") or a rate ("the
    churn rate", "the effective tax rate"): its answer is a percentage."""
    return bool(_SHARE_ASKED.search(query) or _RATE_ASKED.search(query))


def asks_change(query: str) -> bool:
    """The question asks how something changed ("How much did X change ...", "Was there any drop in ...")."""
    return bool(_CHANGE_ASKED.search(query))


def asked_cells(table: TableRow, years: Sequence[str], quarter: bool = False, change: bool = False,
                ends: Collection[str] = (), half: bool = False, annual: bool = False,
                dated: Sequence[str] = (), which: int | None = None, quarters: bool = False,
                nine: bool = False, full: bool = False) -> tuple[int, ...]:
    """Cells of `table` whose column names one of `years`, or a date of `ends` (the asked fiscal period's end in
    the document: "Q2 of FY2024" is "Three Months Ended July 29, 2023" in that quarter's report; a date the
    question names), or the year of a date it names (`dated`) when no column is dated so, of the asked
    span (a quarter's column when one is asked, a half year's, "Six Months Ended", when one is; the column's words
    or its table's header line say; a table saying nothing is taken at its word, but in `annual` reports it is a
    year's), and hold a value; with
    `change`, and the cells of a change column the table prints ("Change", "% Increase (Decrease)") with the
    periods it compares (the columns before it, after the previous change column). Of a table of a year's
    quarters ("First Quarter ... Fourth Quarter", answer/tables.py), a quarter asked is its column (`which`), a
    year asked its "Year" column, never a quarter's, and a question asking which quarter (`quarters`) every
    quarter's column of the asked year; a whole year asked (`full`) is never a column saying a shorter span."""
    if not years and not ends and not dated:
        return ()
    day = _group_day(table) if ends else None
    exact = any(_dated(_column_date(c.column_text, day), ends) for c in table.cells if c.column)
    wanted = tuple(years) + (() if exact else tuple(dated))
    cells = tuple(i for i, c in enumerate(table.cells)
                  if not c.empty and c.column and (any(_names_period(p.text, wanted, ends) for p in c.column)
                                                   or _dated(_column_date(c.column_text, day), ends))
                  and _span_fits(table, i, quarter, half, annual, nine))
    of_quarter = {i: n for i, c in enumerate(table.cells) for p in c.column if (n := quarter_of(p.text))}
    if not of_quarter and (by_row := _row_quarter(table)) is not None:
        # a table of quarters by row ("Fourth quarter 30.62 25.25 24.41 18.19" under "2016 2015" / "High Low High
        # Low"): the row's quarter is each of its cells'
        of_quarter = dict.fromkeys(range(len(table.cells)), by_row)
    if of_quarter:
        cells = tuple(i for i in cells if of_quarter.get(i) == which) if quarter and which else \
            tuple(i for i in cells if i in of_quarter) if quarters else tuple(i for i in cells if i not in of_quarter)
    if not (quarter or half or nine or quarters):
        cells = _whole_year(table, cells)
    if full:
        cells = _not_shorter(table, cells)
    if not cells or not change:
        return cells
    changes = [i for i, c in enumerate(table.cells)
               if not c.empty and c.column and not year_of(c.column_text) and _CHANGE_COLUMN.search(c.column_text)]
    compared = {j for n, i in enumerate(changes) if any((changes[n - 1] if n else -1) < k < i for k in cells)
                for j in range((changes[n - 1] if n else -1) + 1, i + 1) if not table.cells[j].empty}
    return tuple(sorted(set(cells) | compared))


# a header line of one group ending in a month and day, its years on the column line below ("Three Months Ended
# April 30," over "2023 2022"): each year's column ends on that day
_GROUP_DAY = re.compile(rf"\bended\s+({MONTH}\s+\d{{1,2}}),?\s*$", re.IGNORECASE)


def _group_day(table: TableRow) -> str | None:
    """The month and day a lone group line over the column line ends its period on ("Three Months Ended April 30,"
    -> "April 30"), when exactly one header line says so and names no year."""
    found = [m.group(1) for h in table.headers if len(re.findall(r"(?i)\bended\b", h.text)) == 1
             and not _YEAR_IN_TEXT.search(h.text) and (m := _GROUP_DAY.search(h.text.strip())) is not None]
    return found[0] if len(found) == 1 else None


def _column_date(column: str, day: str | None) -> str:
    """A column's header as a date: a column of a bare year under a group line ending on `day` is "day, year"."""
    return f"{day}, {column}" if day and YEAR.fullmatch(column.strip()) else column


_YEAR_COLUMN = re.compile(r"\b(?:twelve|12)\s+months\b|\b(?:52|53|fifty[-\s]two|fifty[-\s]three)\s+weeks\b"
                          r"|\byears?\s+ended\b|\bfull[-\s]year\b|\bfiscal\s+years?\b", re.IGNORECASE)


def _months(span: str) -> set[int]:
    """How long the periods a column's words name are, in months: 3, 6, 9 or 12."""
    return {n for n, pattern in ((3, _QUARTER_COLUMN), (6, _HALF_COLUMN), (9, _NINE_COLUMN), (12, _YEAR_COLUMN))
            if pattern.search(span)}


def _whole_year(table: TableRow, cells: tuple[int, ...]) -> tuple[int, ...]:
    """Of the asked year's cells, when no shorter span is asked, those of the whole year's columns ("Twelve Months
    Ended January 28, 2023" beside "Three Months Ended January 28, 2023" in a fourth quarter's release), when each
    column says its own span and some are shorter."""
    spans = {i: _months(_span(table, i) or "") for i in cells}
    if not any(spans[i] == {12} for i in cells) or not any(spans[i] and 12 not in spans[i] for i in cells):
        return cells
    return tuple(i for i in cells if 12 in spans[i] or not spans[i])


def _not_shorter(table: TableRow, cells: tuple[int, ...]) -> tuple[int, ...]:
    """Of the asked year's cells, those whose column does not say a span shorter than a year ("Second Quarter",
    "Three Months Ended ..."): a question asking the full year's figure is not answered by a quarter's."""
    def shorter(i: int) -> bool:
        if any(quarter_of(p.text) for p in table.cells[i].column):
            return True
        months = _months(_span(table, i) or "")
        return bool(months) and 12 not in months
    return tuple(i for i in cells if not shorter(i))


def _dated(column: str, ends: Collection[str]) -> bool:
    """A column's header, its parts read together ("April 30," over "2023"), is dated an asked period's end."""
    return bool(ends) and any((when := parse_date(m.group(0))) is not None and when.isoformat() in ends
                              for m in DATE.finditer(column))  # "April 30, 2023", "6/17/2023"


def _names_period(part_text: str, years: Sequence[str], ends: Collection[str]) -> bool:
    """A column's header part names an asked year, or is dated the asked period's end."""
    if ends and (when := parse_date(" ".join(part_text.split()))) is not None and when.isoformat() in ends:
        return True
    year = year_of(part_text)
    return bool(year) and year in years


def _judge_whole(value: float, why: list[str], whole: int, part: bool, names_item: bool) -> float:
    """A row naming the asked item: the whole of rows labelled alike gains, a part of them loses."""
    if whole and names_item:
        why.append(f"the largest of {whole} rows labelled alike")
        return value + W_WHOLE
    if part and names_item:
        why.append("a part of a larger row labelled alike (the whole is asked)")
        return value - W_PART
    return value


def judge(ask: Ask, body: str, *, score: float, has_figure: bool, table: TableRow | None,
          label_share: float, labelled_hit: bool, figure_near: int = 0, words: int = 0,
          label_extra: int = 0, statement: str | None = None, names_item: bool = False,
          whole: int = 0, label_from_lead: bool = False, deep: bool = False, note: bool = False,
          in_unit: int = 0, part: bool = False, part_stated: bool = False) -> Judged:
    """Directness of one unit and the reasons, per the module docstring."""
    value, why = score, [f"score {score:.3f}"]
    cells: tuple[int, ...] = ()
    period = 0
    value = _judge_figure(ask, body, has_figure, value, why, in_unit)
    if table is not None:
        value, cells, period = _judge_row(ask, table, value, why, label_share, label_extra, label_from_lead)
    if names_item:
        value += W_ITEM
        why.append("its label names the asked line item" if table is not None else "it opens with the asked item")
    if table is not None:
        value = _judge_whole(value, why, whole, part, names_item)
    elif ask.years and has_figure:
        value, period = _judge_period(ask, body, value, why)
    if table is None:
        value = _judge_sentence(ask, value, why, figure_near, words, body)
        value = _judge_part_stated(ask, value, why, part_stated)
    if statement is not None and statement in ask.statements:
        value += W_NAMED_STATEMENT if ask.named else W_STATEMENT
        why.append(f"on the {_STATEMENT_NAME.get(statement, statement)}" + (" the question names" if ask.named else ""))
    if labelled_hit:
        value += W_LABELLED * label_share
        why.append(f"a labelled statement whose label holds {label_share:.0%} of the question's terms")
        if label_extra:
            value -= W_EXTRA * min(label_extra, MAX_EXTRA)
            why.append(f"{label_extra} other word(s) in its label")
    if note:
        value -= W_NOTE
        why.append("a note on a table's figures")
    if deep:
        value -= W_DEEP
        why.append("from a passage below the depth shown")
    return Judged(round(value, 9), tuple(why), cells, names_item, period, deep)


def _judge_period(ask: Ask, body: str, value: float, why: list[str]) -> tuple[float, int]:
    """`value` of a sentence holding a figure with its period's term added (it names the asked period, or only
    other years), `why` extended; whether it states the asked period (1) or not (0)."""
    if _names_year(ask, body) and _span_named(ask, body) and not _later_year(ask, body) \
            and not _other_quarter(ask, body) and not (ask.figure and not ask.forward and _PLANNED.search(body)):
        why.append("names the asked period")
        return value + W_PERIOD_SENTENCE, 1
    if _other_period(ask, body) or _other_quarter(ask, body):
        why.append("names only another period than the asked one")
        return value - W_OTHER_PERIOD, 0
    return value, 0


def _names_year(ask: Ask, body: str) -> bool:
    """A sentence names an asked year: as printed ("2023"), or in a fiscal year's short form ("Q4 FY23", "fiscal
    '23")."""
    return any(y in body for y in ask.years) \
        or any("20" + (m.group(1) or m.group(2)) in ask.years for m in _FISCAL_IN_TEXT.finditer(body))


def _judge_figure(ask: Ask, body: str, has_figure: bool, value: float, why: list[str], in_unit: int = 0) -> float:
    """`value` with the figure's terms added (a figure asked for; a percentage when a share is asked; a figure in the
    unit the question asks, answer/units.py)."""
    if ask.figure:
        if has_figure:
            value += W_FIGURE
            why.append("holds a figure")
        else:
            value -= W_FIGURE
            why.append("holds no figure")
    if ask.share and has_figure and _PERCENT_FIGURE.search(body):
        value += W_SHARE
        why.append("a percentage, as the question asks a share")
    if in_unit < 0:
        value -= W_COUNTED
        why.append("counts things, not the amount of money asked")
    elif in_unit and (ask.forward or not _PLANNED.search(body)):
        value += W_IN_UNIT
        why.append("a figure in the unit the question asks")
        if in_unit > 1:
            value += W_FRAMED
            why.append("after the word framing it in the question")
    return value


def _judge_row(ask: Ask, table: TableRow, value: float, why: list[str], label_share: float,
               label_extra: int, label_from_lead: bool = False) -> tuple[float, tuple[int, ...], int]:
    """`value` with a table row's terms added in turn (its label, then its period), `why` extended; the asked
    period's cells; whether it states the asked period (1), lacks it (-1) or neither (0). Added one by one, as
    the sum's rounding depends on the order."""
    if label_share:
        value += W_LABEL * label_share
        why.append(f"{'its table' + chr(39) + 's lead-in' if label_from_lead else 'row label'} holds {label_share:.0%} of "
                   "the question's terms")
    if label_extra:
        value -= W_EXTRA * min(label_extra, MAX_EXTRA)
        why.append(f"{label_extra} other word(s) in its label")
    if _other_kind(ask, table):
        value -= W_KIND
        why.append("a count, as money is asked" if ask.kind == "money" else "an amount of money, as a count is asked")
    cells = asked_cells(table, ask.years, ask.quarter, ask.change, ask.ends, ask.half, ask.annual, ask.dated,
                        ask.which, ask.quarters, ask.nine, ask.full)
    period = 0
    if cells:
        period = 1
        value += W_PERIOD_CELL if ask.figure else 0.0  # a row is the answer to a question asking for a figure
        why.append("column " + ", ".join(table.cells[i].column_text for i in cells) + " is the asked period"
                   + (" (with the change the table prints)" if any(not year_of(table.cells[i].column_text)
                                                                   for i in cells) else ""))
    elif table.label is not None and (year_of(table.label.text) in ask.years and
                                      year_of(table.label.text) == table.label.text.strip()
                                      or _asked_range(ask, table.label.text)):
        period = 1
        value += W_PERIOD_CELL
        why.append(f"a row for the asked period {table.label.text.strip()}")
    elif (dated := _dated_row(ask, table)) is not None:
        period = 1
        value += W_PERIOD_CELL
        why.append(f"a row dated in the asked period ({dated})")
    elif ask.years and table.mapped:
        period = -1
        value -= W_NO_PERIOD_CELL
        why.append("no column for the asked period")
    return value, cells, period


# a row labelled by a span of years ("2026-2030", "2024 – 2028", "2029 through 2033"): a schedule of payments
# prints the years after the next five as one row
_YEAR_RANGE = re.compile(r"((?:19|20)\d\d)\s*(?:[-–—]|to|through|thru)\s*((?:19|20)?\d\d)")


def year_range(text: str) -> tuple[str, str] | None:
    """The first and last year of a span of years ("2026-2030", "2029 through 33"), else None."""
    m = _YEAR_RANGE.fullmatch(text.strip())
    if m is None:
        return None
    return m.group(1), m.group(2) if len(m.group(2)) == 4 else m.group(1)[:2] + m.group(2)


def asked_ranges(query: str) -> tuple[tuple[str, str], ...]:
    """The spans of years a question names ("... pay out in benefits over 2026-2030?")."""
    return tuple(r for m in _YEAR_RANGE.finditer(query) if (r := year_range(m.group(0))) is not None)


def _asked_range(ask: Ask, label: str) -> bool:
    """A row labelled by a span of years the question names ("2026-2030 1,176 454" for "over 2026-2030"): the
    asked period, as a row labelled by the asked year is."""
    return bool(ask.ranges) and year_range(label) in ask.ranges


# A sentence stating a part of a whole: its first count is of some of the things counted, not all of them ("1,100
# of our employees are ...", "1,100 employees in North America were covered by ...", "57,000 employees, which
# constitute 35% of our total workforce, ..."); the clause ends at ", respectively" or ", of which" (what follows
# is the part of a whole the clause stated: "86,200 employees, respectively, of which 10,100 ..."). Amounts of money
# are not judged ("$500 million of our common stock" is no part of a whole).
_COUNT_FIGURE = re.compile(r"(?<![\w$.,/-])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:\s?%|\s+percent\b)?(?![\w/-])")
_PART_CLAUSE_END = re.compile(r",\s+(?:respectively|of\s+which|of\s+whom)\b|[;:]|\.(?!\d)")
_NOT_PLACE = (r"(?:First|Second|Third|Fourth|Fiscal|FY|Q[1-4]|January|February|March|April|May|June|July|August|"
              r"September|October|November|December|Note|Item|Part|Exhibit)\b")
_PART_MARK = re.compile(
    r"^\s*(?:%|percent)?\s*of\s+(?:our|the|its|their)\b"  # "1,100 of our employees"
    rf"|\b(?:in|outside(?:\s+of)?)\s+(?:the\s+)?(?!{_NOT_PLACE})[A-Z][a-z]"  # "employees in North America"
    r"|\b(?:were|are|was|is)\s+(?:covered|represented|located|based|members|unionized)\b"  # "were covered by"
    r"|\bwhich\s+(?:constitute|constitutes|represent|represents|comprise|comprises|make\s+up|account\s+for)\b")
_WHOLE_OF = re.compile(r"\bof\s+(?:our|the|its|their)\s+(?:total\s+|entire\s+|global\s+|worldwide\s+)?[A-Za-z][\w-]*")
_DAY_BEFORE = re.compile(r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?\s*$")  # "December 31"
_COUNTED = re.compile(r"^\s*(?:%|percent\b)?\s*[A-Za-z][\w-]*")


def part_words(body: str) -> str | None:
    """The words of a sentence whose first count is of a part of a whole, which say which part ("As of ...,
    approximately 1,100 employees in North America were covered by ..."), without the things counted and the
    whole's name ("employees", "of our total workforce"); None when the clause of its first count states no part
    (a year, a day of a date and an amount of money are no count)."""
    for m in _COUNT_FIGURE.finditer(body):
        before = body[max(0, m.start() - 12):m.start()]
        if YEAR_NAMED.fullmatch(m.group(0)) or _DAY_BEFORE.search(before) or before.rstrip().endswith("$"):
            continue
        rest = body[m.end():]
        end = _PART_CLAUSE_END.search(rest)
        clause = rest[:end.start()] if end else rest
        if not _PART_MARK.search(clause):
            return None
        return body[:m.start()] + " " + _COUNTED.sub(" ", _WHOLE_OF.sub(" ", rest), count=1)
    return None


def _judge_part_stated(ask: Ask, value: float, why: list[str], part_stated: bool) -> float:
    """`value` less W_PART for a sentence whose count is of a part of a whole the question does not name
    (`part_words`), when the question asks for a figure and not a share."""
    if part_stated and ask.figure and not ask.share:
        value -= W_PART
        why.append("counts a part of a whole the question does not name")
    return value


def _dated_row(ask: Ask, table: TableRow) -> str | None:
    """The date a row's label ends with, when it is of an asked year and no column of the row names a period: a schedule
    of dated items ("Missouri May 28, 2023 $ 44": a rate case effective on that date, its amount the row's one
    figure), whose row, not a column, says when."""
    if table.label is None or not ask.years or any(c.column for c in table.cells):
        return None
    label = table.label.text.rstrip()
    found = [m.group(0) for m in DATE.finditer(label) if m.end() == len(label)]  # the date column, last
    when = parse_date(found[0]) if found else None
    return found[0] if when is not None and str(when.year) in ask.years else None


def _judge_sentence(ask: Ask, value: float, why: list[str], figure_near: int, words: int, body: str = "") -> float:
    """`value` with a sentence's terms added in turn (a figure near the terms, 2: and next to the asked item, its
    length, a plan stated), `why` extended."""
    if ask.figure and figure_near:
        value += W_NEAR
        why.append("a figure next to the question's terms")
    if ask.figure and figure_near > 1:
        value += W_NEAR_ITEM
        why.append("a figure next to the asked item")
    if words > LONG_WORDS:
        value -= W_LONG
        why.append(f"long ({words} words)")
    if (ask.figure or ask.change) and not ask.forward and _PLANNED.search(body):
        value -= W_PLANNED
        why.append("states a plan or an expectation, not what was")
    return value


def rank(units: Sequence[T], judged: Callable[[T], Judged], key: Callable[[T], tuple], *,
            first: Collection[str] = (), document_of: Callable[[T], str]) -> list[T]:
    """`units` most direct first: the `first` documents' units ahead, then directness, then `key` (rank, start).
    A row with no column for the asked period does not lead over a unit of its documents' rank that states it
    (a dividend row of annual columns, for a quarter asked, over "the quarterly cash dividend was $0.55 ... in
    2022"), unless that unit is from a passage below the depth shown: the most direct such unit leads instead."""
    out = sorted(units, key=lambda u: (document_of(u) not in first, -judged(u).directness, *key(u)))
    if out and judged(out[0]).period < 0:
        lead = next((u for u in out if judged(u).period > 0 and not judged(u).deep
                     and (document_of(u) in first) == (document_of(out[0]) in first)), None)
        if lead is not None:
            out.remove(lead)
            out.insert(0, lead)
    return out
