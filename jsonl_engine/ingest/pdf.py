"""PDF extraction with pypdfium2: per-page text (normalised once), line geometry and glyph fonts, outline.

Runs in pool workers. Font information is read only for the first and last glyph of each line, which is
all heading detection needs, so extraction stays close to the cost of pdfium's own text layout.
"""

from __future__ import annotations

import ctypes
import math
import pickle
import re
from pathlib import Path
from typing import TYPE_CHECKING

from jsonl_engine.errors import UnsupportedMedia
from jsonl_engine.ingest.model import PDF, Line, OutlineEntry, PageData, ParsedDocument, PdfInfo
from jsonl_engine.ingest.normalize import collapse_ws, normalize_line

if TYPE_CHECKING:
    from jsonl_engine.config import OcrSettings

_BOLD_NAME = re.compile(r"bold|black|heavy|semibold|demibold|demi\b|extrabold|ultrabold", re.I)


def _pdfium():
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    return pdfium, raw


def open_pdf(path: str):
    """Open a PDF, translating pdfium's failures to UnsupportedMedia with a reason."""
    from jsonl_engine.ingest.files import open_regular

    pdfium, raw = _pdfium()
    try:
        with open_regular(path) as fh:
            head = fh.read(1024)
    except OSError as exc:
        raise UnsupportedMedia(f"cannot read {path}: {exc.strerror}", reason="corrupt") from exc
    if b"%PDF-" not in head:
        raise UnsupportedMedia(f"{Path(path).name} is not a PDF", reason="not_pdf")
    try:
        return pdfium.PdfDocument(path)
    except pdfium.PdfiumError as exc:
        code = getattr(exc, "err_code", None)
        if code in (raw.FPDF_ERR_PASSWORD, raw.FPDF_ERR_SECURITY):
            raise UnsupportedMedia(f"{Path(path).name} is encrypted", reason="encrypted") from exc
        raise UnsupportedMedia(f"{Path(path).name} is corrupt: {exc}", reason="corrupt") from exc


def _info(doc, path: str) -> PdfInfo:
    count = len(doc)
    if count == 0:
        raise UnsupportedMedia(f"{Path(path).name} has no pages", reason="corrupt")
    try:
        meta_title = (doc.get_metadata_value("Title") or "").strip()
    except Exception:  # noqa: BLE001 - metadata is optional; a broken info dict must not fail ingest
        meta_title = ""
    return PdfInfo(count, meta_title, read_outline(doc, count))


def read_outline(doc, page_count: int) -> list[OutlineEntry]:
    entries: list[OutlineEntry] = []
    try:
        for bookmark in doc.get_toc(max_depth=8):
            title = (bookmark.get_title() or "").strip()
            dest = bookmark.get_dest()
            if not title or dest is None:
                continue
            index = dest.get_index()
            if index is None or not 0 <= index < page_count:
                continue
            top = None
            try:
                _mode, view = dest.get_view()
                if len(view) >= 2 and view[1]:
                    height = doc.get_page_size(index)[1]
                    if height > 0:
                        top = max(height - float(view[1]), 0.0)
            except Exception:  # noqa: BLE001 - an odd view spec only loses precision
                top = None
            entries.append(OutlineEntry(bookmark.level, normalize_line(title), index + 1, top))
            if len(entries) >= 5000:
                break
    except Exception:  # noqa: BLE001 - a broken outline falls back to heading detection
        return []
    return entries


class _FontReader:
    """Per-glyph font lookups through pdfium's raw API (on the text page's raw handle, to keep calls cheap).

    Boldness comes from the font weight where the document's weights are telling, else from the font name:
    each weight is checked against the name for its first occurrences and trusted alone once consistent.
    """

    TRUST_AFTER = 40

    def __init__(self, raw) -> None:
        self.raw = raw
        self.buf = ctypes.create_string_buffer(128)
        self.flags = ctypes.c_int()
        self.matrix = raw.FS_MATRIX()
        self.bold_names: dict[bytes, bool] = {}
        self.trusted: dict[int, bool] = {}  # weight -> bold, once TRUST_AFTER checks agreed
        self.by_weight: dict[int, tuple[bool | None, int]] = {}  # weight -> (bold, agreeing checks) / None
        self.l, self.r, self.b, self.t = (ctypes.c_double() for _ in range(4))
        self._box = (self.l, self.r, self.b, self.t)

    def features(self, tp, first: int, last: int) -> tuple[float, bool, float | None]:
        """(effective size, bold, top edge in PDF units or None) of a line from its first and last glyph."""
        raw = self.raw
        size = raw.FPDFText_GetFontSize(tp, first)
        if raw.FPDFText_GetMatrix(tp, first, self.matrix):
            m = self.matrix
            scale = math.sqrt(abs(m.a * m.d - m.b * m.c))
            if scale > 0:
                size *= scale
        bold = self.bold(tp, first) and (last < 0 or last == first or self.bold(tp, last))
        top = self.t.value if raw.FPDFText_GetCharBox(tp, first, *self._box) else None
        return round(size, 1), bold, top

    def bold(self, tp, i: int) -> bool:
        weight = self.raw.FPDFText_GetFontWeight(tp, i)
        trusted = self.trusted.get(weight)
        if trusted is not None:
            return trusted
        known = self.by_weight.get(weight)
        bold = weight >= 600 or self._bold_name(tp, i)
        if weight > 0:
            if known is None:
                self.by_weight[weight] = (bold, 1)
            elif known[0] is not None:
                checks = known[1] + 1 if known[0] == bold else 0
                self.by_weight[weight] = (bold, checks) if checks else (None, 0)
                if checks >= self.TRUST_AFTER:
                    self.trusted[weight] = bold
        return bold

    def _bold_name(self, tp, i: int) -> bool:
        n = self.raw.FPDFText_GetFontInfo(tp, i, self.buf, 128, ctypes.byref(self.flags))
        name = self.buf.value if n else b""
        cached = self.bold_names.get(name)
        if cached is None:
            cached = bool(_BOLD_NAME.search(name.split(b"+")[-1].decode("latin-1")))
            self.bold_names[name] = cached
        return cached


_SPACED = re.compile(r"(?:\S ){3,}\S$")  # used with match(line, start, end)


def _join_spaced(tp, first: int, text: str, fonts: _FontReader) -> str | None:
    """Rejoin a letter-spaced line using glyph gaps: a word break is a gap clearly wider than the letter gaps."""
    boxes: list[tuple[str, float, float]] = []
    for k, ch in enumerate(text):
        if ch != " ":
            if not fonts.raw.FPDFText_GetCharBox(tp, first + k, fonts.l, fonts.r, fonts.b, fonts.t):
                return None
            boxes.append((ch, fonts.l.value, fonts.r.value))
    gaps = [b[1] - a[2] for a, b in zip(boxes, boxes[1:], strict=False)]
    if not gaps:
        return None
    typical = sorted(gaps)[len(gaps) // 2]
    words, word = [], boxes[0][0]
    for (ch, _l, _r), gap in zip(boxes[1:], gaps, strict=False):
        if gap > typical * 1.35 + 0.5:
            words.append(word)
            word = ch
        else:
            word += ch
    words.append(word)
    return " ".join(words)


def extract_pages(path: str, start: int = 0, stop: int | None = None,
                  ocr: OcrSettings | None = None) -> list[PageData]:
    """Pages [start, stop) (0-based indexes) with their normalised text and line features; a scanned page (no
    text, an image) read by OCR (`ingest/ocr.py`; `ocr` None: the default settings)."""
    doc = open_pdf(path)
    try:
        return _pages(doc, path, start, stop, ocr)
    finally:
        doc.close()


def _pages(doc, path: str, start: int = 0, stop: int | None = None, ocr: OcrSettings | None = None,
           defer_ocr: bool = False) -> list[PageData]:
    """Pages [start, stop); a page pdfium cannot load (or lay out as text) makes the document corrupt.
    `defer_ocr`: scanned pages are marked for OCR (ocr.PENDING), not read."""
    from jsonl_engine.ingest import ocr as ocr_mod

    pdfium, raw = _pdfium()
    stop = len(doc) if stop is None else min(stop, len(doc))
    fonts = _FontReader(raw)
    settings = _ocr_settings(ocr)
    command: str | None | bool = False  # resolved at the first page without text
    pages: list[PageData] = []
    for i in range(start, stop):
        try:
            page = _extract_page(doc, i, fonts, raw)
            if not page.text.strip():
                if command is False:
                    command = ocr_mod.tesseract(settings)
                page = ocr_mod.read_if_scanned(doc, page, settings, command or None, defer_ocr)
            pages.append(page)
        except pdfium.PdfiumError as exc:
            raise UnsupportedMedia(f"{Path(path).name} is corrupt: page {i + 1}: {exc}", reason="corrupt") from exc
    return pages


def _ocr_settings(ocr: OcrSettings | None) -> OcrSettings:
    from jsonl_engine.config import OcrSettings

    return ocr if ocr is not None else OcrSettings()


def _extract_page(doc, index: int, fonts: _FontReader, raw) -> PageData:
    page = doc[index]
    try:
        height = page.get_height() or 1.0
        textpage = page.get_textpage()
        try:
            raw_text = textpage.get_text_range()
            direct = len(raw_text) == textpage.count_chars()
            tp = textpage.raw
            lines: list[Line] = []
            append = lines.append
            features = fonts.features
            parts = normalize_line(raw_text).split("\r\n")  # same-length replacements: offsets carry over
            raw_pos = norm_pos = 0
            for line in parts:
                n = len(line)
                if n and not line.isspace():
                    lead = n - len(line.lstrip())
                    trail = len(line.rstrip())
                    first, last = raw_pos + lead, raw_pos + trail - 1
                    if not direct:
                        first = raw.FPDFText_GetCharIndexFromTextIndex(tp, first)
                        last = raw.FPDFText_GetCharIndexFromTextIndex(tp, last)
                    if first >= 0:
                        size, bold, top_abs = features(tp, first, last)
                        top = height / 2 if top_abs is None else max(height - top_abs, 0.0)
                    else:
                        size, bold, top = 0.0, False, height / 2
                    collapsed = None
                    if trail - lead >= 7 and direct and line[lead + 1] == " " and _SPACED.match(line, lead, trail):
                        stripped = line[lead:trail]
                        if sum(ch.isalpha() for ch in stripped) >= 0.7 * (len(stripped) + 1) / 2:
                            collapsed = _join_spaced(tp, raw_pos + lead, stripped, fonts)
                    append(Line(norm_pos + lead, norm_pos + trail, size, bold, top, collapsed))
                raw_pos += n + 2
                norm_pos += n + 1
            text = "\n".join(parts)
            if "\r" in text:
                text = text.replace("\r", "\n")
            return PageData(index + 1, text, lines, round(height, 1))
        finally:
            textpage.close()
    finally:
        page.close()


_GENERIC_TITLE = re.compile(
    r"^(?:untitled|document\d*|microsoft word\b.*|.*\.(?:docx?|pdf|html?|indd|xlsx?)|[\d\s_-]+|"
    r"\d{10}-\d{2}-\d{6}|united states|securities and exchange commission|"
    r"united states securities and exchange commission|washington,? d\.?c\.?(?: \d{5})?|"
    r"form \d+-[a-z]+(?:/a)?|table of contents|index|contents)$", re.I)


_GENERIC_PREFIX = re.compile(
    r"^(?:for the (?:fiscal|quarterly|transition)|(?:x|☒|☐|o)?\s*(?:annual|quarterly|transition|current) report|"
    r"securities registered|commission file|\(exact name|indicate by check|(?:mark one)|"
    r"(?:united states )?securities and exchange commission|table of contents)", re.I)


def meaningful_title(title: str) -> bool:
    title = collapse_ws(title)
    letters = sum(ch.isalpha() for ch in title)
    visible = len(title.replace(" ", ""))
    return (letters >= 4 and letters >= 0.3 * visible and len(title) <= 200
            and not _GENERIC_TITLE.match(title) and not _GENERIC_PREFIX.match(title))


def choose_title(path: str, info: PdfInfo, pages: list[PageData]) -> str:
    """Metadata title if meaningful, else the most prominent line of the first pages, else the file stem."""
    from jsonl_engine.ingest.normalize import collapse_letterspacing

    if meaningful_title(info.meta_title):
        return collapse_ws(info.meta_title)
    best: tuple[float, int] | None = None
    title = ""
    order = 0
    for page in pages[:2]:
        for line in page.lines:
            text = collapse_ws(collapse_letterspacing(page.text[line.start:line.end]))
            order += 1
            if not meaningful_title(text) or len(text) > 120:
                continue
            score = (line.size + (0.5 if line.bold else 0.0), -order)
            if best is None or score > best:
                best, title = score, text
    return title or Path(path).stem


def outline_headings(info: PdfInfo, pages: list[PageData]) -> list:
    """Place each bookmark on its page: the line carrying its title, else the line at its y, else the top."""
    from jsonl_engine.ingest.headings import Heading

    by_number = {p.number: p for p in pages}
    folded: dict[int, list[str]] = {}  # page number -> its lines, whitespace collapsed and casefolded
    out: list[Heading] = []
    last: tuple[int, int] = (0, 0)
    for entry in info.outline:
        page = by_number.get(entry.page)
        if page is None:
            continue
        want = collapse_ws(entry.title).casefold()[:24]
        start = None
        best = None
        texts = folded.get(page.number)
        if texts is None:
            texts = folded[page.number] = [collapse_ws(page.text[ln.start:ln.end]).casefold() for ln in page.lines]
        for line, text in zip(page.lines, texts, strict=True):
            if want and (text.startswith(want) or want.startswith(text[:24]) and len(text) >= 4):
                distance = abs(line.top - entry.top) if entry.top is not None else 0.0
                if best is None or distance < best:
                    best, start = distance, line.start
        if start is None and entry.top is not None:
            below = [ln for ln in page.lines if ln.top >= entry.top - 4]
            if below:
                start = min(below, key=lambda ln: (ln.top, ln.start)).start
        if start is None:
            start = 0
        pos = max((entry.page, start), last)
        last = pos
        out.append(Heading(pos[0], pos[1], collapse_ws(entry.title), float(entry.level + 1), "outline"))
    if len({e.level for e in info.outline}) == 1:
        _rank_flat_outline(out)
    return out


def _rank_flat_outline(heads: list) -> None:
    """A flat outline says nothing about nesting: rank its entries by filing structure instead."""
    from jsonl_engine.ingest.headings import RANK_ITEM, RANK_NOTE, RANK_PART, RANK_TYPO, structural

    ranks = {"part": RANK_PART, "item": RANK_ITEM, "note": RANK_NOTE}
    for head in heads:
        kind = structural(head.title)
        head.rank = float(ranks.get(kind[0], RANK_TYPO) if kind else RANK_TYPO)


def build_document(path: str, info: PdfInfo, pages: list[PageData],
                   ocr: OcrSettings | None = None) -> ParsedDocument:
    from jsonl_engine.ingest import headings as headings_mod
    from jsonl_engine.ingest import ocr as ocr_mod
    from jsonl_engine.ingest.tree import build_tree

    warnings: list[str] = []
    name = Path(path).name
    empty = [p.number for p in pages if not p.text.strip()]
    unread = [p.number for p in pages if p.ocr in (ocr_mod.MISSING, ocr_mod.OFF)]
    failed = [(p.number, p.ocr.removeprefix(ocr_mod.FAILED)) for p in pages if p.ocr.startswith(ocr_mod.FAILED)]
    if len(empty) == len(pages):
        if unread:
            raise UnsupportedMedia(f"{name} is scanned (no text layer, {len(unread)} page(s) of images): "
                                   f"{ocr_mod.install_hint(_ocr_settings(ocr))}", reason="needs_ocr")
        if failed:
            raise UnsupportedMedia(f"{name} is scanned and OCR read none of its pages (page {failed[0][0]}: "
                                   f"{failed[0][1]})", reason="no_text")
        if any(p.ocr == ocr_mod.NOTHING for p in pages):
            raise UnsupportedMedia(f"{name} has no extractable text (OCR found no words on its images)",
                                   reason="no_text")
        raise UnsupportedMedia(f"{name} has no extractable text (scanned?)", reason="no_text")
    if empty:
        warnings.append(f"{len(empty)} page(s) without extractable text (scanned?): {_shown(empty)}")
    if unread:
        warnings.append(f"needs_ocr: {len(unread)} scanned page(s) not read: "
                        f"{ocr_mod.install_hint(_ocr_settings(ocr))}: {_shown(unread)}")
    warnings += [f"ocr_failed: page {number}: {why}" for number, why in failed[:5]]
    title = choose_title(path, info, pages)
    heads = outline_headings(info, pages) if len(info.outline) >= 3 else []
    if not heads:
        heads = headings_mod.detect(pages)
    sections = build_tree([(p.number, p.text) for p in pages], heads, title)
    return ParsedDocument(title=title, media_type=PDF, pages=[p.text for p in pages],
                          sections=sections, warnings=warnings, headline=_headline(pages),
                          page_words={p.number: list(p.words) for p in pages if p.ocr == ocr_mod.READ})


def _headline(pages: list[PageData]) -> str:
    """The first page's typographic title (the next page's lines tell its running headers)."""
    from jsonl_engine.identity.typography import headline

    def lines(page: PageData) -> list[tuple[str, float, bool]]:
        return [(line.collapsed or page.text[line.start:line.end], line.size, line.bold) for line in page.lines]

    return headline(lines(pages[0]), lines(pages[1]) if len(pages) > 1 else []) if pages else ""


def _shown(numbers: list[int]) -> str:
    return ", ".join(map(str, numbers[:20])) + (" ..." if len(numbers) > 20 else "")


def extract_batch(path: str, start: int, stop: int, ocr: OcrSettings | None = None) -> tuple[int, bytes]:
    """A page batch for the daemon to hand on to `build_from_batches`, pickled here: the daemon passes bytes
    along instead of unpickling and re-pickling every line of every page."""
    pages = extract_pages(path, start, stop, ocr)
    # Lines travel as columns: plain lists pickle about twice as fast as one NamedTuple per line.
    packed = [(p.number, p.text, p.height, p.words, p.ocr, *zip(*p.lines, strict=True)) for p in pages]
    return len(pages), pickle.dumps(packed, protocol=pickle.HIGHEST_PROTOCOL)


def build_from_batches(path: str, info: PdfInfo, batches: list[bytes],
                       ocr: OcrSettings | None = None) -> ParsedDocument:
    pages = [PageData(number, text, list(map(Line, *columns)) if columns else [], height, words, read)
             for blob in batches for number, text, height, words, read, *columns in pickle.loads(blob)]
    return build_document(path, info, pages, ocr)


def parse_pdf(path: str) -> ParsedDocument:
    parsed = parse_small_pdf(path, None)
    assert isinstance(parsed, ParsedDocument)
    return parsed


def parse_small_pdf(path: str, max_pages: int | None, ocr: OcrSettings | None = None) -> ParsedDocument | PdfInfo:
    """One pool task, one open of the file: the whole document, or for a PDF over `max_pages` just its PdfInfo
    (the daemon then extracts it in page batches across the pool). `ocr`: how scanned pages are read (None: the
    default settings); with `max_pages`, a PDF with more than one page to read by OCR is handed back as its
    PdfInfo with those pages (`scanned`): the daemon reads each in a task of its own, in parallel, with progress."""
    from jsonl_engine.ingest import ocr as ocr_mod

    doc = open_pdf(path)
    try:
        info = _info(doc, path)
        if max_pages is not None and info.page_count > max_pages:
            return info
        pages = _pages(doc, path, ocr=ocr, defer_ocr=max_pages is not None)
        pending = [p.number for p in pages if p.ocr == ocr_mod.PENDING]
        if len(pending) > 1:
            info.scanned = pending
            return info
        for number in pending:
            settings = _ocr_settings(ocr)
            pages[number - 1] = ocr_mod.read_page(doc, number, settings, ocr_mod.tesseract(settings))
    finally:
        doc.close()
    return build_document(path, info, pages, ocr)
