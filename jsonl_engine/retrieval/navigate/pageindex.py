"""pageindex: page-based navigation. The model looks at the structure (`structure`, optionally of one
section), reads pages (`pages(start, end)`), and ends with `done(answer, cited_pages, confidence)`.

`cited_pages` is accepted as [[s, e], ...], "5-7" (also "5, 8-9", "pp. 5–7"), a number, or objects
{"pages": [5, 7] | "5-7", "confidence": 0.9, "document": 1}; a flat top-level list of numbers means single
pages. Confidence comes per range or from the top-level field, as a number, a numeric string ("0.8",
"80%") or a word ("high"), clamped to [0, 1]. Every terminal set of ranges (done, or the hop-cap fallback)
goes through `finalize_ranges`. A refusal carries no citations.

Passages are pages (unit "page", section_id "<document_id>:p<n>"), citation by citation, each with its
citation's confidence; `details` has the answer, the refusal flag and the citations as ranges.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from jsonl_engine.llm.usage import Usage, estimate_tokens, truncate_to_tokens
from jsonl_engine.retrieval.navigate import outline, prompts
from jsonl_engine.retrieval.navigate.loop import Navigator, arg
from jsonl_engine.retrieval.navigate.picks import page_passages, parse_confidence, result, setting
from jsonl_engine.retrieval.navigate.tree import Doc, Tree

if TYPE_CHECKING:
    from jsonl_engine.llm.gateway import Gateway
    from jsonl_engine.retrieval.types import Progress, Retrieval, StrategyRequest
    from jsonl_engine.store import Store

REPLY_TOKENS = 768
DEFAULT_MAX_CITATIONS = 3
DEFAULT_MAX_PAGES = 4  # pages one `pages` call shows, at most
TOOLS = {"structure": "structure", "outline": "structure", "toc": "structure",
         "pages": "pages", "read": "pages", "page": "pages", "read_pages": "pages", "get_pages": "pages",
         "done": "done", "finish": "done", "answer": "done", "submit": "done", "final": "done"}
RANGE_KEYS = ("pages", "range", "page_range", "cited_pages", "citation")
START_KEYS = ("start", "page_start", "from", "first")
END_KEYS = ("end", "page_end", "to", "last")
DOC_KEYS = ("document", "document_id", "doc", "doc_id")
CONF_KEYS = ("confidence", "score", "probability")
_NUMBER = re.compile(r"\d+")
_PIECES = re.compile(r"[,;]|\band\b")
_REFUSAL = re.compile(
    r"^\s*(?:i\s+(?:cannot|can't|can\s*not|could\s+not|couldn't|am\s+unable|was\s+unable|did\s+not\s+find|"
    r"found\s+no)|unable\s+to|(?:the\s+)?(?:provided\s+)?(?:document|filing|report|pages?|text|context)s?\s+"
    r"(?:does|do|did)\s+not\s+(?:contain|provide|state|disclose|include|mention|specify|say|answer)|"
    r"(?:this|that)\s+(?:information\s+)?is\s+not\s+(?:available|provided|disclosed|stated)|"
    r"not\s+(?:found|available|disclosed|stated)\b|no\s+(?:relevant\s+)?(?:information|answer|data)\b|"
    r"(?:the\s+)?answer\s+(?:is\s+)?not\s+(?:found|available)|cannot\s+be\s+determined|n/?a\b)",
    re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class PageRange:
    document_id: str | None  # None: not resolved (dropped by finalize_ranges)
    start: int
    end: int
    confidence: float | None = None

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["page_start"], out["page_end"] = out.pop("start"), out.pop("end")
        return out


def finalize_ranges(ranges: Sequence[PageRange], page_counts: Mapping[str, int], *,
                    max_citations: int = DEFAULT_MAX_CITATIONS) -> list[PageRange]:
    """The one exit of every set of cited ranges: each clamped to its document's pages (reversed ends
    swapped; a range wholly outside, or of an unknown document, dropped), confidence clamped to [0, 1],
    duplicates merged keeping the higher confidence, then the `max_citations` most confident, ties in
    emission order (no confidence ranks below any)."""
    merged: dict[tuple[str, int, int], tuple[int, PageRange]] = {}
    for order, r in enumerate(ranges):
        pages = page_counts.get(r.document_id) if r.document_id is not None else None
        if not pages:
            continue
        start, end = sorted((r.start, r.end))
        start, end = max(1, start), min(pages, end)
        if start > end:
            continue
        conf = parse_confidence(r.confidence)
        key = (r.document_id, start, end)
        known = merged.get(key)
        if known is None:
            merged[key] = (order, PageRange(r.document_id, start, end, conf))
        elif conf is not None and (known[1].confidence is None or conf > known[1].confidence):
            merged[key] = (known[0], PageRange(r.document_id, start, end, conf))
    ranked = sorted(merged.values(),
                    key=lambda t: (-(t[1].confidence if t[1].confidence is not None else -1.0), t[0]))
    return [r for _, r in ranked[:max(0, max_citations)]]


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and math.isfinite(value):
        return int(value)
    if isinstance(value, str):
        m = _NUMBER.search(value)
        return int(m.group()) if m else None
    return None


def parse_cited_pages(value: Any, confidence: Any = None, document: Any = None
                      ) -> list[tuple[Any, int, int, float | None]]:
    """(document hint, start, end, confidence) per range in a `cited_pages` value, in emission order."""
    ranges = _Ranges(parse_confidence(confidence))
    ranges.walk(value, document, None, False)
    return ranges.out


class _Ranges:
    """The page ranges of a `cited_pages` value, in emission order, as `walk` finds them: numbers, strings ("4-6,
    9"), objects ({"document": ..., "start": 4, "end": 6, "confidence": ...}, {"pages": [...]}) and lists of them
    (a nested pair of numbers is one range); `shared` is the confidence of ranges that carry none."""

    def __init__(self, shared: float | None) -> None:
        self.shared = shared
        self.out: list[tuple[Any, int, int, float | None]] = []

    def add(self, doc: Any, start: int | None, end: int | None, conf: float | None) -> None:
        if start is not None:
            self.out.append((doc, start, end if end is not None else start, conf if conf is not None else self.shared))

    def walk(self, item: Any, doc: Any, conf: float | None, nested: bool) -> None:
        if item is None or isinstance(item, bool):
            return
        if isinstance(item, int | float):
            self.add(doc, _int(item), None, conf)
        elif isinstance(item, str):
            self.from_string(item, doc, conf)
        elif isinstance(item, dict):
            self.from_dict(item, doc, conf)
        elif isinstance(item, list | tuple):
            self.from_list(item, doc, conf, nested)

    def from_string(self, text: str, doc: Any, conf: float | None) -> None:
        for piece in _PIECES.split(text):
            numbers = [int(n) for n in _NUMBER.findall(piece)]
            if numbers:
                self.add(doc, numbers[0], numbers[1] if len(numbers) > 1 else None, conf)

    def from_dict(self, item: dict, doc: Any, conf: float | None) -> None:
        doc = next((item[k] for k in DOC_KEYS if k in item), doc)
        own = next((parse_confidence(item[k]) for k in CONF_KEYS if k in item), None)
        conf = own if own is not None else conf
        inner = next((item[k] for k in RANGE_KEYS if k in item), None)
        if inner is not None:
            self.walk(inner, doc, conf, True)
        elif any(k in item for k in START_KEYS) or "page" in item:
            start = _int(next((item[k] for k in START_KEYS if k in item), item.get("page")))
            self.add(doc, start, _int(next((item[k] for k in END_KEYS if k in item), None)), conf)

    def from_list(self, item: list | tuple, doc: Any, conf: float | None, nested: bool) -> None:
        numbers = [_int(x) for x in item]
        flat = all((isinstance(x, int | float) and not isinstance(x, bool))
                   or (isinstance(x, str) and x.strip().isdigit()) for x in item)
        if nested and flat and 1 <= len(item) <= 2 and None not in numbers:
            self.add(doc, numbers[0], numbers[-1], conf)
        else:
            for x in item:
                self.walk(x, doc, conf, True)


def is_refusal(reply: Mapping[str, Any], answer: str) -> bool:
    for key in ("refusal", "refused", "cannot_answer", "unanswerable"):
        if reply.get(key) is True:
            return True
    for key in ("found", "answerable", "answered"):
        if reply.get(key) is False:
            return True
    return (not answer.strip() and not reply.get("cited_pages")) or bool(_REFUSAL.match(answer))


class PageAgent(Navigator):
    kind = "tool call"
    aliases = TOOLS
    last_hop_note = prompts.PAGE_LAST_HOP
    bad_reply = prompts.PAGE_BAD_CALL

    def __init__(self, store: Store, tree: Tree, request: StrategyRequest, gateway: Gateway,
                 usage: Usage) -> None:
        super().__init__(store, tree, request, gateway, usage)
        self.max_citations = max(1, int(setting(request, "max_cited_ranges", DEFAULT_MAX_CITATIONS)))
        self.max_pages = max(1, int(setting(request, "max_pages_per_call", DEFAULT_MAX_PAGES)))
        self.docs = [d for d in tree.docs if d.pages > 0]
        self.page_counts = {d.document_id: d.pages for d in self.docs}
        system = prompts.PAGE_SYSTEM.format(max_hops=self.max_hops, max_pages=self.max_pages,
                                            doc_arg="" if len(self.docs) == 1 else ', "document": 1')
        documents = "" if len(self.docs) == 1 else "Documents:\n" + "\n".join(
            outline.doc_header(d) for d in self.docs) + "\n\n"
        self.start(system, prompts.PAGE_USER, REPLY_TOKENS, documents=documents)
        self.read: list[PageRange] = []  # ranges shown, in order

    def doc_of(self, hint: Any) -> Doc | None:
        """A document named by its 1-based index, id or title; the focus document when no hint is given."""
        if hint is None or hint == "":
            if len(self.docs) == 1:
                return self.docs[0]
            last = self.read[-1].document_id if self.read else None
            return next((d for d in self.docs if d.document_id == last), None)
        text = str(hint).strip()
        for d in self.docs:
            if text in (d.document_id, d.title, str(d.index), f"Document {d.index}"):
                return d
        m = _NUMBER.fullmatch(text)
        return self.docs[int(text) - 1] if m and 1 <= int(text) <= len(self.docs) else None

    def describe(self, name: str, args: Mapping[str, Any]) -> str:
        if name == "pages":
            return f"pages {arg(args, *START_KEYS, 'page')}-{arg(args, *END_KEYS)}"
        return name

    async def observe(self, name: str, args: Mapping[str, Any]) -> str:
        return await (self.pages(args) if name == "pages" else self.structure(args))

    async def structure(self, args: Mapping[str, Any]) -> str:
        cap = self.chat.observation_cap()
        target = arg(args, "section_id", "id", "section")
        if target in (None, ""):
            return "Structure:\n" + truncate_to_tokens(self.outline_text, cap)
        node = self.tree.resolve(target)
        if node is None:
            self.invented.append(str(target)[:80])
            return f"Unknown section id {str(target)[:60]!r}: use an id exactly as shown."
        return "Structure of a section:\n" + truncate_to_tokens(outline.render_subtree(self.tree, node), cap)

    async def pages(self, args: Mapping[str, Any]) -> str:
        doc = self.doc_of(arg(args, *DOC_KEYS))
        if doc is None:
            return ("Name the document: add \"document\": <its number> (" + ", ".join(
                f"{d.index}" for d in self.docs) + ").")
        ranges = parse_cited_pages(arg(args, "pages", "range")) if any(k in args for k in ("pages", "range")) else []
        start = _int(arg(args, *START_KEYS, "page"))
        end = _int(next((args[k] for k in END_KEYS if k in args), None))
        if start is None and ranges:
            start, end = ranges[0][1], ranges[0][2]
        if start is None:
            return "pages needs start and end page numbers, e.g. {\"tool\": \"pages\", \"start\": 3, \"end\": 4}."
        end = start if end is None else end
        if not 1 <= start <= doc.pages or end < start:  # nothing read: no swapping or clamping of nonsense
            return (f"Document {doc.index} has pages 1-{doc.pages}; pages {start}-{end} do not exist "
                    "(start must be a page of the document and end >= start).")
        end = min(doc.pages, end)
        texts = await asyncio.to_thread(self.store.page_range, doc.document_id, start,
                                        min(end, start + self.max_pages - 1))
        cap = self.chat.observation_cap()
        parts, used, last = [], 0, start - 1
        for number in sorted(texts):
            block = f"--- Page {number} ---\n{texts[number].strip()}"
            cost = estimate_tokens(block) + 1
            if parts and used + cost > cap:
                break
            if cost > cap:
                block = truncate_to_tokens(block, cap) + "\n[page cut to fit the budget]"
            parts.append(block)
            used += min(cost, cap)
            last = number
        if last < start:
            return f"Pages {start}-{end} of document {doc.index} have no text."
        self.read.append(PageRange(doc.document_id, start, last))
        head = f"Document {doc.index}, pages {start}-{last} (of {doc.pages})"
        if last < end:
            head += f"; pages {last + 1}-{end} not shown (at most {self.max_pages} pages or the budget per call)"
        return head + ":\n" + "\n".join(parts)

    def resolved(self, raw: list[tuple[Any, int, int, float | None]]) -> list[PageRange]:
        out = []
        for hint, start, end, conf in raw:
            doc = self.doc_of(hint)
            if doc is None:
                self.invented.append(f"document {str(hint)[:40]}")
            out.append(PageRange(doc.document_id if doc else None, start, end, conf))
        return out

    async def done(self, args: Mapping[str, Any], hops: int) -> Retrieval:
        answer = arg(args, "answer", "text", "final_answer")
        answer = answer.strip() if isinstance(answer, str) else ("" if answer is None else str(answer))
        confidence = parse_confidence(args.get("confidence"))
        raw = parse_cited_pages(next((args[k] for k in ("cited_pages", "citations", "pages", "cited") if k in args),
                                     None), confidence, next((args[k] for k in DOC_KEYS if k in args), None))
        refused = is_refusal(args, answer)
        emitted = [] if refused else self.resolved(raw)
        citations = finalize_ranges(emitted, self.page_counts, max_citations=self.max_citations)
        if confidence is None:
            confidence = max((c.confidence for c in citations if c.confidence is not None), default=None)
        details: dict[str, Any] = {"answer": answer, "refused": refused,
                                   "citations": [c.as_dict() for c in citations]}
        reason = None
        if refused:
            reason = "the model found no answer in the document (a refusal cites nothing)"
        elif not citations:
            reason = ("the model cited no page" if not raw else
                      "the model cited no page that exists in the documents in scope")
        return await self.finish(citations, hops, reason, confidence, details)

    async def fallback(self, hops: int, why: str) -> Retrieval:
        read = finalize_ranges(list(reversed(self.read)), self.page_counts, max_citations=self.max_citations)
        reason = f"{why}; returning " + ("the pages it was shown, latest first (not cited by the model)" if read
                                         else "nothing (no page was read)")
        details = {"answer": None, "refused": False, "fallback": True, "citations": [],
                   "read": [c.as_dict() for c in read]}
        return await self.finish(read, hops, reason, None, details)

    async def finish(self, citations: list[PageRange], hops: int, reason: str | None, confidence: float | None,
                     details: dict[str, Any]) -> Retrieval:
        items = pages_for(citations, int(self.request.limit))
        passages = await asyncio.to_thread(page_passages, self.store, self.tree, items, self.request.query)
        return result(passages, usage=self.usage, hops=hops, reason=reason, confidence=confidence,
                      details=self.with_invented(details))


def pages_for(citations: Sequence[PageRange], limit: int) -> list[tuple[tuple[str, int], float | None, int]]:
    """((document_id, page), confidence, citation rank) per cited page, citation by citation; beyond `limit`
    pages, every citation keeps its first page before any keeps a second."""
    groups = [[((c.document_id, n), c.confidence, rank) for n in range(c.start, c.end + 1)]
              for rank, c in enumerate(citations) if c.document_id is not None]
    chosen: set[tuple[str, int]] = set()
    for round_ in range(max((len(g) for g in groups), default=0)):
        for group in groups:
            if round_ < len(group) and len(chosen) < limit:
                chosen.add(group[round_][0])
    out, seen = [], set()
    for group in groups:
        for item in group:
            if item[0] in chosen and item[0] not in seen:
                seen.add(item[0])
                out.append(item)
    return out


async def run(store: Store, tree: Tree, request: StrategyRequest, gateway: Gateway, progress: Progress,
              usage: Usage) -> Retrieval:
    return await PageAgent(store, tree, request, gateway, usage).drive(progress)
