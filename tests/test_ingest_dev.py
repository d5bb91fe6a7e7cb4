"""The ingest on real SEC filings (the FinanceBench dev split): structure, pages, evidence text."""

from __future__ import annotations

import re

import pytest

from jsonl_engine.store import SectionRow
from tests.conftest import DEV_KB_DOCS

# (doc, item, first page, last page): read off the filings themselves (1-based, inclusive)
ITEM_PAGES = [
    ("3M_2022_10K", "7", 19, 42), ("3M_2022_10K", "8", 43, 124),
    ("AMCOR_2023_10K", "7", 29, 45), ("AMCOR_2023_10K", "8", 48, 109),
    ("PEPSICO_2022_10K", "7", 31, 117), ("PEPSICO_2022_10K", "8", 118, 118),
]


def _items(store, doc_id: str) -> dict[str, SectionRow]:
    out: dict[str, SectionRow] = {}
    for s in store.document_sections(doc_id):
        if m := re.match(r"(?i)item\s+(\d+[a-c]?)\b", s.title):
            out.setdefault(m.group(1).upper(), s)
    return out


@pytest.mark.parametrize(("doc", "item", "first", "last"), ITEM_PAGES)
def test_filing_items_have_correct_page_ranges(dev_kb, doc, item, first, last):
    section = _items(dev_kb, dev_kb.doc_ids[doc])[item]
    assert (section.page_start, section.page_end) == (first, last)
    assert section.depth == 2 and re.match(r"PART II\b", section.ancestors[0], re.I)
    heading_page = dev_kb.page(section.document_id, first).text
    assert re.search(rf"(?i)item\s+{item}\b", heading_page)


def test_filings_have_parts_items_and_notes(dev_kb):
    for doc in ("3M_2022_10K", "AMCOR_2023_10K", "PEPSICO_2022_10K"):
        items = _items(dev_kb, dev_kb.doc_ids[doc])
        assert {"1", "1A", "2", "3", "5", "7", "7A", "8", "9A", "10", "15"} <= set(items), (doc, sorted(items))
        _doc, roots = dev_kb.outline(dev_kb.doc_ids[doc], max_depth=1)
        parts = [r.title for r in roots if re.match(r"(?i)part\s+[iv]+\b", r.title)]
        assert [p.split()[1].rstrip(".").upper() for p in parts] == ["I", "II", "III", "IV"], doc
    sections = dev_kb.document_sections(dev_kb.doc_ids["3M_2022_10K"])
    notes = [s.title for s in sections if re.match(r"NOTE \d+\.", s.title) and "(part " not in s.title]
    assert len(notes) == 19 and notes[0].startswith("NOTE 1.") and notes[-1].startswith("NOTE 19.")


def test_sections_are_retrievable_units(dev_kb):
    for doc_id in dev_kb.doc_ids.values():
        doc = dev_kb.document(doc_id)
        sections = dev_kb.document_sections(doc_id)
        assert len(sections) == doc.sections
        assert all(len(s.text) <= 3500 for s in sections)
        assert all(1 <= s.page_start <= s.page_end <= doc.pages for s in sections)
        leaves = [s for s in sections if s.is_leaf]
        assert all(s.text for s in leaves)
        # no page header or page number became a heading
        assert not any(re.fullmatch(r"(?i)table of contents|\d{1,3}", s.title) for s in sections)


def test_every_page_offset_maps_back_to_its_page(dev_kb):
    doc_id = dev_kb.doc_ids["AMCOR_2023_10K"]
    pages = {n: dev_kb.page(doc_id, n).text for n in range(1, 157)}
    for s in dev_kb.document_sections(doc_id):
        if not s.text:
            continue
        bounds = [o for o, _p in s.page_map[1:]] + [len(s.text)]
        for (offset, page), end in zip(s.page_map, bounds, strict=True):
            assert s.text[offset:end].strip() in pages[page], (s.section_id, page)


def _squash(text: str) -> str:
    """The gold evidence was extracted by another tool that drops non-ASCII punctuation and varies spacing."""
    return re.sub(r"\s+", "", re.sub(r"[^\x00-\x7f]", "", text))


def _ws(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\x00-\x7f]", " ", text)).strip()


def test_evidence_pages_are_stored_and_evidence_text_is_found(dev_kb, dev_questions):
    from jsonl_engine.ingest.normalize import normalize_text

    total = spaced = squashed = 0
    for question in dev_questions:
        for evidence in question["evidence"]:
            if evidence["doc_name"] not in DEV_KB_DOCS:
                continue
            page = evidence["evidence_page_num"] + 1  # the gold numbering is zero-based
            text = dev_kb.page(dev_kb.doc_ids[evidence["doc_name"]], page).text
            assert text.strip(), (evidence["doc_name"], page)
            gold = normalize_text(evidence["evidence_text"])
            total += 1
            spaced += _ws(gold) in _ws(text)
            squashed += _squash(gold) in _squash(text)
    assert total >= 10
    assert squashed / total >= 0.9, (squashed, total)
    assert spaced / total >= 0.5, (spaced, total)


def test_pdfium_hyphen_quirk_is_normalised(dev_kb):
    doc = dev_kb.doc_ids["3M_2022_10K"]
    joined = "".join(dev_kb.page_range(doc, 1, dev_kb.document(doc).pages).values())
    assert "\ufffe" not in joined and "\r" not in joined and "\xa0" not in joined
    assert "COVID-related" in joined
