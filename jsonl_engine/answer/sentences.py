"""Split section text into citable units with exact offsets: prose sentences, table rows, bullet items.

PDF text of filings wraps paragraphs at the line end and puts each table row on one line
("Net sales $ 34,229 $ 35,355 $ 32,184"), so lines are classified first (blank, heading, table row,
bullet, prose), prose lines are joined into paragraphs, and paragraphs are cut into sentences.
`text[seg.start:seg.end]` is always the unit verbatim (stripped of surrounding whitespace).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Literal

from jsonl_engine.identity.dates import MONTH_WORDS

Kind = Literal["sentence", "row", "bullet", "header", "heading"]

_BULLET = re.compile(r"^(?:[•●◦▪■□◆➢✓‣⁃·*\-–—¨]|\(?(?:[a-zA-Z]|[ivxIVX]{1,4}|\d{1,2})[.)])\s+\S")
# a cell: a number (its "$", "%", parentheses), a dash, or "NM"/"N/A" (a change "not meaningful", no value)
_CELL = re.compile(r"^(?:\$|%|[-–—]+|NM|nm|[Nn]/[MmAa]|\(?[-–—]?\$?\d[\d,]*(?:\.\d+)?\)?%?\)?|\(?\d[\d,]*(?:\.\d+)?%?\)?)$")
_NUMBER = re.compile(r"\d")
_NOT_WORDS = re.compile(r"[\W\d_]*")  # page numbers, "$ %", "---": never part of a sentence
_RULE = re.compile(r"[|:\-–—_=+\s]+")
_YEAR = re.compile(r"^(?:FY|fy|Q[1-4])?'?(?:19|20)\d\d$")
_ENDS_SENTENCE = re.compile(r"[.!?][\"'”’)\]]*$")
# A sentence ends at . ! ? (plus closing quotes/brackets) followed by space and a likely sentence start.
_BOUNDARY = re.compile(r"[.!?][\"'”’)\]]*(?=\s+[\"'“‘(\[$]?[A-Z0-9•])")
_ABBREVIATIONS = frozenset({
    "inc", "co", "corp", "ltd", "llc", "plc", "no", "nos", "mr", "mrs", "ms", "dr", "st", "jr", "sr", "vs",
    "approx", "fig", "figs", "ref", "refs", "sec", "art", "u.s", "u.k", "e.g", "i.e", "jan", "feb", "mar",
    "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "n.a", "s.a", "l.p", "p.l.c", "est",
    "dept", "div", "govt", "intl", "mfg", "pp", "ex",
})
MAX_SENTENCE_CHARS = 1200
# a label on its own line over its value ("Primary Endpoint:", "Probable cause:"): up to 6 words and a colon
_LABEL_LINE = re.compile(r"[A-Z][^:.;!?\n]{0,60}:")


@dataclass(frozen=True, slots=True)
class Segment:
    start: int
    end: int
    kind: Kind
    header: tuple[int, int] | None = None  # rows: the span of the table's header row (column titles)
    lead: tuple[int, int] | None = None  # rows: the span of the last sentence before the table
    group: tuple[int, int] | None = None  # rows: the span of the line titling the rows under it ("Revenues:")


def _lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of every line's content without its surrounding whitespace; blank lines give start == end."""
    spans, pos = [], 0
    for m in [*re.finditer(r"\r\n|\r|\n", text), None]:
        stop = m.start() if m else len(text)
        line = text[pos:stop]
        lead = len(line) - len(line.lstrip())
        spans.append((pos + lead, pos + max(lead, len(line.rstrip()))))
        if m:
            pos = m.end()
    return spans


def _trailing_cells(tokens: list[str]) -> int:
    """How many tokens at the end of a line look like table cells (numbers, $, %, dashes)."""
    count = 0
    for tok in reversed(tokens):
        if not _CELL.match(tok):
            break
        count += 1
    return count


def _title_like(words: list[str]) -> bool:
    """Short, or mostly capitalised words: "Cost of Sales:", not "The payments are expected as follows:"."""
    if len(words) <= 6:
        return True
    long = [w for w in words if sum(c.isalpha() for c in w) >= 4]
    return not long or sum(w.lstrip("(\"'“‘")[:1].isupper() for w in long) >= 0.6 * len(long)


def classify(line: str) -> Kind | None:
    """Kind of one stripped line: None for prose (or blank), else row/header/bullet/heading."""
    if not line:
        return None
    if _RULE.fullmatch(line):
        return "heading"  # a markdown table rule "|---|:--:|" or a drawn line: context at most
    tokens = [t for t in line.split() if t != "|"] if line.startswith("|") else line.split()
    if not tokens:
        return "heading"
    cells = _trailing_cells(tokens)
    numbers = [t for t in tokens[len(tokens) - cells:] if _NUMBER.search(t)] if cells else []
    years = [t for t in tokens if _YEAR.match(t.strip("(),"))]
    if len(years) >= 2 and len(line) <= 120 and not _ENDS_SENTENCE.search(line) \
            and not any(_NUMBER.search(t) and not _YEAR.match(t.strip("(),")) for t in tokens):
        return "header"  # "(Millions) 2022 2021 2020", "(Percent of net sales) 2022 2021 Change"
    if numbers and cells == 1 and len(tokens) >= 2 and tokens[-2].lower().rstrip(".,") in MONTH_WORDS:
        numbers = []  # "Years ended December 31": a date, not a cell
    if numbers:
        label = tokens[:len(tokens) - cells]
        if not label:
            return "heading" if len(tokens) == 1 else "row"  # a lone number: a page number or stray cell
        if _numbered_title(tokens, cells, label):
            return "heading"  # a running header with its page number: "Management's Discussion ... 14"
        if (len(numbers) >= 2 or cells >= 2 or len(line) <= 90) \
                and (not _ENDS_SENTENCE.search(line) or re.search(r"\d\.?$", line)):
            return "row"
    if _BULLET.match(line) and not _YEAR.match(tokens[0].rstrip(".)")):
        return "bullet"
    if len(line) <= 80 and not re.search(r"[.,;!?]$", line) and not line[0].islower() and _title_like(tokens):
        return "heading"
    return None


def _numbered_title(tokens: list[str], cells: int, label: list[str]) -> bool:
    """A title followed by one number of up to three digits: a running header with its page number, or (among a
    table's rows) a row counting something ("Brand factory stores 196")."""
    return cells == 1 and bool(re.fullmatch(r"\d{1,3}", tokens[-1])) and len(label) >= 4 and _title_like(label)


def _sentences(text: str, start: int, end: int, kind: Kind) -> list[Segment]:
    """Cut the paragraph text[start:end] at sentence boundaries."""
    out: list[Segment] = []
    pos = start
    block = text[start:end]
    for m in _BOUNDARY.finditer(block):
        cut = start + m.end()
        word = re.search(r"(\S+)$", text[pos:start + m.start() + 1])
        token = word.group(1).lower().rstrip(".!?\"'”’)]").lstrip("(\"'“‘") if word else ""
        if token in _ABBREVIATIONS or re.fullmatch(r"[a-z]", token) or re.fullmatch(r"(?:[a-z]\.)+[a-z]", token):
            continue
        if re.fullmatch(r"\d+", token) and text[start + m.start()] == "." and cut - pos < 6:
            continue  # "1." list numbering
        out.append(Segment(pos, cut, kind))
        pos = cut
        while pos < end and text[pos].isspace():
            pos += 1
        kind = "sentence" if kind == "bullet" else kind
    if pos < end:
        out.append(Segment(pos, end, kind))
    return out


def segment(text: str) -> list[Segment]:
    """All units of `text` in source order. Headings and table headers are returned too (kinds
    "heading"/"header") so callers can use them as context; they are rarely the answer themselves.

    A row carries `header`, its table's header row (or the heading line right above the table: column
    titles), and `lead`, the last sentence before the table ("... are expected to be paid as follows:").
    A short label line ending in a colon right above prose ("Primary Endpoint:") starts that prose's first
    sentence: the statement and its label are one unit; a line ending in a word that needs its continuation
    ("... attributable to shareowners of") right above a table row is the first line of the row's label.
    A row also carries `group`, the line titling the rows under it inside its table (`_group_line`: "Revenues:",
    "Units shipped: (2)", or a title right under the column titles, "Sales to customers"): filings label those
    rows relative to it ("Products", "Total"), so the row's label is read with it. The group ends with prose, a
    new table header, the next group line, or a "Total ..." row that is not its first row.
    """
    segments: list[Segment] = []
    para: tuple[int, int, Kind] | None = None
    header: tuple[int, int] | None = None
    lead: tuple[int, int] | None = None
    previous: Kind | None = None  # kind of the previous non-blank line (None: prose)
    lines = _lines(text)

    def flush() -> None:
        nonlocal para, lead
        if para is not None:
            found = _sentences(text, *para)
            segments.extend(found)
            if found:
                lead = (found[-1].start, found[-1].end)
            para = None

    for i, (s, e) in enumerate(lines):
        line = text[s:e]
        if not line:
            flush()
            continue
        kind = _kind_here(text, lines, i, segments, previous, para)
        if kind is None:
            if para is None:
                header = None  # prose ends the table whose header rows describe
                above = text[segments[-1].start:segments[-1].end] if segments else ""
                if previous == "heading" and _LABEL_LINE.fullmatch(above) and len(above.split()) <= 6:
                    label = segments.pop()  # "Primary Endpoint:" over its value: one labelled statement
                    para = (label.start, e, "sentence")
                    previous = kind
                    continue
            para = (para[0], e, para[2]) if para is not None else (s, e, "sentence")
        else:
            flush()
            if kind == "row" and previous == "heading" and segments and segments[-1].kind == "heading" \
                    and _JOINER.search(text[segments[-1].start:segments[-1].end]):
                # "Net income attributable to shareowners of" over "The Acme Company 1,483 3,448": one row, one label
                s, previous = segments.pop().start, "row"
            para, header = _unit_line(text, segments, s, e, kind, header, lead, previous)
        previous = kind
    flush()
    return _grouped(text, segments)


_TOTAL = re.compile(r"(?i)total\b")
_ONE_MARK = re.compile(r"\s*\((?:\d|[a-z])\)")  # one footnote mark, not a figure: "(1)", "(a)"; "(91) (80)" are figures
_MARKS = re.compile(r"(?:\s*\((?:\d{1,2}|[a-z])\))+$")  # footnote marks after a label: "(5)", "(a)(b)"


def _grouped(text: str, segments: list[Segment]) -> list[Segment]:
    """`segments`, each row carrying the group line in force (`segment`'s docstring): set by a group line
    (`_group_line`), ended by prose, a table header, the next group line or a "Total ..." row after its first."""
    out: list[Segment] = []
    group: tuple[int, int] | None = None
    grouped, table = 0, False  # rows under the group line; a table's header or row came since the last prose
    for n, seg in enumerate(segments):
        body = text[seg.start:seg.end]
        if seg.kind in ("sentence", "bullet", "header"):
            group, table = None, seg.kind == "header"
        elif seg.kind == "heading":
            # over a row with a label of its own: a row printing only figures ("(f) $ (229) $ (66)") or going on in
            # lower case ("share) 1.20 1.10") takes the line above as (the start of) its label
            over_row = table and n + 1 < len(segments) and segments[n + 1].kind == "row" \
                and text[segments[n + 1].start].isupper()
            if _group_line(body, over_row):
                group, grouped = (seg.start, seg.end), 0
        else:
            table = True
            if group is not None:
                seg = dataclasses.replace(seg, group=group)
                grouped += 1
                if grouped > 1 and _TOTAL.match(body):
                    group = None  # "Total revenues" closes the rows under "Revenues:"
        out.append(seg)
    return out


def _group_line(line: str, over_row: bool) -> bool:
    """A line titling the rows under it: words without figures (footnote marks aside) ending in a colon
    ("Revenues:", "Units shipped: (5)"), or (`over_row`: a heading right over a labelled row of a table whose column
    titles came before) a title in sentence case ("Sales to customers"; not a column's title, "Second Quarter",
    nor "(1)", nor a label wrapped over two lines, "... attributable to")."""
    bare = _MARKS.sub("", line).strip()
    if not bare or not bare[0].isupper() or not (bare[-1].isalpha() or bare[-1] in ":)") \
            or _NUMBER.search(bare) or len(bare) > 80 or len(bare.split()) > 10:
        return False
    if bare.endswith(":"):
        return bool(re.search(r"[A-Za-z]{2,}", bare))
    if _ONE_MARK.fullmatch(line.strip()[len(bare):]) and len(bare.split()) <= 3 and bare[-1].isalpha():
        return True  # "Widgets (1)": a name with only its footnote mark, the rows under it its parts
    return over_row and len(bare.split()) >= 2 and not _ENDS_SENTENCE.search(bare) and not _JOINER.search(bare) \
        and any(w[0].islower() and len(w) >= 3 for w in bare.split()[1:])


def _kind_here(text: str, lines: list[tuple[int, int]], i: int, segments: list[Segment], previous: Kind | None,
               para: tuple[int, int, Kind] | None) -> Kind | None:
    """Line `i`'s kind (`classify`) among its neighbours."""
    line = text[slice(*lines[i])]
    kind = classify(line)
    if kind == "heading" and _counted_row(line) and (_row_beside(text, segments[-1:], previous)
                                                      or _row_beside(text, _next_line(lines, i), None)):
        kind = "row"  # "Brand factory stores 196" over "Other stores (including outlets) 29": a table's count
    if kind == "heading" and para is not None and _wrapped(text, para, lines, i):
        kind = None  # a short wrapped line in the middle of a sentence, not a heading
    if kind == "row" and _group_line(line, False):
        kind = "heading"  # "Units shipped: (2)": its mark is no cell, the line titles the rows under it
    return kind


def _counted_row(line: str) -> bool:
    """A line read as a running header with its page number (`_numbered_title`), not numbered as a section is
    ("4. STUDY DESIGN AND ENDPOINTS 13": a table of contents' entry)."""
    tokens = line.split()
    cells = _trailing_cells(tokens)
    return _numbered_title(tokens, cells, tokens[:len(tokens) - cells]) and not _SECTION_NUMBER.match(tokens[0])


def _next_line(lines: list[tuple[int, int]], i: int) -> list[Segment]:
    """The next non-blank line after line `i`, as a one-item list of an unclassified segment (none at the end)."""
    return [Segment(s, e, "row") for s, e in lines[i + 1:] if e > s][:1]


def _row_beside(text: str, beside: list[Segment], kind: Kind | None) -> bool:
    """The line beside (a segment already classified `kind`, or a line still to classify: `kind` None) is a table
    row that is no title with one number itself: a table of contents' entries are all such titles ("4.1 Primary
    Endpoint 13")."""
    if not beside:
        return False
    line = text[beside[0].start:beside[0].end]
    return (kind if kind is not None else classify(line)) == "row" and not _counted_row(line) \
        and not _SECTION_NUMBER.match(line)


_SECTION_NUMBER = re.compile(r"\d+(?:\.\d+)*\.?(?:\s|$)")  # "4. ", "3.2.1 "
# the last word of a line that needs its continuation: a table row's label wrapped over two lines
_JOINER = re.compile(r"(?i)\b(?:of|and|to|for|on|in|from|by|with|at|the|attributable)$")


def _wrapped(text: str, para: tuple[int, int, Kind], lines: list[tuple[int, int]], i: int) -> bool:
    """Line `i`, classified a heading, goes on the open paragraph's sentence: that sentence has not ended, the
    line holds words and the next line starts lower-case."""
    if _ENDS_SENTENCE.search(text[para[0]:para[1]]) or _NOT_WORDS.fullmatch(text[slice(*lines[i])]):
        return False
    nxt = text[slice(*lines[i + 1])] if i + 1 < len(lines) else ""
    return nxt[:1].islower()


def joined_rows(text: str, s: int, e: int) -> list[tuple[int, int, Kind]]:
    """The rows of one line of table text, when text extraction joined several ("Revenues $ 31,615 $ 29,697
    Cost of revenues 19,168 17,332 Operating income 5,632 6,194"): each a label and as many figures, two or more,
    as the others (a line of periods first is the table's header; words after the last figures, "Other income
    (expense):", a heading); else the whole line, one row."""
    toks = [(s + m.start(), s + m.end()) for m in re.finditer(r"\S+", text[s:e])]
    years = 0  # a line opening with the table's periods ("2022 2021 2020 Cash flows ...: Net income $ 4,491 ...")
    while years < len(toks) and _YEAR.match(text[slice(*toks[years])]):
        years += 1
    head = [(toks[0][0], toks[years - 1][1], "header")] if years >= 2 else []
    toks = toks[years:] if head else toks
    groups: list[list[int]] = []  # [label start, cells start, end, figures]
    for ts, te in toks:
        cell = bool(_CELL.match(text[ts:te]))
        if groups and not cell and groups[-1][1] < groups[-1][2] and re.fullmatch(r"[-–—]+", text[groups[-1][1]:groups[-1][2]]):
            groups[-1][1] = groups[-1][2] = te  # "Cash Flows - Investing Activities": a lone dash inside a label
            groups[-1][3] = 0
            continue
        if not groups or (not cell and groups[-1][1] < groups[-1][2]):
            if cell:
                return [(s, e, "row")]  # a line opening with figures: no label to cut at
            groups.append([ts, te, te, 0])  # a new label (after the previous group's figures)
        elif cell:
            if groups[-1][1] == groups[-1][2]:
                groups[-1][1] = ts  # the label's figures start
            groups[-1][2] = te
            groups[-1][3] += bool(_NUMBER.search(text[ts:te])) or bool(re.fullmatch(r"[-–—]+", text[ts:te]))
        else:
            groups[-1][1] = groups[-1][2] = te  # the label goes on
    tail = groups.pop() if groups and groups[-1][3] == 0 else None
    counts = {g[3] for g in groups}
    if len(groups) < 2 - bool(head) or len(counts) != 1 or min(counts) < 2 \
            or not all(re.search(r"[A-Za-z]", text[g[0]:g[1]]) for g in groups):
        return [(s, e, "row")]
    out: list[tuple[int, int, Kind]] = head + [(g[0], g[2], classify(text[g[0]:g[2]]) or "row") for g in groups]
    if tail is not None:
        out.append((tail[0], e, classify(text[tail[0]:e]) or "heading"))
    return [(ps, pe, kind if kind in ("row", "header") else "heading") for ps, pe, kind in out]


def _unit_line(text: str, segments: list[Segment], s: int, e: int, kind: Kind, header: tuple[int, int] | None,
               lead: tuple[int, int] | None, previous: Kind | None
               ) -> tuple[tuple[int, int, Kind] | None, tuple[int, int] | None]:
    """A line that is not prose, once the paragraph before it is flushed: a bullet opens a paragraph, a table
    header, row or heading is appended to `segments`. Returns the paragraph opened, if any, and the table
    header in force."""
    if kind == "bullet":
        return (s, e, "bullet"), header
    if kind == "header":
        header = (s, e)
        segments.append(Segment(s, e, "header"))
    elif kind == "row":
        if header is None and previous == "heading":
            header = (segments[-1].start, segments[-1].end)  # column titles above the first row
        for ps, pe, piece in joined_rows(text, s, e):
            if piece == "header":
                header = (ps, pe)
            segments.append(Segment(ps, pe, piece, header if piece == "row" else None,
                                    lead if piece == "row" else None))
    else:
        segments.append(Segment(s, e, "heading"))
    return None, header
