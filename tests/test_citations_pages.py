"""Where citations are on the page (issue 15): page offsets, boxes from pdfium, kb.render's highlight."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from jsonl_engine.answer.pages import Quote, locate
from jsonl_engine.ingest.normalize import normalize_line

pdfium = pytest.importorskip("pypdfium2")
COLUMN_A = "Left column sentence {i} talks about revenue growth in the northern region. "
COLUMN_B = "Right column sentence {i} describes the capital spending plan for next year. "


def squash(text: str) -> str:
    """Whitespace removed, after ingest's normalisation. pdfium's bounded text (FPDFText_GetBoundedText) writes a
    hyphen pdfium took for a soft one (a line-end break; "e-commerce" on a PEPSICO page) as U+0002, where its
    page text (FPDFText_GetText) has U+FFFE, which ingest stores as "-": both are that "-" here."""
    return "".join(normalize_line(text.replace("\x02", "-")).split())


def bounded_text(pdf, page: int, boxes: list[list[float]]) -> str:
    textpage = pdf[page - 1].get_textpage()
    return "".join(textpage.get_text_bounded(*box) for box in boxes)


def inside(box: list[float], width: float, height: float) -> bool:
    return 0 <= box[0] < box[2] <= width + 0.01 and 0 <= box[1] < box[3] <= height + 0.01


def _ingest(tmp_path: Path, *paths: Path):
    from jsonl_engine.ingest.sync import ingest_paths
    from jsonl_engine.store import open_store

    store = open_store(tmp_path / "kb")
    outcomes = ingest_paths(store, [str(p) for p in paths])
    assert not [o for o in outcomes if o.error]
    return store, [o.document_id for o in outcomes]


def _quote(store, document_id: str, needle: str) -> Quote:
    pattern = re.compile(r"\s+".join(map(re.escape, needle.split())))  # lines may break anywhere
    for s in store.document_sections(document_id):
        found = pattern.search(s.text)
        if found:
            return Quote(document_id, s.section_id, found.start(), found.end())
    raise AssertionError(f"{needle!r} not in the document")


@pytest.fixture(scope="module")
def layout_pdf(tmp_path_factory) -> Path:
    """Page 1: two columns; page 2: one column, shown rotated by 90 degrees; page 3: rotated by 270."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", "", 10)
    pdf.add_page()
    pdf.set_xy(10, 20)
    pdf.multi_cell(90, 5, "".join(COLUMN_A.format(i=i) for i in range(1, 13)))
    pdf.set_xy(110, 20)
    pdf.multi_cell(90, 5, "".join(COLUMN_B.format(i=i) for i in range(1, 13)))
    for page in (2, 3):
        pdf.add_page()
        pdf.multi_cell(0, 5, "".join(f"Rotated page {page} sentence {i} explains the dividend policy. "
                                     for i in range(1, 15)))
    path = tmp_path_factory.mktemp("layout") / "layout.pdf"
    pdf.output(str(path))
    doc = pdfium.PdfDocument(str(path))
    doc[1].set_rotation(90)
    doc[2].set_rotation(270)
    rotated = path.with_name("layout_rotated.pdf")
    doc.save(str(rotated))
    doc.close()
    return rotated


def test_two_column_and_rotated_pages(layout_pdf: Path, tmp_path: Path) -> None:
    store, (doc_id,) = _ingest(tmp_path, layout_pdf)
    needles = ["Right column sentence 3 describes the capital spending plan for next year.",
               "Left column sentence 7 talks about revenue growth in the northern region.",
               "Rotated page 2 sentence 5 explains the dividend policy.",
               "Rotated page 3 sentence 9 explains the dividend policy."]
    quotes = [_quote(store, doc_id, n) for n in needles]
    located = locate(store, quotes)
    pdf = pdfium.PdfDocument(str(layout_pdf))
    for needle, where in zip(needles, located, strict=True):
        assert where.boxes_status == "ok"
        (qp,) = where.pages
        assert store.page(doc_id, qp.page).text[qp.start:qp.end].split() == needle.split()
        assert all(inside(b, qp.width, qp.height) for b in qp.boxes)
        assert squash(bounded_text(pdf, qp.page, qp.boxes)) == squash(needle)
    right, left = located[0].pages[0], located[1].pages[0]
    half = right.width / 2
    assert all(b[0] > half for b in right.boxes) and all(b[2] < half for b in left.boxes)
    assert [w.pages[0].rotation for w in located[2:]] == [90, 270]
    assert [w.pages[0].page for w in located] == [1, 1, 2, 3]
    store.close()


def test_quote_across_a_page_break_has_boxes_on_both_pages(sample_pdfs, tmp_path: Path) -> None:
    store, (doc_id,) = _ingest(tmp_path, sample_pdfs["report"])
    section = next(s for s in store.document_sections(doc_id) if len(s.page_map) > 1 and s.text)
    brk = section.page_map[1][0]
    quote = Quote(doc_id, section.section_id, brk - 40, brk + 40)
    (where,) = locate(store, [quote])
    assert where.boxes_status == "ok"
    assert [qp.page for qp in where.pages] == [section.page_map[0][1], section.page_map[1][1]]
    pdf = pdfium.PdfDocument(str(sample_pdfs["report"]))
    for qp in where.pages:
        assert qp.boxes
        assert squash(bounded_text(pdf, qp.page, qp.boxes)) == squash(store.page(doc_id, qp.page).text[qp.start:qp.end])
    assert squash("".join(store.page(doc_id, qp.page).text[qp.start:qp.end] for qp in where.pages)) == \
        squash(section.text[brk - 40:brk + 40])
    store.close()


def test_moved_or_changed_file_gives_a_status_not_a_box(sample_pdfs, tmp_path: Path) -> None:
    copy = tmp_path / "report.pdf"
    shutil.copy(sample_pdfs["report"], copy)
    store, (doc_id,) = _ingest(tmp_path, copy)
    quote = _quote(store, doc_id, "Sentence 3 of the business section")
    assert locate(store, [quote])[0].boxes_status == "ok"
    copy.write_bytes(copy.read_bytes() + b"\n% changed\n")
    changed = locate(store, [quote])[0]
    assert changed.boxes_status == "file_changed" and changed.pages and changed.pages[0].boxes is None
    copy.unlink()
    assert locate(store, [quote])[0].boxes_status == "file_missing"
    store.close()


def test_text_documents_get_offsets_and_no_boxes(tmp_path: Path) -> None:
    from jsonl_engine.ingest.sync import ingest_text
    from jsonl_engine.store import open_store

    store = open_store(tmp_path / "kb")
    outcome = ingest_text(store, "# Title\n\nFirst paragraph here.\n\n## Part\n\nThe quoted words are here.\n",
                          title="notes", media_type="text/markdown")
    quote = _quote(store, outcome.document_id, "quoted words")
    (where,) = locate(store, [quote])
    assert where.boxes_status == "not_pdf"
    (qp,) = where.pages
    assert qp.boxes is None and store.page(outcome.document_id, 1).text[qp.start:qp.end] == "quoted words"
    store.close()


def test_dev_claims_boxes_hold_their_quotes(dev_kb, dev_questions) -> None:
    """Over the dev questions' kb.synthesize claims: pdfium's text inside each claim's boxes is the quote
    (whitespace removed, pdfium's soft hyphen as "-", see `squash`), for every claim (156/156; superscript "TM",
    "®" and footnote markers inside a quote's lines are outside its boxes); every box lies inside its page."""
    from jsonl_engine.answer.synthesize import synthesize

    pdfs = {d.document_id: pdfium.PdfDocument(d.path) for d in dev_kb.documents()}
    total = held = 0
    misses = []
    for q in dev_questions:
        doc_id = dev_kb.doc_ids.get(q["doc_name"])
        if doc_id is None:
            continue
        claims = synthesize(dev_kb, q["question"], document_ids=[doc_id], max_claims=50).claims
        located = locate(dev_kb, [Quote(c.document_id, c.section_id, c.quote_start, c.quote_end) for c in claims])
        for claim, where in zip(claims, located, strict=True):
            total += 1
            assert where.boxes_status == "ok", where
            assert "".join(dev_kb.page(doc_id, qp.page).text[qp.start:qp.end] for qp in where.pages).split() \
                == claim.text.split()
            for qp in where.pages:
                assert qp.boxes and all(inside(b, qp.width, qp.height) for b in qp.boxes)
            got = "".join(bounded_text(pdfs[doc_id], qp.page, qp.boxes) for qp in where.pages)
            if squash(got) == squash(claim.text):
                held += 1
            else:
                misses.append((claim.text, got))
    print(f"quote-in-boxes: {held}/{total}")
    assert total >= 100
    assert held == total, misses[:5]


@pytest.mark.parametrize("needle", ["Rotated page 2 sentence 5 explains the dividend policy.",
                                    "Right column sentence 3 describes the capital spending plan for next year."])
def test_render_highlights_inside_the_boxes_only(layout_pdf: Path, tmp_path: Path, needle: str) -> None:
    """Pixels the highlight changes lie in the boxes (a pixel of slack), cover them, and are highlight-coloured
    on the white page; kb.render writes the PNG into the KB's cache directory."""
    Image = pytest.importorskip("PIL.Image")
    import io

    from jsonl_engine.answer import render as r

    store, (doc_id,) = _ingest(tmp_path, layout_pdf)
    (qp,) = locate(store, [_quote(store, doc_id, needle)])[0].pages
    plain = r.render(store, doc_id, qp.page, None, scale=2.0, crop=False, margin=0)
    lit = r.render(store, doc_id, qp.page, (qp.start, qp.end), scale=2.0, crop=False, margin=0)
    assert (plain.width, plain.height) == (lit.width, lit.height) and lit.pixel_boxes
    if qp.rotation in (90, 270):
        assert lit.width > lit.height  # a portrait A4 page shown rotated
    a = Image.open(io.BytesIO(plain.png)).convert("RGB")
    b = Image.open(io.BytesIO(lit.png)).convert("RGB")
    pa, pb = a.load(), b.load()
    changed_inside = changed_outside = yellow = area = 0
    for y in range(b.height):
        for x in range(b.width):
            box = any(p[0] - 1 <= x <= p[2] + 1 and p[1] - 1 <= y <= p[3] + 1 for p in lit.pixel_boxes)
            differs = pa[x, y] != pb[x, y]
            if box:
                area += 1
                changed_inside += differs
                red, green, blue = pb[x, y]
                yellow += pa[x, y] == (255, 255, 255) and red > 230 and green > 200 and blue < 200
            else:
                changed_outside += differs
    assert changed_outside == 0
    assert changed_inside > 0.85 * area and yellow > 0.4 * area  # glyphs and the slack ring take the rest
    path = Path(r.save(tmp_path / "kb", doc_id, qp.page, (qp.start, qp.end), 2.0, True, 36, lit.png))
    assert path.parent == (tmp_path / "kb" / "cache" / "render").resolve() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    crop = r.render(store, doc_id, qp.page, (qp.start, qp.end), scale=1.0, crop=True, margin=10)
    assert crop.width < plain.width / 2 + 40 and crop.pixel_boxes[0][0] >= 0
    store.close()


def test_a_glyph_outside_the_quote_cuts_the_line_box() -> None:
    """A superscript inside a quote's line that pdfium reads elsewhere (a "TM" after "Brite", a footnote "(a)"):
    the line's box is cut around it, and a quote glyph it touches keeps a trimmed box of its own."""
    from jsonl_engine.ingest.pdfgeom import merge_lines

    chars = [(x, 0.0, x + 4.0, 8.0, x, 0.0) for x in range(0, 100, 5)]  # 20 glyphs on one baseline
    assert merge_lines(chars) == [[0, 0, 99, 8]]
    free = [44.2, 6.0, 44.8, 10.0]  # in the gap between two glyphs
    kerned = [73.0, 6.0, 74.8, 10.0]  # over the glyph at 70..74 and the gap after it
    boxes = merge_lines(chars, [free, kerned])

    def overlap(a, b) -> bool:
        return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])

    assert not [b for b in boxes for f in (free, kerned) if overlap(b, f)]
    assert all(any(overlap(b, c[:4]) for b in boxes) for c in chars)  # every glyph of the quote still inside
    assert boxes == [[0, 0, 44, 8], [45, 0, 69, 8], [70, 0, 74, 5.97], [75, 0, 99, 8]]  # cut under it
