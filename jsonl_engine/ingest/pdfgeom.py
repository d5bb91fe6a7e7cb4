"""Where stored page text sits on a PDF page: rectangles (PDF points) for offsets into a page's stored text.

Nothing is kept at ingest: the boxes are recomputed from the file when a citation asks for them (bench/citations.py
measures what keeping pdfium's character boxes would cost instead). The file must still be the one ingested (its
sha256) and pdfium must still read the page as the stored text (compared character for character), else the
answer is a status saying why, never a box from another layout.

Stored page text is pdfium's text with `\\r\\n` line ends made `\\n` and the same-length replacements of
`normalize.normalize_line` (see `pdf._extract_page`); `stored_index` rebuilds it with, per stored character, the
index of the pdfium text character it came from.

pdfium is not thread-safe: every call here holds one process-wide lock.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass

from jsonl_engine.ingest.normalize import normalize_line

LOCK = threading.RLock()  # every pdfium call of the daemon process outside the ingest pool (pdfium is not thread-safe)
OPEN_DOCUMENTS = 4  # PdfDocuments kept open (by path and sha256), least recently used closed first

# Why a page has no boxes (the `boxes_status` values besides "ok").
NOT_PDF = "not_pdf"  # a text document: offsets only
FILE_MISSING = "file_missing"  # the ingested path is gone or unreadable
FILE_CHANGED = "file_changed"  # the file at the path is not the one ingested (sha256 differs)
TEXT_CHANGED = "text_changed"  # pdfium reads the page differently from the stored text (another pdfium?)
UNMAPPED = "unmapped"  # the quote could not be placed in its page's stored text


@dataclass(frozen=True, slots=True)
class PageGeometry:
    """A page's rotation (degrees clockwise, as displayed) and unrotated size in points, and the boxes asked for."""

    rotation: int
    width: float
    height: float
    boxes: list[list[float]]  # [left, bottom, right, top] per line, PDF page coordinates


def stored_index(raw_text: str) -> tuple[str, list[int]]:
    """The page text as ingest stores it and, per stored character, its index in `raw_text` (-1 for the `\\n`
    standing for a `\\r\\n` pair, which has no glyph)."""
    parts = normalize_line(raw_text).split("\r\n")
    index: list[int] = []
    pos = 0
    for k, part in enumerate(parts):
        if k:
            index.append(-1)
        index.extend(range(pos, pos + len(part)))
        pos += len(part) + 2
    text = "\n".join(parts)
    if "\r" in text:
        text = text.replace("\r", "\n")
    return text, index


class _Files:
    """sha256 of files by (path, size, mtime): a file is hashed again only when it changes."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, int, int], str] = {}
        self._docs: OrderedDict[tuple[str, str], object] = OrderedDict()

    def status(self, path: str | None, sha256: str) -> str | None:
        """None when `path` holds the ingested bytes, else FILE_MISSING / FILE_CHANGED."""
        if not path:
            return FILE_MISSING
        try:
            st = os.stat(path)
            key = (path, st.st_size, st.st_mtime_ns)
            digest = self._seen.get(key)
            if digest is None:
                with open(path, "rb") as fh:
                    digest = hashlib.file_digest(fh, "sha256").hexdigest()
                if len(self._seen) > 256:
                    self._seen.clear()
                self._seen[key] = digest
        except OSError:
            return FILE_MISSING
        return None if digest == sha256 else FILE_CHANGED

    def document(self, path: str, sha256: str):
        """An open PdfDocument of the file (call with LOCK held, after `status` said the file is the right one)."""
        import pypdfium2 as pdfium

        key = (path, sha256)
        doc = self._docs.get(key)
        if doc is None:
            doc = self._docs[key] = pdfium.PdfDocument(path)
            while len(self._docs) > OPEN_DOCUMENTS:
                _key, old = self._docs.popitem(last=False)
                old.close()  # type: ignore[attr-defined]
        self._docs.move_to_end(key)
        return doc


FILES = _Files()


def page_boxes(path: str | None, sha256: str, number: int, page_text: str,
               spans: list[tuple[int, int]]) -> tuple[PageGeometry | None, list[list[list[float]]], str]:
    """For each (start, end) span of offsets into page `number`'s stored text, its boxes merged per line.

    Returns (page geometry, boxes per span, status): status "ok", or why there are no boxes (FILE_MISSING,
    FILE_CHANGED, TEXT_CHANGED), with empty boxes.
    """
    with LOCK:
        problem = FILES.status(path, sha256)
        if problem is not None:
            return None, [[] for _ in spans], problem
        assert path is not None
        try:
            doc = FILES.document(path, sha256)
            page = doc[number - 1]
        except Exception:  # noqa: BLE001 - pdfium failing on a file that hashed right: no boxes, say why
            return None, [[] for _ in spans], TEXT_CHANGED
        try:
            left, bottom, right, top = page.get_bbox()
            textpage = page.get_textpage()
            try:
                geometry = _boxes(textpage, page_text, spans)
            finally:
                textpage.close()
            if geometry is None:
                return None, [[] for _ in spans], TEXT_CHANGED
            info = PageGeometry(rotation=page.get_rotation(), width=round(right - left, 2),
                                height=round(top - bottom, 2), boxes=[])
            return info, geometry, "ok"
        finally:
            page.close()


def _boxes(textpage, page_text: str, spans: list[tuple[int, int]]) -> list[list[list[float]]] | None:
    import pypdfium2.raw as raw

    raw_text = textpage.get_text_range()
    text, index = stored_index(raw_text)
    if text != page_text:
        return None
    tp = textpage.raw
    direct = len(raw_text) == textpage.count_chars()
    out = []
    for start, end in spans:
        chars = [index[k] for k in range(max(start, 0), min(end, len(text)))
                 if index[k] >= 0 and not text[k].isspace()]
        if not direct:
            chars = [raw.FPDFText_GetCharIndexFromTextIndex(tp, c) for c in chars]
        out.append(merge_lines(_char_boxes(tp, raw, [c for c in chars if c >= 0])))
    return out


def _char_boxes(tp, raw, chars: list[int]) -> list[tuple[float, float, float, float, float, float]]:
    """(left, bottom, right, top, origin x, origin y) of each char: pdfium's tight glyph box and the glyph's
    origin on its baseline; chars without a box left out."""
    le, ri, bo, to, ox, oy = (ctypes.c_double() for _ in range(6))
    out = []
    for c in chars:
        if raw.FPDFText_GetCharBox(tp, c, le, ri, bo, to) and ri.value > le.value and to.value > bo.value:
            if not raw.FPDFText_GetCharOrigin(tp, c, ox, oy):
                ox.value, oy.value = le.value, bo.value
            out.append((le.value, bo.value, ri.value, to.value, ox.value, oy.value))
    return out


def merge_lines(chars: list[tuple[float, float, float, float, float, float]]) -> list[list[float]]:
    """Character boxes (with origins) in reading order -> one rectangle per line: a char joins the current
    rectangle when it sits on the same baseline a little ahead (commas and periods, lower and shorter than
    letters, included), or, for vertical text, on the same vertical axis just above or below. Text that
    jumps back along its line (another column at the same height) starts a new rectangle."""
    out: list[list[float]] = []
    cur: list[float] | None = None
    last = (0.0, 0.0, 0.0)  # origin x, origin y, size of the previous char
    for left, bottom, right, top, ox, oy in chars:
        size = max(top - bottom, right - left)
        if cur is not None:
            tol = 0.4 * max(size, last[2])
            span = max(cur[3] - cur[1], cur[2] - cur[0])
            horizontal = abs(oy - last[1]) <= tol and left >= cur[0] - tol and ox >= last[0] - 2 * span
            vertical = not horizontal and abs(ox - last[0]) <= tol and abs(oy - last[1]) <= 1.5 * max(size, last[2])
            if horizontal and left < last[0] - 3 * max(size, last[2]):
                horizontal = False  # a jump back along the baseline
            if horizontal or vertical:
                cur[0], cur[1], cur[2], cur[3] = min(cur[0], left), min(cur[1], bottom), max(cur[2], right), \
                    max(cur[3], top)
                last = (ox, oy, size)
                continue
        cur = [left, bottom, right, top]
        out.append(cur)
        last = (ox, oy, size)
    return [[round(v, 2) for v in box] for box in out]
