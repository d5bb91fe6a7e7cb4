"""PDF extraction and the section tree, on PDFs generated with fpdf2 (see tests/conftest.py)."""

from __future__ import annotations

import pytest

from jsonl_engine.errors import UnsupportedMedia
from jsonl_engine.ingest import parse_file
from jsonl_engine.ingest.model import ParsedDocument


@pytest.fixture(scope="module")
def report(sample_pdfs) -> ParsedDocument:
    return parse_file(str(sample_pdfs["report"]))


def by_title(doc: ParsedDocument, title: str):
    found = [s for s in doc.sections if s.title == title]
    assert found, [s.title for s in doc.sections]
    return found[0]


def test_pages_are_stored_as_extracted_with_non_ascii(report, sample_pdfs):
    assert len(report.pages) == sample_pdfs["report_headings"]["_pages"]
    assert sample_pdfs["report_headings"]["_special"] in report.pages[0]
    assert all("\r" not in page and "\xa0" not in page for page in report.pages)
    assert report.warnings == []


def test_headings_from_size_weight_and_filing_structure(report, sample_pdfs):
    where = sample_pdfs["report_headings"]
    assert report.title == "ACME Holdings Annual Report"
    part = by_title(report, "PART I")
    items = [s for s in report.sections if s.parent == report.sections.index(part)]
    assert [s.title for s in items] == ["Item 1. Business", "Item 7. Management's Discussion and Analysis",
                                        "Item 8. Financial Statements"]
    for item in items:
        assert item.page_start == where[item.title]
    item7, item8 = items[1], items[2]
    assert item7.page_end == where["Liquidity and Capital Resources"] + 1 == item8.page_start - 1
    item8_children = [s.title for s in report.sections if s.parent == report.sections.index(item8)]
    assert item8_children == ["Note 1 - Basis of Presentation", "Note 2 - Revenue"]
    liquidity = by_title(report, "Liquidity and Capital Resources")
    assert liquidity.parent == report.sections.index(item7) and liquidity.depth == item7.depth + 1


def test_letter_spaced_heading_is_collapsed(report):
    assert by_title(report, "UNITED KINGDOM").depth == 2


def test_page_headers_and_numbers_are_not_headings(report):
    titles = {s.title for s in report.sections}
    assert not any(t.startswith("ACME Holdings plc") or t.startswith("Page ") for t in titles)


def test_oversized_sections_are_chunked_with_exact_page_maps(report):
    item7 = by_title(report, "Item 7. Management's Discussion and Analysis")
    index = report.sections.index(item7)
    parts = [s for s in report.sections if s.parent == index and "(part " in s.title]
    assert len(parts) >= 3 and item7.text == ""
    assert parts[0].title == "Item 7. Management's Discussion and Analysis (part 1)"
    assert parts[0].text.count("Item 7. Management's Discussion and Analysis") == 1
    for section in report.sections:
        assert len(section.text) <= 3500
        assert section.page_start <= section.page_end
        if not section.text:
            continue
        offsets = [o for o, _p in section.page_map]
        assert offsets[0] == 0 and offsets == sorted(set(offsets))
        assert section.page_map[0][1] == section.page_start and section.page_map[-1][1] <= section.page_end
        # every stretch of the section text between page-map offsets is verbatim text of that page
        bounds = offsets[1:] + [len(section.text)]
        for (offset, page), end in zip(section.page_map, bounds, strict=True):
            piece = section.text[offset:end].strip()
            assert piece and piece in report.pages[page - 1], (section.title, page)


def test_section_keys_are_stable_and_tree_ordered(report, sample_pdfs):
    again = parse_file(str(sample_pdfs["report"]))
    assert [(s.key, s.title, s.text) for s in again.sections] == [(s.key, s.title, s.text) for s in report.sections]
    for position, section in enumerate(report.sections):
        if section.parent is not None:
            parent = report.sections[section.parent]
            assert section.parent < position and section.key.startswith(parent.key + ".")
            assert section.depth == parent.depth + 1


def test_outline_bookmarks_build_the_tree(sample_pdfs):
    doc = parse_file(str(sample_pdfs["outline"]))
    assert [(s.depth, s.title, s.page_start) for s in doc.sections] == [
        (1, "Chapter 1", 1), (2, "Chapter 1 details", 1), (1, "Chapter 2", 2), (2, "Chapter 2 details", 2),
        (1, "Chapter 3", 3), (2, "Chapter 3 details", 3)]
    details = doc.sections[1]
    assert details.text.startswith("Chapter 1 details") and "Opening words" not in details.text


@pytest.mark.parametrize(("name", "reason"), [
    ("encrypted", "encrypted"), ("truncated", "corrupt"), ("not_pdf", "not_pdf"), ("blank", "no_text")])
def test_bad_pdfs_are_unsupported_with_a_reason(sample_pdfs, name, reason):
    with pytest.raises(UnsupportedMedia) as info:
        parse_file(str(sample_pdfs[name]))
    assert info.value.reason == reason
    assert info.value.to_wire()["data"]["reason"] == reason


def test_a_page_pdfium_cannot_load_makes_the_pdf_corrupt(sample_pdfs, tmp_path):
    """A page tree that counts one page more than it holds: the document opens, its last page fails to load."""
    from jsonl_engine.ingest import pdf

    pages = sample_pdfs["report_headings"]["_pages"]
    data = sample_pdfs["report"].read_bytes()
    assert data.count(f"/Count {pages}\n".encode()) == 1
    path = tmp_path / "overcounted.pdf"
    path.write_bytes(data.replace(f"/Count {pages}\n".encode(), f"/Count {pages + 1}\n".encode()))
    for extract in (lambda: parse_file(str(path)), lambda: pdf.extract_batch(str(path), pages - 1, pages + 1)):
        with pytest.raises(UnsupportedMedia) as info:
            extract()
        assert info.value.reason == "corrupt"
        assert info.value.message == f"overcounted.pdf is corrupt: page {pages + 1}: Failed to load page."


def test_pages_without_text_warn(sample_pdfs):
    doc = parse_file(str(sample_pdfs["scanned"]))
    assert len(doc.pages) == 3 and doc.pages[0] == doc.pages[1] == ""
    assert doc.warnings and "1, 2" in doc.warnings[0]
    assert doc.sections and all(s.page_start == 3 for s in doc.sections)


def test_unknown_extension_is_unsupported(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("a,b\n")
    with pytest.raises(UnsupportedMedia) as info:
        parse_file(str(path))
    assert info.value.reason == "unknown_type"


@pytest.mark.parametrize("batch", [1, 2, 3, None], ids=["batch1", "batch2", "batch3", "one_batch"])
@pytest.mark.parametrize("name", ["report", "outline", "scanned"])
def test_page_batches_build_the_same_document_as_one_pass(sample_pdfs, name, batch):
    """The daemon's path for large PDFs (page batches pickled in workers, assembled in another) must give
    exactly the document of a single pass, blank pages included, whatever the batch size (None: all pages)."""
    from jsonl_engine.ingest import pdf

    path = str(sample_pdfs[name])
    info = pdf.parse_small_pdf(path, 0)  # over 0 pages: only the PdfInfo, as the daemon asks for a large PDF
    size = batch or info.page_count
    assert info.page_count >= 3  # so batches of 2 hold a page that is not the first of its batch
    blobs = [pdf.extract_batch(path, start, min(start + size, info.page_count))
             for start in range(0, info.page_count, size)]
    assert [count for count, _blob in blobs] == [min(size, info.page_count - start)
                                                 for start in range(0, info.page_count, size)]
    built = pdf.build_from_batches(path, info, [blob for _count, blob in blobs])
    whole = pdf.parse_pdf(path)
    assert len(built.pages) == info.page_count
    assert built == whole
