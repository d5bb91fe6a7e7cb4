from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from jsonl_engine.models import Result
from jsonl_engine.models.query_params import QueryParams
from jsonl_engine.models.render import BOXES_STATUS, BoxesStatus, QuotePage

Confidence = Literal["high", "medium", "low", "none"]


class SynthesizeParams(QueryParams):
    depth: int = Field(5, ge=1, le=50, description="passages considered first (claims may also come from as many again, "
                                                  "ranked below them, when clearly more direct)")
    max_chars: int = Field(4000, ge=1, le=100_000,
                           description="answer length limit; trailing sentences are dropped, never cut")
    max_claims: int = Field(5, ge=1, le=50, description=(
        "claims in the answer, most direct first; _meta.more counts the others (ask again with a larger value)"))
    llm: bool = Field(False, description=(
        "true: the LLM rewrites the cited claims into fluent prose; each sentence keeps [claim_id] citations of "
        "offered claims only (others stripped, sentences without one dropped, both reported in _meta.llm)"))


class TablePart(Result):
    text: str = Field(description="verbatim: the page's text between start and end")
    page: int | None = Field(description="1-based page whose text the offsets index (kb.read with page; kb.render); "
                                         "null: they index the claim's section text")
    start: int
    end: int
    boxes: list[list[float]] | None = Field(None, description="PDF: the span's boxes on the page, in points "
                                                               "(as in pages[].boxes); null when not available")


class TableCell(TablePart):
    column: str | None = Field(description="the column's headers (group, period) found above the row; null "
                                           "when the headers do not map onto the cells")
    empty: bool = Field(description="a dash: no value in this column")
    asked: bool = Field(description="the column of the period the question names")


class ClaimTable(Result):
    label: TablePart | None = Field(description="the row's label")
    cells: list[TableCell]
    unit: TablePart | None = Field(description="the unit printed with the table (\"(Millions)\"), if found")
    headers: list[TablePart] = Field(description="the header lines above the row on its page, in page order")


class Claim(Result):
    id: str = Field(description="stable for the same KB content; cited in the answer as [id]")
    text: str = Field(description="verbatim: the section text between quote_start and quote_end")
    section_id: str
    document_id: str
    document_title: str
    page: int = Field(description="1-based page the sentence is on")
    quote_start: int = Field(description="offset into the section text")
    quote_end: int
    pages: list[QuotePage] = Field(description="the page(s) the quote spans: offsets into each page's text and, "
                                               "for a PDF, its boxes on the page (kb.render draws them)")
    boxes_status: BoxesStatus = Field(description=BOXES_STATUS)
    table: ClaimTable | None = Field(None, description=(
        "a table row: which value is in which column (headers, periods and unit found above it on its page), "
        "each part verbatim with its offsets and boxes"))


class FirstClaim(Result):
    id: str
    why: str = Field(description="the reasons it leads: its score and what makes it direct (answer/order.py)")


class Computed(Result):
    line: str = Field(description="the computed answer line as in the answer, its arithmetic written out")
    value: float | None = Field(description="the result (a percentage as its number of percent); null: not computed")
    inputs: list[str] = Field(description="ids of the claims holding each input, in the formula's order")
    missing: list[str] = Field(description="inputs that were not found (then nothing is computed)")


class SynthMeta(Result):
    synthesis_confidence: Confidence = Field(description=(
        "none: nothing found; low: a cited source is contested or the best section covers under half the "
        "query's terms; medium: some term uncovered, a non-approved source cited, or the strongest "
        "sentences of different documents carry different figures; high: otherwise. With llm=true: of the "
        "answer returned (none when it is empty; at most medium when the model's sentences were dropped or "
        "ids stripped)"))
    passages: int = Field(description="passages considered")
    salient_terms: list[str]
    truncated: bool = Field(description="sentences were dropped to fit max_chars, or the first one cut (\"…\")")
    more: int = Field(0, description="further claims beyond max_claims")
    first_claim: FirstClaim | None = Field(None, description="why the first claim was put first")
    not_in_kb: list[str] = Field(default_factory=list, description=(
        "names and periods the question names that no document in scope holds (the answer says so first)"))
    computed: Computed | None = Field(None, description="the question asks for a ratio, change, margin or sum")
    warnings: list[str] = Field(default_factory=list, description=(
        "coded notes: 'other_period: ...' when the question names one period and no passage of that period's "
        "documents could answer it (the answer names the documents it came from instead)"))
    llm: SynthLLM | None = Field(None, description="llm=true only: what the rewrite kept out, and its cost")


class SynthLLM(Result):
    reader: str
    model: str
    dropped_sentences: list[str] = Field(description="sentences the model wrote without a valid citation")
    stripped_claim_ids: list[str] = Field(description="ids the model cited that were not offered")
    fallback: bool = Field(description=(
        "the model's reply was unusable (no sentence citing an offered claim, not the expected JSON, cut off, "
        "content-filtered or otherwise not finished with \"stop\", or empty): answer and claims are the "
        "deterministic ones"))
    warnings: list[str] = Field(description=(
        "coded (\"code: text\"): llm_fallback, empty_reply, reply_truncated, reply_capped, content_filtered, "
        "reply_unfinished, parameter_dropped, prompt_fitted"))
    usage: dict[str, int | bool] = Field(description="prompt_tokens, completion_tokens, total_tokens, calls, "
                                                     "estimated")


class SynthesizeResult(Result):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)

    answer: str = Field(description="sentences of source text, each followed by its citation [claim_id]")
    claims: list[Claim]
    gaps: list[str] = Field(description="salient query terms no considered passage covers")
    meta: SynthMeta = Field(alias="_meta")
