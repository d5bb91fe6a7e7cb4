"""Normalisation, chunking and the Markdown / plain-text parsers."""

from __future__ import annotations

import pytest

from jsonl_engine.errors import UnsupportedMedia
from jsonl_engine.ingest import parse_text
from jsonl_engine.ingest.chunk import chunk_spans
from jsonl_engine.ingest.normalize import collapse_letterspacing, normalize_text
from jsonl_engine.ingest.tree import split_chunks


def test_normalize_pdfium_quirks_once():
    raw = "Regulation S\ufffeT\r\nnet\u00a0sales\rend\x02"
    assert normalize_text(raw) == "Regulation S-T\nnet sales\nend "
    assert normalize_text(normalize_text(raw)) == normalize_text(raw)


def test_collapse_letterspacing():
    assert collapse_letterspacing("U N I T E D  S T A T E S") == "UNITED STATES"
    assert collapse_letterspacing("Item 7. Results") == "Item 7. Results"


def test_chunks_cover_text_and_respect_limit():
    text = "".join(f"Paragraph {i}. " + "word " * 150 + "end.\n\n" for i in range(12))
    spans = chunk_spans(text, 1000)
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))
    assert all(0 < end - start <= 1000 for start, end in spans)
    # paragraph boundaries win over word boundaries: one paragraph (~770 chars) per chunk
    assert [text[start:end].split(".", 1)[0] for start, end in spans] == [f"Paragraph {i}" for i in range(12)]


def test_chunks_prefer_page_breaks_and_never_split_a_character():
    page1 = "alpha " * 300
    page2 = "beta " * 300
    text = page1 + "\n" + page2
    pieces = split_chunks(text, [(0, 1), (len(page1) + 1, 2)], 2500)
    assert [p[1] for p in pieces] == [[(0, 1)], [(0, 2)]]
    combining = "e\u0301" * 3000  # no spaces at all: a hard cut must not separate a base from its accent
    for start, end in chunk_spans(combining, 1001):
        assert combining[start] == "e" and (end == len(combining) or combining[end] == "e")


def test_markdown_headings_build_tree():
    text = ("Preface line.\n\n# Guide\n\nIntro.\n\nSetup\n-----\nInstall it.\n\n```\n# not a heading\n```\n\n"
            "## Usage ##\nRun it.\n\nAppendix\n========\nMore.\n")
    doc = parse_text(text, "Inline title", "text/markdown")
    assert doc.title == "Inline title"  # inline text: the given title; a .md file: its first H1
    assert doc.media_type == "text/markdown"
    titles = [(s.depth, s.title) for s in doc.sections]
    assert titles == [(1, "Guide"), (2, "Setup"), (2, "Usage"), (1, "Appendix")]
    assert doc.sections[0].text.startswith("Preface line.\n\n# Guide")  # a short preamble joins the first section
    setup = doc.sections[1]
    assert setup.text.startswith("Setup\n-----") and "# not a heading" in setup.text
    assert all(s.page_start == s.page_end == 1 for s in doc.sections)
    # every section's text is a verbatim slice of the stored page
    assert all(s.text in doc.pages[0] for s in doc.sections)


def test_markdown_file_is_named_by_its_first_h1(tmp_path):
    from jsonl_engine.ingest import parse_file

    (tmp_path / "notes.md").write_text("intro\n\n# Real Title\n\nbody\n", encoding="utf-8")
    (tmp_path / "plain.md").write_text("no headings here\n", encoding="utf-8")
    assert parse_file(str(tmp_path / "notes.md")).title == "Real Title"
    assert parse_file(str(tmp_path / "plain.md")).title == "plain"


def test_plain_text_is_chunked_into_titled_parts():
    text = "\n\n".join(f"Paragraph {i} says something useful. " * 12 for i in range(40))
    doc = parse_text(text, "Notes")
    root, *parts = doc.sections
    assert root.title == "Notes" and root.text == ""
    assert len(parts) > 3 and all(p.title.startswith("Notes (part ") for p in parts)
    assert all(len(p.text) <= 3500 for p in parts)
    assert all(p.text.startswith("Paragraph") for p in parts)
    assert " ".join(p.text for p in parts).split() == text.split()


def test_empty_text_is_unsupported():
    with pytest.raises(UnsupportedMedia) as info:
        parse_text("  \n ", "x")
    assert info.value.reason == "no_text"


def test_parse_is_deterministic():
    text = "# A\n\n" + "Some words here. " * 400 + "\n\n## B\n\nmore"
    first, second = parse_text(text, "t", "text/markdown"), parse_text(text, "t", "text/markdown")
    assert [(s.key, s.title, s.text) for s in first.sections] == [(s.key, s.title, s.text) for s in second.sections]
