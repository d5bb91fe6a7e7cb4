"""Span extraction (one LLM call per section asks for the shortest verbatim quote that answers the query)
and the quote locator shared with kb.synthesize and citations.

A located quote is returned as the section's own text at the located offsets, so for a verified span
`section_text[quote_start:quote_end] == quote` always holds, whichever locator pass found it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from jsonl_engine.errors import LLMError
from jsonl_engine.llm.usage import Usage, estimate_tokens, truncate_to_tokens

if TYPE_CHECKING:
    from jsonl_engine.llm.gateway import Gateway

log = logging.getLogger(__name__)

# -- the locator ---------------------------------------------------------------------------------------

_TYPOGRAPHIC = {
    **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032\u00b4", "'"),
    **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb", '"'),
    **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d", "-"),
    **dict.fromkeys("\u00ad\u200b\u200c\u200d\u2060\ufeff", ""),
}
_ELLIPSIS = re.compile(r"\s*(?:\.\s*\.\s*\.|\u2026)\s*")
_EDGE_ELLIPSIS = re.compile(r"^\s*(?:\.\s*\.\s*\.|\u2026)\s*|\s*(?:\.\s*\.\s*\.|\u2026)\s*$")
_LOOSE_DROP = frozenset("-'\"`*")
_TOKEN = re.compile(r"\S+")
_LOOSE_ASCII = re.compile(r"[-'\"`*\x00-\x1f\x7f]")
_BULLETS = frozenset("\u2022\u2023\u2043\u2219\u25aa\u25ab\u25cf\u25e6\u25a0\u25a1\u00b7")
_QUOTE_MARKS = "\"'\u2018\u2019\u201c\u201d\u00ab\u00bb"


def locate_quote(section_text: str, quote: str) -> tuple[int, int] | None:
    """Offsets `(start, end)` of `quote` in `section_text` (first occurrence), or None.

    Pass 1: exact substring. Pass 2: whitespace runs collapsed and typography folded (curly quotes,
    dashes, ligatures, soft hyphens), so differing line breaks match. Pass 3: also case-insensitive and
    blind to whitespace, hyphens, dashes, quote marks, bullets and control/private-use glyphs
    ("reve-\\nnue", "netsales", a table's dropped "—"), enclosing quote marks and ellipses ignored.
    Pass 4: a quote elided with "..." whose pieces occur in order. Passes 2-4 map back to original offsets.
    """
    if not quote or not section_text or not quote.strip():
        return None
    for candidate in (quote, quote.strip()):
        start = section_text.find(candidate)
        if start != -1:
            return start, start + len(candidate)
    for loose in (False, True):
        text_norm, text_map = _normalized(section_text, loose)
        needle = _normalized(_trim_marks(quote) if loose else quote, loose)[0]
        if len(needle) >= (3 if loose else 1):
            found = text_norm.find(needle)
            if found != -1:
                return text_map[found], text_map[found + len(needle) - 1] + 1
    return _locate_elided(section_text, quote)


def _trim_marks(quote: str) -> str:
    """Drop enclosing quote marks and leading/trailing ellipses a model adds around a quote."""
    quote = quote.strip()
    while len(quote) > 1 and quote[0] in _QUOTE_MARKS and quote[-1] in _QUOTE_MARKS:
        quote = quote[1:-1].strip()
    return _EDGE_ELLIPSIS.sub("", quote)


def _locate_elided(section_text: str, quote: str) -> tuple[int, int] | None:
    pieces = [p for p in _ELLIPSIS.split(_trim_marks(quote)) if p.strip()]
    if len(pieces) < 2:
        return None
    text_norm, text_map = _normalized(section_text, True)
    pos, first = 0, None
    for piece in pieces:
        needle = _normalized(piece, True)[0]
        if len(needle) < 3:
            return None
        found = text_norm.find(needle, pos)
        if found == -1:
            return None
        first = found if first is None else first
        pos = found + len(needle)
    assert first is not None
    return text_map[first], text_map[pos - 1] + 1


@functools.lru_cache(maxsize=256)
def _normalized(text: str, loose: bool) -> tuple[str, tuple[int, ...]]:
    """`text` folded for matching, and for each folded character the offset of its source character.

    Strict: whitespace runs become one space, typography is folded. Loose: also casefolded, and
    whitespace, hyphens/dashes, quote marks, bullets and control/private-use glyphs vanish.
    """
    out: list[str] = []
    where: list[int] = []
    for match in _TOKEN.finditer(text):
        start, token = match.start(), match.group()
        if token.isascii() and not (loose and _LOOSE_ASCII.search(token)):  # fast path: no folding
            chars, offsets = (token.lower() if loose else token), range(start, match.end())
        else:
            chars, offsets = _fold_token(token, start, loose)
            if not chars:
                continue
        if out and not loose:
            out.append(" ")
            where.append(start - 1)
        out.append(chars)
        where.extend(offsets)
    return "".join(out), tuple(where)


def _fold_token(token: str, start: int, loose: bool) -> tuple[str, list[int]]:
    chars: list[str] = []
    offsets: list[int] = []
    for i, ch in enumerate(token, start):
        folded = _TYPOGRAPHIC.get(ch)
        if folded is None:
            folded = ch if ch.isascii() else unicodedata.normalize("NFKC", ch)
        if loose:
            folded = folded.casefold()
        for piece in folded:
            if not piece.isspace() and not (loose and _loose_ignored(piece)):
                chars.append(piece)
                offsets.append(i)
    return "".join(chars), offsets


def _loose_ignored(ch: str) -> bool:
    if ch in _LOOSE_DROP:
        return True
    if ch.isascii() and ch >= " ":
        return False
    return ch in _BULLETS or unicodedata.category(ch) in ("Cc", "Cf", "Co")


# -- span extraction -----------------------------------------------------------------------------------


class SectionLike(Protocol):
    @property
    def section_id(self) -> str: ...

    @property
    def text(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Span:
    section_id: str
    quote: str
    quote_start: int
    quote_end: int
    verified: bool
    found: bool


SPAN_SYSTEM = (
    "You find evidence in documents. Given a question and one section of a document, reply with a JSON "
    'object {"found": true|false, "quote": "..."}. If the section answers the question (or part of it), '
    "set found to true and quote the SHORTEST passage, copied character for character from the section, "
    "that answers it: no paraphrase, no added words, no ellipsis. Otherwise reply "
    '{"found": false, "quote": ""}. Reply with the JSON object only.'
)
REPLY_TOKENS = 512


def span_messages(query: str, section_title: str, section_text: str) -> list[dict[str, str]]:
    title = f"Section: {section_title}\n" if section_title else ""
    return [{"role": "system", "content": SPAN_SYSTEM},
            {"role": "user", "content": f"Question: {query}\n\n{title}<section>\n{section_text}\n</section>"}]


def not_found(section_id: str) -> Span:
    return Span(section_id, "", -1, -1, verified=False, found=False)


def span_from_reply(section_id: str, section_text: str, reply: dict) -> Span:
    """Interpret a `{found, quote}` reply and locate the quote in the (full) section text."""
    quote = reply.get("quote")
    quote = quote.strip() if isinstance(quote, str) else ""
    found = reply.get("found", bool(quote))
    if isinstance(found, str):
        found = found.strip().lower() == "true"
    if not found or not quote:
        return not_found(section_id)
    located = locate_quote(section_text, quote)
    if located is None:
        return Span(section_id, quote, -1, -1, verified=False, found=True)
    start, end = located
    return Span(section_id, section_text[start:end], start, end, verified=True, found=True)


async def extract_spans(gateway: Gateway, query: str, sections: Sequence[SectionLike], *, usage: Usage,
                        progress: Callable[[int, int], None] | None = None) -> list[Span]:
    """One Span per section, in order. No call for an empty query or an empty section. A reply that stays
    unparseable counts as not found; any other upstream failure propagates (as LLMError).

    The section text sent is cut to the reader's context_tokens minus prompt and reply; the gateway bounds
    how many calls run at once (the reader's max_concurrency). `progress(done, total)` is called as
    sections finish."""
    if not query.strip():
        return [not_found(s.section_id) for s in sections]
    overhead = estimate_tokens(SPAN_SYSTEM + query) + 64
    token_budget = max(64, gateway.settings.context_tokens - REPLY_TOKENS - overhead)
    finished = [0]

    async def span_of(section: SectionLike) -> Span:
        text = section.text
        if not text or not text.strip():
            return not_found(section.section_id)
        shown = truncate_to_tokens(text, token_budget)
        messages = span_messages(query, getattr(section, "title", "") or "", shown)
        try:
            reply = await gateway.chat_json(messages, usage=usage, max_tokens=REPLY_TOKENS)
        except LLMError as exc:
            if (exc.data or {}).get("reason") != "malformed_json":
                raise
            log.warning("section %s: no usable JSON reply; counted as not found", section.section_id)
            return not_found(section.section_id)
        return span_from_reply(section.section_id, text, reply)

    async def one(section: SectionLike) -> Span:
        span = await span_of(section)
        finished[0] += 1
        if progress is not None:
            progress(finished[0], len(sections))
        return span

    tasks = [asyncio.ensure_future(one(section)) for section in sections]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:  # first failure (or our cancellation): stop the other calls, then re-raise
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
