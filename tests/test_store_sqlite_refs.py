"""What a SQLite query reads of sections (store/sqlite/store.py): section_refs (migration 9) in place of the
sections' rows, the sections on pages in one join per chunk of pages, the counts of pages from the FTS tables, and
the page counts a side thread takes only when they cost a pass over the index. Each gives what the statements it
replaced gave: the same rows, the same rankings."""

from __future__ import annotations

from pathlib import Path

import pytest

from jsonl_engine.ingest.sync import ingest_text
from jsonl_engine.retrieval import retrieve
from jsonl_engine.retrieval.stages import candidates
from jsonl_engine.store import open_store
from jsonl_engine.store.repository import Repository
from jsonl_engine.store.sqlite.store import SqliteStore
from tests.conftest import kb_integrity
from tests.support.sql import sqlite_connect

_NOTES = [
    ("# Okapi Holdings annual report\n\n## Revenue\n\nOkapi sold lemur feed worth $12 million.\n\n"
     "## Notes\n\nIntro to the notes: property and equipment net of depreciation.\n\n### Note 1\n\n"
     "Purchases of property and equipment were $3 million; the aardvark segment grew.\n", "okapi"),
    ("# Lemur Logistics 10-K\n\n## Risk factors\n\nDemand for aardvark crates may fall.\n\n## Liquidity\n\n"
     "Cash flows from operating activities paid for the okapi fleet.\n", "lemur"),
]


def _answers(store) -> list:
    out = []
    docs = [d.document_id for d in store.documents()]
    for query in ("purchases of property and equipment", "aardvark demand", "okapi cash flows", "lemur revenue"):
        for scope in (None, docs[:1], docs):
            for unit in ("section", "page"):
                found = retrieve(store, query, document_ids=scope, limit=6, unit=unit)
                out.append([(p.section_id, p.page_start, p.page_end, p.score, p.snippet) for p in found.passages])
    return out


def test_the_sections_on_pages_and_the_refs_are_the_repositorys(dev_kb) -> None:
    """section_refs read by the join of the pages: the rows of the repository's statements over `sections`
    (a UNION ALL of one lookup per page; the hits' refs by rowid), in the same order."""
    assert isinstance(dev_kb, SqliteStore)
    for doc in dev_kb.doc_ids.values():
        pages = [(doc, n) for n in range(1, dev_kb.document(doc).pages + 1)]
        with dev_kb.snapshot():
            sql = dev_kb._sql()
            for back in (0, 2):
                ours = [(i, tuple(r)) for i, r in SqliteStore._page_rows(dev_kb, sql, pages, back)]
                assert ours and ours == [(i, tuple(r)) for i, r in Repository._page_rows(dev_kb, sql, pages, back)]
            rowids = [r[0] for r in sql.rows("SELECT rowid FROM sections WHERE document_id = ?", (doc,))]
            assert dev_kb._section_refs(sql, rowids) == Repository._section_refs(dev_kb, sql, rowids)
    refs = dev_kb.sections_on_pages([(d, 3) for d in dev_kb.doc_ids.values()], 2)
    assert refs and len({r.section_id for r in refs}) == len(refs)


def test_section_refs_follow_writes_and_removals(tmp_path: Path) -> None:
    store = open_store(tmp_path / "kb")
    try:
        outs = [ingest_text(store, text, title, "text/markdown") for text, title in _NOTES]
        kb_integrity(store)  # section_refs is every section's refs; count() the rows' counts
        store.remove(outs[0].document_id)
        kb_integrity(store)
        again = ingest_text(store, *_NOTES[0], "text/markdown")  # the newest rowids are reused
        counts = kb_integrity(store)
        assert counts["sections"] == len(sqlite_connect(store.path).execute("SELECT * FROM section_refs").fetchall())
        assert again.document_id == outs[0].document_id
    finally:
        store.close()


def test_a_kb_made_before_section_refs_gets_them_when_opened(tmp_path: Path) -> None:
    """Migration 9 fills section_refs from the stored sections: the same answers as before it."""
    kb = tmp_path / "kb"
    store = open_store(kb)
    for text, title in _NOTES:
        ingest_text(store, text, title, "text/markdown")
    expected = _answers(store)
    path = store.path
    store.close()
    conn = sqlite_connect(path)  # back to version 8
    conn.execute("DROP TABLE section_refs")
    conn.execute("DELETE FROM schema_migrations WHERE version >= 9")
    conn.close()
    store = open_store(kb)
    try:
        assert sqlite_connect(path).execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] == 9
        kb_integrity(store)
        assert _answers(store) == expected
    finally:
        store.close()


def test_only_costly_page_counts_go_beside(any_dev_kb, monkeypatch: pytest.MonkeyPatch) -> None:
    """A question's page counts read from the term statistics stay on the calling thread; phrases of three tokens
    or more that are not listed (compound words: "okapi-lemur-aardvark") nor counted yet are counted half beside,
    on SQLite; the counts are the same either way."""
    sides: list[str] = []
    beside = candidates._beside

    def recording(store, read, *args):
        sides.append(read.__name__)
        return beside(store, read, *args)

    monkeypatch.setattr(candidates, "_beside", recording)
    doc = [any_dev_kb.doc_ids["3M_2022_10K"]]
    cheap = [("capital",), ("expenditures",), ("capital", "expenditures"), ("purchases", "of", "property", "plant",
                                                                             "and", "equipment"), ("fiscal", "2022")]
    costly = [("okapi", "lemur", "aardvark"), ("net", "sales", "growth", "rate"), ("cash", "from", "okapi")]
    with any_dev_kb.snapshot():
        assert any_dev_kb.costly_counts("pages", cheap) == []
        listed = any_dev_kb.costly_counts("pages", cheap + costly)
        assert listed == (costly if isinstance(any_dev_kb, SqliteStore) else [])
        counts = candidates._page_frequencies(any_dev_kb, cheap)
        assert sides == []
        both = candidates._page_frequencies(any_dev_kb, cheap + costly)
        assert sides == (["frequencies"] if isinstance(any_dev_kb, SqliteStore) else [])
        assert both == {**counts, **any_dev_kb.frequencies("pages", costly)}
        assert both[("okapi", "lemur", "aardvark")] == 0
        assert any_dev_kb.costly_counts("pages", costly) == []  # counted in this KB generation: kept
    sides.clear()
    retrieve(any_dev_kb, "What was 3M's FY2022 capital expenditure?", document_ids=doc, limit=8)
    assert "frequencies" not in sides


def test_a_refs_path_is_its_ancestors_titles() -> None:
    """section_ref reads each distinct ancestors value once: equal values give equal paths, a malformed or missing
    one an empty path, numbers as text."""
    from jsonl_engine.store.repository import section_ref

    def row(ancestors, page_map=None):
        return (7, "d:1", "d", "Note 1", ancestors, 3, 4, 120, page_map)

    a, b = section_ref(row('["Part II", "Item 8"]')), section_ref(row('["Part II", "Item 8"]'))
    assert a.path == b.path == ["Part II", "Item 8"] and a == b
    assert section_ref(row("not json")).path == [] and section_ref(row(None)).path == []
    assert section_ref(row('["Part II", 2024]')).path == ["Part II", "2024"]
    ref = section_ref(row("[]", "[[0, 3], [40, 4]]"))
    assert (ref.section_id, ref.document_id, ref.title, ref.page_start, ref.page_end, ref.text_len, ref.own_map) == \
        ("d:1", "d", "Note 1", 3, 4, 120, [(0, 3), (40, 4)])
