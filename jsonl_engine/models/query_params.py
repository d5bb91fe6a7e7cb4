"""Params shared by the methods that answer a query from the KB (kb.context, kb.answer, kb.synthesize)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from jsonl_engine.models import Params
from jsonl_engine.retrieval.types import StrategyRequest

Status = Literal["approved", "draft", "contested", "archived"]
Id = Annotated[str, Field(min_length=1, max_length=256)]  # a document id (16 hex chars) or a section id

MAX_STATUSES = 16  # four statuses, with room for repeats
# The store binds one SQL variable per id: stay far below SQLite's limit (32766 unless built otherwise).
MAX_DOCUMENT_IDS = 10_000


class QueryParams(Params):
    """The question, the documents and review statuses it may use, and the reader for any LLM work."""

    query: str = Field(min_length=1, max_length=4000, description="the question to answer from the KB")
    document_ids: list[Id] | None = Field(None, max_length=MAX_DOCUMENT_IDS,
                                          description="restrict to these documents (unknown id: not_found)")
    statuses: list[Status] = Field(default_factory=lambda: ["approved"], min_length=1, max_length=MAX_STATUSES,
                                   description="review statuses that may be used and cited (the review gate)")
    reader: str | None = Field(None, min_length=1, max_length=256, description=(
        "a named reader (capabilities.readers) for the LLM work, if any; default: the default reader"))

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("query is blank")
        return value


class RetrievalParams(QueryParams):
    """QueryParams plus the retrieval strategy and the limits of the LLM strategies."""

    strategy: str = Field("lexical", min_length=1, max_length=64,
                          description="retrieval strategy, one of capabilities.strategies")
    max_hops: int | None = Field(None, ge=1, le=32, description="agentic, pageindex: most model turns (default 6)")
    max_tokens_per_call: int | None = Field(None, ge=256, le=1_000_000, description=(
        "LLM strategies: prompt tokens per model call (default: the reader's context window less the reply)"))
    concurrency: int | None = Field(None, ge=1, le=64, description=(
        "chunked-tree: model calls in flight at once (default: the reader's max_concurrency)"))
    max_cited_ranges: int | None = Field(None, ge=1, le=50, description="pageindex: most page ranges cited (default 3)")
    max_pages_per_call: int | None = Field(None, ge=1, le=50, description=(
        "pageindex: most pages one read returns to the model (default 4)"))

    def strategy_request(self, *, limit: int, unit: str = "section") -> StrategyRequest:
        """The retrieval request these params make (the one domain shape of a retrieval request)."""
        return StrategyRequest(
            query=self.query, document_ids=self.document_ids, statuses=tuple(self.statuses), limit=limit, unit=unit,
            max_tokens_per_call=self.max_tokens_per_call, max_hops=self.max_hops, concurrency=self.concurrency,
            max_cited_ranges=self.max_cited_ranges, max_pages_per_call=self.max_pages_per_call)
