"""Citations on the page (issue 15): what boxes cost, and what keeping them at ingest would have cost.

Over the dev questions (document-scoped kb.synthesize claims on a KB of the dev filings):
  - boxes per claim (ms): `answer.pages.locate`, cold (first claim of a document: file hash, tiling of its
    sections, opening the PDF) and warm; the same-run baseline is the claim without a location (0 ms extra);
  - render ms per page (kb.render's domain call, scale 1 and 2, PNG encoded);
  - KB size and ingest throughput: today's extraction (`pdf.parse_pdf`, the baseline) against the same plus
    every character box kept in a compact form (4 x uint16 in quarter points per stored character, zlib), the
    alternative this issue rejected, measured per page on the same files in the same run.

    .venv/bin/python bench/citations.py [--kb DIR] [--docs 3M_2022_10K,...]
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import time
import zlib
from array import array
from pathlib import Path

from _common import DEV, ensure_kb, load_questions, pct

DOCS = ("3M_2022_10K", "AMCOR_2023_10K", "PEPSICO_2022_10K", "AMCOR_2022_8K_dated-2022-07-01")


def stored_form_cost(path: Path) -> tuple[float, float, int, int, int]:
    """(baseline parse s, extra s for char boxes, pages, compact box bytes, stored text bytes) of one PDF."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    from jsonl_engine.ingest import pdf
    from jsonl_engine.ingest.pdfgeom import stored_index

    t = time.perf_counter()
    parsed = pdf.parse_pdf(str(path))
    base = time.perf_counter() - t
    doc = pdfium.PdfDocument(str(path))
    extra, box_bytes, text_bytes = 0.0, 0, 0
    le, ri, bo, to = (ctypes.c_double() for _ in range(4))
    for i in range(len(doc)):
        page = doc[i]
        textpage = page.get_textpage()
        t = time.perf_counter()
        text, index = stored_index(textpage.get_text_range())
        packed = array("H")
        for k in index:
            if k >= 0 and raw.FPDFText_GetCharBox(textpage.raw, k, le, ri, bo, to):
                packed.extend(min(65535, max(0, round(v * 4))) for v in (le.value, bo.value, ri.value, to.value))
            else:
                packed.extend((0, 0, 0, 0))
        box_bytes += len(zlib.compress(packed.tobytes(), 6))
        extra += time.perf_counter() - t
        text_bytes += len(text.encode())
        textpage.close()
        page.close()
    doc.close()
    return base, extra, len(parsed.pages), box_bytes, text_bytes


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kb", default=str(Path(__file__).parent / "out" / "citations-kb"))
    ap.add_argument("--docs", default=",".join(DOCS))
    args = ap.parse_args()
    names = args.docs.split(",")
    pdfs = [DEV / "pdfs" / f"{n}.pdf" for n in names]
    ids = ensure_kb(Path(args.kb), pdfs)

    from jsonl_engine.answer import render as r
    from jsonl_engine.answer.pages import Quote, locate
    from jsonl_engine.answer.synthesize import synthesize
    from jsonl_engine.store import open_store

    # ---- KB size and ingest throughput: baseline vs. keeping char boxes
    base = extra = 0.0
    pages = box_bytes = text_bytes = 0
    for p in pdfs:
        b, e, n, bb, tb = stored_form_cost(p)
        base, extra, pages, box_bytes, text_bytes = base + b, extra + e, pages + n, box_bytes + bb, text_bytes + tb
    kb_bytes = sum(f.stat().st_size for f in Path(args.kb).glob("kb.sqlite3*"))
    print(f"ingest ({len(pdfs)} PDFs, {pages} pages, one process): baseline {pages / base:.1f} pages/s; "
          f"with char boxes kept {pages / (base + extra):.1f} pages/s (+{100 * extra / base:.0f}% time, "
          f"+{1000 * extra / pages:.2f} ms/page); chosen (recompute on demand): {pages / base:.1f} pages/s (+0%)")
    print(f"KB size: {kb_bytes / 1e6:.1f} MB (stored page text {text_bytes / 1e6:.1f} MB); char boxes kept would "
          f"add {box_bytes / 1e6:.1f} MB ({100 * box_bytes / kb_bytes:.0f}% of the KB, {box_bytes / pages / 1024:.1f} KiB"
          f"/page); chosen: +0 MB")

    # ---- boxes per claim
    store = open_store(Path(args.kb))
    cold, warm, plain, statuses = [], [], [], {}
    seen: set[str] = set()
    claims_all = []
    for q in load_questions(DEV / "questions.jsonl"):
        doc_id = ids.get(q["doc_name"])
        if doc_id is None:
            continue
        t = time.perf_counter()
        claims = synthesize(store, q["question"], document_ids=[doc_id]).claims
        plain.append((time.perf_counter() - t) * 1000)
        for c in claims:
            t = time.perf_counter()
            (where,) = locate(store, [Quote(c.document_id, c.section_id, c.quote_start, c.quote_end)])
            ms = (time.perf_counter() - t) * 1000
            (warm if c.document_id in seen else cold).append(ms)
            seen.add(c.document_id)
            statuses[where.boxes_status] = statuses.get(where.boxes_status, 0) + 1
            claims_all.append((c, where))
    print(f"boxes per claim ({len(warm) + len(cold)} claims): warm p50 {pct(warm, 0.5):.2f} ms, p95 "
          f"{pct(warm, 0.95):.2f} ms; cold (first of a document) mean {statistics.mean(cold):.1f} ms; baseline: "
          f"kb.synthesize itself p50 {pct(plain, 0.5):.1f} ms per question; statuses {statuses}")

    # ---- render per page
    for scale in (1.0, 2.0):
        times = []
        for c, where in claims_all[:40]:
            qp = where.pages[0]
            t = time.perf_counter()
            r.render(store, c.document_id, qp.page, (qp.start, qp.end), scale=scale, crop=False, margin=0)
            times.append((time.perf_counter() - t) * 1000)
        print(f"render scale {scale:g} (page + highlight + PNG, {len(times)} pages): p50 {pct(times, 0.5):.1f} ms, "
              f"p95 {pct(times, 0.95):.1f} ms")
    store.close()


if __name__ == "__main__":
    main()
