"""Checks shared by the kb.synthesize tests: every answer line is a claim's verbatim text (or its table line,
built from verbatim parts of the page), followed by its citation; every part sits at its offsets."""

from __future__ import annotations

import re
from collections.abc import Callable

from jsonl_engine.answer.absent import NOTICE
from jsonl_engine.ingest.normalize import collapse_ws

LINE = re.compile(r"(.+) \[(c[0-9a-f]{12})\]", re.DOTALL)
CITES = re.compile(r"\[(c[0-9a-f]{12})\]")
SIBLING = re.compile(r"(?:Highest|Largest|Biggest|Greatest|Most|Best|Strongest|Lowest|Smallest|Least|Worst|Weakest) "
                     r"of \d+: (.+?): (.+)")  # a superlative over sibling bullets: its heading, then the bullet


def table_parts(row) -> list:
    return [p for p in (row.label, row.unit) if p is not None] + list(row.headers) + list(row.cells)


def check_lines(out, section_text: Callable[[str], str], page_text: Callable[[str, int], str]) -> list[str]:
    """Assert the answer's lines against its claims; returns the answer lines after a notice/computed line."""
    lines = out.answer.split("\n") if out.answer else []
    if lines and lines[0].startswith(NOTICE):
        assert not CITES.search(lines[0])
        lines = lines[1:]
    ids = [c.id for c in out.claims]
    assert len(set(ids)) == len(ids)
    if lines and lines[0].startswith("Computed ("):
        cited = CITES.findall(lines[0])
        assert cited and set(cited) <= set(ids), lines[0]
        lines = lines[1:]
    assert len(lines) == len(out.claims), (out.answer, ids)
    for line, claim in zip(lines, out.claims, strict=True):
        m = LINE.fullmatch(line)
        assert m and m.group(2) == claim.id, line
        body = m.group(1)
        text = section_text(claim.section_id)
        assert text[claim.quote_start:claim.quote_end] == claim.text and claim.text.strip()
        reading = out.tables.get(claim.id)
        expected = reading.line if reading is not None and reading.line else collapse_ws(claim.text)
        if reading is not None:
            source = text if reading.page is None else page_text(claim.document_id, reading.page)
            for part in table_parts(reading.row):
                assert source[part.start:part.end] == part.text, part
        if (sibling := SIBLING.fullmatch(body)) is not None and sibling.group(2) == expected:
            assert sibling.group(1) in collapse_ws(text)  # the heading it is under (answer/extreme.py)
        elif body.endswith("…") and out.truncated and len(lines) == 1:
            assert expected.startswith(body[:-1]) and len(body) < len(expected) + 1
        else:
            assert body == expected, (body, expected)
    return lines


def answered(store, doc: str, query: str):
    """kb.synthesize's answer (answer/direct.py answer_first) to `query` scoped to the document named `doc`
    (`store.doc_ids`), every line checked verbatim against the store."""
    from jsonl_engine.answer.direct import answer_first

    out = answer_first(store, query, document_ids=[store.doc_ids[doc]])
    check_lines(out, lambda sid: store.section(sid).text, lambda d, page: store.page(d, page).text)
    return out
