from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from jsonl_engine.models import Result
from jsonl_engine.models.query_params import RetrievalParams
from jsonl_engine.models.render import BOXES_STATUS, BoxesStatus, QuotePage
from jsonl_engine.models.synthesize import TableCell

if TYPE_CHECKING:
    from jsonl_engine.answer.llm_answer import AnswerRequest


class AnswerParams(RetrievalParams):
    max_sections: int = Field(5, ge=1, le=50, description="sections retrieved and offered to the model")
    max_citations: int = Field(3, ge=1, le=50, description="citations listed, in order of first citation")
    max_answer_tokens: int = Field(1024, ge=16, le=32_768, description="limit on the answer's length")
    stream: bool = Field(True, description="stream the answer text as `delta` events")

    def request(self) -> AnswerRequest:
        """The domain request, built once from these params."""
        from jsonl_engine.answer.llm_answer import (
            AnswerRequest,  # the answer pipeline loads with the first kb.answer
        )

        return AnswerRequest(retrieval=self.strategy_request(limit=self.max_sections), strategy=self.strategy,
                             max_citations=self.max_citations, max_answer_tokens=self.max_answer_tokens,
                             stream=self.stream)


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
    pages: list[QuotePage] = Field(description="verified: the page(s) the quote spans, offsets into each page's "
                                               "text and, for a PDF, its boxes on the page; else empty")
    boxes_status: BoxesStatus = Field(description=BOXES_STATUS)
    cell: CitedCell | None = Field(None, description=(
        "the table cell of the quote whose figure the answer states: offsets into its page's text, boxes, and "
        "the row's label, column and unit found above it on the page; null when the figure is not in a table"))


class CitedCell(TableCell):
    label: str | None = Field(description="the row's label")
    unit: str | None = Field(description="the table's unit, as printed (\"(Millions)\")")


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
    estimated: bool = Field(description="some token count is the daemon's estimate (the server reported none, "
                                        "e.g. a stream from a server that ignores stream_options)")


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
    warnings: list[str] = Field(description=(
        "what the caller should know, of the retrieval stage's calls too; a warning the engine can name starts "
        "with a code and a colon: empty_reply, reply_truncated, reply_capped, content_filtered, reply_unfinished, "
        "parameter_dropped, prompt_fitted"))
    truncated: bool = Field(description="the answer did not finish: cut off (any finish_reason but \"stop\", e.g. "
                                        "\"length\" or \"content_filter\", or the daemon's cap on reply size) or "
                                        "failed midway (error is set): it may end mid-sentence")
    strategy: str
    reader: str
    model: str
    usage: Usage
    candidates: list[Candidate] = Field(description="the retrieved sections offered to the model")
    error: AnswerError | None = Field(description="set when the reader failed after retrieval")
