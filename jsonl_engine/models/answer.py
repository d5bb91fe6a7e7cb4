from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from jsonl_engine.models import Params, Result

Status = Literal["approved", "draft", "contested", "archived"]


class AnswerParams(Params):
    query: str = Field(min_length=1, max_length=4000, description="the question to answer from the KB")
    document_ids: list[str] | None = Field(None, description="restrict to these documents")
    statuses: list[Status] = Field(default_factory=lambda: ["approved"], min_length=1,
                                   description="review statuses that may be used and cited (the review gate)")
    strategy: str = Field("lexical", min_length=1, max_length=64,
                          description="retrieval strategy, one of capabilities.strategies")
    reader: str | None = Field(None, description="named reader (capabilities.readers); default: the default one")
    max_sections: int = Field(5, ge=1, le=50, description="sections retrieved and offered to the model")
    max_citations: int = Field(3, ge=1, le=50, description="citations listed, in order of first citation")
    max_answer_tokens: int = Field(1024, ge=16, le=32_768, description="limit on the answer's length")
    stream: bool = Field(True, description="stream the answer text as `delta` events")
    max_hops: int | None = Field(None, ge=1, le=32, description="LLM strategies: most model turns of retrieval")
    max_tokens_per_call: int | None = Field(None, ge=256, le=1_000_000,
                                            description="LLM strategies: prompt tokens per retrieval call")

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("query is blank")
        return value


class Citation(Result):
    section_id: str
    document_id: str
    document_title: str
    title: str = Field(description="the section's title")
    page_start: int = Field(description="1-based first page of the quote (of the section when unverified)")
    page_end: int
    quote: str = Field(description="verified: the section text between quote_start and quote_end; else the "
                                   "model's quote as given (or empty)")
    quote_start: int = Field(description="offset into the section text; -1 when unverified")
    quote_end: int
    verified: bool = Field(description="the quote was found in the section text")


class CandidateSpan(Result):
    found: bool = Field(description="the model said the section answers the question")
    quote: str
    quote_start: int
    quote_end: int
    verified: bool


class Candidate(Result):
    section_id: str
    document_id: str
    document_title: str
    title: str
    path: list[str]
    page_start: int
    page_end: int
    score: float
    status: str
    unit: str
    snippet: str
    span: CandidateSpan | None = Field(description="the extracted evidence; null when extraction did not run")
    cited: bool = Field(description="the answer cites this section")


class Usage(Result):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    calls: int = Field(description="HTTP calls to the LLM endpoint, retries included")


class AnswerError(Result):
    code: str
    message: str
    data: dict[str, Any] | None = None


class AnswerResult(Result):
    answer: str = Field(description="the model's answer with [section_id] citations (partial if error is set)")
    citations: list[Citation] = Field(description="the offered sections the answer cites: deduplicated, "
                                                  "in order of first citation, at most max_citations")
    invented_ids: list[str] = Field(description="ids cited in the answer that were not among the sources "
                                                "(dropped from citations)")
    warnings: list[str]
    strategy: str
    reader: str
    model: str
    usage: Usage
    candidates: list[Candidate] = Field(description="the retrieved sections offered to the model")
    error: AnswerError | None = Field(description="set when the reader failed after retrieval")
