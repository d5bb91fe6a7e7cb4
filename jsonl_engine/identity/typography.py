"""The title a page shows by its type: the largest text of a document's first page, read as one block (a title
set over two or three lines, and a subtitle set a little smaller right under it), the way a person's eye finds a
title before reading anything. Running headers (lines the next page repeats), page numbers, dates and rules are
never a title."""

from __future__ import annotations

import re
from collections.abc import Sequence

MIN_CONTRAST = 1.15  # a title is set this much larger than the page's body text, or there is no typographic title
SUBTITLE = 0.7       # a line right under the title set at least this share of its size belongs to it
MAX_LINES = 5
MAX_CHARS = 200
HEAD_LINES = 60      # of the first page

_NOT_TITLE = re.compile(
    r"(?i)^\W*(?:page\s+\d+(?:\s+of\s+\d+)?|\d+|[ivxlc]+|confidential|draft|table\s+of\s+contents|contents)\W*$"
    r"|^[\W_]+$|https?://|www\.|@\w+\.\w")
_LETTERS = re.compile(r"[^\W\d_]")
_YEARS = re.compile(r"(?:FY\s*)?\d{4}(?:\s*[–—-]\s*\d{2,4})?")

# (text, size in points, bold) of a line, as the PDF extractor reads it
Line = tuple[str, float, bool]


def _candidate(text: str) -> bool:
    letters = len(_LETTERS.findall(text))
    return 3 <= len(text) <= 150 and letters >= 3 and letters >= 0.4 * len(text.replace(" ", "")) \
        and not _NOT_TITLE.search(text)


def _body_size(lines: Sequence[Line]) -> float:
    """The size most of the page's characters are set in."""
    weight: dict[float, int] = {}
    for text, size, _bold in lines:
        weight[size] = weight.get(size, 0) + len(text)
    return max(weight.items(), key=lambda kv: (kv[1], -kv[0]))[0] if weight else 0.0


def headline(first: Sequence[Line], second: Sequence[Line] = ()) -> str:
    """The typographic title of a first page (`second`: the next page's lines, to tell running headers), or ""
    when nothing on it is set notably larger than its body text."""
    lines = [(" ".join(t.split()), s, b) for t, s, b in first[:HEAD_LINES]]
    body = _body_size([*lines, *second[:HEAD_LINES]])  # a cover page's own body may be its title
    # a running header repeats on the next page in body type; a title the next page repeats in large type stays
    repeated = {" ".join(t.split()).lower() for t, s, _b in second if s < body * MIN_CONTRAST}
    usable = [i for i, (t, _s, _b) in enumerate(lines) if _candidate(t) and t.lower() not in repeated]
    if not usable or body <= 0:
        return ""
    top = max(lines[i][1] for i in usable)
    if top < body * MIN_CONTRAST:
        return ""
    sizes = sorted({lines[i][1] for i in usable if lines[i][1] >= body * MIN_CONTRAST}, reverse=True)
    blocks = [_block(lines, next(i for i in usable if lines[i][1] == size), body, repeated) for size in sizes]
    blocks = [b for b in blocks if b]
    # the largest block, unless it only names an organisation and a block of words follows (a letterhead)
    for block in blocks:
        if not (_ORGANISATION.search(block) and len(block.split()) <= 25) or block is blocks[-1]:
            return block
    return ""


_ORGANISATION = re.compile(r"(?i)^(?:the\s+)?(?:[\w.,'’&()“”\"-]+\s+){0,12}?(?:institute|university|hospital|school|"
                           r"faculty|college|ministry|department|program(?:me)?\s+of|foundation|trust|academy|centre|center)\b"
                           r"(?!.*\b(?:study|trial|protocol|report|plan|review|analysis|evaluation)\b)")


def _block(lines: list[Line], start: int, body: float, repeated: set[str]) -> str:
    """The title block starting at line `start`: the lines set in its size, then a subtitle set a little smaller."""
    text0, top, _bold = lines[start]
    if text0.endswith(":"):  # a label ("Title:") set as large as what it labels
        return ""
    block = [text0]
    size = top
    for text, s, _b in lines[start + 1: start + MAX_LINES]:
        same = abs(s - size) <= 0.5
        smaller = s >= top * SUBTITLE and s >= body * MIN_CONTRAST and s < size - 0.5
        years = bool(_YEARS.fullmatch(text))  # "2022–2026" under "Strategic Plan FY"
        if not (same or smaller) or not (_candidate(text) or years) or text.lower() in repeated \
                or text.endswith(":"):
            break
        if sum(map(len, block)) + len(text) > MAX_CHARS:
            break
        block.append(text)
        size = s
    return " ".join(block)
