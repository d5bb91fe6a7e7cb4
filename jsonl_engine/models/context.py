"""kb.context: budgeted passages for a query (the first stage of every answer)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from jsonl_engine.models import Result
from jsonl_engine.models.query_params import RetrievalParams


class ContextParams(RetrievalParams):
    query: str = Field(min_length=1, max_length=1_000_000,
                       description="free text; never parsed as search syntax (operators and quotes are plain text)")
    limit: int = Field(8, ge=1, le=100, description="most items returned")
    max_chars: int | None = Field(None, ge=1, le=10_000_000,
                                  description="budget for the returned text, in characters")
    max_tokens: int | None = Field(None, ge=1, le=10_000_000,
                                   description="budget in tokens (estimated as characters / 4)")
    include_text: bool = Field(True, description="false: items carry snippets only (text is null)")
    unit: Literal["section", "page"] = Field("section", description="page: whole pages, for clients citing pages")


class ContextItem(Result):
    section_id: str = Field(description="for unit=page: '<document_id>:p<page>'")
    document_id: str
    document_title: str
    title: str
    path: list[str] = Field(description="titles of the ancestor sections, outermost first")
    page_start: int = Field(description="1-based, inclusive")
    page_end: int
    score: float = Field(description="relevance, higher is better (rounded; comparable within one result)")
    text: str | None = Field(description="the section (or page) text, a prefix of it when clipped to the budget; "
                                         "offsets into it are offsets into the section text")
    snippet: str = Field(description="a short excerpt around the query terms")
    confidence: float | None = Field(None, description="LLM strategies: the model's confidence in this item, 0..1")


class ContextBudget(Result):
    max_chars: int | None = Field(description="the effective character budget (tighter of max_chars and "
                                              "max_tokens * 4); null when unbounded")
    used_chars: int = Field(description="characters of text returned")
    truncated: bool = Field(description="an item was clipped or dropped to fit")
    omitted: int = Field(description="items dropped whole to fit the budget")


class RoutedDocument(Result):
    document_id: str
    title: str
    score: float = Field(description="how strongly the query names this document (entity, period, kind), 0..1")
    why: list[str] = Field(description="what matched: the entity, the period, the kind")
    decided: bool = Field(False, description=(
        "the query names this one document by entity and period: the passages come from it alone"))


class ContextResult(Result):
    query: str
    strategy: str
    items: list[ContextItem]
    budget: ContextBudget
    reason: str | None = Field(description="why items is empty, or what the budget cut; null otherwise")
    hops_taken: int = Field(0, description="LLM strategies: model turns taken (0 for lexical)")
    usage: dict[str, int | bool] | None = Field(None, description=(
        "LLM strategies: prompt_tokens, completion_tokens, total_tokens, calls, and estimated (true when some "
        "token count is the daemon's estimate, the server having reported none)"))
    confidence: float | None = Field(None, description="LLM strategies: overall confidence, 0..1")
    routed: list[RoutedDocument] = Field(default_factory=list, description=(
        "the documents the query was routed to by the entity, period and kind it names (from the document "
        "cards), best first; empty when it names none"))
    warnings: list[str] = Field(default_factory=list, description=(
        "LLM strategies: what the reader did that the caller should know, each starting with a code and a colon "
        "(as kb.answer's): empty_reply, reply_truncated, reply_capped, content_filtered, reply_unfinished, "
        "parameter_dropped, prompt_fitted; empty for lexical"))
