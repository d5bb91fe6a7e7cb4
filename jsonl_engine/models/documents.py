"""Wire models of kb.ingest and the document methods (kb.documents, kb.outline, kb.read, kb.remove, kb.review)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from jsonl_engine.errors import InvalidParams
from jsonl_engine.ingest.parsers import EXTENSIONS
from jsonl_engine.models import Params, Result
from jsonl_engine.models.answer import Usage
from jsonl_engine.models.query_params import MAX_STATUSES, Id, Status

TextMediaType = Literal["text/plain", "text/markdown"]
FilePath = Annotated[str, Field(min_length=1)]  # no length cap: an unusable path fails its own entry only


IsoDate = Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$", max_length=10, description="YYYY-MM-DD")]


class CardMeta(Params):
    """Card fields a user sets; each given value wins over the derived one (and survives re-derivation)."""

    title: str | None = Field(None, min_length=1, max_length=500)
    kind: str | None = Field(None, min_length=1, max_length=100,
                             description="10-K, 10-Q, 8-K, earnings release, annual report, contract, report, ...")
    entities: list[Annotated[str, Field(min_length=1, max_length=300)]] | None = Field(
        None, max_length=50, description="issuer, parties, authors; the first is the one the title names")
    period_end: IsoDate | None = None
    fiscal_year: int | None = Field(None, ge=1000, le=9999)
    fiscal_quarter: int | None = Field(None, ge=1, le=4)
    report_date: IsoDate | None = None
    filed: IsoDate | None = None


class Card(Result):
    """What a document is: derived from its text at ingest, with the user's values (meta) applied."""

    title: str
    kind: str | None = Field(description=(
        "10-K, 10-Q, 8-K, 20-F, earnings release, earnings call transcript, proxy statement, annual report, "
        "clinical protocol, accident report, government report, research paper, contract, manual, standard, "
        "press release, slide deck, report, or the generic 'document' (null only for a card stored before "
        "kinds)"))
    entities: list[str] = Field(description="who the document is about or by (issuer, parties, authors)")
    period_end: str | None = Field(description="end of the period covered, YYYY-MM-DD")
    fiscal_year: int | None
    fiscal_quarter: int | None
    report_date: str | None = Field(description="date of the event reported (8-K), YYYY-MM-DD")
    filed: str | None = Field(description="filing date, YYYY-MM-DD, when the document says")
    kind_confidence: float | None = Field(None, description=(
        "how sure the kind is: 0.9 the title names it, 0.6 its first pages' marks do, 0.4 one mark, 0.2 the "
        "generic kind 'document'"))
    identifiers: list[str] = Field(default_factory=list, description=(
        "the document's own identifiers (a report, protocol or grant number, a registry id, a DOI)"))
    date: str | None = Field(None, description="the date the document gives itself, YYYY-MM-DD or YYYY-MM")
    place: str | None = Field(None, description="the place it names (an accident's location)")


class IngestParams(Params):
    paths: list[FilePath] | None = Field(None, min_length=1, description=(
        f"files and/or directories (searched recursively for {EXTENSIONS})"))
    text: str | None = Field(None, min_length=1, description="inline document text (instead of paths)")
    title: str | None = Field(None, min_length=1, max_length=500, description="title of the inline text")
    media_type: TextMediaType = Field("text/plain", description="how to read the inline text")
    status: Status = Field("approved", description="review status given to newly ingested documents")
    summarize: bool = Field(False, description=(
        "fill each section's summary (used by the outline strategies): one sentence per section written by the "
        "LLM when a reader is configured, else extractive (leading sentence and salient terms)"))
    resummarize: bool = Field(False, description=(
        "summarize (as summarize: true) also the documents skipped because these exact bytes are in the KB "
        "already: regenerates their summaries without re-ingesting"))
    reader: str | None = Field(None, min_length=1, max_length=256,
                               description="with summarize: a named reader (capabilities.readers)")
    meta: CardMeta | None = Field(None, description=(
        "card fields for every document written by this request; they win over the derived ones"))

    def check(self) -> None:
        if (self.paths is None) == (self.text is None):
            raise InvalidParams("give either paths or text (with title)", fields=["paths", "text"])
        if self.text is not None and not self.title:
            raise InvalidParams("inline text needs a title", fields=["title"])
        if self.paths is not None and self.title is not None:
            raise InvalidParams("title goes with inline text, not with paths", fields=["title"])


class IngestError(Result):
    code: str = Field(description="unsupported_media, not_found, kb_unavailable or internal")
    message: str
    reason: str | None = Field(None, description="for unsupported_media: encrypted, corrupt, not_pdf, no_text, "
                                                 "needs_ocr (a scanned PDF and no Tesseract to read it: the "
                                                 "message says what to install), unknown_type, not_regular, "
                                                 "too_large, crashed; for kb_unavailable: what made the KB "
                                                 "unusable (disk_full, io_error, corrupt, ...)")


class IngestResult(Result):
    """One per document (or per failed entry)."""

    document_id: str | None
    title: str | None
    path: str | None
    media_type: str | None
    pages: int
    sections: int
    status: Status | None
    skipped: bool = Field(description="true when nothing was written (same content already in the KB)")
    reason: str | None = Field(description="why it was skipped, or what was replaced")
    warnings: list[str] = Field(description=(
        "what the caller should know; with summarize, coded: summaries_extractive (the reader failed, extractive "
        "summaries were written for the sections that had none), summaries_kept (the reader failed, every "
        "section kept the summary it had), summaries_partial (some batches had no usable reply), "
        "parameter_dropped, prompt_fitted, and a JSON reply's reply_truncated, content_filtered, ...; for "
        "scanned PDF pages: needs_ocr (not read: Tesseract missing, what to install), ocr_failed (tesseract "
        "failed or timed out on a page)"))
    error: IngestError | None = Field(None, description="set when this entry could not be ingested")
    ocr_pages: list[int] = Field(default_factory=list, description=(
        "the pages of a PDF whose text was read by OCR (scanned pages: no text layer, an image; Tesseract); their "
        "citations get boxes from the OCR words"))
    summary_usage: Usage | None = Field(None, description=(
        "summarize with a reader: the summary calls made for this document (null otherwise)"))


class DocumentsParams(Params):
    statuses: list[Status] | None = Field(None, max_length=MAX_STATUSES, description=(
        "only documents with these review statuses (all when omitted)"))
    entity: str | None = Field(None, min_length=1, max_length=300, description=(
        "only documents whose card names this entity (case-insensitive, all its words)"))
    kind: str | None = Field(None, min_length=1, max_length=100, description="only documents of this kind (e.g. 10-K)")
    fiscal_year: int | None = Field(None, ge=1000, le=9999, description="only documents of this fiscal year")
    fiscal_quarter: int | None = Field(None, ge=1, le=4, description="only documents of this fiscal quarter")


class DocumentItem(Result):
    document_id: str
    title: str
    path: str | None
    media_type: str
    pages: int
    sections: int
    status: Status
    ingested_at: str = Field(description="UTC, ISO 8601")
    card: Card | None = Field(description="what the document is (null only while it is being derived)")
    meta: dict[str, object] = Field(description="the card fields a user set (they win over derived values)")


class UpdateParams(Params):
    document_id: Id
    meta: CardMeta = Field(description="card fields to set; an explicit null removes the user's value for that "
                                       "field (the derived one shows again)")


class DocumentsResult(Result):
    documents: list[DocumentItem]


class OutlineParams(Params):
    document_id: Id
    max_depth: int | None = Field(None, ge=1, le=64, description="1 = top-level sections only")


class OutlineSection(Result):
    section_id: str
    title: str
    depth: int = Field(description="1 for top-level sections")
    page_start: int = Field(description="1-based")
    page_end: int = Field(description="1-based, inclusive")
    children: list[OutlineSection]


class OutlineResult(Result):
    document_id: str
    title: str
    sections: list[OutlineSection]


class ReadParams(Params):
    section_id: Id | None = Field(None, description="a section to read")
    document_id: Id | None = Field(None, description="with page: read one page")
    page: int | None = Field(None, ge=1, le=1_000_000, description="1-based page number (with document_id)")

    def check(self) -> None:
        if self.section_id is not None:
            if self.document_id is not None or self.page is not None:
                raise InvalidParams("give section_id, or document_id with page, not both",
                                    fields=["section_id"])
        elif self.document_id is None or self.page is None:
            raise InvalidParams("give section_id, or document_id with page",
                                fields=["page" if self.document_id is not None else "section_id"])


class ReadResult(Result):
    document_id: str
    document_title: str
    status: Status
    section_id: str | None = Field(description="null when a page was read")
    title: str = Field(description="the section title, or 'Page N'")
    path: list[str] = Field(description="titles of the enclosing sections, outermost first")
    page_start: int
    page_end: int
    text: str = Field(description="exactly as stored: quote offsets point into this text")
    page_map: list[tuple[int, int]] = Field(description="[offset into text, page] where each page begins")
    children: list[str] = Field(description="ids of child sections (a section with children may have no text)")


class RemoveParams(Params):
    document_id: Id


class RemoveResult(Result):
    document_id: str
    removed: bool
    pages: int
    sections: int


class ReviewParams(Params):
    document_id: Id
    status: Status


class ReviewResult(Result):
    document_id: str
    status: Status
    previous_status: Status
