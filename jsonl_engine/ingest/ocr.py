"""OCR of scanned PDF pages with Tesseract, in the extraction workers.

A page is read by OCR when pdfium finds no text on it and it shows an image (a scan). pdfium renders it (grayscale,
`dpi`, handed over as a PGM on stdin: no image library needed), one `tesseract` process reads it (single-threaded,
OMP_THREAD_LIMIT=1: the pool already keeps every core busy; killed after `timeout_s`; orientation detected, so
sideways and upside-down scans are read) and writes hOCR: lines, words, and per word a box in pixels.

The page's stored text is the words, one space between the words of a line and "\\n" between lines (after the
same-length replacements of `normalize.normalize_line`, as pdfium's text). Every word keeps its box, mapped to PDF
page coordinates by pdfium (`FPDF_DeviceToPage`, the inverse of the mapping `kb.render` draws with, rotation
included): `(start, end, line, left, bottom, right, top)`, offsets into the stored page text. The store keeps them
with the document (`Store.page_words`); a citation on an OCR'd page gets its boxes from them
(`pdfgeom.word_boxes`), as the file's text layer has none.

Each line's size for heading detection is tesseract's x_size (the line's estimated font size in pixels) in points.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING

from jsonl_engine.ingest.model import Line, PageData
from jsonl_engine.ingest.normalize import normalize_line

if TYPE_CHECKING:
    from jsonl_engine.config import OcrSettings

# PageData.ocr: what OCR did with a page that has no text layer but an image ("" for every other page)
READ = "read"  # its text comes from OCR
NOTHING = "nothing"  # OCR ran and found no words
MISSING = "missing"  # tesseract is not installed (or `command` is not found)
OFF = "off"  # OCR is turned off in the settings
FAILED = "failed: "  # prefix of "failed: <why>" (tesseract failed or timed out on the page)
PENDING = "pending"  # to be read by a later task (`pdf.parse_small_pdf` hands scanned pages to the pool)

MAX_SIDE_PX = 7000  # a page larger than this at `dpi` (a poster, a drawing) is rendered smaller
INSTALL = "apt-get install tesseract-ocr (Debian, Ubuntu), brew install tesseract (macOS)"
_LINES = {"ocr_line", "ocr_caption", "ocr_header", "ocr_textfloat"}

Word = tuple[int, int, int, float, float, float, float]  # start, end, line, left, bottom, right, top


def tesseract(settings: OcrSettings) -> str | None:
    """The tesseract executable to run, or None when OCR is off or not installed."""
    if not settings.enabled:
        return None
    return shutil.which(settings.command)


def unread_status(settings: OcrSettings) -> str:
    return OFF if not settings.enabled else MISSING


def install_hint(settings: OcrSettings) -> str:
    """What to do so scanned pages are read (for messages and warnings)."""
    if not settings.enabled:
        return "OCR is turned off (JSONL_ENGINE_OCR=0 or [ocr] enabled = false)"
    return f"install Tesseract OCR to read it: {INSTALL} ({settings.command!r} was not found)"


def scanned(page) -> bool:
    """Whether a page shows an image (in a form XObject too): a page without text that does may be a scan."""
    import pypdfium2.raw as raw

    return any(True for _obj in page.get_objects(filter=[raw.FPDF_PAGEOBJ_IMAGE], max_depth=3))


def read_if_scanned(doc, data: PageData, settings: OcrSettings, command: str | None,
                    defer: bool = False) -> PageData:
    """`data`, pdfium's reading of a page without text, or for a page that shows an image, OCR's (`read_page`;
    `defer`: not yet, `data` marked PENDING, when tesseract is there to read it later)."""
    page = doc[data.number - 1]
    try:
        scan = scanned(page)
    finally:
        page.close()
    if not scan:
        return data
    return data._replace(ocr=PENDING) if defer and command else read_page(doc, data.number, settings, command)


def read_page(doc, number: int, settings: OcrSettings, command: str | None) -> PageData:
    """Page `number` (1-based) read by OCR: its text, lines and words, with `ocr` saying how it went (READ,
    NOTHING, MISSING, OFF or "failed: ..."; the text is empty unless READ)."""
    page = doc[number - 1]
    try:
        height = round(page.get_height() or 1.0, 1)
        if command is None:
            return PageData(number, "", [], height, ocr=unread_status(settings))
        scale = min(settings.dpi / 72, MAX_SIDE_PX / max(page.get_width(), page.get_height(), 1.0))
        bitmap = page.render(scale=scale, grayscale=True)
        try:
            width_px, height_px, image = bitmap.width, bitmap.height, _pgm(bitmap)
        finally:
            bitmap.close()
        try:
            lines = _parse(_run(command, settings, image, round(72 * scale)))
        except _Failed as exc:
            return PageData(number, "", [], height, ocr=FAILED + str(exc))
        if not lines:
            return PageData(number, "", [], height, ocr=NOTHING)
        return _page(page, number, height, lines, scale, (width_px, height_px))
    finally:
        page.close()


class _Failed(Exception):
    pass


def _pgm(bitmap) -> bytes:
    """The rendered page as a binary PGM (8-bit gray): one channel of a gray render, whatever its pixel format."""
    width, height, stride = bitmap.width, bitmap.height, bitmap.stride
    channels = getattr(bitmap, "n_channels", None) or max(1, stride // max(width, 1))
    buffer = memoryview(bytes(bitmap.buffer))
    if channels == 1 and stride == width:
        pixels = bytes(buffer[: width * height])
    else:
        pick = min(1, channels - 1)  # a gray render's channels are equal: the second (BGR's and BGRA's green)
        pixels = b"".join(bytes(buffer[r * stride + pick: r * stride + width * channels: channels])
                          for r in range(height))
    return b"P5\n%d %d\n255\n" % (width, height) + pixels


def _run(command: str, settings: OcrSettings, image: bytes, dpi: int) -> bytes:
    """tesseract's hOCR of `image`; a run over `timeout_s` is killed with anything it started (its own session)."""
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    # --psm 1: page segmentation with orientation detection, so a page scanned sideways or upside down (or shown so
    # by its /Rotate) is read too; boxes stay in the image's frame. Without tesseract's osd data it reads as --psm 3.
    args = [command, "stdin", "stdout", "-l", settings.languages, "--dpi", str(dpi), "--psm", "1", "hocr"]
    try:
        proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env, start_new_session=True)
    except OSError as exc:
        raise _Failed(f"cannot run {command}: {exc.strerror or exc}") from exc
    try:
        out, err = proc.communicate(image, timeout=settings.timeout_s)
    except subprocess.TimeoutExpired as exc:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise _Failed(f"tesseract took longer than {settings.timeout_s:g} s") from exc
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    if proc.returncode != 0:
        said = err.decode("utf-8", "replace").strip().splitlines()
        raise _Failed(f"tesseract exited with {proc.returncode}" + (f": {said[0][:200]}" if said else ""))
    return out


def _title(element: ET.Element) -> dict[str, list[str]]:
    """hOCR's title properties ("bbox 1 2 3 4; x_size 42") as name -> values."""
    out: dict[str, list[str]] = {}
    for part in (element.get("title") or "").split(";"):
        name, *values = part.split()
        if values:
            out[name] = values
    return out


def _parse(hocr: bytes) -> list[tuple[float, list[tuple[str, tuple[int, int, int, int]]]]]:
    """Lines in reading order: (x_size in pixels, [(word, pixel bbox (x0, y0, x1, y1))])."""
    try:
        root = ET.fromstring(hocr)
    except ET.ParseError as exc:
        raise _Failed(f"tesseract wrote hOCR that does not parse: {exc}") from exc
    lines = []
    for element in root.iter():
        if element.get("class") not in _LINES:
            continue
        props = _title(element)
        words = []
        for word in element.iter():
            if word.get("class") != "ocrx_word":
                continue
            text = " ".join("".join(word.itertext()).split())
            box = _title(word).get("bbox")
            if text and box and len(box) == 4:
                x0, y0, x1, y1 = (int(v) for v in box)
                words.append((text, (x0, y0, x1, y1)))
        if words:
            line_box = props.get("bbox") or ["0", "0", "0", "0"]
            size = float(props["x_size"][0]) if "x_size" in props else float(int(line_box[3]) - int(line_box[1]))
            lines.append((size, words))
    return lines


def _page(page, number: int, height: float, found, scale: float, size_px: tuple[int, int]) -> PageData:
    import pypdfium2.raw as raw

    px, py = ctypes.c_double(), ctypes.c_double()

    def to_page(x: int, y: int) -> tuple[float, float]:
        raw.FPDF_DeviceToPage(page.raw, 0, 0, size_px[0], size_px[1], 0, x, y, px, py)
        return px.value, py.value

    parts: list[str] = []
    lines: list[Line] = []
    words: list[Word] = []
    pos = 0
    for index, (x_size, line_words) in enumerate(found):
        if index:
            pos += 1  # the "\n" before this line
        start = pos
        texts = []
        for k, (text, (x0, y0, x1, y1)) in enumerate(line_words):
            if k:
                pos += 1
            (ax, ay), (bx, by) = to_page(x0, y0), to_page(x1, y1)
            words.append((pos, pos + len(text), index, round(min(ax, bx), 2), round(min(ay, by), 2),
                          round(max(ax, bx), 2), round(max(ay, by), 2)))
            pos += len(text)
            texts.append(text)
        parts.append(" ".join(texts))
        top = min(y0 for _t, (_x0, y0, _x1, _y1) in line_words) / scale
        lines.append(Line(start, pos, float(round(x_size / scale)), False, round(top, 1)))
    text = normalize_line("\n".join(parts))
    return PageData(number, text, lines, height, words=words, ocr=READ)
