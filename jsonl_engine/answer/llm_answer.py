"""kb.answer's pipeline: retrieval (a named strategy) -> span extraction -> a synthesis prompt whose sources
carry their section ids -> the answer (streamed) -> the citations the answer actually makes.

Knows nothing of the wire: takes a store, a gateway, the request values and callbacks. An upstream failure
after retrieval does not raise once the reader has produced something (the spans, part of the answer): the
outcome carries `error` and keeps the candidates (and any partial answer), so the caller sees what was (or would
have been) sent. A reader that could not be reached before it produced anything raises `llm_error`: an empty
`ok` would hide that no LLM was there.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jsonl_engine.answer.citations import page_at
from jsonl_engine.answer.spans import Span, extract_spans
from jsonl_engine.errors import LLMError
from jsonl_engine.llm.gateway import ReplyStatus, reply_warnings
from jsonl_engine.llm.usage import Usage, estimate_tokens, truncate_to_tokens
from jsonl_engine.retrieval.strategies import get_strategy
from jsonl_engine.retrieval.types import NO_PROGRESS, Progress, StrategyRequest

if TYPE_CHECKING:
    from jsonl_engine.llm.gateway import Gateway
    from jsonl_engine.retrieval import Passage
    from jsonl_engine.store import Store

# An id as the engine makes them: 16 hex chars, ":", a key ("3.0.1", "p12"); found anywhere in the answer,
# so "[a, b]", "[a][b]" and "(a)" all count. The key never ends in punctuation (a sentence's full stop).
SECTION_ID = re.compile(r"\b[0-9a-f]{16}:[A-Za-z0-9_.-]*[A-Za-z0-9_]")
MAX_SOURCE_TOKENS = 1500  # section text shown per source, at most (the verbatim quote comes on top)
MIN_SOURCE_TOKENS = 32  # below this a source is all but useless (the prompt may then outgrow tiny contexts)
PER_SOURCE_OVERHEAD = 4  # the joins and "..." marks around each excerpt
PROMPT_MARGIN = 16
UNREACHABLE = frozenset({"connection", "timeout"})  # LLMError reasons: the endpoint never answered

ANSWER_SYSTEM = (
    "You answer a question using only the sources given. Each source begins with its id in square brackets, "
    "then its document, section and pages, the evidence quoted from it (when some was found) and its text.\n"
    "Rules:\n"
    "- Answer concisely and directly; keep figures, units and periods exactly as the sources give them.\n"
    "- Put the answer first: your first sentence states it (a figure with its period and unit, a name, yes or "
    "no), the explanation after it.\n"
    "- After each sentence or claim that uses a source, cite that source by writing its id in square "
    "brackets exactly as shown, e.g. [<id>]; cite several sources as [<id>][<id>].\n"
    "- Cite only ids of the sources below; never make up an id.\n"
    "- If the sources do not support an answer, say that you cannot answer from the available documents, "
    "and cite nothing."
)
ANSWER_REQUEST = "Answer the question from these sources, citing each claim with its source id in square brackets."


@dataclass(frozen=True, slots=True)
class AnswerRequest:
    """kb.answer's request: how to retrieve (`retrieval`, whose limit is the sections offered), and how to answer."""

    retrieval: StrategyRequest
    strategy: str = "lexical"
    max_citations: int = 3
    max_answer_tokens: int = 1024
    stream: bool = True

    @property
    def query(self) -> str:
        return self.retrieval.query

    @property
    def max_sections(self) -> int:
        return self.retrieval.limit


@dataclass
class AnswerOutcome:
    strategy: str
    reader: str
    model: str
    usage: Usage
    answer: str = ""
    citations: list[dict[str, Any]] = field(default_factory=list)
    invented_ids: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    candidates: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, Any] | None = None
    truncated: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"answer": self.answer, "citations": self.citations, "invented_ids": self.invented_ids,
                "warnings": self.warnings, "truncated": self.truncated, "strategy": self.strategy, "reader": self.reader, "model": self.model,
                "usage": self.usage.to_dict(), "candidates": self.candidates, "error": self.error}


async def answer_question(store: Store, gateway: Gateway, request: AnswerRequest, *,
                          on_delta: Callable[[str], None] | None = None, progress: Progress | None = None) -> AnswerOutcome:
    """Raises before any work for an unknown strategy (invalid_params); retrieval errors (not_found for an
    unknown document id, a strategy's own LLM failure) propagate, and so does an unreachable reader (with its
    name in `data.reader`) while neither spans nor answer text exist; other failures after retrieval are in
    `error`."""
    progress = progress or NO_PROGRESS
    strategy = get_strategy(request.strategy)
    usage = Usage()
    out = AnswerOutcome(strategy=strategy.name, reader=gateway.name, model=gateway.model, usage=usage)

    progress("retrieve", message=f"strategy {strategy.name}")
    retrieval = await strategy.run(store, request.retrieval, gateway, progress)
    usage.add_dict(retrieval.usage)
    for warning in retrieval.warnings:  # the retrieval stage's calls (LLM strategies): in this result too
        usage.note(warning)
    passages = retrieval.passages[: request.max_sections]
    spans: dict[str, Span] = {}
    parts: list[str] = []
    answering = False  # the answer call has begun
    if not passages:
        out.warnings.append(f"no sources to answer from: {retrieval.reason or 'no passage matched'}")
    else:
        try:
            progress("spans", 0, len(passages))
            found = await extract_spans(gateway, request.query, passages, usage=usage,
                                        progress=lambda done, total: progress("spans", done, total))
            spans = {s.section_id: s for s in found}
            progress("answer")
            answering = True
            ended = await _write(gateway, request, passages, spans, usage, parts, on_delta)
            out.truncated = ended.truncated
            out.warnings.extend(reply_warnings("".join(parts), ended.finish_reason, ended.capped))
        except LLMError as exc:
            if not spans and not parts and (exc.data or {}).get("reason") in UNREACHABLE:
                raise LLMError(exc.message, exc.status, exc.retryable,
                               {**(exc.data or {}), "reader": gateway.name}) from exc
            out.error = exc.to_wire()
            out.truncated = answering  # the answer did not finish (a stream cut midway keeps what came)
            stage = "the answer" if answering else "span extraction"
            out.warnings.append(f"the reader failed during {stage}: the result keeps the retrieved sources"
                                + (" and the partial answer" if parts else ""))
    out.answer = "".join(parts)
    out.warnings.extend(n for n in usage.notes if n not in out.warnings)
    cited = _cite(out, passages, spans, request.max_citations)
    out.candidates = [_candidate(p, spans.get(p.section_id), p.section_id in cited) for p in passages]
    return out


async def _write(gateway: Gateway, request: AnswerRequest, passages: Sequence[Passage], spans: dict[str, Span],
                 usage: Usage, parts: list[str], on_delta: Callable[[str], None] | None) -> ReplyStatus:
    """The synthesis call; the text lands in `parts` as it comes, so a failure midway keeps what came.
    Leaving the stream early (cancel) closes the upstream response."""
    answer_tokens = min(request.max_answer_tokens, gateway.settings.max_tokens)
    messages = answer_messages(request.query, passages, spans, context_tokens=gateway.settings.context_tokens,
                               answer_tokens=answer_tokens)
    if not request.stream:
        completion = await gateway.chat(messages, usage=usage, max_tokens=answer_tokens)
        parts.append(completion.text)
        return ReplyStatus(completion.finish_reason, completion.capped)
    status = ReplyStatus()
    async with aclosing(gateway.stream(messages, usage=usage, max_tokens=answer_tokens, status=status)) as chunks:
        async for chunk in chunks:
            parts.append(chunk)
            if on_delta is not None:
                on_delta(chunk)
    return status


# -- the synthesis prompt -------------------------------------------------------------------------------


def answer_messages(query: str, passages: Sequence[Passage], spans: dict[str, Span], *, context_tokens: int,
                    answer_tokens: int) -> list[dict[str, str]]:
    """System rules, then the question and each source: id, document, section path, pages, the verified
    quote, and the section text bounded so the whole prompt fits the reader's context with the answer."""
    heads = [_source_head(p, spans.get(p.section_id)) for p in passages]
    head, tail = f"Question: {query}\n\nSources:\n\n", f"\n\n{ANSWER_REQUEST}"
    fixed = (estimate_tokens(ANSWER_SYSTEM + head + tail) + sum(estimate_tokens(h) for h in heads)
             + PER_SOURCE_OVERHEAD * len(passages) + PROMPT_MARGIN)
    share = (context_tokens - answer_tokens - fixed) // max(1, len(passages))
    per_source = min(MAX_SOURCE_TOKENS, max(MIN_SOURCE_TOKENS, share))
    blocks = [f"{h}\n{excerpt(p.text, spans.get(p.section_id), per_source)}" for h, p in zip(heads, passages,
                                                                                           strict=True)]
    return [{"role": "system", "content": ANSWER_SYSTEM}, {"role": "user", "content": head + "\n\n".join(blocks) + tail}]


def _source_head(p: Passage, span: Span | None) -> str:
    where = " > ".join([*p.path, p.title]) if p.path else p.title
    pages = f"page {p.page_start}" if p.page_start == p.page_end else f"pages {p.page_start}-{p.page_end}"
    head = f"[{p.section_id}] {p.document_title} | {where} | {pages}"
    if span is not None and span.verified:
        head += f'\nEvidence: "{span.quote}"'
    return head + "\nText:"


def excerpt(text: str, span: Span | None, max_tokens: int) -> str:
    """The section text within `max_tokens`; when it is cut, the window starts shortly before the verified
    quote so the quote's context survives."""
    if estimate_tokens(text) <= max_tokens:
        return text
    start = 0
    if span is not None and span.verified and span.quote_start > 0:
        start = max(0, span.quote_start - max_tokens)  # ~a quarter of the window before the quote
        if start:
            space = text.find(" ", start, span.quote_start)
            start = space + 1 if space != -1 else start
    body = truncate_to_tokens(text[start:], max_tokens)
    return ("... " if start else "") + body + (" ..." if start + len(body) < len(text.rstrip()) else "")


# -- citations ------------------------------------------------------------------------------------------


def cited_ids(answer_text: str) -> list[str]:
    """Section-id-shaped strings in the answer, deduplicated, in order of first appearance."""
    return list(dict.fromkeys(SECTION_ID.findall(answer_text)))


def _cite(out: AnswerOutcome, passages: Sequence[Passage], spans: dict[str, Span], cap: int) -> set[str]:
    offered = {p.section_id: p for p in passages}
    ids = cited_ids(out.answer)
    valid = [i for i in ids if i in offered]
    out.invented_ids = [i for i in ids if i not in offered]
    if out.invented_ids:
        out.warnings.append(f"the answer cites {len(out.invented_ids)} id(s) that were not among the sources; "
                            "they are not in citations: " + ", ".join(out.invented_ids))
    if len(valid) > cap:
        out.warnings.append(f"the answer cites {len(valid)} sources; citations lists the first {cap} "
                            f"(max_citations), not: " + ", ".join(valid[cap:]))
    elif out.answer.strip() and not valid and out.error is None:
        out.warnings.append("the answer cites none of the sources")
    out.citations = [_citation(offered[i], spans.get(i)) for i in valid[:cap]]
    return set(valid)


def _citation(p: Passage, span: Span | None) -> dict[str, Any]:
    base = {"section_id": p.section_id, "document_id": p.document_id, "document_title": p.document_title,
            "title": p.title}
    if span is not None and span.verified:
        first = page_at(p.page_map, span.quote_start, p.page_start)
        last = page_at(p.page_map, max(span.quote_start, span.quote_end - 1), p.page_start)
        return {**base, "page_start": first, "page_end": max(first, last), "quote": span.quote,
                "quote_start": span.quote_start, "quote_end": span.quote_end, "verified": True}
    return {**base, "page_start": p.page_start, "page_end": p.page_end, "quote": span.quote if span else "",
            "quote_start": -1, "quote_end": -1, "verified": False}


def _candidate(p: Passage, span: Span | None, cited: bool) -> dict[str, Any]:
    return {"section_id": p.section_id, "document_id": p.document_id, "document_title": p.document_title,
            "title": p.title, "path": list(p.path), "page_start": p.page_start, "page_end": p.page_end,
            "score": p.score, "status": p.status, "unit": p.unit, "snippet": p.snippet,
            "span": None if span is None else {"found": span.found, "quote": span.quote,
                                               "quote_start": span.quote_start, "quote_end": span.quote_end,
                                               "verified": span.verified},
            "cited": cited}
