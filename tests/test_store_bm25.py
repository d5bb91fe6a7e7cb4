"""With APSW, the SQLite store scores with its own FTS5 function from cached statistics (store/sqlite/bm25.py):
every search must give what FTS5's bm25() gives, the same rows in the same order with the same float scores."""

from __future__ import annotations

import math

import pytest

from jsonl_engine.ingest.sync import ingest_text
from jsonl_engine.retrieval.query import parse
from jsonl_engine.retrieval.weights import SECTION_WEIGHTS
from jsonl_engine.store import SectionWeights, open_store
from jsonl_engine.store.sqlite import bm25, driver, search
from jsonl_engine.store.sqlite.store import COST_RATIO, MAX_SHARE

needs_apsw = pytest.mark.skipif(not driver.APSW, reason="the store does not use APSW (not installed: pip install -e '.[fast]', or JSONL_ENGINE_SQLITE=stdlib)")

QUESTIONS = (
    "What is the FY2022 capital expenditure amount (in USD millions) for 3M?",
    "Does AMCOR have a reasonably healthy liquidity profile based on its quick ratio for FY2023?",
    "What was PepsiCo's net revenue and operating profit by division in 2022?",
    "Amcor completed the acquisition of a flexible packaging plant in the Czech Republic",
    "dividends per share cash flow from operations free cash flow",
)
ODD_WEIGHTS = SectionWeights(title=4.1, ancestors=1.3, text=0.7)  # not short dyadic: FTS5's per-hit sum


def both(store, read):
    """`read()` scored by the cached statistics (in every statement, however costly), then by bm25(). Fails unless
    every statement of the first read was scored by the function (else the comparison would prove nothing)."""
    assert store.cached_bm25
    scored: list[bool] = []
    stats = store._stats

    def recording(*args):
        out = stats(*args)
        scored.append(out is not None)
        return out

    try:
        store.cost_ratio = store.max_share = math.inf
        store._stats = recording
        cached = read()
        del store._stats
        store.cached_bm25 = False
        plain = read()
    finally:
        store.__dict__.pop("_stats", None)
        store.cached_bm25, store.cost_ratio, store.max_share = True, COST_RATIO, MAX_SHARE
    assert scored and all(scored)
    return cached, plain


def same(store, read, nonempty: bool = True):
    cached, plain = both(store, read)
    assert cached == plain
    if nonempty:
        assert plain
    return plain


@needs_apsw
@pytest.mark.parametrize("question", QUESTIONS)
def test_cached_bm25_equals_fts5_bm25_on_the_dev_kb(dev_kb, question):
    store = dev_kb
    phrases = parse(question).phrases
    ids = sorted(store.doc_ids.values())
    everything = store.scope(None, ("approved",))
    two = store.scope(ids[:2], ("approved",))
    assert everything.complete and not two.complete
    with store.snapshot():
        # pages: corpus-wide, one document, several documents (windows), a scope that is not the whole KB
        same(store, lambda: store.search_pages(phrases, everything, 200))
        same(store, lambda: store.search_pages(phrases, two, 200))
        for doc in ids:
            same(store, lambda doc=doc: store.search_pages(phrases, everything, 200, within=[doc]))
        same(store, lambda: store.search_pages(phrases, everything, 50, within=ids))
        same(store, lambda: store.search_pages(phrases, two, 50, within=ids[:2]))
        # sections, column-weighted
        for weights in (SECTION_WEIGHTS, ODD_WEIGHTS):
            for doc in ids:
                same(store, lambda doc=doc, w=weights: store.search_sections(phrases, w, everything, 200, [doc]))
            same(store, lambda w=weights: store.search_sections(phrases, w, everything, 100, ids))
            same(store, lambda w=weights: store.search_sections(phrases, w, two, 100, ids))
        # cover pages (a contentless table)
        same(store, lambda: store.search_covers(phrases, everything), nonempty=False)
        same(store, lambda: store.search_covers(phrases, two), nonempty=False)


@needs_apsw
def test_cached_bm25_equals_fts5_bm25_in_every_statement_form(dev_kb):
    """The statements' forms the store's verbs may not all reach on four documents: corpus-wide sections, one
    statement over several separate windows of pages and of sections."""
    store = dev_kb
    phrases = parse(QUESTIONS[0]).phrases + parse(QUESTIONS[2]).phrases
    ids = sorted(store.doc_ids.values())
    everything = store.scope(None, ("approved",))
    two = store.scope(ids[:2], ("approved",))
    with store.snapshot():
        conn, expr = store._conn(), search.match(phrases)
        pwins = [w for d in ids for w in search.windows(conn, "pages", [d])]
        swins = [w for d in ids for w in search.windows(conn, "sections", [d])]
        assert len(pwins) == len(swins) == len(ids)

        def stats(kind):
            return store._stats(kind, phrases) if store.cached_bm25 else None

        for scope in (everything, two):
            same(store, lambda s=scope: search.search(conn, "pages", expr, s, 200, stats=stats("pages")))
            same(store, lambda s=scope: sorted(search.search_in(conn, "pages", expr, s, 30, pwins, stats("pages")),
                                               key=lambda r: (-r[2], r[0], r[1])))  # the store sorts them so
            for weights in (SECTION_WEIGHTS, ODD_WEIGHTS):
                same(store, lambda s=scope, w=weights: search.search(conn, "sections", expr, s, 200,
                                                                     stats=stats("sections"), weights=w))
                same(store, lambda s=scope, w=weights: search.search_in(conn, "sections", expr, s, 30, swins,
                                                                        stats("sections"), w))
            same(store, lambda s=scope: search.search_covers(conn, expr, s, stats("covers")))


@needs_apsw
def test_the_statistics_follow_the_kb_generation(tmp_path):
    """Counts and totals are cached per KB generation: after a document is added or removed, both scorings still
    agree (a stale row count or phrase count would change every score)."""
    store = open_store(tmp_path / "kb")
    try:
        texts = [f"# Widgets {i}\n\nThe widget company sold {i} widgets and {i % 3} gadgets in fiscal 2023.\n\n"
                 f"## Gadgets\n\nGadget revenue rose; widget margins fell {'again ' * i}.\n" for i in range(1, 6)]
        ids = [ingest_text(store, text, f"company {i}", "text/markdown").document_id for i, text in enumerate(texts)]
        phrases = [("widget",), ("gadget", "revenue"), ("fiscal", "2023"), ("widget",), ("nothing",)]
        everything = store.scope(None, ("approved",))
        for step in range(3):
            with store.snapshot():
                pages = same(store, lambda s=everything: store.search_pages(phrases, s, 10))
                same(store, lambda s=everything: store.search_sections(phrases, SECTION_WEIGHTS, s, 10, ids))
                same(store, lambda s=everything: store.search_covers(phrases, s))
            assert all(math.isfinite(p.score) and p.score > 0 for p in pages)
            if step == 0:
                ingest_text(store, "# More\n\nwidget widget widget gadget revenue\n", "more", "text/markdown")
            else:
                store.remove(ids.pop())
            everything = store.scope(None, ("approved",))
    finally:
        store.close()


@needs_apsw
def test_fts5_totals_are_read_from_the_averages_record(dev_kb):
    conn = dev_kb._conn()
    rows, tokens = search.totals(conn, "pages")
    assert rows == conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0]
    rows, tokens = search.totals(conn, "sections")
    assert rows == conn.execute("SELECT COUNT(*) FROM sections").fetchone()[0] and tokens > rows
    assert bm25.totals(None) == (0, 0)
    assert bm25.varint(bytes([0x81, 0x00]), 0) == (128, 2)
    assert bm25.varint(bytes([0xFF] * 8 + [0x01]), 0) == ((1 << 64) - 255, 9)


def test_without_the_statistics_the_statements_keep_bm25():
    """`cached_bm25` False (and every store without APSW): the score column is FTS5's bm25() as before."""
    assert search._score("pages_fts", None) == ("-bm25(pages_fts)", [])
    assert search._score("sections_fts", None, SECTION_WEIGHTS) == ("-bm25(sections_fts, 4.0, 1.5, 1.0)", [])


@needs_apsw
def test_the_function_scores_only_statements_over_few_rows(dev_kb):
    """Corpus-wide statements keep bm25() (the function costs Python per matching row); a window of a few rows
    holding common phrases takes the function."""
    store = dev_kb
    phrases = parse(QUESTIONS[2]).phrases
    with store.snapshot():
        rows = search.totals(store._conn(), "pages")[0]
        assert store._stats("pages", phrases) is None
        assert store._stats("pages", phrases, [(1, rows)]) is None
        assert store._stats("pages", phrases, [(1, 3)]) is not None
        store.cached_bm25 = False
        try:
            assert store._stats("pages", phrases, [(1, 3)]) is None
        finally:
            store.cached_bm25 = True


@needs_apsw
def test_a_section_search_reuses_the_rows_of_a_window_searched_before(dev_kb, monkeypatch):
    """Across the whole library, a window's section rows are kept: a search of documents sharing one with the
    search before it runs no statement for that window, and returns what a search without kept rows returns."""
    store, phrases = dev_kb, parse(QUESTIONS[0]).phrases
    ids = sorted(store.doc_ids.values())
    everything = store.scope(None, ("approved",))
    monkeypatch.setattr(store, "max_share", math.inf)
    monkeypatch.setattr(store, "cost_ratio", math.inf)
    ran: list[tuple] = []
    original = search.search
    monkeypatch.setattr(search, "search", lambda *a, **k: ran.append(a[5]) or original(*a, **k))
    store._window_hits.clear()
    with store.snapshot():
        # in the order written: documents written one after the other are searched as one window
        a, _, b, c = sorted(ids, key=lambda d: search.windows(store._conn(), "sections", [d])[0])
        store.search_sections(phrases, SECTION_WEIGHTS, everything, 100, [a, b])
        assert len(ran) == 2
        kept = store.search_sections(phrases, SECTION_WEIGHTS, everything, 100, [a, c])
        assert len(ran) == 3 and ran[2] not in ran[:2]  # the first document's window not searched again
        store._window_hits.clear()
        assert kept == store.search_sections(phrases, SECTION_WEIGHTS, everything, 100, [a, c]) != []
        assert len(ran) == 5
