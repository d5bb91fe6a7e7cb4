"""Where stored page text sits on a PDF page: rectangles (PDF points) for offsets into a page's stored text.

Nothing is kept at ingest: the boxes are recomputed from the file when a citation asks for them (bench/citations.py
measures what keeping pdfium's character boxes would cost instead). The file must still be the one ingested (its
sha256) and pdfium must still read the page as the stored text (compared character for character), else the
answer is a status saying why, never a box from another layout. A page read by OCR (a scan: the file has no text
there) is the exception: its words' boxes are stored at ingest (`ingest/ocr.py`, `Store.page_words`) and a span's
boxes are its words' (`word_boxes`), once the file is checked the same way.

Stored page text is pdfium's text with `\\r\\n` line ends made `\\n` and the same-length replacements of
`normalize.normalize_line` (see `pdf._extract_page`); `stored_index` rebuilds it with, per stored character, the
index of the pdfium text character it came from.

A quote's boxes are its characters' glyph boxes merged per line (`merge_lines`). pdfium's bounded text takes every
glyph a rectangle touches, and a line can hold glyphs that are not the quote's although they sit among its
characters (a superscript "TM" or footnote marker pdfium reads at the line's end): when pdfium finds more glyphs in
a quote's rectangles than the quote has, the rectangles are built again cut around those glyphs (one pass over the
page's glyph boxes, only then).

pdfium is not thread-safe: every call here holds one process-wide lock, never while a file is opened or hashed.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import BinaryIO

from jsonl_engine.errors import UnsupportedMedia
from jsonl_engine.ingest.normalize import normalize_line

LOCK = threading.RLock()  # every pdfium call of the daemon process outside the ingest pool (pdfium is not thread-safe)
OPEN_DOCUMENTS = 4  # PdfDocuments kept open (by path and sha256), least recently used closed first

# Why a page has no boxes (the `boxes_status` values besides "ok").
NOT_PDF = "not_pdf"  # a text document: offsets only
FILE_MISSING = "file_missing"  # the ingested path is gone or unreadable
FILE_CHANGED = "file_changed"  # the file at the path is not the one ingested (sha256 differs, or not a regular file)
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
    """sha256 of files by (path, inode, size, mtime): a file is hashed again only when it changes; open PdfDocuments.

    A file is checked (`verify`) without LOCK: it is opened only when stat says it is a regular file, non-blocking
    and checked again once open (a FIFO or /dev/zero swapped in for the ingested PDF is refused, never read), and
    pdfium reads the very file descriptor that was hashed, not the path again."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, int, int, int, int], str] = {}
        self._lock = threading.Lock()  # guards _seen (verify runs on many threads at once)
        self._docs: OrderedDict[tuple[str, str], object] = OrderedDict()

    def verify(self, path: str | None, sha256: str) -> tuple[str | None, BinaryIO | None]:
        """(None, the file open for reading) when `path` holds the ingested bytes, else (FILE_MISSING /
        FILE_CHANGED, None). Never blocks on a special file; call without LOCK."""
        from jsonl_engine.ingest.files import open_regular, require_regular

        if not path:
            return FILE_MISSING, None
        try:
            require_regular(path, os.stat(path))  # follows symlinks: a link to /dev/zero is a device
            fh = open_regular(path)
        except UnsupportedMedia:
            return FILE_CHANGED, None  # a FIFO, device, socket or directory where the ingested PDF was
        except (OSError, ValueError):
            return FILE_MISSING, None
        try:
            st = os.fstat(fh.fileno())
            key = (path, st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns)
            with self._lock:
                digest = self._seen.get(key)
            if digest is None:
                digest = hashlib.file_digest(fh, "sha256").hexdigest()
                fh.seek(0)
                with self._lock:
                    if len(self._seen) > 256:
                        self._seen.clear()
                    self._seen[key] = digest
        except OSError:
            fh.close()
            return FILE_MISSING, None
        if digest != sha256:
            fh.close()
            return FILE_CHANGED, None
        return None, fh

    def document(self, path: str, sha256: str, fh: BinaryIO):
        """An open PdfDocument of the file `verify` returned open as `fh` (call with LOCK held; `fh` is the
        document's from now on, closed with it, or at once when the document is open already)."""
        import pypdfium2 as pdfium

        key = (path, sha256)
        doc = self._docs.get(key)
        if doc is not None:
            fh.close()
        else:
            try:
                doc = pdfium.PdfDocument(fh, autoclose=True)
            except BaseException:
                fh.close()
                raise
            self._docs[key] = doc
            while len(self._docs) > OPEN_DOCUMENTS:
                _key, old = self._docs.popitem(last=False)
                old.close()  # type: ignore[attr-defined]
        self._docs.move_to_end(key)
        return doc


FILES = _Files()


def page_boxes(path: str | None, sha256: str, number: int, page_text: str, spans: list[tuple[int, int]],
               words: Sequence[Sequence[float]] | None = None) -> tuple[PageGeometry | None,
                                                                        list[list[list[float]]], str]:
    """For each (start, end) span of offsets into page `number`'s stored text, its boxes merged per line.
    `words`: the page was read by OCR (`Store.page_words`), the boxes are its words' (`word_boxes`).

    Returns (page geometry, boxes per span, status): status "ok", or why there are no boxes (FILE_MISSING,
    FILE_CHANGED, TEXT_CHANGED), with empty boxes.
    """
    problem, fh = FILES.verify(path, sha256)
    if problem is not None or fh is None or path is None:
        return None, [[] for _ in spans], problem or FILE_MISSING
    with LOCK:
        try:
            doc = FILES.document(path, sha256, fh)
            page = doc[number - 1]
        except Exception:  # noqa: BLE001 - pdfium failing on a file that hashed right: no boxes, say why
            return None, [[] for _ in spans], TEXT_CHANGED
        try:
            left, bottom, right, top = page.get_bbox()
            if words is not None:
                geometry: list[list[list[float]]] | None = [word_boxes(words, a, b) for a, b in spans]
            else:
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
    glyphs: list[tuple[int, tuple[float, float, float, float]]] | None = None  # the page's glyphs, fetched once
    out = []
    for start, end in spans:
        chars = [index[k] for k in range(max(start, 0), min(end, len(text)))
                 if index[k] >= 0 and not text[k].isspace()]
        if not direct:
            chars = [raw.FPDFText_GetCharIndexFromTextIndex(tp, c) for c in chars]
        chars = [c for c in chars if c >= 0]
        boxes = _char_boxes(tp, raw, chars)
        lines = merge_lines(boxes)
        inside = sum(len("".join(textpage.get_text_bounded(*line).split())) for line in lines)
        if inside != len(boxes):  # pdfium finds glyphs in the lines that are not the quote's: cut around them
            if glyphs is None:
                glyphs = _page_glyphs(tp, raw, textpage.count_chars())
            quote = set(chars)
            foreign = [box for c, box in glyphs if c not in quote and any(_overlap(box, ln, NEAR) for ln in lines)]
            lines = merge_lines(boxes, foreign) if foreign else lines
        out.append(lines)
    return out


def word_boxes(words: Sequence[Sequence[float]], start: int, end: int) -> list[list[float]]:
    """The boxes of [start, end) of an OCR'd page's text: per OCR line, the union of the words the span covers
    (a word it covers in part: the part's share of the word's box, by characters, for a horizontal word)."""
    out: list[list[float]] = []
    last_line = None
    for w_start, w_end, line, left, bottom, right, top in words:
        s, e = max(start, int(w_start)), min(end, int(w_end))
        if s >= e:
            continue
        if (s, e) != (w_start, w_end) and right - left >= top - bottom:
            width, chars = right - left, w_end - w_start
            left, right = left + width * (s - w_start) / chars, left + width * (e - w_start) / chars
        if out and line == last_line:
            box = out[-1]
            box[:] = [min(box[0], left), min(box[1], bottom), max(box[2], right), max(box[3], top)]
        else:
            out.append([left, bottom, right, top])
            last_line = line
    return [[round(v, 2) for v in box] for box in out]


def _page_glyphs(tp, raw, count: int) -> list[tuple[int, tuple[float, float, float, float]]]:
    """(char index, (left, bottom, right, top)) of every visible character of the page (not whitespace)."""
    le, ri, bo, to = (ctypes.c_double() for _ in range(4))
    out = []
    for c in range(count):
        code = raw.FPDFText_GetUnicode(tp, c)
        if code <= 32 or chr(code).isspace() or not raw.FPDFText_GetCharBox(tp, c, le, ri, bo, to):
            continue
        if ri.value > le.value and to.value > bo.value:
            out.append((c, (le.value, bo.value, ri.value, to.value)))
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


def _overlap(a, b, slack: float = 0.0) -> bool:
    """Whether two [left, bottom, right, top] rectangles overlap by more than `slack` both ways (pdfium's bounded
    text takes every character whose box intersects the rectangle)."""
    return min(a[2], b[2]) - max(a[0], b[0]) > slack and min(a[3], b[3]) - max(a[1], b[1]) > slack


NEAR = -0.02  # a foreign glyph this close counts as touching (boxes are rounded to 0.01 pt)
GAP = 0.03  # how far a trimmed edge stays from the foreign glyph
HOLD = 0.1  # how much of each of its own chars a trimmed rectangle still overlaps


def merge_lines(chars: list[tuple[float, float, float, float, float, float]],
                foreign: Sequence[Sequence[float]] = ()) -> list[list[float]]:
    """Character boxes (with origins) in reading order -> one rectangle per line: a char joins the current
    rectangle when it sits on the same baseline a little ahead (commas and periods, lower and shorter than
    letters, included), or, for vertical text, on the same vertical axis just above or below. Text that
    jumps back along its line (another column at the same height) starts a new rectangle.

    `foreign`: boxes of the page's glyphs that are not in the quote (a superscript "TM" or a footnote marker
    pdfium reads elsewhere in its text order, sitting inside the line). A rectangle never grows over one: the
    line is cut there into runs of consecutive quote characters; a quote char whose own glyph touches one (a
    superscript kerned into the word before it) is a rectangle by itself, trimmed off the foreign glyph."""
    out: list[list[float]] = []
    cur: list[float] | None = None
    alone = False  # the current rectangle is one char touching a foreign glyph: nothing joins it
    last = (0.0, 0.0, 0.0)  # origin x, origin y, size of the previous char
    for left, bottom, right, top, ox, oy in chars:
        size = max(top - bottom, right - left)
        box = [left, bottom, right, top]
        touching = [f for f in foreign if _overlap(box, f, NEAR)]
        if cur is not None and not alone and not touching:
            tol = 0.4 * max(size, last[2])
            span = max(cur[3] - cur[1], cur[2] - cur[0])
            horizontal = abs(oy - last[1]) <= tol and left >= cur[0] - tol and ox >= last[0] - 2 * span
            vertical = not horizontal and abs(ox - last[0]) <= tol and abs(oy - last[1]) <= 1.5 * max(size, last[2])
            if horizontal and left < last[0] - 3 * max(size, last[2]):
                horizontal = False  # a jump back along the baseline
            grown = [min(cur[0], left), min(cur[1], bottom), max(cur[2], right), max(cur[3], top)]
            if (horizontal or vertical) and not any(_overlap(grown, f, NEAR) for f in foreign):
                cur[:] = grown
                last = (ox, oy, size)
                continue
        cur = _trim(box, touching) if touching else box
        alone = bool(touching)
        out.append(cur)
        last = (ox, oy, size)
    return [[round(v, 2) for v in box] for box in out]


def _trim(box: list[float], foreign: Sequence[Sequence[float]]) -> list[float]:
    """One char's box cut off the foreign glyphs it touches, each time by the edge that keeps the most of it."""
    own = list(box)
    for f in foreign:
        cuts = [[box[0], box[1], min(box[2], f[0] - GAP), box[3]], [max(box[0], f[2] + GAP), box[1], box[2], box[3]],
                [box[0], box[1], box[2], min(box[3], f[1] - GAP)], [box[0], max(box[1], f[3] + GAP), box[2], box[3]]]
        kept = [c for c in cuts if _overlap(c, own, HOLD)]
        if kept:
            box = max(kept, key=lambda c: (c[2] - c[0]) * (c[3] - c[1]))
    return box
