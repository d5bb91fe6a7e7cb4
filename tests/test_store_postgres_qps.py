"""What a PostgreSQL daemon spends per query: the statements a reader prepared survive its snapshots' ends, the
BM25 scores computed with whole-array operations are the loop's to the bit, and the postings of a few documents
are read from the server once per KB generation."""

from __future__ import annotations

import time

import psycopg
import pytest

from jsonl_engine.ingest import sync
from jsonl_engine.retrieval.stages.parse import parse
from jsonl_engine.retrieval.weights import SECTION_WEIGHTS
from jsonl_engine.store import open_store
from jsonl_engine.store.postgres import db, search


def _prepared(conn) -> int:
    """How many statements the server holds prepared for this connection (its session's)."""
    return conn.execute("SELECT COUNT(*) FROM pg_prepared_statements", prepare=False).fetchone()[0]


def test_a_readers_prepared_statements_outlive_its_snapshots(pg_dev_kb) -> None:
    """A statement run often enough on a reader is prepared (psycopg's threshold), and stays prepared when the
    snapshot ends, whether its end goes with the next BEGIN or the janitor sends it: no statement is planned
    again per query (psycopg drops them all at a ROLLBACK's result)."""
    store = open_store(pg_dev_kb.url)
    doc = sorted(pg_dev_kb.doc_ids.values())[0]
    try:
        with store.snapshot():
            conn = store._conn()
            for _ in range(8):
                store.page_range(doc, 1, 2)
            assert _prepared(conn) >= 1
        with store.snapshot():  # the last snapshot's end sent with this BEGIN
            assert store._conn() is conn
            assert _prepared(conn) >= 1
            store.page_range(doc, 1, 2)
        for _ in range(100):  # left idle: the janitor ends it
            if id(conn) not in store._db._open and conn.info.transaction_status == db.IDLE:
                break
            time.sleep(0.05)
        assert conn.info.transaction_status == db.IDLE
        with store.snapshot():
            assert store._conn() is conn
            assert _prepared(conn) >= 1
    finally:
        store.close()


def test_a_snapshot_ended_with_rollback_would_lose_them(pg_server) -> None:
    """The driver behaviour the COMMIT avoids (if psycopg changes it, END_SNAPSHOT may go back to ROLLBACK)."""
    with psycopg.connect(pg_server.url(), autocommit=True) as conn:
        for end in ("ROLLBACK", db.END_SNAPSHOT):
            conn.execute(db.BEGIN_SNAPSHOT)
            for i in range(8):
                conn.execute("SELECT %s::int + 1", (i,)).fetchone()
            assert _prepared(conn) == 1
            conn.execute(f"{end}; {db.BEGIN_SNAPSHOT}")
            assert _prepared(conn) == (0 if end == "ROLLBACK" else 1)
            conn.execute("ROLLBACK")
            conn.execute("DEALLOCATE ALL")
            conn._prepared.clear()


def test_arrays_sent_as_text_arrive_as_the_values(pg_server) -> None:
    """The array texts the store sends instead of lists (rowids, page numbers, ids) are read by the server as the
    very values, whatever the characters of a string."""
    from jsonl_engine.store.postgres.store import PostgresDialect, int_array, text_array

    texts = ["a", 'b "c"', "back\\slash", "{brace}", "com,ma", " space ", "", "NULL", "o'reilly", "\u00fcn\u00ef", '\\"',
             "tab\tnew\nline", '"', "\\"]
    ints = [0, 1, -2, 2 ** 40]
    with psycopg.connect(pg_server.new_database("arrays"), autocommit=True) as conn:
        assert conn.execute("SELECT %s::text[], %s::bigint[], %s::text[]",
                            (text_array(texts), int_array(ints), text_array([]))).fetchone() == (texts, ints, [])
        dialect = PostgresDialect("", None)
        for values, kind in ((texts, "text"), (ints, "bigint"), ([True, False], "bool")):
            where, args = dialect.any_of("v", values)
            found = conn.execute(f"SELECT array_agg(v ORDER BY i) FROM unnest(%s::{kind}[]) WITH ORDINALITY AS t(v, i) WHERE "
                                 f"{where.replace('?', '%s')}", [values, *args]).fetchone()[0]
            assert found == values


def test_exact_sums_tells_when_the_order_of_additions_cannot_matter() -> None:
    assert search.exact_sums([1.0, 1.0, 1.5, 4.0], 1000)
    assert not search.exact_sums([1.0, 0.3], 2)  # 0.3 is a multiple of 2^-54 only
    assert not search.exact_sums([1.0, 2.0 ** 50], 16)  # sums past 2^53 round
    assert not search.exact_sums([1.0, float("inf")], 1)


def test_array_scores_are_the_loops_to_the_bit(pg_dev_kb, dev_questions) -> None:
    """For the dev questions' phrases: pages over the library, sections of some documents with the section weights,
    cover pages, every row or the top ones: bm25_top gives the rows, scores (==, not close), documents and page
    numbers, in the order, of best(bm25(...)); with weights whose sums could depend on their order it declines.
    One document's pages and sections too (their postings' arrays kept on each posting), each search twice: the
    second one from what the first kept."""
    store = pg_dev_kb
    compared = 0
    labels = (1.0, SECTION_WEIGHTS.text, SECTION_WEIGHTS.ancestors, SECTION_WEIGHTS.title)
    with store.snapshot():
        scope = store.scope(None, ["approved"])
        docs = sorted(scope.documents)
        for i, q in enumerate(dev_questions[:40]):
            phrases = list(parse(q["question"], scope, limit=10, unit="section").query.phrases)
            for kind, weights, within in (("pages", search.PLAIN, None), ("sections", labels, docs[i % 3:i % 3 + 2]),
                                          ("pages", search.PLAIN, docs[i % 7:i % 7 + 1]),
                                          ("sections", labels, docs[i % 5:i % 5 + 1]), ("covers", search.PLAIN, None)):
                tsqs, idfs, avgdl = store._bm25(kind, phrases)
                for _ in range(2):
                    found = search.read(store._source(), kind, tsqs, within, weights != search.PLAIN)
                    for limit in (None, 10):
                        scores, where = search.bm25(tsqs, idfs, avgdl, found, weights)
                        loop = [(r, s, where[r][0].document_id, where[r][0].numbers[where[r][1]])
                                for r, s in search.best(scores, limit)]
                        assert search.bm25_top(tsqs, idfs, avgdl, found, limit, weights) == loop
                        compared += bool(loop)
            if any(len(t.lexemes) > 1 for t in tsqs):
                assert search.bm25_top(tsqs, idfs, avgdl, found, None, (1.0, 0.7, 0.3, 4.0)) is None
    assert compared > 400
    # arrays are kept only on postings the cache holds by themselves (it counts them: _kept_bytes), and they are
    kept = [posting for _, entry, _ in store._postings._entries.values()
            for posting in (entry.values() if isinstance(entry, search.Postings) else [entry]) if posting is not None]
    assert any(posting.alone and "_table" in posting.__dict__ for posting in kept)
    assert all(posting.alone for posting in kept if {"_table", "_global"} & set(posting.__dict__))


def _postings_statements(monkeypatch) -> list[tuple]:
    seen: list[tuple] = []
    execute = psycopg.Cursor.execute

    def counted(self, query, params=None, **kwargs):
        if "FROM postings WHERE kind" in str(query) and str(query).startswith("SELECT true, lexeme"):
            seen.append(tuple(params))
        return execute(self, query, params, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", counted)
    return seen


def test_a_few_documents_postings_are_read_once_per_generation(pg_server, monkeypatch) -> None:
    """A search of some documents keeps each one's postings (or that it holds none of a word): the same search
    again reads nothing from the server, one of more documents reads only the others, and the hits are those of
    a store that keeps nothing (outside a snapshot); a document added makes a new generation, read again."""
    url = pg_server.new_database()
    store = open_store(url)
    try:
        ids = [sync.ingest_text(store, f"# Part {i}\n\nRevenue and cash flows {'grew' if i % 2 else 'fell'} in "
                                f"year {2020 + i}. Operating activities.\n", f"d{i}", "text/markdown").document_id
               for i in range(4)]
        phrases = [("revenue",), ("cash", "flows"), ("grew",), ("operating", "activities")]
        weights = SECTION_WEIGHTS
        scope = store.scope(None, ["approved"])
        expected = {n: store.search_sections(phrases, weights, scope, 10, ids[:n]) for n in (2, 3)}
        seen = _postings_statements(monkeypatch)
        with store.snapshot():
            assert store.search_sections(phrases, weights, scope, 10, ids[:2]) == expected[2]
            assert len(seen) == 1
            assert store.search_sections(phrases, weights, scope, 10, ids[:2]) == expected[2]
            assert len(seen) == 1
            assert store.search_sections(phrases, weights, scope, 10, ids[:3]) == expected[3]
            assert len(seen) == 2 and seen[1][-1] == [ids[2]]  # the third document only
        with store.snapshot():
            assert store.search_sections(phrases, weights, scope, 10, ids[:3]) == expected[3]
            assert len(seen) == 2
        monkeypatch.undo()
        more = sync.ingest_text(store, "# Part 9\n\nRevenue grew.\n", "d9", "text/markdown").document_id
        seen = _postings_statements(monkeypatch)
        with store.snapshot():
            scope = store.scope(None, ["approved"])
            hits = store.search_sections(phrases, weights, scope, 10, [*ids[:2], more])
            assert len(seen) == 1 and sorted(seen[0][-1]) == sorted([*ids[:2], more])
        monkeypatch.undo()
        assert hits == store.search_sections(phrases, weights, scope, 10, [*ids[:2], more])
        assert any(h.section.document_id == more for h in hits)
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["pages", "sections"])
def test_kept_postings_of_some_documents_are_those_read(pg_dev_kb, kind) -> None:
    """The postings kept per document, with positions or without, are what a read of those documents gives."""
    store = open_store(pg_dev_kb.url)
    docs = sorted(pg_dev_kb.doc_ids.values())
    lexemes = ["revenu", "net", "incom", "cash", "zzunseen"]
    try:
        with store.snapshot():
            src = store._source()
            first = src.read(kind, lexemes, lexemes[:2], docs[:2])
            again = src.read(kind, lexemes, lexemes[:2], docs[1:3])
            placed = src.read(kind, lexemes, lexemes, docs[:1])  # positions not kept for the others: read
        bare = search.Source(store._conn(), None, store._generation())
        for got, placed_lex, within in ((first, lexemes[:2], docs[:2]), (again, lexemes[:2], docs[1:3]),
                                        (placed, lexemes, docs[:1])):
            want = bare.read(kind, lexemes, placed_lex, within)
            assert {lex: {d: p.data for d, p in got[lex].items()} for lex in lexemes} == \
                {lex: {d: p.data for d, p in want[lex].items()} for lex in lexemes}
        assert first["revenu"] and not first["zzunseen"]
    finally:
        store.close()
