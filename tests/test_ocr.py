"""Scanned PDFs are read by OCR (issue 29): pages made here as images of text pages (fpdf2 writes the text, pypdfium2
renders it, fpdf2 wraps the picture as a PDF), ingested through the daemon and found by kb.context and
kb.synthesize, their citations boxed where the words are on the page; without Tesseract, an error saying what to
install; tesseract bounded in time per page."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from jsonl_engine.store import ParsedDocument, ParsedSection, open_store
from tests.support.daemon import Daemon
from tests.support.sql import sql

pdfium = pytest.importorskip("pypdfium2")
needs_tesseract = pytest.mark.skipif(shutil.which("tesseract") is None,
                                     reason="tesseract is not installed (Debian: apt-get install tesseract-ocr)")

HEADING = "Harbour Freight Ledger"
SHIPPED = "The warehouse in Tilbury shipped 4,812 pallets of copper wire in March."
BODY = (f"Every crate was weighed at the gate before loading. {SHIPPED} The northern depot handled the overflow "
        "while the quay was being resurfaced. Insurance for the season was renewed with the same underwriter.")
SECOND = ("Dredging of the eastern berth is planned for the autumn. The harbour master approved two extra cranes "
          "for the container terminal.")


def squash(text: str) -> str:
    return "".join(text.split())


def _text_pdf(path: Path) -> Path:
    from fpdf import FPDF

    pdf = FPDF()
    for heading, body in ((HEADING, BODY), ("Works Programme", SECOND)):
        pdf.add_page()
        pdf.set_font("Helvetica", "B", 18)
        pdf.cell(0, 12, heading, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", "", 12)
        pdf.multi_cell(0, 7, body)
    pdf.output(str(path))
    return path


def _scanned(text_pdf: Path, path: Path, *, pages: int, text_first: bool = False) -> Path:
    """The first `pages` pages of `text_pdf` as 200 dpi grayscale pictures filling pages of the same size (no text
    layer); `text_first`: a page of real text before them."""
    from fpdf import FPDF

    doc = pdfium.PdfDocument(str(text_pdf))
    out = FPDF(unit="pt")
    if text_first:
        out.add_page(format=(595.28, 841.89))
        out.set_font("Helvetica", "", 12)
        out.multi_cell(0, 16, "A cover letter with a text layer, about the ledger that follows as a scan. " * 3)
    for index in range(pages):
        page = doc[index]
        width, height = page.get_size()
        out.add_page(format=(width, height))
        out.image(page.render(scale=200 / 72, grayscale=True).to_pil().convert("L"), x=0, y=0, w=width, h=height)
    doc.close()
    out.output(str(path))
    return path


@pytest.fixture(scope="module")
def pdfs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("ocr")
    text = _text_pdf(root / "ledger_text.pdf")
    return {"text": text, "scan": _scanned(text, root / "ledger_scan.pdf", pages=2),
            "mixed": _scanned(text, root / "letter_and_scan.pdf", pages=1, text_first=True)}


@needs_tesseract
def test_a_scanned_pdf_is_read_and_its_citations_have_boxes(pdfs, tmp_path):
    with Daemon(tmp_path / "kb") as d:
        events = d.request("kb.ingest", {"paths": [str(pdfs["scan"]), str(pdfs["mixed"])]})
        scan, mixed = [e["data"] for e in events if e["event"] == "result"]
        assert scan["error"] is None and scan["ocr_pages"] == [1, 2] and scan["pages"] == 2, scan
        assert mixed["error"] is None and mixed["ocr_pages"] == [2] and mixed["pages"] == 2, mixed
        # the scanned pages were read one per task, with progress
        extract = [e["data"] for e in events if e["event"] == "progress" and e["data"]["stage"] == "extract"
                   and "ledger_scan.pdf" in e["data"]["message"]]
        assert extract[0]["message"] == "ledger_scan.pdf: 2 pages, 2 to read by OCR"
        assert [p["done"] for p in extract] == [0, 1, 2]
        assert not [w for w in scan["warnings"] + mixed["warnings"] if w.startswith(("needs_ocr", "ocr_failed"))]

        items = d.result("kb.context", {"query": "pallets of copper wire Tilbury", "document_ids": [
            scan["document_id"]]})["items"]
        assert items and "Tilbury" in items[0]["text"]

        out = d.result("kb.synthesize", {"query": "How many pallets of copper wire did the Tilbury warehouse ship?",
                                         "document_ids": [scan["document_id"]]})
        claim = next(c for c in out["claims"] if "Tilbury" in c["text"])
        assert "4,812" in claim["text"] and claim["boxes_status"] == "ok", claim
        where = claim["pages"][0]
        assert where["page"] == 1 and where["boxes"] and where["rotation"] == 0
        text = d.result("kb.read", {"document_id": scan["document_id"], "page": 1})["text"]
        assert squash(text[where["start"]:where["end"]]) == squash(claim["text"])
        # The boxes sit on the words: on the text PDF the scan was made from, they hold exactly that sentence.
        original = pdfium.PdfDocument(str(pdfs["text"]))[0].get_textpage()
        assert squash("".join(original.get_text_bounded(*box) for box in where["boxes"])) == squash(SHIPPED)

        second = d.result("kb.context", {"query": "cranes container terminal", "document_ids": [
            scan["document_id"]]})["items"]
        assert second and second[0]["page_start"] == 2 and "cranes" in second[0]["text"]

        drawn = d.result("kb.render", {"document_id": scan["document_id"], "page": 1, "start": where["start"],
                                       "end": where["end"], "output": "base64", "scale": 0.5})
        assert drawn["boxes"] == where["boxes"] and drawn["pixel_boxes"]


@needs_tesseract
def test_a_scanned_page_shown_rotated_is_read_and_boxed(pdfs, tmp_path):
    """A scan shown a quarter turn anticlockwise (/Rotate 270: its text runs bottom to top on screen) is read (its
    orientation detected) and its words' boxes land on the words in the page's own coordinates."""
    from jsonl_engine.ingest import pdf
    from jsonl_engine.ingest.pdfgeom import word_boxes

    rotated = {}
    for name, index in (("text", 0), ("mixed", 1)):  # the mixed PDF's second page is a scan of the text's first
        doc = pdfium.PdfDocument(str(pdfs[name]))
        doc[index].set_rotation(270)
        rotated[name] = tmp_path / f"{name}_270.pdf"
        doc.save(str(rotated[name]))
        doc.close()
    parsed = pdf.parse_pdf(str(rotated["mixed"]))
    assert sorted(parsed.page_words) == [2]
    text = parsed.pages[1]
    start = text.index("The warehouse in Tilbury")
    boxes = word_boxes(parsed.page_words[2], start, text.index("March.", start) + len("March."))
    original = pdfium.PdfDocument(str(rotated["text"]))[0]
    assert original.get_rotation() == 270
    assert squash("".join(original.get_textpage().get_text_bounded(*box) for box in boxes)) == squash(SHIPPED)


def test_without_tesseract_a_scanned_pdf_says_what_to_install(pdfs, tmp_path):
    absent = tmp_path / "no-such-dir" / "tesseract"
    with Daemon(tmp_path / "kb", env={"JSONL_ENGINE_OCR_COMMAND": str(absent)}) as d:
        scan, mixed = [e["data"] for e in d.request("kb.ingest", {"paths": [str(pdfs["scan"]), str(pdfs["mixed"])]})
                       if e["event"] == "result"]
    assert scan["error"]["code"] == "unsupported_media" and scan["error"]["reason"] == "needs_ocr", scan
    assert "apt-get install tesseract-ocr" in scan["error"]["message"] and str(absent) in scan["error"]["message"]
    assert mixed["error"] is None and mixed["ocr_pages"] == [] and mixed["pages"] == 2
    hint = [w for w in mixed["warnings"] if w.startswith("needs_ocr:")]
    assert len(hint) == 1 and "apt-get install tesseract-ocr" in hint[0] and hint[0].endswith(": 2"), mixed


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc to see the stuck OCR process is gone")
def test_ocr_is_bounded_in_time_per_page(pdfs, tmp_path):
    """A tesseract that never finishes (here a stand-in that starts a child and waits) is killed with its child
    after the per-page timeout: the page stays unread with a warning, a fully scanned PDF is an error."""
    pids = tmp_path / "pids"
    stuck = tmp_path / "stuck-tesseract"
    stuck.write_text(f"#!/bin/sh\nsleep 300 &\necho $! >> {pids}\nwait\n")
    stuck.chmod(0o755)
    env = {"JSONL_ENGINE_OCR_COMMAND": str(stuck), "JSONL_ENGINE_OCR_TIMEOUT": "0.5"}
    with Daemon(tmp_path / "kb", env=env) as d:
        scan, mixed = [e["data"] for e in d.request("kb.ingest", {"paths": [str(pdfs["scan"]), str(pdfs["mixed"])]})
                       if e["event"] == "result"]
    assert scan["error"]["reason"] == "no_text" and "took longer than 0.5 s" in scan["error"]["message"], scan
    assert mixed["error"] is None and mixed["ocr_pages"] == []
    assert "ocr_failed: page 2: tesseract took longer than 0.5 s" in mixed["warnings"], mixed
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) == 3  # the two pages of the scan, the second page of the mixed PDF
    deadline = time.monotonic() + 30
    while any(_alive(p) for p in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in started if _alive(p)]


@needs_tesseract
def test_page_batches_carry_the_ocr_words(pdfs):
    """The daemon's path for large PDFs (page batches pickled in workers) builds the same document, OCR words
    included, as one pass."""
    from jsonl_engine.config import OcrSettings
    from jsonl_engine.ingest import pdf

    path, fast = str(pdfs["mixed"]), OcrSettings(dpi=150)
    whole = pdf.parse_small_pdf(path, None, fast)
    info = pdf.parse_small_pdf(path, 0, fast)
    batched = pdf.build_from_batches(path, info, [pdf.extract_batch(path, 0, 1, fast)[1],
                                                  pdf.extract_batch(path, 1, 2, fast)[1]], fast)
    assert batched == whole and sorted(whole.page_words) == [2]
    words = whole.page_words[2]
    assert all(0 <= w[0] < w[1] <= len(whole.pages[1]) for w in words)
    assert " ".join(whole.pages[1][w[0]:w[1]] for w in words).split() == whole.pages[1].split()


def test_ocr_words_are_stored_with_the_document(kb_location):
    words = [[0, 5, 0, 10.0, 700.0, 40.0, 712.0], [6, 11, 0, 44.0, 700.0, 80.0, 712.0]]
    parsed = ParsedDocument(title="Scan", media_type="application/pdf", pages=["hello world", "typed page"],
                            sections=[ParsedSection("0", None, 1, 0, "Scan", 1, 2, "hello world\ntyped page",
                                                    [(0, 1), (12, 2)])],
                            page_words={1: words})
    store = open_store(kb_location)
    try:
        with store.transaction() as tx:
            info = tx.insert(parsed, document_id="0123456789abcdef", sha256="ab" * 32, path="/x/scan.pdf")
        assert info.ocr_pages == [1]
        assert store.document(info.document_id).ocr_pages == [1]
        assert store.page_words([(info.document_id, 1), (info.document_id, 2)]) == {(info.document_id, 1): words}
        store.remove(info.document_id)
        assert store.page_words([(info.document_id, 1)]) == {}
        assert sql(store, "SELECT COUNT(*) FROM page_words")[0][0] == 0
    finally:
        store.close()


def test_word_boxes_cover_the_span_per_line():
    from jsonl_engine.ingest.pdfgeom import word_boxes

    words = [(0, 4, 0, 10.0, 100.0, 50.0, 110.0), (5, 10, 0, 60.0, 100.0, 110.0, 110.0),
             (11, 15, 1, 10.0, 80.0, 50.0, 90.0)]
    assert word_boxes(words, 0, 15) == [[10.0, 100.0, 110.0, 110.0], [10.0, 80.0, 50.0, 90.0]]
    assert word_boxes(words, 2, 4) == [[30.0, 100.0, 50.0, 110.0]]  # the last half of a four-letter word
    assert word_boxes(words, 4, 5) == []  # the space between two words


def test_the_page_image_is_gray_whatever_pdfium_renders(pdfs):
    """tesseract gets an 8-bit gray PGM from a gray render (pypdfium2 5) and from a BGR or BGRx one (older
    pypdfium2 renders gray into those): the pixels are the render's luminance."""
    from jsonl_engine.ingest.ocr import _pgm

    page = pdfium.PdfDocument(str(pdfs["text"]))[0]
    for options in ({"grayscale": True}, {}, {"prefer_bgrx": True}):
        bitmap = page.render(scale=0.5, **options)
        image = _pgm(bitmap)
        header = b"P5\n%d %d\n255\n" % (bitmap.width, bitmap.height)
        assert image.startswith(header) and len(image) == len(header) + bitmap.width * bitmap.height
        assert image[len(header):] == bitmap.to_pil().convert("L").tobytes(), options


def test_ocr_settings_come_from_the_file_and_the_environment(tmp_path):
    from jsonl_engine.config import ConfigError, load_settings

    assert load_settings(env={}).ocr.model_dump() == {"enabled": True, "command": "tesseract", "languages": "eng",
                                                      "timeout_s": 60.0, "dpi": 300}
    config = tmp_path / "engine.toml"
    config.write_text('[ocr]\ncommand = "/opt/tess/bin/tesseract"\nlanguages = "eng+deu"\ndpi = 200\n')
    env = {"JSONL_ENGINE_OCR": "0", "JSONL_ENGINE_OCR_TIMEOUT": "5"}
    ocr = load_settings(config, env=env).ocr
    assert (ocr.enabled, ocr.command, ocr.languages, ocr.timeout_s, ocr.dpi) == (
        False, "/opt/tess/bin/tesseract", "eng+deu", 5.0, 200)
    with pytest.raises(ConfigError, match="ocr.timeout_s"):
        load_settings(env={"JSONL_ENGINE_OCR_TIMEOUT": "0"})
