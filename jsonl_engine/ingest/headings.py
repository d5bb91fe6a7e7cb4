"""Heading detection on extracted PDF lines: typography (size, weight) plus the structure of filings.

Each heading gets a rank (smaller = higher in the tree): PART < Item < Note < typographic levels by size.
Repeated page headers/footers, page numbers and table-of-contents pages never yield headings.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter, defaultdict
from dataclasses import dataclass

from jsonl_engine.ingest.model import Line, PageData
from jsonl_engine.ingest.normalize import collapse_letterspacing, collapse_ws

RANK_PART, RANK_ITEM, RANK_NOTE, RANK_TYPO = 1, 2, 3, 4

_PART = re.compile(r"^PART\s+(IV|I{1,3}|V|[1-4])(?![A-Za-z0-9])\s*(?:[.:\-–—]\s*|\s+|$)(.*)$", re.I)
_ITEM = re.compile(r"^ITEMS?\s+(\d{1,2})(?:\.(\d{2}))?\s*([A-Ca-c])?(?![A-Za-z0-9])\s*[.:\-–—]?\s*(.*)$", re.I)
_NOTE = re.compile(r"^NOTE\s+(\d{1,2})(?![0-9])\s*(?:[.:\-–—]\s*|\s+(?=[A-Z])|$)(.*)$", re.I)
_NUMBERED = re.compile(r"^(\d{1,2}(?:\.\d{1,2}){0,3})\.?\s+([A-Z].*)$")
_PAGE_NUMBER = re.compile(
    r"^(?:page\s+)?[-–—]?\s*(?:\d{1,4}|[ivxlc]{1,6})\s*[-–—]?(?:\s*(?:of|/)\s*\d{1,4})?$", re.I)
_TOC_LINE = re.compile(r"^(?:part|item|note)\b.*\s\d{1,3}$", re.I)
_TOC_ENTRY = re.compile(r"(?:[A-Za-z)].*\s|^)\d{1,3}$|(?:\.\s?){4,}\s*\d{1,4}$")
# "Title  12": the letter is asserted by a lookahead, so a long line does not backtrack quadratically
_TITLE_PAGE = re.compile(r"^(?:\d{1,2}[A-C]?\.?\s+)?(?=[^\d$%]*[A-Za-z])[^\d$%]*\s\d{1,3}$")
_LEADER = re.compile(r"(?:\.\s?){4,}\s*\d{1,4}$")
_NUMBERS = re.compile(r"(?<![\w.])\(?\$?\d[\d,]*(?:\.\d+)?\)?%?(?![\w])")
_ROMAN = {"I": 1, "II": 2, "III": 3, "IV": 4, "V": 5, "1": 1, "2": 2, "3": 3, "4": 4}
_CONTINUATION_END = re.compile(r"(?:,|;|\band|\bor|\bof|\bthe|\bto|\bfor|\bin|\bwith|-)$", re.I)

MAX_HEADING_CHARS = 160
MAX_HEADING_WORDS = 22
MAX_RUN_LINES = 3


@dataclass(slots=True)
class Heading:
    page: int  # 1-based
    start: int  # offset of the heading's first line in that page's text
    title: str
    rank: float
    kind: str  # part | item | note | numbered | typo | outline | transcript


def body_size(pages: list[PageData]) -> float:
    weights: Counter[float] = Counter()
    for page in pages:
        for line in page.lines:
            weights[line.size] += line.end - line.start
    return weights.most_common(1)[0][0] if weights else 10.0


_DIGITS = re.compile(r"\d+")


def _key(text: str) -> str:
    return _DIGITS.sub("#", collapse_ws(text).lower())


def _in_margin(page: PageData, line: Line) -> bool:
    return line.top < 0.09 * page.height or line.top > 0.91 * page.height


def boilerplate(pages: list[PageData]) -> tuple[set[str], dict[str, int]]:
    """Keys of lines repeated in the top or bottom margin: (always suppressed, first page where allowed)."""
    seen: dict[str, set[int]] = defaultdict(set)
    for page in pages:
        for line in page.lines:
            if _in_margin(page, line):
                seen[_key(page.text[line.start:line.end])].add(page.number)
    always = {k for k, v in seen.items() if len(v) >= 3 and len(v) >= 0.5 * len(pages)}
    first = {k: min(v) for k, v in seen.items() if len(v) >= 3 and k not in always}
    return always, first


def is_toc_page(page: PageData) -> bool:
    """A contents page: filing items with page numbers, dot leaders, or mostly "Title  12" lines."""
    toc = leaders = entries = 0
    for line in page.lines:
        text = page.text[line.start:line.end]
        if text[:1] in "PpIiNn" and _TOC_LINE.match(text):
            toc += 1
        elif (". ." in text or ".." in text) and _LEADER.search(text):
            leaders += 1
        if text[-1:].isdigit() and _TITLE_PAGE.match(text):
            entries += 1
    return toc >= 3 or leaders >= 5 or (entries >= 6 and entries >= 0.3 * len(page.lines))


_STRUCTURAL_FIRST = "PpIiNn\u0130\u0131"  # what the first letter of PART, ITEM, NOTE matches under re.I


def structural(title: str) -> tuple[str, tuple] | None:
    """("part", (n,)) / ("item", (n, sub, letter)) / ("note", (n,)) / ("numbered", parts) or None."""
    first = title[:1]
    if not first or first not in _STRUCTURAL_FIRST and not first.isdigit():
        return None
    if m := _PART.match(title):
        rest = m.group(2)
        if not rest or rest[:1].isupper() or rest[:1] in "—–-":
            return "part", (_ROMAN[m.group(1).upper()],)
        return None
    if m := _ITEM.match(title):  # 10-K/10-Q "Item 7A", 8-K "Item 2.02"
        rest = m.group(4)
        if not rest or not rest[:1].islower():
            return "item", (int(m.group(1)), int(m.group(2) or 0), (m.group(3) or "").upper())
        return None
    if m := _NOTE.match(title):
        rest = m.group(2)
        if not rest or rest[:1].isupper() or rest[:1] in "—–-“\"'(":
            return "note", (int(m.group(1)),)
        return None
    if m := _NUMBERED.match(title):
        return "numbered", tuple(int(x) for x in m.group(1).split("."))
    return None


def _looks_like_title(text: str) -> bool:
    if not 2 <= len(text) <= MAX_HEADING_CHARS or len(text.split()) > MAX_HEADING_WORDS:
        return False
    letters = sum(ch.isalpha() for ch in text)
    if letters < 2 or letters < 0.5 * len(text.replace(" ", "")):
        return False
    first = next((ch for ch in text if ch.isalnum()), "")
    if not (first.isupper() or first.isdigit()):
        return False
    if len(_NUMBERS.findall(text)) >= 2 and not structural(text):
        return False
    return not _PAGE_NUMBER.match(text)


def detect(pages: list[PageData]) -> list[Heading]:
    """Headings in reading order, from typography and filing structure."""
    if not pages:
        return []
    body = body_size(pages)
    always, first_only = boilerplate(pages)
    raw: list[tuple[int, int, str, float, bool]] = []  # page, start, title, size, emphasised
    for page in pages:
        toc = is_toc_page(page)
        tops = sorted(line.top for line in page.lines)
        run: list[Line] = []
        content = [ln for ln in page.lines if not _is_boilerplate(page, ln, always, first_only)]
        for i, line in enumerate(content):
            text = page.text[line.start:line.end].strip()
            if toc and _listed(page, content, i):
                if run:
                    raw.extend(_from_run(page, run, content))
                run = []
                continue
            larger = line.size >= body * 1.12 and line.size - body >= 0.8
            emph = (larger or (line.bold and line.size >= body * 0.9)) and _alone_on_row(tops, line.top)
            kind = structural(text) if len(text) <= MAX_HEADING_CHARS else None
            major = kind is not None and kind[0] in ("part", "item", "note")
            if emph and run and not major and _continues(run, line):
                run.append(line)
                continue
            if run:
                raw.extend(_from_run(page, run, content))
            run = [line] if emph else []
            if not emph and major and kind[0] != "note" and len(text) <= 100 and _looks_like_title(text) \
                    and _alone_on_row(tops, line.top):
                raw.append((page.number, 0 if line is content[0] else line.start, text, line.size, False))
        if run:
            raw.extend(_from_run(page, run, content))
    levels = sorted({size for _p, _s, _t, size, emph in raw if emph and size >= body * 1.12}, reverse=True)
    return _assign_ranks(raw, levels)


def _listed(page: PageData, content: list[Line], i: int) -> bool:
    """On a table-of-contents page: this line is an entry, or introduces entries (a PART above its Items)."""
    text = page.text[content[i].start:content[i].end].strip()
    if _TOC_ENTRY.search(text):
        return True
    if i + 1 >= len(content):
        return False
    following = page.text[content[i + 1].start:content[i + 1].end].strip()
    kind = structural(following)
    return bool(_TOC_ENTRY.search(following)) or (kind is not None and kind[0] in ("part", "item", "note"))


def _is_boilerplate(page: PageData, line: Line, always: set[str], first_only: dict[str, int]) -> bool:
    text = page.text[line.start:line.end]
    if len(text) <= 24 and _PAGE_NUMBER.match(text):
        return True
    if not _in_margin(page, line):
        return False
    key = _key(text)
    return key in always or (key in first_only and first_only[key] != page.number)


def _alone_on_row(tops: list[float], top: float) -> bool:
    """False when another line starts at the same height (a table row or a second column)."""
    i = bisect.bisect_left(tops, top - 1.5)
    return not (i + 1 < len(tops) and tops[i + 1] <= top + 1.5)


def _continues(run: list[Line], line: Line) -> bool:
    last = run[-1]
    gap = line.top - last.top
    return abs(last.size - line.size) < 0.3 and last.bold == line.bold and 0 < gap <= 1.7 * max(line.size, 1.0)


def _from_run(page: PageData, run: list[Line], content: list[Line]) -> list[tuple[int, int, str, float, bool]]:
    """A heading from consecutive emphasised lines; one that opens its page also takes the page's header.
    More than MAX_RUN_LINES such lines are an emphasised paragraph or a table, not a heading."""
    if len(run) > MAX_RUN_LINES:
        first = page.text[run[0].start:run[0].end]
        kind = structural(first)
        if kind is None or kind[0] not in ("part", "item", "note"):
            return []
        run = run[:1]  # a filing heading followed by emphasised text: the heading alone
    title = collapse_ws(" ".join(ln.collapsed or collapse_letterspacing(page.text[ln.start:ln.end]) for ln in run))
    if not _looks_like_title(title) or _CONTINUATION_END.search(title):
        return []
    if title.endswith(".") and len(title.split()) >= 7 and structural(title) is None:
        return []  # an emphasised sentence (a note under a table), not a title
    return [(page.number, 0 if run[0] is content[0] else run[0].start, title, run[0].size, True)]


def _assign_ranks(raw: list[tuple[int, int, str, float, bool]], levels: list[float]) -> list[Heading]:
    out: list[Heading] = []
    seen_parts: set[int] = set()
    last_item: tuple | None = None
    last_note = 0
    for page, start, title, size, emph in raw:
        kind = structural(title)
        if kind and kind[0] == "part":
            if seen_parts and kind[1][0] <= max(seen_parts):
                continue
            seen_parts.add(kind[1][0])
            last_item, last_note = None, 0
            out.append(Heading(page, start, title, RANK_PART, "part"))
        elif kind and kind[0] == "item":
            if last_item is not None and kind[1] <= last_item:
                continue
            last_item = kind[1]
            out.append(Heading(page, start, title, RANK_ITEM, "item"))
        elif kind and kind[0] == "note" and emph:
            if kind[1][0] <= last_note:
                continue
            last_note = kind[1][0]
            out.append(Heading(page, start, title, RANK_NOTE, "note"))
        elif emph:
            if kind and kind[0] == "numbered":
                rank = RANK_TYPO + 0.5 + 0.1 * (len(kind[1]) - 1)
                out.append(Heading(page, start, title, rank, "numbered"))
                continue
            level = levels.index(size) if size in levels else len(levels)
            out.append(Heading(page, start, title, RANK_TYPO + level, "typo"))
    return out
