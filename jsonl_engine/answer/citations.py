"""Claims: a verbatim span of a section's text with a stable id and the page it sits on.

kb.synthesize cites `[claim_id]` and lists the claims it cites. kb.answer cites section ids (`[section_id]`),
not claims: it uses only `page_at` from here, to place a verified quote on its page.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Claim:
    id: str
    text: str
    section_id: str
    document_id: str
    document_title: str
    page: int
    quote_start: int
    quote_end: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def claim_id(section_id: str, start: int, end: int, text: str) -> str:
    """Stable for the same KB content: section id, offsets and the quoted text, hashed."""
    digest = hashlib.sha256(f"{section_id}\x00{start}\x00{end}\x00{text}".encode()).hexdigest()
    return "c" + digest[:12]


def page_at(page_map: Sequence[Sequence[int]], offset: int, default: int) -> int:
    """The page holding `offset`, from a page_map of ascending (offset, page) pairs; `default` if empty."""
    if not page_map:
        return default
    offsets = [int(p[0]) for p in page_map]
    i = bisect.bisect_right(offsets, offset) - 1
    return int(page_map[max(i, 0)][1])


def make_claim(*, section_id: str, document_id: str, document_title: str, section_text: str,
               page_map: Sequence[Sequence[int]], page_start: int, start: int, end: int) -> Claim:
    text = section_text[start:end]
    return Claim(id=claim_id(section_id, start, end, text), text=text, section_id=section_id,
                 document_id=document_id, document_title=document_title,
                 page=page_at(page_map, start, page_start), quote_start=start, quote_end=end)
