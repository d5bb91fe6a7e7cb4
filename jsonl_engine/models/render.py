"""Where a quote is on its pages (carried by kb.synthesize claims and kb.answer citations), and kb.render."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from jsonl_engine.errors import InvalidParams
from jsonl_engine.models import Params, Result
from jsonl_engine.models.query_params import Id

BoxesStatus = Literal["ok", "not_pdf", "file_missing", "file_changed", "text_changed", "unmapped", "unverified"]
BOXES_STATUS = (
    "ok: every page has its boxes; not_pdf: a text document (offsets, no boxes); file_missing / file_changed: "
    "the ingested file is gone or its bytes differ (sha256), so no boxes; text_changed: pdfium reads the page "
    "differently from the stored text, so no boxes; unmapped: the quote could not be placed on its pages; "
    "unverified: a kb.answer citation whose quote was not found (no pages)")


class QuotePage(Result):
    page: int = Field(description="1-based page")
    start: int = Field(description="offset into the page's stored text (kb.read with document_id and page)")
    end: int
    boxes: list[list[float]] | None = Field(description=(
        "PDF only: [left, bottom, right, top] in points per line of the quote on this page (cut around glyphs "
        "inside the line that are not the quote's, such as a superscript TM), in pdfium's page "
        "coordinates (origin at the bottom-left of the unrotated page, as PdfTextPage.get_text_bounded takes "
        "them); on a page read by OCR (kb.ingest ocr_pages), the boxes of the OCR words; null without boxes "
        "(see boxes_status)"))
    rotation: int | None = Field(description="the page's rotation, degrees clockwise (0, 90, 180, 270)")
    width: float | None = Field(description="the unrotated page's width in points")
    height: float | None = Field(description="the unrotated page's height in points")


class RenderParams(Params):
    document_id: Id = Field(description="a PDF document")
    page: int = Field(ge=1, le=1_000_000, description="1-based page number")
    start: int | None = Field(None, ge=0, le=100_000_000, description=(
        "with end: highlight this span of the page's stored text (a claim's or citation's pages[].start)"))
    end: int | None = Field(None, ge=0, le=100_000_000)
    crop: bool = Field(False, description="with start/end: only the region around the highlight, not the page")
    margin: float = Field(36.0, ge=0, le=2000, description="crop margin around the highlight, in points")
    scale: float = Field(2.0, ge=0.1, le=8.0, description="pixels per point (1 = 72 dpi)")
    output: Literal["file", "base64"] = Field("file", description=(
        "file: a PNG in the KB's cache directory (its path in `path`); base64: the PNG in `data`"))

    def check(self) -> None:
        if (self.start is None) != (self.end is None):
            raise InvalidParams("give start and end together", fields=["start" if self.start is None else "end"])
        if self.start is not None and self.end is not None and self.end < self.start:
            raise InvalidParams("end must not be before start", fields=["end"])
        if self.crop and self.start is None:
            raise InvalidParams("crop needs start and end (a highlight to crop around)", fields=["crop"])


class RenderResult(Result):
    document_id: str
    page: int
    media_type: Literal["image/png"] = "image/png"
    width: int = Field(description="image width in pixels")
    height: int = Field(description="image height in pixels")
    scale: float
    rotation: int = Field(description="the page's rotation, applied in the image")
    boxes: list[list[float]] = Field(description="the highlighted boxes in PDF points (page coordinates)")
    pixel_boxes: list[list[int]] = Field(description="the same boxes in image pixels: [left, top, right, bottom]")
    path: str | None = Field(description="output=file: the PNG's path")
    data: str | None = Field(description="output=base64: the PNG, base64-encoded")
