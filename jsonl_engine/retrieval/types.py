"""What retrieval strategies take and return: the request (every setting typed), passages, the outcome, and the
Strategy interface. Light: the strategy table (strategies.py) imports it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from jsonl_engine.errors import InvalidParams

if TYPE_CHECKING:
    from jsonl_engine.llm.gateway import Gateway
    from jsonl_engine.store import Store

UNITS = ("section", "page")


def check_unit(unit: str) -> None:
    """InvalidParams unless `unit` is one of UNITS."""
    if unit not in UNITS:
        raise InvalidParams(f"unit must be one of {', '.join(UNITS)}", fields=["unit"])


@dataclass(frozen=True, slots=True)
class Passage:
    section_id: str
    document_id: str
    document_title: str
    title: str
    path: list[str]
    page_start: int
    page_end: int
    score: float
    text: str
    snippet: str
    status: str
    page_map: list[tuple[int, int]]
    unit: str = "section"
    confidence: float | None = None  # LLM strategies: the model's confidence in this pick / citation, 0..1

    @classmethod
    def for_page(cls, document_id: str, number: int, *, document_title: str, status: str, path: list[str],
                 score: float, text: str, snippet: str, confidence: float | None = None) -> Passage:
        """A unit="page" passage: page `number` of a document, id "<document_id>:p<number>"."""
        return cls(section_id=f"{document_id}:p{number}", document_id=document_id, document_title=document_title,
                   title=f"Page {number}", path=path, page_start=number, page_end=number, score=score, text=text,
                   snippet=snippet, status=status, page_map=[(0, number)], unit="page", confidence=confidence)


@dataclass
class Retrieval:
    passages: list[Passage]
    reason: str | None = None
    usage: dict = field(default_factory=dict)
    hops_taken: int = 0
    confidence: float | None = None  # LLM strategies: overall confidence, 0..1
    details: dict = field(default_factory=dict)  # strategy-specific (pageindex: answer, citations)
    routed: list[dict] = field(default_factory=list)  # lexical: documents the query named (route.py), best first
    period_documents: list[str] = field(default_factory=list)  # lexical: routed documents covering the named period
    warnings: list[str] = field(default_factory=list)  # LLM strategies: the gateway's coded warnings ("code: text")


class Progress(Protocol):
    """`RequestContext.progress`: report a stage of the work, optionally with counts and a message."""

    def __call__(self, stage: str, done: int | None = None, total: int | None = None,
                 message: str | None = None) -> None: ...


@dataclass(frozen=True, slots=True)
class StrategyRequest:
    """One retrieval request. Settings left None take the strategy's default (named constants in navigate/)."""

    query: str
    document_ids: list[str] | None = None
    statuses: tuple[str, ...] = ("approved",)
    limit: int = 8
    unit: str = "section"
    max_tokens_per_call: int | None = None  # LLM strategies: prompt tokens per call
    max_hops: int | None = None  # agentic, pageindex: model turns
    concurrency: int | None = None  # chunked-tree: calls in flight (default: the reader's max_concurrency)
    max_cited_ranges: int | None = None  # pageindex: page ranges cited
    max_pages_per_call: int | None = None  # pageindex: pages one read returns


class Strategy(Protocol):
    name: str
    needs_llm: bool

    async def run(self, store: Store, request: StrategyRequest, llm: Gateway | None,
                  progress: Progress) -> Retrieval: ...


NO_PROGRESS: Callable[..., None] = lambda *_args, **_kwargs: None  # noqa: E731
