"""kb.render: a PDF page, or the region around a quote, as a PNG with the quote's boxes highlighted.

pypdfium2 renders; Pillow (the optional `render` extra, imported only here) composites the highlight and writes the
PNG: pypdfium2 hands its bitmap to Pillow without a copy, and Pillow's encoder is C (zlib), where pure-Python
pypng would spend most of a page's time filtering rows.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from jsonl_engine.errors import UnsupportedMedia
from jsonl_engine.ingest import pdfgeom
from jsonl_engine.ingest.model import PDF

if TYPE_CHECKING:
    from jsonl_engine.store import Store

HIGHLIGHT = (255, 214, 0, 110)  # translucent yellow fill
OUTLINE = (230, 140, 0, 255)


@dataclass(slots=True)
class Rendered:
    png: bytes
    width: int
    height: int
    rotation: int
    boxes: list[list[float]]
    pixel_boxes: list[list[int]]


def _pillow():
    try:
        from PIL import Image, ImageDraw
    except ImportError as exc:
        raise UnsupportedMedia("kb.render needs Pillow to write PNGs: pip install 'jsonl-engine[render]'",
                               reason="no_renderer") from exc
    return Image, ImageDraw


def render(store: Store, document_id: str, page: int, span: tuple[int, int] | None, *, scale: float,
           crop: bool, margin: float) -> Rendered:
    Image, ImageDraw = _pillow()
    doc = store.document(document_id)
    if doc.media_type != PDF:
        raise UnsupportedMedia(f"{doc.title!r} is not a PDF: nothing to render", reason="not_pdf")
    text = store.page(document_id, page).text  # not_found for a page the document lacks
    boxes: list[list[float]] = []
    if span is not None:
        from jsonl_engine.answer.pages import ocr_words

        words = ocr_words(store, {document_id: doc}, [(document_id, page)]).get((document_id, page))
        _geometry, found, status = pdfgeom.page_boxes(doc.path, doc.sha256, page, text, [span], words)
        if status != "ok":
            raise UnsupportedMedia(f"cannot place the quote on page {page} of {doc.title!r}: {status}",
                                   reason=status)
        boxes = found[0]
    import pypdfium2.raw as raw

    problem, fh = pdfgeom.FILES.verify(doc.path, doc.sha256)  # outside the lock: opening a file may be slow
    if problem is not None or fh is None or doc.path is None:
        problem = problem or pdfgeom.FILE_MISSING
        raise UnsupportedMedia(f"cannot render {doc.title!r}: {problem} ({doc.path})", reason=problem)
    with pdfgeom.LOCK:
        pdf_page = pdfgeom.FILES.document(doc.path, doc.sha256, fh)[page - 1]
        try:
            rotation = pdf_page.get_rotation()
            image = pdf_page.render(scale=scale).to_pil().convert("RGB")
            pixel_boxes = [_to_pixels(raw, pdf_page, image.size, box) for box in boxes]
        finally:
            pdf_page.close()
    if pixel_boxes:
        overlay = Image.new("RGBA", image.size, (0, 0, 0, 0))
        draw = ImageDraw.Draw(overlay)
        for left, top, right, bottom in pixel_boxes:
            draw.rectangle((left, top, right, bottom), fill=HIGHLIGHT, outline=OUTLINE, width=max(1, round(scale / 2)))
        image = Image.alpha_composite(image.convert("RGBA"), overlay).convert("RGB")
    if crop and pixel_boxes:
        pad = round(margin * scale)
        left = max(0, min(b[0] for b in pixel_boxes) - pad)
        top = max(0, min(b[1] for b in pixel_boxes) - pad)
        right = min(image.width, max(b[2] for b in pixel_boxes) + pad + 1)
        bottom = min(image.height, max(b[3] for b in pixel_boxes) + pad + 1)
        image = image.crop((left, top, right, bottom))
        pixel_boxes = [[b[0] - left, b[1] - top, b[2] - left, b[3] - top] for b in pixel_boxes]
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=6)
    return Rendered(out.getvalue(), image.width, image.height, rotation, boxes, pixel_boxes)


def _to_pixels(raw, page, size: tuple[int, int], box: list[float]) -> list[int]:
    """[left, bottom, right, top] in page points -> [left, top, right, bottom] in pixels of the rendered page
    (pdfium's own mapping, rotation included), widened by a pixel to cover anti-aliased glyph edges."""
    import ctypes

    xs, ys = [], []
    dx, dy = ctypes.c_int(), ctypes.c_int()
    for x, y in ((box[0], box[1]), (box[2], box[3])):
        raw.FPDF_PageToDevice(page.raw, 0, 0, size[0], size[1], 0, x, y, dx, dy)
        xs.append(dx.value)
        ys.append(dy.value)
    return [min(xs) - 1, min(ys) - 1, max(xs) + 1, max(ys) + 1]


def save(kb_dir: Path, document_id: str, page: int, span: tuple[int, int] | None, scale: float, crop: bool,
         margin: float, png: bytes) -> str:
    """Write the PNG into the KB's cache directory (atomically) and return its path."""
    folder = Path(kb_dir) / "cache" / "render"
    folder.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256(f"{document_id}\x00{page}\x00{span}\x00{scale}\x00{crop}\x00{margin}".encode()).hexdigest()
    path = folder / f"{document_id}-p{page}-{key[:12]}.png"
    # A temporary name of this call's own: identical renders in parallel each write theirs, the last rename wins.
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.stem}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fd, 0o644)  # as a plain write would leave it (mkstemp makes it private)
            fh.write(png)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return str(path.resolve())


def encode(png: bytes) -> str:
    return base64.b64encode(png).decode("ascii")
