"""A search of some documents' rowid windows on SQLite runs on the FTS table alone (no join with the rows, no
document filter) and must return what the filtered statement returns; a window holding a row of another
document falls back to the filtered statement."""

from __future__ import annotations

import pytest

from jsonl_engine.retrieval.query import parse
from jsonl_engine.retrieval.weights import SECTION_WEIGHTS
from jsonl_engine.store import PageHit, SectionHit
from jsonl_engine.store.sqlite import search

QUESTIONS = (
    "What is the FY2022 capital expenditure amount (in USD millions)?",
    "What was the net revenue and operating profit by division in 2022?",
    "dividends per share cash flow from operations free cash flow",
)


@pytest.fixture
def spied(monkeypatch):
    ran: list[str] = []
    original = search.search_window
    monkeypatch.setattr(search, "search_window", lambda *a, **k: ran.append(a[1]) or original(*a, **k))
    return ran


@pytest.mark.parametrize("question", QUESTIONS)
def test_a_scoped_search_by_the_fts_table_alone_equals_the_filtered_statement(dev_kb, spied, question):
    store, phrases = dev_kb, parse(question).phrases
    ids = sorted(store.doc_ids.values())
    found = 0
    with store.snapshot():
        conn, expr = store._conn(), search.match(phrases)
        for doc in ids:
            scope = store.scope([doc], ("approved",))
            assert not scope.complete
            pages = store.search_pages(phrases, scope, 200, within=[doc])
            wins = search.windows(conn, "pages", [doc])
            stats = store._stats("pages", phrases, wins)
            filtered = sorted(search.search_in(conn, "pages", expr, scope, 200, wins, stats),
                              key=lambda p: (-p[2], p[0], p[1]))
            assert pages == [PageHit(*r) for r in filtered]
            sections = store.search_sections(phrases, SECTION_WEIGHTS, scope, 200, [doc])
            swins = search.windows(conn, "sections", [doc])
            hits = search.search_in(conn, "sections", expr, scope, 200, swins,
                                    store._stats("sections", phrases, swins), SECTION_WEIGHTS)
            refs = store._section_refs(store._sql(), [r for r, _ in hits])
            assert sections == [SectionHit(refs[r], s) for r, s in hits]
            found += len(pages) + len(sections)
    assert found and spied.count("pages") == spied.count("sections") == len(ids)


def test_a_window_holding_another_documents_rows_keeps_the_document_filter(dev_kb, spied):
    store, phrases = dev_kb, parse(QUESTIONS[2]).phrases
    ids = sorted(store.doc_ids.values())
    with store.snapshot():
        conn, expr = store._conn(), search.match(phrases)
        first, second = sorted(ids, key=lambda d: search.windows(conn, "pages", [d])[0])[:2]
        both = search.windows(conn, "pages", [first, second])
        assert len(both) == 1  # written one after the other: one window holding both
        scope = store.scope([first], ("approved",))
        stats = store._stats("pages", phrases, both)
        # the window of both documents, searched for the first: the second's rows match, so no result by the
        # FTS table alone (the caller runs the filtered statement)
        assert search.search_in(conn, "pages", expr, store.scope([second], ("approved",)), 200, both, stats)
        assert store._window_pages(expr, scope, 200, [first], both, stats) is None
        # a document out of scope: the filtered statement (no FTS-only statement), which finds nothing of it
        assert store.search_pages(phrases, scope, 200, within=[second]) == []
        assert store.search_sections(phrases, SECTION_WEIGHTS, scope, 200, [second]) == []
    assert spied == ["pages"]


def test_plain_tuples_from_either_library(tmp_path):
    """`driver.tuples`: rows as plain tuples from an APSW connection and from a `sqlite3` one (rows otherwise
    `sqlite3.Row`), the connection's own rows unchanged."""
    import sqlite3

    from jsonl_engine.store.sqlite import driver

    conns = [sqlite3.connect(tmp_path / "a.sqlite3")]
    conns[0].row_factory = sqlite3.Row
    if driver.APSW:
        conns.append(driver.connect(tmp_path / "b.sqlite3"))
    for conn in conns:
        conn.execute("CREATE TABLE t (a INTEGER, b TEXT)")
        conn.execute("INSERT INTO t VALUES (1, 'x'), (2, 'y')")
        rows = list(driver.tuples(conn, "SELECT a, b FROM t WHERE a >= ? ORDER BY a", (1,)))
        assert rows == [(1, "x"), (2, "y")] and all(type(r) is tuple for r in rows)
        assert conn.execute("SELECT a, b FROM t ORDER BY a").fetchone()["b"] == "x"
