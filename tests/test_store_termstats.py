"""Term statistics kept at ingest (SQLite: store/sqlite/terms.py, every one- and two-token phrase; PostgreSQL:
migration 8, every two-word phrase): the counts a query reads must be the ones counting the phrase on the index
gives (FTS5 MATCH; the postings' phrase matching), in every kind, after ingests, a replacement and a removal;
a rolled-back write leaves none; a KB made before them gets them when opened."""

from __future__ import annotations

import pytest

from jsonl_engine.errors import Cancelled
from jsonl_engine.ingest import outcome, parse_text, sync
from jsonl_engine.store import open_store
from jsonl_engine.store.sqlite import driver, terms
from tests.conftest import kb_integrity
from tests.support.sql import sql

KINDS = ("pages", "covers", "sections", "documents")
_A = ("# Fiscal 2018 results\n\nNet revenue was $1,577 million in fiscal 2018; second quarter revenue rose. "
      "Cash flows from operating activities: 1,577. Revenues and revenue, running runs.\n\n"
      "## Second quarter\n\nThe second quarter of fiscal 2019 (café, naïve) saw net revenue fall to 2,018.\n\n"
      "## Quarter results\n\nrevenue fell\n")
_B = ("# Other report\n\nNothing about revenue here, fiscal year 2018 only. Second, quarter. "
      "Operating activities and cash flows from operating activities.\n")
_C = "# Third\n\nresults revenue and net revenue; second quarter net revenue 1 577\n"
PHRASES = [("revenue",), ("revenues",), ("fiscal", "2018"), ("1", "577"), ("second", "quarter"), ("net", "revenue"),
           ("cash", "flows", "from", "operating", "activities"), ("operating", "activities"),
           ("results", "revenue"),
           ("quarter", "fiscal"),  # a section title's last word, then its ancestors' first: no match across columns
           ("quarter", "results"), ("fiscal", "2019", "cafe"), ("naive",), ("run",), ("absentword",),
           ("absentword", "revenue"), ("2018", "only"),
           ("net", "revenue", "fell"),  # each pair in some row, the phrase in none: counted
           ("revenue", "absentword", "net")]  # a pair in no row: 0 without counting


def _counted(store, kind: str, phrases) -> dict:
    """The phrases' counts made on the index, as the store made them before the statistics."""
    if getattr(store, "backend", "sqlite") == "postgresql":
        from jsonl_engine.store.postgres import search as pg

        tsqs = store._tsqueries(phrases)
        table = "pages" if kind == "documents" else kind
        with store.snapshot():
            src = store._source()
            out = {}
            for p in phrases:
                q = tsqs[p]
                found = src.read(table, q.lexemes, q.lexemes, None)
                if len(q.lexemes) == 1:
                    hits = found.get(q.lexemes[0], {})
                    out[p] = len(hits) if kind == "documents" else sum(h.n for h in hits.values())
                else:
                    out[p] = pg._phrase_count(q, found, kind == "documents") if q.lexemes else 0
            return out
    from jsonl_engine.store.sqlite import search

    conn = store._conn()
    spans = search.page_spans(conn)
    return {p: search.document_frequency(conn, p, lambda: spans) if kind == "documents" else search.frequency(conn, kind, p)
            for p in phrases}


def _reopened_keeps(kb_location, kept, expected, read) -> None:
    """Opened again (its migration runs), the KB keeps its statistics and reads `expected`, all recounted alike."""
    store = open_store(kb_location)
    try:
        assert _stats(store) == kept
        assert {kind: read(store, kind) for kind in KINDS} == expected
        _check(store)
    finally:
        store.close()


def _check(store) -> dict:
    counts = {}
    for kind in KINDS:
        read = store.frequencies(kind, PHRASES)
        assert read == _counted(store, kind, PHRASES), kind
        counts[kind] = read
    kb_integrity(store)  # the statistics equal their recomputation from every stored document
    return counts


def test_counts_read_from_the_statistics_equal_the_counted_ones(kb_location, tmp_path):
    store = open_store(kb_location)
    try:
        a = sync.ingest_text(store, _A, "a", "text/markdown").document_id
        sync.ingest_text(store, _B, "b", "text/markdown")
        first = _check(store)
        assert first["pages"][("fiscal", "2018")] == 1 and first["documents"][("second", "quarter")] == 2
        assert first["sections"][("quarter", "fiscal")] == 0 and first["sections"][("results", "revenue")] == 1
        assert first["pages"][("1", "577")] == 1
        path = tmp_path / "c.md"
        path.write_text(_C, encoding="utf-8")
        c = sync.ingest_paths(store, [str(path)])[0].document_id
        path.write_text(_C + "\nsecond quarter again\n", encoding="utf-8")
        replaced = sync.ingest_paths(store, [str(path)])[0]  # the new version replaces the old one
        assert replaced.document_id != c and [d.document_id for d in store.documents() if d.document_id == c] == []
        second = _check(store)
        assert second["documents"][("net", "revenue")] == 2 and second["documents"][("1", "577")] == 2
        store.remove(a)
        third = _check(store)
        assert third["documents"][("net", "revenue")] == 1 and third["pages"][("fiscal", "2018")] == 0
    finally:
        store.close()


def _stats(store) -> list:
    return sorted(map(tuple, sql(store, "SELECT * FROM term_stats WHERE pages <> 0 OR covers <> 0 OR sections <> 0")))


def test_a_failed_write_leaves_no_statistics(kb_location):
    store = open_store(kb_location)
    try:
        sync.ingest_text(store, _B, "b", "text/markdown")
        before = _stats(store)
        assert before
        parsed = parse_text(_A, "a", "text/markdown")
        with pytest.raises(Cancelled):  # rows and statistics written, then the ingest is cancelled before its commit
            outcome.write_parsed(store, parsed, document_id="feedfeedfeedfeed", sha256="f" * 64, path=None,
                                 status="approved", cancelled=lambda: True)
        assert _stats(store) == before
        with pytest.raises(RuntimeError), store.transaction() as tx:  # a removal rolled back
            tx._delete(store.documents()[0].document_id)
            raise RuntimeError("abandoned")
        assert _stats(store) == before
        _check(store)
    finally:
        store.close()


def test_a_kb_made_before_the_statistics_gets_them_when_opened(kb_location):
    store = open_store(kb_location)
    for text, title in ((_A, "a"), (_B, "b"), (_C, "c")):
        sync.ingest_text(store, text, title, "text/markdown")
    expected = {kind: store.frequencies(kind, PHRASES) for kind in KINDS}
    kept = _stats(store)
    postgres = getattr(store, "backend", "sqlite") == "postgresql"
    if postgres:  # back to version 7, as main left it
        from tests.test_store_postgres import psycopg_connect

        store.close()
        with psycopg_connect(kb_location) as conn:
            conn.execute("DROP TABLE term_stats; DROP FUNCTION add_term_stats(TEXT, INTEGER); "
                         "DROP FUNCTION term_pairs(TEXT); DROP TABLE term_phrases; DELETE FROM schema_migrations WHERE version >= 8")
    else:  # back to version 6
        from tests.support.sql import sqlite_connect

        path = store.path
        store.close()
        conn = sqlite_connect(path)
        conn.execute("DROP TABLE term_stats")
        conn.execute("DROP TABLE term_phrases")
        conn.execute("DROP TABLE section_refs")
        conn.execute("DELETE FROM schema_migrations WHERE version >= 7")
        conn.close()
    _reopened_keeps(kb_location, kept, expected, lambda store, kind: store.frequencies(kind, PHRASES))


TEXTS = ["Fiscal years 2018, 1,577 running cafés", "naïve ÅNGSTRÖM über-résumé 10-K FY2018 Q2'19", "",
         "  ", "a\u00a0b\tc\nd", "Straße ﬁnancial ½ ２０１８ 東京 Ελλάδα", "x" * 300 + " long"]


def test_the_sqlite3_tokenizer_gives_the_tokens_apsw_gives(monkeypatch):
    """Without APSW (`sqlite3`), the tokens come from a private in-memory FTS5 table: the same as APSW's
    tokenizer call, both FTS5's porter over unicode61 (a :memory: database opens no KB file)."""
    if not driver.APSW:
        pytest.skip("APSW is not installed")
    with_apsw = terms.tokenize(TEXTS)
    monkeypatch.setattr(driver, "APSW", False)
    assert terms.tokenize(TEXTS) == with_apsw
    assert with_apsw[0] == ["fiscal", "year", "2018", "1", "577", "run", "cafe"]


# The search vocabulary's long phrases (jsonl_engine/vocabulary.py), written as filings print them: punctuation
# between the words, a plural the stemmer folds, a phrase split across a section's title and text (no match), a
# phrase in a cover page.
_D = ("# Cash flow statement\n\nPurchases of property, plant and equipment were $5 million; cost of sales rose. "
      "Net cash provided by operating activities: 7.\n\n## Cost of\n\nsales fell. Cost of sales, again.\n")
_E = "# Other\n\nAdditions to property plant and equipment; purchases of property and equipment (cost of goods sold)\n"
LONG = [("purchases", "of", "property", "plant", "and", "equipment"), ("cost", "of", "sales"),
        ("net", "cash", "provided", "by", "operating", "activities"), ("cost", "of", "goods", "sold"),
        ("additions", "to", "property", "plant", "and", "equipment"),
        ("purchases", "of", "property", "and", "equipment"), ("depreciation", "and", "amortization")]


def _read_without_counting(store, monkeypatch, kind: str, phrases) -> dict:
    """store.frequencies with every count on the index failing: what it returns was read from the statistics."""
    from jsonl_engine.store.sqlite import search

    def refuse(*args):
        raise AssertionError(f"counted on the index: {args[1:]}")

    with monkeypatch.context() as m:
        m.setattr(search, "frequency", refuse)
        m.setattr(search, "document_frequency", refuse)
        store._memo.clear()
        return store.frequencies(kind, phrases)


def test_the_vocabularys_long_phrases_are_read_from_the_statistics_as_counted(tmp_path, monkeypatch):
    kb_location = tmp_path / "kb"  # the SQLite store's kept phrases
    from jsonl_engine import vocabulary

    assert all(" ".join(p) in vocabulary.PHRASES for p in LONG)
    store = open_store(kb_location)
    try:
        assert {r[0] for r in sql(store, "SELECT phrase FROM term_phrases")} >= {
            " ".join(t) for t in terms.phrase_tokens(LONG).values()}
        d = sync.ingest_text(store, _D, "d", "text/markdown").document_id
        sync.ingest_text(store, _E, "e", "text/markdown")
        sync.ingest_text(store, _A, "a", "text/markdown")
        for when in ("ingested", "removed"):
            for kind in KINDS:
                read = _read_without_counting(store, monkeypatch, kind, LONG)
                assert read == _counted(store, kind, LONG), (when, kind)
            kb_integrity(store)
            if when == "ingested":
                pages = _read_without_counting(store, monkeypatch, "pages", LONG)
                sections = _read_without_counting(store, monkeypatch, "sections", LONG)
                assert pages[LONG[0]] == 1 and pages[LONG[5]] == 1 and pages[LONG[1]] == 1
                assert sections[LONG[1]] == 2  # not the one split across a title and its text
                store.remove(d)
        assert _read_without_counting(store, monkeypatch, "pages", LONG)[LONG[0]] == 0
        assert not sql(store, "SELECT term FROM term_stats WHERE term = 'purchas of properti plant and equip'")
    finally:
        store.close()


def test_a_phrase_added_to_the_vocabulary_is_counted_when_the_kb_is_opened(tmp_path, monkeypatch):
    kb_location = tmp_path / "kb"  # the SQLite store's kept phrases
    from jsonl_engine import vocabulary

    extra = ("cash", "flow", "statement")  # in no vocabulary: counted on the index until listed
    store = open_store(kb_location)
    try:
        sync.ingest_text(store, _D, "d", "text/markdown")
        before = {kind: store.frequencies(kind, [extra]) for kind in KINDS}
        assert before["pages"] == {extra: 1} and before["documents"] == {extra: 1}
        with pytest.raises(AssertionError, match="counted on the index"):
            _read_without_counting(store, monkeypatch, "pages", [extra])
    finally:
        store.close()
    monkeypatch.setattr(vocabulary, "PHRASES", (*vocabulary.PHRASES, " ".join(extra)))
    store = open_store(kb_location)  # the writer lists it, counting it once
    try:
        assert sql(store, "SELECT phrase FROM term_phrases WHERE phrase = 'cash flow statement'")
        for kind in KINDS:
            assert _read_without_counting(store, monkeypatch, kind, [extra]) == before[kind]
        sync.ingest_text(store, _D.replace("# Cash", "# Cash flow statement and cash"), "d2", "text/markdown")
        for kind in KINDS:  # added with the new rows
            assert _read_without_counting(store, monkeypatch, kind, [extra]) == _counted(store, kind, [extra])
        assert _read_without_counting(store, monkeypatch, "documents", [extra]) == {extra: 2}
        kb_integrity(store)
    finally:
        store.close()


def test_a_kb_made_before_the_kept_phrases_gets_them_when_opened(tmp_path, monkeypatch):
    kb_location = tmp_path / "kb"  # the SQLite store's kept phrases
    from tests.support.sql import sqlite_connect

    store = open_store(kb_location)
    for text, title in ((_D, "d"), (_E, "e")):
        sync.ingest_text(store, text, title, "text/markdown")
    expected = {kind: _counted(store, kind, LONG) for kind in KINDS}
    kept = _stats(store)
    path = store.path
    store.close()
    conn = sqlite_connect(path)  # back to version 7: the phrases' counts and list gone
    listed = [r[0] for r in conn.execute("SELECT phrase FROM term_phrases")]
    conn.executemany("DELETE FROM term_stats WHERE term = ?", [(k,) for k in listed])
    conn.execute("DROP TABLE term_phrases")
    conn.execute("DROP TABLE section_refs")
    conn.execute("DELETE FROM schema_migrations WHERE version >= 8")
    conn.close()
    _reopened_keeps(kb_location, kept, expected,
                    lambda store, kind: _read_without_counting(store, monkeypatch, kind, LONG))


@pytest.mark.parametrize("lookups", [0, 2, 1000])
def test_a_phrases_documents_are_counted_alike_looked_up_or_from_every_window(tmp_path, monkeypatch, lookups):
    """search.document_frequency looks up the window of the first SPAN_LOOKUPS documents holding a phrase, then
    reads every document's window: the count is the documents holding it either way."""
    from jsonl_engine.store.sqlite import search

    monkeypatch.setattr(search, "SPAN_LOOKUPS", lookups)
    store = open_store(tmp_path / "kb")
    try:
        for i, text in enumerate([_A, _B, _C, _A + "\nfiscal 2018 only", _B + "\nnet revenue", _C + "\n2018 only"]):
            sync.ingest_text(store, text, f"t{i}", "text/markdown")
        conn = store._conn()
        spans = search.page_spans(conn)
        read = []
        for p in PHRASES:
            want = sql(store, "SELECT COUNT(DISTINCT p.document_id) FROM pages_fts JOIN pages p ON p.rowid = "
                              "pages_fts.rowid WHERE pages_fts MATCH ?", (search.quote(p),))[0][0]
            assert search.document_frequency(conn, p, lambda: read.append(1) or spans) == want, p
        assert (not read) == (lookups >= 6)  # the windows read only past the lookups
    finally:
        store.close()
