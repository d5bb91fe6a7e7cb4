"""OCR of scanned PDFs (issue 29): what reading a scanned page costs, and what the daemon's one-task-per-scanned-page
ingest gains over reading a scanned PDF's pages one after another.

Builds a PDF of N scanned pages (text pages written with fpdf2, rendered by pdfium at 200 dpi, wrapped as pictures),
then, in the same run:
  - baseline: the whole document in one process, its pages read one after another (`pdf.parse_pdf`, what one pool
    task did before scanned pages were handed out one per task);
  - the daemon's kb.ingest with JSONL_ENGINE_WORKERS workers (each scanned page a task of its own);
  - the stored size of the OCR words (JSON) against the pages' text.
Needs tesseract (apt-get install tesseract-ocr) and fpdf2 and Pillow (the test extra).

    .venv/bin/python bench/ocr.py [--pages 8] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PARAGRAPH = ("Page {n}. The warehouse in Tilbury shipped {k} pallets of copper wire in March, and the northern depot "
             "handled the overflow while the quay was being resurfaced. Insurance for the season was renewed with "
             "the same underwriter; dredging of the eastern berth is planned for the autumn. ")


def scanned_pdf(folder: Path, pages: int) -> Path:
    import pypdfium2 as pdfium
    from fpdf import FPDF

    text = FPDF()
    for n in range(1, pages + 1):
        text.add_page()
        text.set_font("Helvetica", "", 11)
        text.multi_cell(0, 6, "".join(PARAGRAPH.format(n=n, k=1000 + 37 * n * i) for i in range(1, 9)))
    text.output(str(folder / "text.pdf"))
    doc = pdfium.PdfDocument(str(folder / "text.pdf"))
    out = FPDF(unit="pt")
    for page in doc:
        width, height = page.get_size()
        out.add_page(format=(width, height))
        out.image(page.render(scale=200 / 72, grayscale=True).to_pil().convert("L"), x=0, y=0, w=width, h=height)
    doc.close()
    out.output(str(folder / "scan.pdf"))
    return folder / "scan.pdf"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3, help="interleaved runs of each; the best is shown")
    args = parser.parse_args()
    if shutil.which("tesseract") is None:
        sys.exit("tesseract is not installed (apt-get install tesseract-ocr)")
    from jsonl_engine.ingest import pdf
    from tests.support.daemon import Daemon

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path = scanned_pdf(folder, args.pages)
        serial, daemon = [], []
        env = {"JSONL_ENGINE_WORKERS": str(args.workers)}
        for run in range(args.repeat):  # interleaved: a machine shared with other work slows both alike
            t = time.perf_counter()
            parsed = pdf.parse_pdf(str(path))
            serial.append(time.perf_counter() - t)
            assert sorted(parsed.page_words) == list(range(1, args.pages + 1))
            with Daemon(folder / f"kb{run}", env=env, timeout=600) as d:
                t = time.perf_counter()
                result = d.result("kb.ingest", {"paths": [str(path)]}, timeout=600)
                daemon.append(time.perf_counter() - t)
            assert result["ocr_pages"] == list(range(1, args.pages + 1)), result
        words = sum(len(w) for w in parsed.page_words.values())
        word_bytes = sum(len(orjson.dumps(w)) for w in parsed.page_words.values())
        text_bytes = sum(len(p.encode()) for p in parsed.pages)
    best, fast = min(serial), min(daemon)
    print(f"{args.pages} scanned pages, {os.cpu_count()} cores, {args.workers} workers, best of {args.repeat} "
          f"(load average {os.getloadavg()[0]:.1f})")
    print(f"  baseline, one process, pages in turn : {best:6.2f} s  ({best / args.pages:.2f} s/page)  "
          f"runs {', '.join(f'{x:.1f}' for x in serial)}")
    print(f"  daemon kb.ingest, a task per page    : {fast:6.2f} s  ({best / fast:.2f}x the baseline)  "
          f"runs {', '.join(f'{x:.1f}' for x in daemon)}")
    print(f"  OCR words stored: {words} words, {word_bytes / 1024:.1f} KiB JSON for {text_bytes / 1024:.1f} KiB of "
          f"page text ({word_bytes / max(text_bytes, 1):.1f}x)")


if __name__ == "__main__":
    main()
