"""Quote locator benchmark: FinanceBench gold evidence texts located in their pages as pypdfium2 extracts
them (a different extractor than the dataset's, so line breaks, spacing and hyphenation differ).

Same-run baseline: plain `str.find` (pass 1 only). Also prints the per-call time of both.

    .venv/bin/python bench/locate.py
"""

from __future__ import annotations

import json
import time

from _common import DEV


def main() -> None:
    import pypdfium2

    from jsonl_engine.answer.spans import locate_quote

    cases: list[tuple[str, str]] = []
    docs: dict[str, pypdfium2.PdfDocument] = {}
    for line in (DEV / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        for ev in json.loads(line)["evidence"]:
            pdf = DEV / "pdfs" / f"{ev['doc_name']}.pdf"
            if not pdf.exists() or not ev["evidence_text"].strip():
                continue
            doc = docs.setdefault(ev["doc_name"], pypdfium2.PdfDocument(str(pdf)))
            page = doc[ev["evidence_page_num"]]  # zero-indexed in the dataset
            cases.append((page.get_textpage().get_text_bounded(), ev["evidence_text"]))
    found_exact = found = 0
    t_exact = t_locate = 0.0
    for text, quote in cases:
        t0 = time.perf_counter()
        found_exact += text.find(quote) != -1
        t1 = time.perf_counter()
        span = locate_quote(text, quote)
        t2 = time.perf_counter()
        found += span is not None
        t_exact += t1 - t0
        t_locate += t2 - t1
    t0 = time.perf_counter()
    for text, quote in cases:
        locate_quote(text, quote)
    t_warm = time.perf_counter() - t0
    n = len(cases)
    print(f"evidence passages: {n}")
    print(f"baseline str.find : located {found_exact}/{n} ({found_exact / n:.0%}), {t_exact / n * 1e6:.1f} us/call")
    print(f"locate_quote      : located {found}/{n} ({found / n:.0%}), {t_locate / n * 1e6:.1f} us/call cold, {t_warm / n * 1e6:.1f} us/call warm (section text already normalised)")


if __name__ == "__main__":
    main()
