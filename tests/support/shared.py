"""The shared data beside the repository (../shared), found from a checkout or the machine's /work/shared."""

from __future__ import annotations

from pathlib import Path

import pytest


def shared_folder(name: str) -> Path | None:
    """../shared/<name>, or /work/shared/<name>; None when neither exists."""
    here = Path(__file__).resolve().parents[3] / "shared" / name
    return next((p for p in (here, Path("/work/shared") / name) if p.is_dir()), None)


_MORE = shared_folder("financebench-more")
MORE = _MORE / "pdfs" if _MORE is not None and (_MORE / "pdfs").is_dir() else None  # the 136 more filings' PDFs
needs_more = pytest.mark.skipif(MORE is None, reason="the FinanceBench filings (shared/financebench-more) are absent")


def filing_row(filing: str, title: str, starts: str):
    """The table row starting with `starts` on the page of financebench-more's `filing` that holds `title` too,
    each of its parts checked verbatim at its offsets in the page's text."""
    from jsonl_engine.answer.tables import read_row
    from jsonl_engine.ingest import parse_file
    from tests.support.answer_lines import table_parts

    assert MORE is not None
    text = next(p for p in parse_file(str(MORE / f"{filing}.pdf")).pages if title in p and starts in p)
    i = text.index(starts)
    row = read_row(text, i, text.index("\n", i))
    for part in table_parts(row):
        assert text[part.start:part.end] == part.text
    return row
