"""bench/data/figures.jsonl (our held-out figure questions) holds what it says, checked against the filings' pages."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pypdfium2 as pdfium
import pytest

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "bench" / "data" / "figures.jsonl"
MORE = next((p for p in (ROOT.parent / "shared" / "financebench-more", Path("/work/shared/financebench-more"))
             if (p / "pdfs").is_dir()), None)
FIELDS = {"financebench_id", "company", "doc_name", "question_type", "question", "answer", "justification",
          "evidence", "dataset_subset_label"}


def questions() -> list[dict]:
    return [json.loads(line) for line in FIGURES.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_fields_and_ids():
    qs = questions()
    assert len(qs) >= 70
    assert all(q.keys() >= FIELDS and q["dataset_subset_label"] == "OURS" for q in qs)
    assert [q["financebench_id"] for q in qs] == [f"ours_fig_{n:03d}" for n in range(1, len(qs) + 1)]
    assert {q["question_type"] for q in qs} == {"metrics-generated", "novel-generated", "domain-relevant"}
    assert len({q["doc_name"] for q in qs}) >= 25


@pytest.mark.skipif(MORE is None, reason="the FinanceBench filings (../shared/financebench-more) are not available")
def test_evidence_is_the_zero_indexed_page_and_holds_every_answer_figure():
    sys.path.insert(0, str(ROOT / "bench"))
    from synthesize import gold_figures, numbers

    docs: dict[str, pdfium.PdfDocument] = {}
    for q in questions():
        for e in q["evidence"]:
            path = MORE / "pdfs" / f"{e['doc_name']}.pdf"
            doc = docs.setdefault(e["doc_name"], pdfium.PdfDocument(str(path)))
            page = doc[e["evidence_page_num"]].get_textpage().get_text_range()
            assert page == e["evidence_text_full_page"], (q["financebench_id"], e["evidence_page_num"])
            assert all(line in page for line in e["evidence_text"].split("\n")), q["financebench_id"]
        # every number of the answer (years aside) is printed on an evidence page: a figure question for the bench
        asked = {n for n in numbers(q["answer"]) if not (n == n.to_integral() and 1900 <= n <= 2100)}
        assert asked and gold_figures(q) == asked, (q["financebench_id"], q["answer"])
    for doc in docs.values():
        doc.close()
    dev = ROOT.parent / "shared" / "financebench-dev" / "pdfs"
    if dev.is_dir():
        assert not {q["doc_name"] for q in questions()} & {p.stem for p in dev.glob("*.pdf")}
