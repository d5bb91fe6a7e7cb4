"""Section summaries: one retrieval-oriented sentence per section, for the outline the navigating strategies
show a model.

- `extractive_summary(title, text)`: no LLM. The leading sentence (cut short) and the section's salient terms
  (its most frequent content words not already in the title). Cheap enough to run for every section.
- `llm_summaries(gateway, items, ...)`: sections batched into few calls, one sentence each; whatever the
  model does not return (or returns malformed) keeps the summary the section has, else gets the extractive one.
- `summarize_documents(store, document_ids, gateway=None, ...)`: fills `sections.summary` of stored
  documents (LLM when a gateway is given, else extractive) in one write transaction per document; when the
  reader fails, a section keeps the summary it had (a failed resummarize never overwrites a good summary).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jsonl_engine.ingest.normalize import collapse_ws

if TYPE_CHECKING:
    from jsonl_engine.llm.gateway import Gateway
    from jsonl_engine.llm.usage import Usage
    from jsonl_engine.store import Store

log = logging.getLogger(__name__)

SUMMARY_CHARS = 180
SENTENCE_CHARS = 110
TERMS = 4
HEADER_SLACK = 80  # a running header ("Table of Contents") may precede the heading in the section text
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9$])")
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]{3,}")
_PART = re.compile(r"\s*\(part \d+\)$")
_STOP = frozenset(["about", "above", "after", "again", "against", "also", "although", "among", "another", "because", "been", "before", "being", "below", "between", "both", "cannot", "could", "does", "doing", "done", "down", "during", "each", "either", "else", "ever", "every", "from", "further", "have", "having", "here", "hers", "herself", "himself", "however", "into", "itself", "just", "least", "less", "like", "made", "make", "many", "might", "more", "most", "much", "must", "near", "neither", "only", "onto", "other", "others", "otherwise", "ours", "ourselves", "over", "perhaps", "rather", "same", "shall", "should", "since", "some", "still", "such", "than", "that", "their", "theirs", "them", "themselves", "then", "there", "therefore", "these", "they", "this", "those", "though", "through", "thus", "toward", "towards", "under", "until", "upon", "very", "were", "what", "whatever", "when", "whenever", "where", "whether", "which", "while", "whom", "whose", "will", "with", "within", "without", "would", "your", "yours", "yourself", "company", "companies", "including", "include", "includes", "included", "certain", "year", "years", "period", "periods", "part", "parts", "page", "pages", "table", "following", "total", "approximately", "respectively", "related", "applicable", "result", "results", "based", "primarily", "contents"])


def extractive_summary(title: str, text: str, max_chars: int = SUMMARY_CHARS) -> str:
    """The leading sentence of `text` (shortened) and its salient terms; "" for a section without text."""
    flat = collapse_ws(text or "")
    if not flat:
        return ""
    title_flat = _PART.sub("", collapse_ws(title or ""))
    if title_flat:
        at = flat.lower().find(title_flat.lower(), 0, len(title_flat) + HEADER_SLACK)
        if at != -1:
            flat = flat[at + len(title_flat):].lstrip(" .:-\u2013\u2014")
    out = _leading_sentence(flat, title_flat)
    terms = salient_words(flat, title_flat)
    while terms:
        tail = "Terms: " + ", ".join(terms) + "."
        if len(out) + len(tail) + 1 <= max_chars:
            out = f"{out} {tail}" if out else tail
            break
        terms.pop()
    return _cut(out, max_chars)


def _leading_sentence(flat: str, title: str) -> str:
    for sentence in _SENTENCE_END.split(flat[:2000])[:6]:
        sentence = sentence.strip()
        if len(sentence.split()) >= 4 and sentence.lower() != title.lower():
            return _cut(sentence, SENTENCE_CHARS)
    return _cut(flat, SENTENCE_CHARS) if len(flat.split()) >= 2 else ""


def salient_words(text: str, title: str = "", limit: int = TERMS) -> list[str]:
    """The most frequent content words of `text` not in `title`, most frequent first (ties: first seen)."""
    known = {w.lower() for w in _WORD.findall(title)}
    counts: Counter[str] = Counter()
    first: dict[str, int] = {}
    for i, word in enumerate(_WORD.findall(text)):
        low = word.lower().strip("'-")
        if len(low) < 4 or low in _STOP or low in known or low.endswith("'s") and low[:-2] in known:
            continue
        counts[low] += 1
        first.setdefault(low, i)
    floor = 2 if sum(counts.values()) > 60 else 1
    ranked = sorted((w for w, n in counts.items() if n >= floor), key=lambda w: (-counts[w], first[w]))
    return ranked[:limit]


def _cut(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    space = text.rfind(" ", 0, max_chars)
    return text[: space if space > max_chars // 2 else max_chars].rstrip(" ,;:") + "\u2026"


# ---------------------------------------------------------------- LLM summaries

SUMMARY_SYSTEM = (
    "You write retrieval summaries for sections of a document. For each section below, write ONE sentence "
    "(at most 30 words) saying what the section covers and which facts, figures or periods a reader could "
    "find in it, so that someone scanning a table of contents can tell whether it answers their question. "
    'Reply with a JSON object {"summaries": [{"id": "<section id>", "summary": "<sentence>"}]} covering '
    "every section, and nothing else."
)
SECTION_TOKENS = 300  # text shown per section
REPLY_TOKENS_PER_SECTION = 60


@dataclass(frozen=True, slots=True)
class SummaryItem:
    section_id: str
    title: str
    text: str
    summary: str = ""  # the one stored already (kept when the reader gives no new one)

    def fallback(self) -> str:
        """What the section gets without a new summary from the reader: its own, else an extractive one."""
        return self.summary or extractive_summary(self.title, self.text)


async def llm_summaries(gateway: Gateway, items: Sequence[SummaryItem], *, usage: Usage,
                        max_tokens_per_call: int = 3000, concurrency: int = 4,
                        progress: Callable[[int, int], None] | None = None,
                        missed: list[int] | None = None) -> dict[str, str]:
    """A summary per item: the model's sentence when it gave one, else `SummaryItem.fallback` (`missed`
    gets the number of sections the model gave no sentence for)."""
    from jsonl_engine.llm.usage import estimate_tokens, truncate_to_tokens

    out = {it.section_id: it.fallback() for it in items}
    wanted = [it for it in items if it.text.strip()]
    if not wanted:
        return out
    budget = max(600, max_tokens_per_call - estimate_tokens(SUMMARY_SYSTEM) - 32)
    batches: list[list[tuple[str, SummaryItem, str]]] = [[]]
    used = 0
    for it in wanted:
        shown = truncate_to_tokens(collapse_ws(it.text), SECTION_TOKENS)
        cost = estimate_tokens(it.title + shown) + 12
        if batches[-1] and (used + cost > budget or len(batches[-1]) >= 16):
            batches.append([])
            used = 0
        batches[-1].append((f"s{len(batches[-1]) + 1}", it, shown))
        used += cost
    slots = asyncio.Semaphore(max(1, concurrency))
    done = [0]

    async def run(batch: list[tuple[str, SummaryItem, str]]) -> None:
        body = "\n\n".join(f"<section id=\"{sid}\" title=\"{it.title}\">\n{shown}\n</section>"
                           for sid, it, shown in batch)
        messages = [{"role": "system", "content": SUMMARY_SYSTEM}, {"role": "user", "content": body}]
        async with slots:
            reply = await _ask(gateway, messages, usage, REPLY_TOKENS_PER_SECTION * len(batch) + 40)
        by_local = {sid: it for sid, it, _ in batch}
        answered: set[str] = set()
        for entry in (reply or {}).get("summaries") or []:
            if isinstance(entry, dict):
                it = by_local.get(str(entry.get("id", "")).strip())
                text = entry.get("summary")
                if it is not None and isinstance(text, str) and text.strip():
                    out[it.section_id] = _cut(collapse_ws(text), SUMMARY_CHARS)
                    answered.add(it.section_id)
        if missed is not None:
            missed.append(len(batch) - len(answered))
        done[0] += len(batch)
        if progress is not None:
            progress(done[0], len(wanted))

    tasks = [asyncio.ensure_future(run(b)) for b in batches if b]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    return out


async def _ask(gateway: Gateway, messages: list[dict[str, str]], usage: Usage, max_tokens: int) -> dict | None:
    from jsonl_engine.errors import LLMError

    try:
        return await gateway.chat_json(messages, usage=usage, max_tokens=max_tokens)
    except LLMError as exc:
        if (exc.data or {}).get("reason") != "malformed_json":
            raise
        log.warning("summaries: no usable JSON reply; extractive summaries kept for this batch")
        return None


def _failed_summaries(message: str, items: Sequence[SummaryItem]) -> str:
    """The coded warning for a document whose summaries the reader failed to write."""
    kept = sum(1 for it in items if it.summary)
    if items and kept == len(items):
        return (f"summaries_kept: the reader failed ({message}); the summaries the sections had were kept "
                "(resummarize: true tries again)")
    return (f"summaries_extractive: the reader failed ({message}); extractive summaries were written instead"
            + (f" ({kept} of {len(items)} sections kept the summary they had)" if kept else "")
            + " (resummarize: true regenerates them)")


def _document_items(store: Store, document_id: str) -> list[SummaryItem]:
    """What to summarise: sections with text, and each ingest-split section as its parts joined."""
    rows = store.document_sections(document_id)
    children: dict[str, list[Any]] = {}
    for r in rows:
        if r.parent_id:
            children.setdefault(r.parent_id, []).append(r)
    items = []
    for r in rows:
        kids = children.get(r.section_id, [])
        if not r.text and kids and all(k.is_leaf and k.title.startswith(r.title + " (part ") for k in kids):
            items.append(SummaryItem(r.section_id, r.title, "\n".join(k.text for k in kids), r.summary))
        elif r.text:
            items.append(SummaryItem(r.section_id, r.title, r.text, r.summary))
    return items


async def summarize_documents(store: Store, document_ids: Sequence[str], gateway: Gateway | None = None, *,
                              usage: Usage | None = None, max_tokens_per_call: int = 3000,
                              progress: Callable[[str, int | None, int | None, str | None], None] | None = None,
                              check_cancelled: Callable[[], None] | None = None,
                              warnings: dict[str, list[str]] | None = None) -> int:
    """Fill the summaries of stored documents; returns how many sections got one. An upstream failure keeps
    the summaries a document's sections have and gives the others extractive ones (the document is ingested
    already), said in `warnings` (document id -> coded warnings: summaries_extractive, summaries_kept,
    summaries_partial, and the gateway's notes); cancellation propagates."""
    from jsonl_engine.errors import LLMError
    from jsonl_engine.llm.usage import Usage

    usage = usage if usage is not None else Usage()
    written = 0
    for n, document_id in enumerate(document_ids, start=1):
        if check_cancelled is not None:
            check_cancelled()
        items = await asyncio.to_thread(_document_items, store, document_id)
        if gateway is None:
            summaries = {it.section_id: extractive_summary(it.title, it.text) for it in items}
        else:
            def report(done: int, total: int, _n: int = n) -> None:
                if progress is not None:
                    progress("summarize", done, total, f"document {_n}/{len(document_ids)}")

            said = warnings.setdefault(document_id, []) if warnings is not None else []
            missed: list[int] = []
            try:
                summaries = await llm_summaries(gateway, items, usage=usage, max_tokens_per_call=max_tokens_per_call,
                                                concurrency=gateway.settings.max_concurrency, progress=report,
                                                missed=missed)
                if sum(missed):
                    said.append(f"summaries_partial: the reader gave no usable summary for {sum(missed)} of "
                                f"{len(items)} sections; they kept the summary they had, else got an extractive "
                                "one")
            except LLMError as exc:  # the document is in already: keep it, and the summaries it has
                log.warning("summaries of %s: the reader failed (%s); existing or extractive summaries kept",
                            document_id, exc.message)
                said.append(_failed_summaries(exc.message, items))
                summaries = {it.section_id: it.fallback() for it in items}
            said.extend(n for n in usage.notes if n not in said)
        if check_cancelled is not None:
            check_cancelled()
        written += await asyncio.to_thread(store.set_summaries, summaries)
    return written
