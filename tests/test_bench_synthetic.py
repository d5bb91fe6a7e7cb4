"""bench/synthetic.py: the variants that grow the library of bench/backends.py --scale keep a filing's pages and
words, change its numbers, and say they are synthetic."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pypdfium2 as pdfium
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import synthetic  # noqa: E402

DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
PAGES = ["Acme Widgets Inc. annual report for fiscal 2019", "Revenue was $4,785 million in 2019 and $3,967 in 2018.",
         "Note 7: 1,234,567 shares; margin 38.9%."]


def _filing(path: Path, *, encrypt: bool = False) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_font("DejaVu", "", str(DEJAVU))  # an embedded font: text extracted through its ToUnicode map
    pdf.set_font("DejaVu", "", 12)
    pdf.set_title("Acme Widgets 10-K 2019")
    for text in PAGES:
        pdf.add_page()
        pdf.multi_cell(0, 8, text)
    if encrypt:
        pdf.set_encryption(owner_password="owner")  # no user password: readable, as SEC filings often are
    pdf.output(str(path))
    return path.read_bytes()


def _texts(data: bytes) -> tuple[list[str], str]:
    pdf = pdfium.PdfDocument(data)
    try:
        return [pdf[i].get_textpage().get_text_range().strip() for i in range(len(pdf))], \
            pdf.get_metadata_value("Title")
    finally:
        pdf.close()


@pytest.mark.skipif(not DEJAVU.exists(), reason="DejaVu fonts not installed")
@pytest.mark.parametrize("encrypt", [False, True])
def test_a_variant_has_the_filings_pages_and_words_with_other_digits(tmp_path, encrypt):
    data = _filing(tmp_path / "acme.pdf", encrypt=encrypt)
    pages, title = _texts(data)
    assert pages[1].startswith("Revenue was $4,785")
    one, changed = synthetic.variant(data, "acme", 1)
    two, _ = synthetic.variant(data, "acme", 2)
    assert changed >= 1 and one != two != data
    got, got_title = _texts(one)
    perm = synthetic.permutation("acme/1")
    table = str.maketrans({chr(a): chr(b) for a, b in perm.items()})
    assert got == [p.translate(table) for p in pages] != pages  # every digit 3-9 mapped, nothing else changed
    assert [re.sub(r"\d", "#", p) for p in got] == [re.sub(r"\d", "#", p) for p in pages]
    assert got_title == title.translate(table) + " (synthetic variant 1)"
    assert "synthetic" in synthetic.variant_name(tmp_path / "acme.pdf", 1)
    assert "acme" not in synthetic.variant_name(tmp_path / "acme.pdf", 1).lower()
