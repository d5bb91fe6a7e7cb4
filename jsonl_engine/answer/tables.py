"""Read a table row as a table: its label, its cells with offsets, and what the page says above it about
its columns (periods, column titles) and its unit ("(Millions)", "(in millions, except per share data)").

Text extraction puts a table row on one line, its label first and its cells after ("Purchases of property, plant
and equipment (PP&E) (1,749) (1,603) (1,501)"); the column headers are lines above the first row of its table
("(Millions) 2022 2021 2020", or several lines: "Three Months Ended Six Months Ended" over "2023 2022 2023 2022").
The rules are about how tables are printed, not about any document:
- cells: from the end of the line, numbers (with "$", "%", thousands separators, decimals, parentheses for
  negatives; never ending in a comma: "July 30," is a date's day) and dashes ("—", an empty cell, as is "NM" or
  "N/A", a change not meaningful); "$" and "%" printed apart belong to the number beside them; a year closing a
  month and day is the label's date, no cell ("Missouri May 28, 2023 $ 44", "Balance at December 31, 2022 1,234");
  a first cell "(1)" one more than the columns is the label's
  footnote mark, no negative figure, unless the column line or lines under it may title another column (a unit line,
  "(in thousands)", titles none); a row printed without its label takes the line above ("Gross profit as a %
  of revenue" over "(1) 23.2 % 22.1 %"), and a label opening in lower case the line above as its start
  ("Operating expenses as a % of" over "total revenues 1.1 % 1.0 %");
- headers: walking up from the row over the rows, labels and sub-headings ("Adjustments to reconcile ...:") of its
  table, the nearest line naming periods
  (years, "December 31, 2022", "FY2022", "Q2 2023") is the column line (a date printed one piece a line,
  "June 30," over "2023", or "At December 31," over "2017", joins the pieces above it into one, its last piece
  perhaps followed by a change column's title; a line of as many month-days right above a line
  of years, "April 30, January 31," over "2023 2023", dates each year's column); lines just above it naming groups
  ("Three Months Ended") span the columns evenly; a line of titles right above them ("Revenue Mix Comparable
  Sales"), when the groups are alike or the periods repeat, is cut into as many titles of as many capitalised
  words each, each spanning its share of the columns ("Comparable Sales, Three Months Ended July 29, 2023"); a line
  under the column line repeating its titles once per period ("Dollars Percent of Total Dollars Percent of Total"
  under "2023 2022") splits each period's columns (`_subtitled`: titles told apart, none wrapped over lines); a
  line of titles printed right under the column line, none above it ("2023 2022 2023 2022" over "With Fuel Fuel
  Impact"), is read as titles over it are; a sentence leading into the table ("... for the three months ended
  April 30, 2023 and 2022, were as follows:") is no header; a group's opening words ("As of/", "For the")
  are the next group's; a prose sentence, or a row above the column line, ends the table; a lead-in sentence's
  last line ("during" / "2023:") and a title naming a year among its words ("Principal Amount of 2028 Notes to")
  are no column line;
- two periods joined by "vs." ("2022 2021 2020 2022 vs. 2021", "Q2'23 vs. Q2'22") title one column, the change
  between them, which names no year (`compared`); a row printing no change reads the periods before it;
- a table with no column line whose columns' titles are printed one after another above its first row, each wrapped
  over lines ("Principal Amount of 2028 Notes to" / "be Purchased" / ... / "Underwriter"): the alike titles, as many
  as the cells, are the columns (`_wrapped_titles`);
- the column line may be printed on the row's own line: joined to the first row ("For the Years Ended December 31,
  2021 2020 2019 Operating revenues $ 3,930 ..."), or opening a line of rows joined by text extraction ("2022 2021
  2020 Cash flows ...: Net income $ 4,491 ...", cut into rows by sentences.joined_rows);
- a table of a year's quarters names each quarter apart from its year ("2019" over "First Quarter ... Fourth
  Quarter", "2016 2015" over "4th 3rd 2nd 1st ...", "First ... Fourth Year" over "2017 Quarter ... 2017"): each
  cell's column is its quarter's name and year (`quarter_of`), a last "Year" column the year's;
- a column per cell only when the counts agree (periods == cells, or periods plus the titles printed after
  them, such as "Change" in "2023 2022 Change 2023 2022 Change", == cells; groups dividing the cells evenly), or, when some cells are percentages (a change or a share
  printed beside each amount: "4,237 3,785 12% 17% 3,067" under "2017 2016 2015"), when the amounts are as many:
  each amount its column in order, the percentages none; otherwise the headers are reported, no column guessed;
- unit: the first "(millions)"-like phrase in the row's label, its header lines or the lines just above them; else
  the unit printed with the title of the page's first table, past a footer text extraction put between
  ("(Amounts in millions)" / "The accompanying notes ..." / "F-3" over the column line), when no row is above.
Every part is a verbatim span of the text read, with its offsets.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from jsonl_engine.answer.sentences import classify, joined_rows
from jsonl_engine.identity.dates import YEAR

_MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
          r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
PERIOD = re.compile(
    rf"(?:{_MONTH}\.?\s+\d{{1,2}},?\s+)?(?:(?:FY|Fiscal(?:\s+Year)?|Q[1-4])\s*'?)?(?<![\d.,$])(?:19|20)\d\d(?![\d.,%])"
    r"|(?<![\d/])\d{1,2}/\d{1,2}/(?:19|20)\d\d(?![\d.,%])"  # a date in figures: "6/17/2023"
    r"|\b(?:FY|Q[1-4])\s*'?\d\d\b", re.IGNORECASE)
# how many months or weeks a period lasts, in words or digits: "three", "13", "Thirty-nine", "twenty four"
COUNT_WORD = (r"(?:\d{1,2}|(?:twenty|thirty|forty|fifty)(?:[-\s](?:one|two|three|four|five|six|seven|eight|nine))?|"
              r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|"
              r"seventeen|eighteen|nineteen)")
_GROUP = re.compile(rf"\b(?:{COUNT_WORD}\s+months|(?:fiscal\s+)?years?|quarters?|{COUNT_WORD}\s+weeks)\s+ended\b",
                    re.IGNORECASE)
UNIT = re.compile(r"\((?:[^()]{0,25}\b)?(?:millions?|thousands?|billions?)\b[^()]{0,60}\)"
                  r"|\b(?:(?:dollars|amounts|\$)\s+)?in\s+(?:millions|thousands|billions)\b(?:,\s*except[^.;()\n\d]{0,50}(?<!\s))?"
                  r"|\((?:percent|%)[^()]{0,40}\)", re.IGNORECASE)
_NUM = re.compile(r"^\(?[-–—−]?\$?\(?\d(?:[\d,]*\d)?(?:\.\d+)?\)?%?\)?%?$")  # "13," is a date's day
_DASH = re.compile(r"^(?:[-–—]+|NM|nm|[Nn]/[MmAa])$")  # an empty cell: a dash, or a change "not meaningful"
_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*$")
_NON_PERIOD_NUMBER = re.compile(r"\d")
_TITLE_YEAR = re.compile(r"\b(?:of|due)\s+(?:19|20)\d\d\b")  # a year in a title's words: "Amount of 2028 Notes"
_LEADS_IN = re.compile(r"(?:19|20)\d\d:\s*$")  # "... became effective during" / "2023:": a sentence leading into a table
# a sentence leading into a table ("The following table presents ...:"), not a statement's sub-heading
# ("Adjustments to reconcile net income to net cash provided by operating activities:")
_LEAD_IN = re.compile(r"\b(?:follow\w*|below|table|summar\w*|present\w*|shown|set forth|consist\w*|include\w*|"
                      r"we|our|the company)\b", re.IGNORECASE)
# a date's piece ("At December 31," of a balance sheet's "At December 31," / "2017" / "At December 31," / "2016")
_FRAGMENT = re.compile(rf"(?:(?:at|as\s+of)\s+)?{_MONTH}\.?\s+\d{{1,2}},?|(?:19|20)\d\d\*?|\d{{1,2}},?", re.IGNORECASE)
_FRAGMENTS = re.compile(rf"(?:{_FRAGMENT.pattern})(?:\s+(?:{_FRAGMENT.pattern}))*", re.IGNORECASE)  # "2017 May 29,"
# a date's day written apart from its year: by its month ("December 31", "31 December") or before a comma ("31,");
# not a row's cells ("— 37 88")
_DAY = re.compile(rf"\b{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b|\b\d{{1,2}}(?:st|nd|rd|th)?(?=,|\s+{_MONTH}\b)",
                  re.IGNORECASE)
_MARK = re.compile(r"\(\d{1,2}\)|\([a-z]\)")  # a footnote mark printed apart: "(1)", "(a)"
_QUARTER_ORDINAL = re.compile(r"\b(?:[1-4](?:st|nd|rd|th)|Q[1-4])\b", re.IGNORECASE)  # "3rd", "Q3"
_OPEN_END = re.compile(r"(?i)other|total|net|non|and|or|of|for|the|in|at|to|by|&|u\.s\.|non-u\.s\.|-")  # not a title's end
MAX_TITLE_WORDS = 8  # words in a line of column titles over the groups or periods
MAX_LINES_UP = 60  # lines walked up from a row looking for its headers
GROUP_LINES_UP = 3  # lines above the column line still read for groups and the unit


@dataclass(frozen=True, slots=True)
class Part:
    """A verbatim span of the text read: text[start:end] == text (of the page `pages_back` pages before the row's:
    a table's column headers printed at the foot of the page before, `read_continued`)."""
    text: str
    start: int
    end: int
    pages_back: int = 0


@dataclass(frozen=True, slots=True)
class Cell:
    text: str
    start: int
    end: int
    empty: bool = False  # a dash: the column has no value in this row
    column: tuple[Part, ...] = ()  # the header parts naming this cell's column (group, then period), if known

    @property
    def pages_back(self) -> int:
        """A cell is printed on its row's page (only column headers may be on the page before)."""
        return 0

    @property
    def column_text(self) -> str:
        """The column's header parts as one phrase; a title over the periods is set off by a comma
        ("Comparable Sales, Three Months Ended July 29, 2023")."""
        flat = [" ".join(p.text.split()) for p in self.column]
        if len(flat) > 1 and _title(flat[0]):
            return flat[0] + ", " + " ".join(flat[1:])
        return " ".join(flat)


@dataclass(frozen=True, slots=True)
class TableRow:
    label: Part | None
    cells: tuple[Cell, ...]
    unit: Part | None = None
    headers: tuple[Part, ...] = field(default_factory=tuple)  # header lines above the row, in text order

    @property
    def mapped(self) -> bool:
        """Every cell has its column."""
        return bool(self.cells) and all(c.column for c in self.cells)


_CONTENTS = re.compile(r".*\S(?:\s*\.{4,}\s*|\s*…+\s*)\d{1,4}"  # "Primary outcome measure: ........ 17"
                       r"|\d+(?:\.\d+)+\.?\s+[^\d]*[A-Za-z][^\d]*\s\d{1,4}")  # "3.2.1 Primary Endpoint 13"


def contents_line(line: str) -> bool:
    """A table of contents entry (a numbered title and its page number, or a title, dot leaders and a page
    number): it looks like a table row but states nothing."""
    return bool(_CONTENTS.fullmatch(line.strip()))


def _title(part_text: str) -> bool:
    """A column title naming no period ("Revenue Mix"), not a group ("Three Months Ended") or a change column."""
    return not (PERIOD.search(part_text) or _GROUP.search(part_text) or _NON_PERIOD_NUMBER.search(part_text))


def _tokens(text: str, start: int, end: int) -> list[tuple[int, int]]:
    return [(start + m.start(), start + m.end()) for m in re.finditer(r"\S+", text[start:end])]


def cells_of(text: str, start: int, end: int) -> tuple[Part | None, list[Cell]]:
    """The label and the cells of the row text[start:end] (a cell is a number, with its "$"/"%", or a dash)."""
    toks = _tokens(text, start, end)
    cells: list[Cell] = []
    i = len(toks) - 1
    while i >= 0:
        s, e = toks[i]
        tok = text[s:e]
        if tok == "%" and i > 0 and _NUM.match(text[toks[i - 1][0]:toks[i - 1][1]]):
            s = toks[i - 1][0]
            i -= 1
            tok = text[s:e]
        elif not (_NUM.match(tok) or _DASH.match(tok)) or tok.count(")") > tok.count("(") \
                or _dates_label(text, toks, i):
            break  # "2)" of "(Note 2)": the end of the label's parenthesis, no cell; "May 28, 2023": a date's year
        if i > 0 and text[toks[i - 1][0]:toks[i - 1][1]] in ("$", "($", "€", "£"):
            s = toks[i - 1][0]
            i -= 1
        cells.append(Cell(text[s:e], s, e, empty=bool(_DASH.match(text[s:e]))))
        i -= 1
    cells.reverse()
    if len(cells) >= 2 and cells[0].start == toks[0][0] and YEAR.fullmatch(cells[0].text):
        first = cells.pop(0)  # "2024 1,097 862": a row labelled by its year
        return Part(first.text, first.start, first.end), cells
    label = None
    if i >= 0:
        label_end = toks[i][1]
        while i >= 0 and text[toks[i][0]:toks[i][1]] in ("$", "€", "£"):
            i -= 1
            label_end = toks[i][1] if i >= 0 else start
        if i >= 0:
            label = Part(text[start:label_end], start, label_end)
    return label, cells


_MONTH_DAY = re.compile(rf"{_MONTH}\.?\s+\d{{1,2}},?", re.IGNORECASE)  # "May 28,": a date's month and day


def _dates_label(text: str, toks: list[tuple[int, int]], i: int) -> bool:
    """The token toks[i] is a year closing a date in the row's label ("Missouri May 28, 2023 $ 44", "Balance at
    December 31, 2022 1,234"): a year right after a month and day is the date's, no cell."""
    if i < 2 or not YEAR.fullmatch(text[toks[i][0]:toks[i][1]]):
        return False
    return bool(_MONTH_DAY.fullmatch(text[toks[i - 2][0]:toks[i - 1][1]]))


def _line_spans(text: str, before: int) -> list[tuple[int, int]]:
    """(start, end) of the stripped lines of text[:before], nearest first, at most MAX_LINES_UP."""
    out: list[tuple[int, int]] = []
    pos = text.rfind("\n", 0, before)
    while pos >= 0 and len(out) < MAX_LINES_UP:
        prev = text.rfind("\n", 0, pos)
        s, e = prev + 1, pos
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        out.append((s, e))
        pos = prev
    return out


def _periods(text: str, s: int, e: int) -> list[Part]:
    return [Part(m.group(0), s + m.start(), s + m.end()) for m in PERIOD.finditer(text[s:e])]


def _is_column_line(line: str, periods: list[Part]) -> bool:
    """A line naming periods and no other figures ("(Millions) 2022 2021 2020", "December 31, 2022 2021"); not a
    column's title naming a year among its words ("Principal Amount of 2028 Notes to", "Notes due 2034")."""
    if not periods or len(line) > 160 or _SENTENCE_END.search(line) or _LEADS_IN.search(line) \
            or _TITLE_YEAR.search(line):
        return False
    rest = PERIOD.sub(" ", line)
    rest = UNIT.sub(" ", rest)
    rest = _DAY.sub(" ", rest)  # day numbers of dates written apart
    rest = _MARK.sub(" ", rest)  # a column's footnote mark ("December 31, 2021(1)", "2022 (a)")
    rest = _QUARTER_ORDINAL.sub(" ", rest)  # quarters named apart from their year ("1st 2nd 3rd 4th 2018")
    return not _NON_PERIOD_NUMBER.search(rest)


def read_row(text: str, start: int, end: int) -> TableRow:
    """The row text[start:end] read with the headers above it in `text` (see the module docstring)."""
    label, cells = cells_of(text, start, end)
    headers: list[Part] = []
    groups: list[Part] = []
    lines = ((s, e) for s, e in _line_spans(text, start) if e > s)  # walking up, blank lines skipped
    label, column_line, periods, block = _column_line_of(text, start, label, cells, lines)
    if column_line is not None:
        column_line, periods, lines = _stacked(text, column_line, periods, lines)
        periods = _compared(text, periods)
    between: list[Part] = []  # the lines between the column line and the first row below it
    titles: list[Part] = []  # a line of column titles over the groups or periods ("Revenue Mix Comparable Sales")
    days: list[Part] = []  # the month and day of each year, on the line above the column line ("April 30,")
    if column_line is None:
        wrapped = _wrapped_titles(text, start, len(cells))
        headers.extend(wrapped or [p for p in block[:2] if not UNIT.fullmatch(p.text)])
        titles = wrapped
    else:
        headers.append(Part(text[column_line[0]:column_line[1]], *column_line))
        between = block
        groups.extend(_group_parts(text, *column_line))
        above = next(lines, None)
        days = _days_over(text, above, periods) if above is not None else []
        if days:
            headers.append(Part(text[above[0]:above[1]], *above))
        elif above is not None:
            lines = itertools.chain([above], lines)
        titles = _above_column_line(text, lines, headers, groups) or _titles_under(between)
    columns = _columns(text, column_line, periods, groups, len(cells), titles, days) if column_line is not None \
        else [(t,) for t in titles] or None
    if column_line is not None and columns is None and _units_only(between) and _footnote_mark(cells) \
            and _only_periods(text[column_line[0]:column_line[1]]):
        # "Net sales (1) 1,234 1,100" or "(1) 23.2 % 22.1 %" under "2023 2022": the first "cell" is the label's
        # footnote mark, no negative figure (told apart by the column count, when no line between the column line
        # and the rows may title one more column: "Increase" / "(Decrease)" under "2019 2018"; a unit line, "(in
        # thousands)", titles none)
        columns = _columns(text, column_line, periods, groups, len(cells) - 1, titles, days) \
            or _quarter_columns(text, column_line, between, headers, len(cells) - 1, None)
        if columns is not None:
            cells = cells[1:]
    if column_line is not None:
        columns = columns or _subtitled(text, between, periods, len(cells)) \
            or _amount_columns(text, column_line, periods, groups, cells, titles, days)
        columns = _quarter_columns(text, column_line, between, headers, len(cells), columns) or columns
    if label is None and cells and column_line is not None:
        label = _label_above(text, start)
    if label is not None and label.text[:1].islower():
        label = _wrapped_label(text, label)
    headers.extend(_between_headers(between, columns))
    headers.sort(key=lambda p: p.start)
    unit = _unit(text, start, label, headers, between, titled=column_line is not None)
    if columns:
        cells = [Cell(c.text, c.start, c.end, c.empty, col) for c, col in zip(cells, columns, strict=True)]
    return TableRow(label, tuple(cells), unit, tuple(headers))


MAX_TITLE_LINES = 12  # lines of wrapped column titles read above a table's first row


def _wrapped_titles(text: str, start: int, n: int) -> list[Part]:
    """Column titles printed one after another above a table's first row, each wrapped over lines ("Principal Amount
    of 2028 Notes to" / "be Purchased" / "Principal Amount of 2034 Notes to" / "be Purchased" / ... over
    "Underwriter A $90,000,000 $153,000,000 $117,000,000"), when the table has no column line: walking up over its
    rows, the non-row lines above the first, each title a line opening in upper case and the lines after it opening
    in lower case (or after a line ending on an open word: "of", "to"); the alike titles (same first two words),
    as many as the row's cells, in order, one a column; [] otherwise (the label column's title, "Underwriter", and a
    heading above, "SCHEDULE I", are none of them)."""
    if n < 2:
        return []
    spans = iter((s, e) for s, e in _line_spans(text, start) if e > s)
    block: list[tuple[int, int]] = []
    for s, e in spans:
        line = text[s:e]
        if classify(line) == "row":
            if block:
                break
            continue
        if _SENTENCE_END.search(line) or len(line) > 80 or len(block) >= MAX_TITLE_LINES:
            break
        block.append((s, e))
    titles: list[tuple[int, int]] = []
    for s, e in reversed(block):  # top-down
        if titles and (text[s].islower() or _OPEN_END.fullmatch(text[titles[-1][0]:titles[-1][1]].split()[-1])):
            titles[-1] = (titles[-1][0], e)
        else:
            titles.append((s, e))
    key = [tuple(text[s:e].lower().split()[:2]) for s, e in titles]
    for k in dict.fromkeys(key):
        alike = [i for i, x in enumerate(key) if x == k]
        texts = {" ".join(text[titles[i][0]:titles[i][1]].split()) for i in alike}
        if len(alike) == n and alike == list(range(alike[0], alike[0] + n)) and len(texts) == n and len(k) == 2:
            return [Part(text[titles[i][0]:titles[i][1]], *titles[i]) for i in alike]
    return []


_WRAP_END = re.compile(r"(?i)and|or|of|for|the|in|at|to|by|&|[-–—]")  # a title's line wrapping onto the next
_TITLE_WORD = re.compile(r"[A-Za-z%$][^\s]*")
_JOINING = re.compile(r"(?i)of|and|the|in|to|for|as|a|per|&")  # "Percent of Total": words inside one title


def _titles_under(between: Sequence[Part]) -> list[Part]:
    """A line of column titles printed right under the column line, over the rows ("2023 2022 2023 2022" over "With
    Fuel Fuel Impact"), when none is printed above it: read as titles over the periods are (`_split_titles`)."""
    if not between:
        return []
    line = between[-1]
    text = line.text.strip()
    if _title(text) and len(text.split()) <= MAX_TITLE_WORDS and not text.endswith(":") and text[:1].isupper() \
            and not UNIT.search(text):
        return [line]
    return []


def _between_headers(between: Sequence[Part], columns: Sequence[tuple[Part, ...]] | None) -> list[Part]:
    """The lines between the column line and the rows that are headers of the row: those printing a part of its
    columns (titles under the periods, `_subtitled`); with no columns, the two nearest the column line."""
    if not columns:
        return list(between[-2:])
    used = [p.start for col in columns for p in col]
    return [b for b in between if any(b.start <= u < b.end for u in used)]


def _subtitled(text: str, between: Sequence[Part], periods: list[Part], n: int) -> list[tuple[Part, ...]] | None:
    """Columns under periods each spanning the same titles, printed on a line of their own between the column line
    and the rows ("2023 2022" over "In Millions Dollars Percent of Total Dollars Percent of Total" over "Pet 445.5
    11 470.6 13"): the line (its unit left out) repeats one run of titles once per period, each title a capitalised
    word and the lower-case words joining it ("Percent of Total"), and the titles of all the periods are as many as
    the cells: each cell its period and its title, in order; None otherwise."""
    k = len(periods)
    if k < 2 or n % k or n == k:
        return None
    if any(_WRAP_END.fullmatch(p.text.split()[-1]) for p in between if p.text.split()):
        return None  # titles wrapped over lines there ("Asset-Related and" / "Other Total"): more columns than read
    for line in between:
        body = UNIT.sub(lambda m: " " * len(m.group(0)), line.text)
        body = re.sub(r"(?i)\bin\s+(?:millions|thousands|billions)\b", lambda m: " " * len(m.group(0)), body)
        words = [(m.start(), m.end()) for m in _TITLE_WORD.finditer(body)]
        texts = [body[a:b].lower() for a, b in words]
        if not words or len(words) % k or texts != texts[:len(texts) // k] * k:
            continue
        titles: list[tuple[int, int]] = []
        for j, (a, b) in enumerate(words):
            joined = j and (_JOINING.fullmatch(body[a:b]) or _JOINING.fullmatch(body[words[j - 1][0]:words[j - 1][1]])
                            or not (body[a].isupper() or body[a] in "%$"))
            if titles and joined:
                titles[-1] = (titles[-1][0], b)
            else:
                titles.append((a, b))
        m = n // k
        if len(titles) != n or len({body[a:b].lower() for a, b in titles[:m]}) < m:
            continue  # "Value Value Value Value": titles that do not tell the columns apart
        parts = [Part(line.text[a:b], line.start + a, line.start + b) for a, b in titles]
        return [(periods[i // m], parts[i]) for i in range(n)]
    return None


def _days_over(text: str, line: tuple[int, int], periods: list[Part]) -> list[Part]:
    """The month and day of each year of the column line, printed on the line above it ("April 30, January 31,
    April 30," over "(Amounts in millions) 2023 2023 2022"), one per year; [] when that line is not so."""
    s, e = line
    found = list(_MONTH_DAY.finditer(text, s, e))
    if not periods or len(found) != len(periods) or _MONTH_DAY.sub("", text[s:e]).strip() \
            or not all(YEAR.fullmatch(p.text) for p in periods):
        return []
    return [Part(m.group(0), m.start(), m.end()) for m in found]


def _below_column_line(text: str, lines: Iterator[tuple[int, int]]
                       ) -> tuple[tuple[int, int] | None, list[Part], list[Part]]:
    """Walk up `lines` (non-blank, nearest first) to the row's column line, over the rows and labels of its
    table: (the column line or None, its periods, the non-row lines met since the last row). The walk stops
    without one at a row above a header line (another table) or at prose; `lines` is left after the column
    line."""
    block: list[Part] = []  # non-row lines met since the last row, walking up: titles right under a header
    for s, e in lines:
        line = text[s:e]
        found_periods = _periods(text, s, e)
        kind = classify(line)
        if _is_column_line(line, found_periods):
            return (s, e), found_periods, block
        if kind != "row" and len(joined_rows(text, s, e)) > 1:
            kind = "row"  # rows joined on one line, ending with a sub-heading ("... Cash flows from investing activities:")
        if kind == "row":
            if any(_GROUP.search(p.text) or UNIT.search(p.text) for p in block):
                break  # a row above a header line: another table
            label, cells = cells_of(text, s, e)
            merged = _merged_column_line(text, label, cells) or _opening_periods(text, s, e)
            if merged is not None:  # the column line with the table's first row(s) printed after it
                return (s, merged[1]), merged[0], block
            block = []
            continue
        if kind is None and (_SENTENCE_END.search(line) or len(line) > 160 or _leads_in(line)):
            break  # prose, or the sentence leading into the table: the table starts below it
        block.append(Part(line, s, e))
    return None, [], block


def _column_line_of(text: str, start: int, label: Part | None, cells: Sequence[Cell],
                    lines: Iterator[tuple[int, int]]) -> tuple[Part | None, tuple[int, int] | None, list[Part], list[Part]]:
    """(the row's label, its table's column line, the line's periods, the non-row lines met walking up to it): the
    row's own line when the row is printed on it (`_merged_column_line`) or after its periods ("2022 2021 2020 Net
    income ..."), else the line `_below_column_line` walks up to."""
    merged = _merged_column_line(text, label, cells)
    line_start = text.rfind("\n", 0, start) + 1
    opening = _opening_periods(text, line_start, start + 1) if line_start < start else None
    if merged is not None:  # the table's first row, printed on its column line: the rest of its label is its own
        return _rest_of_label(text, label, merged[1]), (start, merged[1]), merged[0], []
    if opening is not None:  # a row printed after its table's periods on one line
        return label, (line_start, opening[1]), opening[0], []
    return label, *_below_column_line(text, lines)


def _merged_column_line(text: str, label: Part | None, cells: Sequence[Cell]) -> tuple[list[Part], int] | None:
    """A row whose label opens with its table's column line ("For the Years Ended December 31, 2021 2020 2019
    Operating revenues $ 3,930 $ 3,777 $ 3,610": text extraction joined the first row to the line of periods over
    it): (the periods, where the column line ends), when the label's periods, two or more, are as many as the row's
    cells, nothing but periods, groups and a unit come before the last of them, and a capitalised label follows."""
    if label is None or len(cells) < 2:
        return None
    periods = _periods(text, label.start, label.end)
    if len(periods) != len(cells):
        return None
    end = periods[-1].end
    rest = text[end:label.end].strip()
    if not rest or not rest[0].isupper() or _NON_PERIOD_NUMBER.search(rest) \
            or not _is_column_line(text[label.start:end], periods):
        return None
    return periods, end


def _opening_periods(text: str, s: int, e: int) -> tuple[list[Part], int] | None:
    """A line of text extraction opening with its table's periods, two or more years, before rows ("2022 2021 2020
    Cash flows from operating activities: Net income $ 4,491,924 ..."): (the periods, where they end)."""
    m = re.match(r"(?:(?:19|20)\d\d\s+){2,}", text[s:e] + " ")
    if m is None or not re.search(r"[A-Za-z]", text[s + m.end():e]):
        return None
    end = s + len(m.group(0).rstrip())
    return _periods(text, s, end), end


def _rest_of_label(text: str, label: Part, column_end: int) -> Part:
    """The label of a row printed on its column line: what follows the column line."""
    s = column_end
    while s < label.end and text[s].isspace():
        s += 1
    return Part(text[s:label.end], s, label.end)


_QUARTER_NAME = re.compile(r"\b(?:(first|second|third|fourth)(?:\s+(?:fiscal\s+)?quarter)?|(1st|2nd|3rd|4th)"
                           r"(?:\s+(?:fiscal\s+)?quarter)?|q([1-4]))\b", re.IGNORECASE)
QUARTER_PART = re.compile(r"(?:first|second|third|fourth|1st|2nd|3rd|4th)(?:\s+(?:fiscal\s+)?quarter)?|q[1-4]",
                          re.IGNORECASE)  # a column part naming one quarter of a year: "Third Quarter", "3rd", "Q3"
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}
_QUARTER_WORDS = re.compile(r"(?:(?:first|second|third|fourth|1st|2nd|3rd|4th|fiscal|quarter|full|year|total)\s*)+",
                            re.IGNORECASE)  # a header line of only a quarter's words: "First", "Quarter Full Year"
_YEAR_TOTAL = re.compile(r"\b(?:year|total|full\s+year|(?:12|twelve)[-\s]months?)\b", re.IGNORECASE)


def quarter_of(part_text: str) -> int | None:
    """The quarter a column part names ("Third Quarter", "3rd", "Q3" -> 3), if it names one."""
    m = QUARTER_PART.fullmatch(" ".join(part_text.split()))
    if m is None:
        return None
    word = m.group(0).split()[0].lower()
    return _ORDINALS.get(word) or int(word[1])


def _quarter_columns(text: str, column_line: tuple[int, int], between: Sequence[Part], headers: Sequence[Part],
                     n: int, columns: list[tuple[Part, ...]] | None) -> list[tuple[Part, ...]] | None:
    """Columns of a table of a year's quarters, which name each quarter apart from the year ("2019" over "First
    Quarter Second Quarter Third Quarter Fourth Quarter"; "2016 2015" over "4th 3rd 2nd 1st 4th 3rd 2nd 1st";
    "First Second Third Fourth Year" over "2017 Quarter Quarter Quarter Quarter 2017"; "First Quarter ..." over
    "2017 2016 2017 2016 ..."): each cell's column is its quarter's name and its year (a last "Year" or "Total"
    column, the year's); None when the header lines name no quarters, or not as many as the cells."""
    lines = [Part(text[column_line[0]:column_line[1]], *column_line), *between, *headers]
    for up, (s, e) in enumerate(_line_spans(text, column_line[0])):
        line = text[s:e]
        if classify(line) == "row" or _SENTENCE_END.search(line) \
                or (up >= GROUP_LINES_UP and not _QUARTER_WORDS.fullmatch(line.strip())):
            break  # past the lines just above, only a header printed a word or two a line ("First" / "Quarter")
        lines.append(Part(line, s, e))
    lines = sorted({p.start: p for p in lines}.values(), key=lambda p: p.start)
    changes = [(c.start, c.end) for p in lines for c in _compared(text, _periods(text, p.start, p.end))
               if compared(c.text)]  # "Q2'23 vs. Q2'22" titles a change column, names no quarter's
    named = [Part(m.group(0), p.start + m.start(), p.start + m.end()) for p in lines
             for m in _QUARTER_NAME.finditer(p.text)
             if not any(a <= p.start + m.start() < b for a, b in changes)]
    if len(named) < 2 or not any(re.search(r"quarter|\d(?:st|nd|rd|th)\b|\bq[1-4]\b", p.text, re.IGNORECASE)
                                 for p in lines):
        return None
    if any(any(quarter_of(part.text) for part in col) for col in columns or ()):
        return None  # the columns already say their quarters
    # the years of the header lines, not of a lead-in ("Our quarterly financial data for 2016 and 2015 was:")
    years = [q for p in lines if not p.text.rstrip().endswith(":") for q in _periods(text, p.start, p.end)
             if year_of(q.text)]
    distinct = list(dict.fromkeys(year_of(y.text) for y in years))
    q = len(named)
    if columns is not None and n > q and n % q == 0:  # "First Quarter ..." over the years' columns
        width = n // q
        return [(named[i // width], *columns[i]) for i in range(n)]
    if len(distinct) == 1:
        # the column line's own year, if it prints one, over a date in the lines above it
        first = next((y for y in years if column_line[0] <= y.start < column_line[1]),
                     next(y for y in years if year_of(y.text) == distinct[0]))
        out: list[tuple[Part, ...]] = [(named[i], first) for i in range(min(q, n))]
        if q + 1 == n:  # "... Fourth Year": the year's own column last (on the last quarter's line or a next one:
            # "Fourth" / "Quarter Full Year")
            total = next(((p, m) for p in lines if p.end > named[-1].start
                          and (m := _YEAR_TOTAL.search(p.text, max(0, named[-1].end - p.start))) is not None), None)
            if total is not None:
                line, m = total
                out.append((Part(m.group(0), line.start + m.start(), line.start + m.end()), years[-1]))
            elif years[-1].start > named[-1].end and text.find("\n", named[-1].end, years[-1].start) < 0:
                out.append((years[-1],))  # "1st 2nd 3rd 4th 2018": the year printed after its quarters heads its own
            else:
                return None
        return out if len(out) == n else None
    if q == n and distinct and len(years) == len(distinct) and q % len(distinct) == 0:  # "2016 2015" over "4th ... 1st 4th ..."
        width = q // len(distinct)
        return [(named[i], years[i // width]) for i in range(n)]
    return None


def _stacked(text: str, column_line: tuple[int, int], periods: list[Part], lines: Iterator[tuple[int, int]],
             ) -> tuple[tuple[int, int], list[Part], Iterator[tuple[int, int]]]:
    """A column line printed one date piece a line ("June 25," / "2023" / "June 26," / "2022", nearest last), or
    the pieces broken across lines ("In Millions May 28," / "2017 May 29," / "2016", the unit first): the pieces
    above it joined into one column line (its periods read across the line breaks), `lines` left after them; any
    other column line unchanged."""
    s, e = column_line
    if not _FRAGMENT.fullmatch(_TRAILING_VERSUS.sub("", text[s:e])):  # "2022 Q2'23 vs. Q2'22": the change's title after
        return column_line, periods, lines
    for ls, le in lines:
        if _FRAGMENT.fullmatch(text[ls:le]) or _FRAGMENTS.fullmatch(text[ls:le].strip()):
            s = ls
            continue
        # the unit may open the topmost line ("In Millions May 28," / "2017 May 29," / "2016")
        if (unit := UNIT.match(text[ls:le].strip())) is not None \
                and _FRAGMENTS.fullmatch(text[ls:le].strip()[unit.end():].strip()):
            return (ls, e), _periods(text, ls, e), lines
        return (s, e), _periods(text, s, e), itertools.chain([(ls, le)], lines)
    return (s, e), _periods(text, s, e), iter(())


def _above_column_line(text: str, lines: Iterator[tuple[int, int]], headers: list[Part],
                       groups: list[Part]) -> list[Part]:
    """The header lines just above the column line (at most GROUP_LINES_UP: groups, a unit, more periods)
    appended to `headers`, their groups put before `groups`; a row or a sentence ends them. Returned: a line of
    column titles right above them, naming no period or group ("Revenue Mix Comparable Sales"), if any."""
    titles: list[Part] = []
    under_columns = True  # the line below is the column line or a line of groups (not a unit's or lead-in's)
    since_column = 0
    for s, e in lines:
        line = text[s:e]
        if _MONTH_DAY.fullmatch(line.strip()) and under_columns:
            # a group's month and day on a line of its own, under it ("Three months ended" / "June 30," / "Six
            # months ended" / "June 30,"): a piece of the header, not a line of its own among those read
            headers.append(Part(line, s, e))
            continue
        since_column += 1
        found_periods = _periods(text, s, e)
        kind = classify(line)
        if since_column > GROUP_LINES_UP or kind == "row" or (kind is None and _SENTENCE_END.search(line)) \
                or _leads_in(line):
            break
        if _is_column_line(line, found_periods) or _GROUP.search(line) or UNIT.search(line):
            headers.append(Part(line, s, e))
            groups[:0] = _group_parts(text, s, e)
            under_columns = bool(_GROUP.search(line) or _is_column_line(line, found_periods)) \
                and not line.endswith(":")
            continue
        if under_columns and not titles and _title(line) and len(line.split()) <= MAX_TITLE_WORDS \
                and not line.endswith(":"):
            headers.append(Part(line, s, e))
            titles.append(Part(line, s, e))
        under_columns = False
    return titles


def _leads_in(line: str) -> bool:
    """A sentence leading into the table ("Calendar comparable sales ... for the three months ended April 30, 2023
    and 2022, were as follows:"): no header, though it names a group."""
    return line.endswith(":") and len(line.split()) > 6 and bool(_LEAD_IN.search(line))


def _split_titles(title: Part, k: int) -> list[Part] | None:
    """A line of `k` column titles cut into them: as many words each, every title capitalised ("Revenue Mix
    Comparable Sales" -> "Revenue Mix", "Comparable Sales"); None when the words do not divide so."""
    words = [(m.start(), m.end()) for m in re.finditer(r"\S+", title.text)]
    if k < 2 or len(words) % k:
        return None
    width = len(words) // k
    out = []
    for i in range(0, len(words), width):
        s, e = words[i][0], words[i + width - 1][1]
        if not title.text[s].isupper() or (i + width < len(words) and _OPEN_END.fullmatch(title.text[words[i + width - 1][0]:e])):
            return None  # "Pension Other | Postretirement Benefits": a title does not end in "Other"
        out.append(Part(title.text[s:e], title.start + s, title.start + e))
    return out


def _only_periods(line: str) -> bool:
    """A column line naming periods (their groups, a unit) and nothing else: no title of a column of its own
    ("FISCAL 2023 FISCAL 2022 % CHANGE" has one), so a cell more than its periods is none of its columns."""
    rest = _MARK.sub(" ", UNIT.sub(" ", _GROUP.sub(" ", PERIOD.sub(" ", line))))
    rest = QUARTER_PART.sub(" ", rest)
    return not re.search(r"[A-Za-z%]", rest)


def _units_only(lines: Sequence[Part]) -> bool:
    """No line, or only unit lines ("(in thousands)"), between a column line and the rows below it: nothing there
    may title a column of its own."""
    return all(UNIT.fullmatch(p.text.strip()) for p in lines)


def _footnote_mark(cells: list[Cell]) -> bool:
    """The row's first cell could be a footnote mark: "(1)", no "$" or "%" (right after the label, or first), or a
    bare "1" before a "$" cell (a row printing "$" prints it on its first figure)."""
    return len(cells) >= 2 and (bool(_MARK.fullmatch(cells[0].text))
                                or (cells[0].text.isdigit() and len(cells[0].text) <= 2
                                    and cells[1].text.startswith("$")))


def _wrapped_label(text: str, label: Part) -> Part:
    """A label opening in lower case is the end of one wrapped over two lines ("Operating expenses as a % of" over
    "total revenues 1.1 % 1.0 %"): the label from the line above, when that line is no row, sentence or
    sub-heading and opens in upper case; else the label as printed."""
    spans = _line_spans(text, label.start)
    if not spans:
        return label
    s, e = spans[0]
    line = text[s:e]
    if line and line[0].isupper() and classify(line) != "row" and not _SENTENCE_END.search(line) \
            and not line.endswith(":") and len(line) <= 80:
        return Part(text[s:label.end], s, label.end)
    return label


def _label_above(text: str, start: int) -> Part | None:
    """The label of a row printed without one, on the line above ("Gross profit as a % of revenue" over
    "(1) 23.2 % 22.1 %"), a lone footnote mark line between them skipped; None when that line is no label."""
    for s, e in _line_spans(text, start)[:2]:
        line = text[s:e]
        if _MARK.fullmatch(line):
            continue
        if line and classify(line) != "row" and not _SENTENCE_END.search(line) and len(line) <= 80 \
                and not _NON_PERIOD_NUMBER.search(line) and not line.endswith(":") and line[0].isupper():
            return Part(line, s, e)
        return None
    return None


def _unit(text: str, start: int, label: Part | None, headers: list[Part], between: list[Part],
          titled: bool = False) -> Part | None:
    """The first unit phrase in the row's label, its headers (in text order) or the lines between them and the
    row (nearest the headers first); else in the lines just above the headers (rows left out); else, under a column
    line (`titled`), the unit printed with the title of the page's first table (`_title_unit`)."""
    for part in ([label] if label else []) + headers + between[::-1]:
        m = UNIT.search(part.text)
        if m:
            return Part(m.group(0), part.start + m.start(), part.start + m.end())
    for s, e in _line_spans(text, headers[0].start if headers else start)[:GROUP_LINES_UP]:
        m = UNIT.search(text[s:e]) if classify(text[s:e]) != "row" else None
        if m:
            return Part(m.group(0), s + m.start(), s + m.end())
    return _title_unit(text, headers[0].start) if titled and headers else None


def _title_unit(text: str, above: int) -> Part | None:
    """The unit printed with the title of a page's first table ("CONSOLIDATED BALANCE SHEETS" / "(Amounts in
    millions, except share data)"), farther above its column headers than `_unit` reads (text extraction may put a
    footer between them: "The accompanying notes are an integral part ..." / "F-3"): the nearest unit line above
    `above` up to the page's top, when no row is printed above the headers (no other table's)."""
    for s, e in _line_spans(text, above):
        line = text[s:e]
        if not line:
            continue
        if classify(line) == "row":
            return None
        m = UNIT.search(line)
        if m and not _SENTENCE_END.search(line) and len(line) <= 80:
            return Part(m.group(0), s + m.start(), s + m.end())
    return None


_GROUP_OPENER = re.compile(r"\s(?:as\s+of\s*/?|for\s+the|for|at)\s*$", re.IGNORECASE)  # "For the" Six Months Ended


def _group_parts(text: str, s: int, e: int) -> list[Part]:
    """The column groups a header line names ("Three Months Ended", "Six Months Ended"), each up to the next."""
    found = list(_GROUP.finditer(text[s:e]))
    out = []
    for i, m in enumerate(found):
        stop = found[i + 1].start() if i + 1 < len(found) else e - s
        piece = text[s + m.start():s + stop]
        piece = _GROUP_OPENER.sub("", piece).rstrip(" ,")  # the next group's opening words are not this one's
        out.append(Part(piece, s + m.start(), s + m.start() + len(piece)))
    return out


def _columns(text: str, column_line: tuple[int, int] | None, periods: list[Part], groups: list[Part],
             n: int, titles: Sequence[Part] = (), days: Sequence[Part] = ()) -> list[tuple[Part, ...]] | None:
    """The header parts of each of `n` cells, when the header's counts match the row's (else None); a line of
    titles over them (`titles`) is cut into as many titles as the groups when these are all alike ("Three Months
    Ended" twice), or as the times the periods repeat when there is no group ("2023 2022 2023 2022": two), and
    each title spans its share of the columns."""
    if column_line is None or not n:
        return None
    between = False  # titles read between the periods: the columns must be told apart
    labels: list[tuple[Part, ...]] = [(d, p) for d, p in zip(days, periods, strict=True)] if days else \
        [(p,) for p in periods]
    if len(labels) + 1 == n:  # "2022 2021 Change": a trailing title is the last column
        tail_start = periods[-1].end
        tail = text[tail_start:column_line[1]]
        if tail.strip() and not _NON_PERIOD_NUMBER.search(tail):
            lead = len(tail) - len(tail.lstrip())
            labels.append((Part(tail.strip(), tail_start + lead, tail_start + lead + len(tail.strip())),))
    elif len(labels) < n and _one_way(periods):
        labels = _titled_between(text, column_line, periods, labels)
        between = True
    if len(labels) == n + 1 and compared(labels[-1][-1].text):
        labels = labels[:n]  # a row printing no change ("Operating margin 18 % 21 %" under "2022 2021 2022 vs. 2021")
    if len(labels) != n:
        return None
    if groups and n % len(groups) == 0 and len(groups) > 1:
        width = n // len(groups)
        columns = [(groups[i // width], *labels[i]) for i in range(n)]
    else:
        columns = list(labels)
    # titles tell apart columns the groups and periods below them do not: groups all alike, or no group
    alike = len({" ".join(g.text.split()).lower() for g in groups}) == 1
    k = (len(groups) if alike else 0) if len(groups) > 1 else _repeats(periods)  # one group spans every column
    split = _split_titles(titles[0], k) if titles else None
    if split and n % len(split) == 0:
        width = n // len(split)
        columns = [(split[i // width], *columns[i]) for i in range(n)]
    if between and len({tuple(p.text for p in col) for col in columns}) < n:
        return None  # "2022 2021 Change" over each segment's columns, the segments' names not read
    return columns


def _amount_columns(text: str, column_line: tuple[int, int], periods: list[Part], groups: list[Part],
                    cells: Sequence[Cell], titles: Sequence[Part], days: Sequence[Part],
                    ) -> list[tuple[Part, ...]] | None:
    """The columns of a row whose percentages (a change or a share printed beside its amounts: "Revenues 4,237
    3,785 12% 17% 3,067 23% 27%" under "2017 2016 2015") outnumber the header's columns: each amount, in order,
    takes its column when the amounts are as many as the periods (`_columns`) and these are years running one way
    (in each of the groups they repeat in) and each column is told apart, the percentages none; a dash, which may be
    an amount's or a percentage's, leaves the row unread."""
    if any(c.empty and "$" not in c.text for c in cells):
        return None  # a dash may be an amount's or a percentage's
    amounts = [i for i, c in enumerate(cells) if "%" not in c.text]
    if len(amounts) != len(periods) or len(amounts) == len(cells) or not _one_way(periods):
        return None  # (an amount is a period's, never a title's: "% Change" is the percentages')
    found = _columns(text, column_line, periods, groups, len(amounts), titles, days)
    if found is None or len({tuple(p.text for p in col) for col in found}) < len(found):
        return None  # columns told apart by nothing read ("2022 2021" over each segment's amounts)
    of = dict(zip(amounts, found, strict=True))
    return [of.get(i, ()) for i in range(len(cells))]


def _titled_between(text: str, column_line: tuple[int, int], periods: list[Part],
                    labels: list[tuple[Part, ...]]) -> list[tuple[Part, ...]]:
    """`labels` with the titles printed after each period as columns of their own ("2023 2022 Change 2023 2022
    Change"): words (three letters or more), no period, number, unit ("$ million") or connective ("vs.")."""
    ends = [p.end for p in periods]
    starts = [p.start for p in periods[1:]] + [column_line[1]]
    titled: list[tuple[Part, ...]] = []
    for label, gap_start, gap_end in zip(labels, ends, starts, strict=True):
        titled.append(label)
        gap = text[gap_start:gap_end]
        title = gap.strip()
        if title and not _NON_PERIOD_NUMBER.search(title) and re.search(r"[A-Za-z]{3}", title) \
                and not _CONNECTIVE.fullmatch(title) and not _UNIT_WORD.search(title):
            lead = len(gap) - len(gap.lstrip())
            titled.append((Part(title, gap_start + lead, gap_start + lead + len(title)),))
    return titled


_UNIT_WORD = re.compile(r"\$|\b(?:millions?|thousands?|billions?|dollars)\b", re.IGNORECASE)
_CONNECTIVE = re.compile(r"(?:vs\.?|versus|to|and|through|[-–—])", re.IGNORECASE)


def _one_way(periods: list[Part]) -> bool:
    """The periods are years running one way ("2017 2016 2015"), none repeated, in each of the groups they repeat
    in ("2023 2022 2023 2022": the three and the six months): a column line read whole, not a broken one ("2022
    Q2'23 vs. Q2'22" under a "2023" the line above holds)."""
    years = [year_of(p.text) for p in periods if not compared(p.text)]
    block = years[:len(years) // _repeats(periods)]
    return None not in years and (block == sorted(set(block)) or block == sorted(set(block), reverse=True))


def _repeats(periods: list[Part]) -> int:
    """How many times the column line's periods repeat ("2023 2022 2023 2022": 2), 1 when they do not."""
    texts = [" ".join(p.text.split()) for p in periods]
    for k in range(len(texts) // 2, 1, -1):
        if len(texts) % k == 0 and texts == texts[:len(texts) // k] * k:
            return k
    return 1


# two periods printed as one column's title, the change between them: "2022 vs. 2021", "Q2'23 vs. Q2'22"
VERSUS = re.compile(r"\s+(?:vs\.?|versus|compared\s+(?:to|with))\s+", re.IGNORECASE)


_TRAILING_VERSUS = re.compile(r"\s+\S+\s+(?:vs\.?|versus)\s+\S+\s*$", re.IGNORECASE)


def compared(part_text: str) -> bool:
    """A column part naming two periods compared ("2022 vs. 2021"): a change column, no period's own."""
    return bool(VERSUS.search(part_text)) and len(PERIOD.findall(part_text)) == 2


def _compared(text: str, periods: list[Part]) -> list[Part]:
    """The column line's periods, two joined by "vs." (or "versus", "compared to") read as one part: the title of
    the column printing the change between them ("2022 2021 2020 2022 vs. 2021": four columns, not five)."""
    out: list[Part] = []
    for p in periods:
        if out and VERSUS.fullmatch(text[out[-1].end:p.start]) and not compared(out[-1].text):
            out[-1] = Part(text[out[-1].start:p.end], out[-1].start, p.end)
        else:
            out.append(p)
    return out


def number(cell: str) -> Decimal | None:
    """The value a cell prints: "(1,749)" -> -1749, "$ 5,791" -> 5791, "19.1 %" -> 19.1."""
    text = cell.replace("$", "").replace("%", "").replace(",", "").replace(" ", "")
    negative = text.startswith("(") or text.startswith("-") or text.startswith("−")
    text = text.strip("()-−")
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    return -value if negative else value


def year_of(part_text: str) -> str | None:
    """The four-digit year a column label names, if any ("FY22" -> "2022"); none for two periods compared ("2022
    vs. 2021": a change column)."""
    if compared(part_text):
        return None
    m = YEAR.search(part_text)
    if m:
        return m.group(0)
    m = re.search(r"(?:FY|Q[1-4])\s*'?(\d\d)\b", part_text, re.IGNORECASE)
    return "20" + m.group(1) if m else None


def _flat(text: str) -> str:
    return " ".join(text.split())


def table_line(row: TableRow, asked: tuple[int, ...], page: int | None = None) -> str | None:
    """The row as a reader needs it, from its verbatim parts: "Label, 2022: (1,749) (Millions)" for the asked
    period's cell, or every column's cell when no period is asked; None when the columns are not known. Headers
    read on the page before (`read_continued`) are said to be ("(column headers on page 11)", the row on `page`
    12)."""
    if row.label is None or not row.cells:
        return None
    label = _flat(row.label.text).rstrip(" :")
    if asked:
        body = "; ".join(f"{row.cells[i].column_text}: {_flat(row.cells[i].text)}" for i in asked)
        line = f"{label}, {body}"
    elif row.mapped:
        line = f"{label}, " + "; ".join(f"{c.column_text}: {_flat(c.text)}" for c in row.cells)
    else:
        return None
    if row.unit is not None and row.unit.text not in row.label.text:
        line += f" {_flat(row.unit.text)}"
    if any(p.pages_back for p in row.headers):
        line += f" (column headers on page {page - 1})" if page is not None else " (column headers on the page before)"
    return line


# a page's number at its foot: "12", "- 12 -", "Page 3 of 9", an annex's or schedule's "F-3", "S1-2", "A-12"
_PAGE_NUMBER = re.compile(r"(?:page\s+)?[-–—]?\s*(?:[A-Z]{1,2}\d?-)?\d{1,4}\s*[-–—]?(?:\s*(?:of|/)\s*\d{1,4})?",
                          re.IGNORECASE)


def read_continued(previous: str, text: str, start: int, end: int) -> TableRow | None:
    """The row text[start:end] of a table continued from the page before: a page's leading rows, printed under no
    column line of their own (walking up from the row meets only rows, labels and the page's running header),
    their table's column headers being the last printed on the page before (`previous`), at its foot or over its
    first rows. Read as one text, the page before then this page (the page before's page number, and this page's
    lines above its first row, blanked: no part of the table), when the headers' columns are as many as the row's
    cells; the parts read on the page before carry pages_back=1, their offsets into `previous`. None when the row
    has its own column line, or the page before gives it no columns."""
    if not headerless(text, start, end, read_row(text, start, end)):
        return None
    return continued_row(previous, text, start, end)


def continued_row(previous: str, text: str, start: int, end: int) -> TableRow | None:
    """`read_continued` of a row already found `headerless` (pages.read_table_row reads the row once, and reads the
    page before only for such a row)."""
    tail = len(previous)
    for s, e in _line_spans(previous + "\n", len(previous) + 1):  # the page before's page number, at its foot
        if s == e or _PAGE_NUMBER.fullmatch(previous[s:e]):
            tail = s
            continue
        break
    top = next((s for s, e in _line_spans(text, start)[::-1] if s < e and classify(text[s:e]) == "row"), start)
    joined = previous[:tail] + " " * (len(previous) - tail) + "\n" + " " * top + text[top:]
    shift = len(previous) + 1
    found = read_row(joined, start + shift, end + shift)
    if not found.mapped or not any(h.end <= len(previous) for h in found.headers):
        return None

    def moved(p: Part) -> Part:
        if p.start >= shift:
            return Part(p.text, p.start - shift, p.end - shift)
        if p.end <= len(previous):
            return Part(p.text, p.start, p.end, pages_back=1)
        raise ValueError("a part across the page break")

    try:
        cells = tuple(Cell(c.text, c.start - shift, c.end - shift, c.empty, tuple(moved(p) for p in c.column))
                      for c in found.cells)
        return TableRow(moved(found.label) if found.label else None, cells,
                        moved(found.unit) if found.unit else None, tuple(moved(h) for h in found.headers))
    except ValueError:
        return None


def headerless(text: str, start: int, end: int, row: TableRow) -> bool:
    """The row text[start:end] (`row`, read on its page) is one of its page's leading rows printed under no
    column line of its own: two cells or more and no columns, and walking up from it to the page's top meets no
    header line, no prose (`_leading`); not a line of periods, or a contents entry (a year among its cells)."""
    line = text[text.rfind("\n", 0, start) + 1:start] + text[start:end]
    return not (row.mapped or len(row.cells) < 2 or _is_column_line(line, _periods(line, 0, len(line)))
                or any(YEAR.fullmatch(c.text) for c in row.cells)) and _leading(text, start)


def _leading(text: str, start: int) -> bool:
    """The row at `start` is one of the page's leading rows: walking up from it to the page's top meets no column
    line, no group or unit line (headers of its own), no prose, only rows, labels and headings (a running header);
    and it is among the page's first MAX_LINES_UP lines."""
    block, lines = _page_lead(text)
    return start <= block and text.count("\n", 0, start) < min(lines, MAX_LINES_UP)


@functools.lru_cache(maxsize=32)
def _page_lead(text: str) -> tuple[int, int]:
    """(where the page's first header line or prose line starts, or the page's end; how many lines come before
    it): a page's leading rows are those above it (read once a page: each of its rows asks)."""
    pos = 0
    for n, line in enumerate(text.split("\n")):
        s = pos + len(line) - len(line.lstrip())
        pos += len(line) + 1
        line = line.strip()
        if not line:
            continue
        e = s + len(line)
        kind = classify(line)
        if _is_column_line(line, _periods(text, s, e)) or _GROUP.search(line) or UNIT.search(line) \
                or (kind != "row" and (_SENTENCE_END.search(line) or len(line) > 160 or _leads_in(line))):
            return s, n
    return len(text), text.count("\n") + 1
