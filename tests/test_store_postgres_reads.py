"""The PostgreSQL read path under several daemons: the sections on a list of pages in one statement (the same
rows as the lookup per page and as SQLite), the library's scope and cards kept per state of the KB (what a
snapshot sees) and read again after another daemon's commit, and reader connections pooled by how many threads
read at once."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from jsonl_engine.errors import NotFound
from jsonl_engine.ingest import sync
from jsonl_engine.store import open_store
from jsonl_engine.store.postgres import search, text
from jsonl_engine.store.postgres.text import tokens
from jsonl_engine.store.repository import Repository
from jsonl_engine.store.types import COVER_PAGES
from tests.support.sql import sql


def test_sections_on_pages_in_one_statement_are_the_lookups_per_page(dev_kb, pg_dev_kb) -> None:
    """More pages than one UNION chunk holds (40), across documents, repeated, out of order, past a document's
    end: the single LATERAL statement gives the rows the UNION ALL per page gives, and the same sections as
    SQLite, in the same order."""
    pages = [(doc, n) for doc in sorted(pg_dev_kb.doc_ids.values())[:3] for n in (1, 2, 5, 9, 30, 31, 32, 60, 9, 12, 13, 14, 40, 41)]
    pages += [(pages[0][0], 100000), *pages[:5]]
    assert len(pages) > 40
    with pg_dev_kb.snapshot():
        for back in (0, 3):
            sql = pg_dev_kb._sql()
            one = list(pg_dev_kb._page_sections(sql, pages, back))
            union = list(Repository._page_sections(pg_dev_kb, sql, pages, back))
            assert [tuple(r) for r in one] == [tuple(r) for r in union]
            assert len(one) > len(pages)  # sections overlap pages: several rows for most of them
            assert pg_dev_kb.sections_on_pages(pages, back) == dev_kb.sections_on_pages(pages, back)
        assert list(pg_dev_kb._page_sections(pg_dev_kb._sql(), [], 3)) == []


def test_the_library_is_read_once_per_state_of_the_kb(pg_server) -> None:
    """Two stores on one database (two daemons): inside snapshots that see the same state, the second keeps its
    scope and cards (the same objects, no statement); the first's commit (a status, a card) is seen at the second's
    next snapshot. Outside a snapshot every call reads."""
    url = pg_server.new_database()
    writer, reader = open_store(url), open_store(url)
    try:
        ids = [sync.ingest_text(writer, f"# Doc {i}\n\nSome words {i}.\n", f"d{i}", "text/markdown").document_id
               for i in range(3)]
        with reader.snapshot():
            scope, cards = reader.scope(None, ["approved"]), reader.cards()
        with reader.snapshot():
            assert reader.scope(None, ["approved"]) is scope and reader.cards() is cards
        assert sorted(scope.documents) == sorted(ids) and scope.complete

        writer.update_document(ids[0], status="archived")
        with reader.snapshot():
            after = reader.scope(None, ["approved"])
            assert after is not scope and sorted(after.documents) == sorted(ids[1:]) and not after.complete
            assert reader.cards() is not cards  # any commit: read again
        assert reader.scope(None, ["approved"]) is not reader.scope(None, ["approved"])  # no snapshot: no version
    finally:
        writer.close()
        reader.close()


def test_readers_are_pooled_by_the_threads_reading_at_once(pg_server) -> None:
    """Six threads in snapshots at once hold six readers; the next round (and a smaller one) reuses them: the
    server sees no new connection, and each reader is back in the pool when its snapshot ends."""
    url = pg_server.new_database()
    store = open_store(url)
    sync.ingest_text(store, "# Doc\n\nWords.\n", "d", "text/markdown")

    def backends() -> set[int]:
        with psycopg.connect(url, autocommit=True) as conn:
            return {r[0] for r in conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                                               " AND application_name = 'jsonl-engine'")}

    def round_of(threads: int) -> None:
        inside = threading.Barrier(threads)
        errors: list[BaseException] = []

        def read() -> None:
            try:
                with store.snapshot():
                    assert store.scope(None, ["approved"]).documents
                    inside.wait(timeout=30)  # every thread holds its reader at once
            except BaseException as exc:  # noqa: BLE001 (reported below)
                errors.append(exc)

        running = [threading.Thread(target=read) for _ in range(threads)]
        for t in running:
            t.start()
        for t in running:
            t.join(timeout=60)
        assert not errors, errors

    try:
        before = backends()
        round_of(6)
        first = backends()
        assert len(first - before) == 6  # a reader per thread reading at once, apart from the writers
        round_of(6)
        round_of(2)
        assert backends() == first  # reused, none opened again
        for _ in range(100):  # the janitor ends the idle readers' transactions (out of the pool meanwhile)
            if store._db._janitor is None:
                break
            time.sleep(0.05)
        assert len(store._db._readers) == 6  # every one given back when its snapshot ended
    finally:
        store.close()


def _statements(monkeypatch, args: list | None = None) -> list[str]:
    """The statements every psycopg cursor executes from now on (their text; their parameters into `args`)."""
    seen: list[str] = []
    execute = psycopg.Cursor.execute

    def counted(self, query, params=None, **kwargs):
        seen.append(str(query))
        if args is not None:
            args.append(params)
        return execute(self, query, params, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", counted)
    return seen


def test_a_scoped_query_reads_no_document_row_in_a_state_already_read(pg_server, monkeypatch) -> None:
    """Inside a snapshot whose state the store has read, a scope or the cards of some documents come from the
    library's rows kept for that state (no statement), equal to what reading them outside a snapshot gives; an
    unknown id is still NotFound; another daemon's commit is seen at the next snapshot."""
    url = pg_server.new_database()
    writer, reader = open_store(url), open_store(url)
    try:
        ids = [sync.ingest_text(writer, f"# Doc {i}\n\nSome words {i}.\n", f"d{i}", "text/markdown").document_id
               for i in range(3)]
        writer.update_document(ids[2], status="archived")
        wanted = [ids[0], ids[2]]
        fresh_scope = reader.scope(wanted, ["approved"])  # no snapshot: read from the rows
        fresh_cards = reader.cards(wanted)
        assert sorted(fresh_scope.documents) == [ids[0]] and not fresh_scope.complete
        with reader.snapshot():
            reader.scope(None, ["approved"])
            reader.cards()
            seen = _statements(monkeypatch)
            assert reader.scope(wanted, ["approved"]) == fresh_scope
            assert reader.scope([ids[0], ids[1]], ["approved", "archived"]).complete is False
            assert reader.cards(wanted) == fresh_cards and set(fresh_cards) == set(wanted)
            with pytest.raises(NotFound):
                reader.scope([ids[0], "no-such-document"], ["approved"])
            assert seen == []
        monkeypatch.undo()
        writer.update_document(ids[2], status="approved")
        with reader.snapshot():
            assert sorted(reader.scope(wanted, ["approved"]).documents) == sorted(wanted)
    finally:
        writer.close()
        reader.close()


def test_a_snapshot_counts_the_documents_again_only_after_a_commit(pg_server) -> None:
    """The KB generation read with a snapshot's BEGIN (the documents' count and newest sequence number) is not
    counted again while no transaction has committed since the last snapshot (the same version: that snapshot's
    generation, not the gated statement's empty count), and is after another daemon adds or removes a document."""
    url = pg_server.new_database()
    writer, reader = open_store(url), open_store(url)
    try:
        ids = [sync.ingest_text(writer, f"# Doc {i}\n\nSome words {i}.\n", f"d{i}", "text/markdown").document_id
               for i in range(3)]
        seen: list[tuple[str, tuple]] = []
        for _ in range(6):
            with reader.snapshot():
                seen.append((reader._db.version(), reader._generation()))
        assert all(gen[0] == 3 and gen[1] > 0 for _, gen in seen)
        assert any(a[0] == b[0] for a, b in zip(seen, seen[1:], strict=False))  # kept, not counted
        for change, count in ((lambda: writer.remove(ids[0]), 2),
                              (lambda: sync.ingest_text(writer, "# New\n\nMore.\n", "n", "text/markdown"), 3)):
            before = seen[-1][1]
            change()
            with reader.snapshot():
                seen.append((reader._db.version(), reader._generation()))
            assert seen[-1][1] != before and seen[-1][1][0] == count
    finally:
        writer.close()
        reader.close()


def test_a_snapshot_ends_with_the_next_begin_or_soon_after(pg_server) -> None:
    """A snapshot's read-only transaction is ended by the next BEGIN on its reader (one round trip), or, when the
    reader stays idle, by the janitor soon after: the server then holds no snapshot for it. The next snapshot on
    it sees a commit made meanwhile; a read outside a snapshot rolls back first; a reader whose backend was
    terminated meanwhile is replaced."""
    url = pg_server.new_database()
    writer, reader = open_store(url), open_store(url)
    db = reader._db

    def state(admin, pid: int) -> tuple:
        return admin.execute("SELECT state, backend_xmin IS NULL FROM pg_stat_activity WHERE pid = %s",
                             (pid,)).fetchone()

    try:
        first = sync.ingest_text(writer, "# Doc\n\nWords.\n", "d0", "text/markdown").document_id
        with psycopg.connect(url, autocommit=True) as admin:
            with reader.snapshot():
                assert list(reader.scope(None, ["approved"]).documents) == [first]
                conn = reader._conn()
            pid = conn.info.backend_pid
            assert id(conn) in db._open and state(admin, pid) == ("idle in transaction", False)
            second = sync.ingest_text(writer, "# Other\n\nMore words.\n", "d1", "text/markdown").document_id
            with reader.snapshot():  # ROLLBACK; BEGIN: a new snapshot, on the same reader
                assert reader._conn() is conn
                assert sorted(reader.scope(None, ["approved"]).documents) == sorted([first, second])
            for _ in range(100):  # left idle: the janitor ends it
                if state(admin, pid) == ("idle", True):
                    break
                time.sleep(0.05)
            assert state(admin, pid) == ("idle", True) and id(conn) not in db._open and db._readers == [conn]
            with reader.snapshot():
                reader.scope(None, ["approved"])
            assert id(conn) in db._open
            assert reader.document(first).document_id == first  # outside a snapshot: rolled back, then read
            assert id(conn) not in db._open and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
            db._give_back()
            with reader.snapshot():
                reader.scope(None, ["approved"])
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with reader.snapshot():  # the dead reader fails at its BEGIN: a fresh one serves
            assert reader._conn() is not conn and len(reader.scope(None, ["approved"]).documents) == 2
    finally:
        writer.close()
        reader.close()


def _matches_over_every_row(q, found) -> list[int]:
    """A multi-word phrase's matches from every row's codes of every lexeme (what `_phrase_matches` gives)."""
    np = search._numpy()
    codes = [search.Postings(found[lex]).codes(np) for lex in q.lexemes]
    at = codes[0] - 4 * q.offsets[0]
    for j in range(1, len(codes)):
        wanted = at + 4 * q.offsets[j]
        place = np.minimum(np.searchsorted(codes[j], wanted), codes[j].size - 1)
        at = at[codes[j][place] == wanted]
    return sorted(at.tolist())


def test_phrase_matches_in_the_rarest_words_rows_are_those_over_every_row(pg_dev_kb) -> None:
    """A phrase counted over the library is matched from its rarest word, its other words' codes taken only in the
    rows that word is in (whole postings from the store's cache, or read for some documents): the same places as
    matching every row of every word (as a search does), for phrases of common and rare words, from the pages."""
    store = pg_dev_kb
    doc = sorted(store.doc_ids.values())[0]
    text = " ".join(store.page_range(doc, 1, 40).values())
    words = tokens(text)  # a phrase's words as a query gives them (unstemmed)
    phrases = {tuple(words[i:i + n]) for n in (2, 3, 4, 6) for i in range(0, len(words) - n, max(1, len(words) // 40))}
    phrases |= {("of", "the"), ("the", "of"), ("and", "and"), ("net", "cash", "provided", "by")}
    with store.snapshot():
        tsqs = [q for q in store._tsqueries(sorted(phrases)).values() if len(q.lexemes) > 1]
        assert len(tsqs) > 40
        lexemes = sorted({lex for q in tsqs for lex in q.lexemes})
        for source, documents in ((store._source(), None), (store._source(), None), (store._source(), [doc]),
                                  (search.Source(store._conn(), None, store._generation()), None)):
            found = source.read("pages", lexemes, lexemes, documents)
            matched = 0
            for q in tsqs:
                at, _ = search._phrase_matches(q, found, restricted=True)
                assert sorted(at) == _matches_over_every_row(q, found), q
                assert search._phrase_matches(q, found)[0] == at
                matched += bool(at)
            assert matched > 20


def test_the_page_counts_bring_the_section_counts_of_short_phrases(pg_dev_kb, monkeypatch) -> None:
    """Counting phrases on pages counts their one- and two-word ones on sections in the same statement: the
    section search that follows reads no count for them, and the counts are those a store counting sections
    alone finds (a longer phrase is still counted when asked)."""
    phrases = [("revenue",), ("net", "income"), ("cash", "flows"), ("no", "such", "phrase"), ("zzunseen",),
               ("total", "assets"), ("property", "and", "equipment"), ("of", "the")]
    alone = open_store(pg_dev_kb.url)
    try:
        with alone.snapshot():
            expected = alone.frequencies("sections", phrases)
    finally:
        alone.close()
    fresh = open_store(pg_dev_kb.url)
    try:
        with fresh.snapshot():
            fresh.frequencies("pages", phrases)
            seen = _statements(monkeypatch)
            short = [p for p in phrases if len(p) < 3]
            assert fresh.frequencies("sections", short) == {p: expected[p] for p in short}
            assert seen == []
            assert fresh.frequencies("sections", phrases) == expected
    finally:
        fresh.close()
    assert expected[("revenue",)] > 0 and expected[("zzunseen",)] == 0 and expected[("property", "and", "equipment")] > 0


def test_a_scoped_page_search_reads_its_section_postings_in_the_same_statement(pg_dev_kb, monkeypatch) -> None:
    """A page search of some documents reads the same words' section postings with its own (one statement):
    the section search of those documents that follows reads no postings, and finds the very hits (rowids and
    scores) a store that never searched the pages finds; a search of the whole library prefetches nothing."""
    from jsonl_engine.store.postgres import store as pg_store
    from jsonl_engine.store.types import SectionWeights

    monkeypatch.setattr(pg_store, "READ_AHEAD_DOCS", 0)  # the counts read no postings ahead
    phrases = [("revenue",), ("net", "income"), ("cash", "flows"), ("total", "assets"), ("zzunseen",)]
    weights = SectionWeights(title=3.0, ancestors=1.5, text=1.0)
    docs = [d.document_id for d in pg_dev_kb.documents()][:2]
    alone = open_store(pg_dev_kb.url)
    try:
        with alone.snapshot():
            scope = alone.scope(docs, ["approved"])
            expected = alone.search_sections(phrases, weights, scope, 50, docs)
    finally:
        alone.close()
    assert len(expected) > 10
    fresh = open_store(pg_dev_kb.url)
    try:
        with fresh.snapshot():
            scope = fresh.scope(docs, ["approved"])
            fresh.frequencies("pages", phrases)
            seen = _statements(monkeypatch)
            assert fresh.search_pages(phrases, scope, 10)
            assert len([s for s in seen if "FROM postings" in s]) == 1
            del seen[:]
            assert fresh.search_sections(phrases, weights, scope, 50, docs) == expected
            assert not [s for s in seen if "FROM postings" in s]
            monkeypatch.undo()
            everything = fresh.scope(None, ["approved"])
            seen = _statements(monkeypatch)
            fresh.search_pages([("operating", "income")], everything, 10)
            reads = [s for s in seen if s.startswith("SELECT true, lexeme")]  # Source.read's statement
            assert len(reads) == 1 and "SELECT false" not in reads[0]  # no other kind's postings with the pages
    finally:
        fresh.close()


def test_phrases_are_counted_in_one_statement_as_the_server_matches_them(pg_dev_kb, monkeypatch) -> None:
    """Counting phrases sends one statement (no stemming of its own: the daemon makes the lexemes), and each count is
    the rows the server itself finds holding the phrase (`tsv @@ phraseto_tsquery` of its stems) in every kind:
    one-word, two-word, listed and unlisted longer phrases, digits, accents, a phrase the index holds no token of,
    a word never written."""
    phrases = [("revenue",), ("net", "income"), ("property", "and", "equipment"), ("no", "such", "phrase"),
               ("cash", "flows", "from", "operating", "activities"), ("2022",), ("café",), ("%",), ("zzunseen",),
               ("total", "assets"), ("revenue",), ("of", "the", "company")]
    where = {"pages": "FROM pages", "covers": f"FROM pages WHERE number <= {COVER_PAGES} AND",
             "sections": "FROM sections", "documents": "FROM pages"}
    for kind in ("pages", "sections", "covers", "documents"):
        fresh = open_store(pg_dev_kb.url)
        try:
            with fresh.snapshot():
                seen = _statements(monkeypatch)
                counted = fresh.frequencies(kind, phrases)
                assert len([s for s in seen if not s.startswith("SELECT true, lexeme")]) == 1, seen
                assert fresh._tsqueries(phrases) == search.tsqueries(phrases)
                monkeypatch.undo()
        finally:
            fresh.close()
        for phrase, n in counted.items():
            stems = " ".join(text.stems([" ".join(phrase)])[0])
            what = "COUNT(DISTINCT document_id)" if kind == "documents" else "COUNT(*)"
            clause = where[kind] + ("" if where[kind].endswith("AND") else " WHERE")
            assert n == sql(pg_dev_kb, f"SELECT {what} {clause} tsv @@ phraseto_tsquery('{text.CONFIG}', %s)",
                            (stems,))[0][0], (kind, phrase)
        assert counted[("revenue",)] > 0 and counted[("zzunseen",)] == 0 and counted[("no", "such", "phrase")] == 0
    assert counted[("property", "and", "equipment")] > 0 and search.tsqueries([("%",)])[("%",)] == search.Tsq((), ())


def test_statement_pages_come_with_the_cover_texts(pg_dev_kb, monkeypatch) -> None:
    """Inside a snapshot, reading some documents' cover texts reads their stored statement pages in the same
    statement: asking for those next reads nothing, and both equal what the repository's statements read."""
    docs = [d.document_id for d in pg_dev_kb.documents()][:3]
    covers, stored = Repository.cover_texts(pg_dev_kb, docs), Repository.statement_pages(pg_dev_kb, docs)
    assert any(stored.values()) and all(covers.values())
    fresh = open_store(pg_dev_kb.url)
    try:
        with fresh.snapshot():
            assert fresh.cover_texts(docs) == covers
            seen = _statements(monkeypatch)
            assert fresh.statement_pages(docs) == stored
            assert fresh.statement_pages(docs[:1]) == {docs[0]: stored[docs[0]]}
            assert seen == []
            monkeypatch.undo()
        with fresh.snapshot():  # another snapshot (its version may differ): read again when not the same
            assert fresh.statement_pages(docs) == stored
    finally:
        fresh.close()


def test_a_section_is_one_ref_among_hits_and_the_sections_on_pages(pg_dev_kb) -> None:
    """A section found by the section search and on a page searched is one SectionRef (made once); the sections
    on pages asked again are the ones kept."""
    from jsonl_engine.store.types import SectionWeights

    docs = [d.document_id for d in pg_dev_kb.documents()][:2]
    with pg_dev_kb.snapshot():
        scope = pg_dev_kb.scope(docs, ["approved"])
        hits = pg_dev_kb.search_sections([("revenue",), ("net", "income")], SectionWeights(3.0, 1.5, 1.0), scope,
                                         50, docs)
        pages = sorted({(h.section.document_id, h.section.page_start) for h in hits})
        on_pages = pg_dev_kb.sections_on_pages(pages, 3)
        by_id = {h.section.section_id: h.section for h in hits}
        shared = [r for r in on_pages if r.section_id in by_id]
        assert shared and all(r is by_id[r.section_id] for r in shared)
        assert all(a is b for a, b in zip(pg_dev_kb.sections_on_pages(pages, 3), on_pages, strict=True))


def test_the_sections_on_a_page_searchs_best_pages_are_read_with_the_section_hits(dev_kb, pg_dev_kb,
                                                                                  monkeypatch) -> None:
    """Once sections_on_pages has been asked for a page search's best pages, a later snapshot's section search
    reads the sections on that many of its page search's best pages (as far back) with its hits' refs, in one
    statement: asking for them next reads nothing, and they are the sections SQLite finds, in the same order; pages
    past those are still read when asked (a scope the counts read no refs of: more than READ_AHEAD_DOCS)."""
    from jsonl_engine.store.postgres import store as pg_store
    from jsonl_engine.store.types import SectionWeights

    monkeypatch.setattr(pg_store, "READ_AHEAD_DOCS", 0)
    weights = SectionWeights(title=3.0, ancestors=1.5, text=1.0)
    docs = [d.document_id for d in pg_dev_kb.documents()][:2]
    store = open_store(pg_dev_kb.url)
    try:
        with store.snapshot():  # learns: the 5 best pages, 3 back
            scope = store.scope(docs, ["approved"])
            best = [(h.document_id, h.number) for h in store.search_pages([("revenue",)], scope, 50)]
            store.sections_on_pages(best[:5] + [(docs[0], 1)], 3)
        phrases = [("net", "income"), ("total", "assets")]
        with store.snapshot():
            scope = store.scope(docs, ["approved"])
            store.frequencies("pages", phrases)
            pages = [(h.document_id, h.number) for h in store.search_pages(phrases, scope, 50)]
            assert len(pages) > 8
            seen = _statements(monkeypatch)
            hits = store.search_sections(phrases, weights, scope, 50, docs)
            assert len(seen) == 1 and "CROSS JOIN LATERAL" in seen[0] and hits
            del seen[:]
            assert store.sections_on_pages(pages[:5], 3) == dev_kb.sections_on_pages(pages[:5], 3)
            assert seen == []
            assert store.sections_on_pages(pages[:8], 3) == dev_kb.sections_on_pages(pages[:8], 3)
            assert len(seen) == 1  # the three past those
            monkeypatch.undo()
    finally:
        store.close()


def test_a_scoped_querys_first_counts_bring_its_documents_section_refs(dev_kb, pg_dev_kb, monkeypatch) -> None:
    """Counting a query's phrases in a snapshot scoped to a few documents new to the store reads every section's
    ref of them in the same statement: the section search and sections_on_pages of those documents that follow,
    in this snapshot and later ones, read no refs (a later query sends its counts and nothing else about
    sections: its statements are the library's rows at most, once per state), and give what a store that reads
    them by statement gives (the same hits, refs equal to SQLite's
    sections on the same pages, in the same order)."""
    from jsonl_engine.store.postgres import store as pg_store
    from jsonl_engine.store.types import SectionWeights

    weights = SectionWeights(title=3.0, ancestors=1.5, text=1.0)
    docs = [d.document_id for d in pg_dev_kb.documents()][:2]
    queries = [[("net", "income"), ("total", "assets")], [("revenue",), ("cash", "flows")]]

    def ask(store, phrases):
        scope = store.scope(docs, ["approved"])
        store.frequencies("pages", phrases)
        pages = [(h.document_id, h.number) for h in store.search_pages(phrases, scope, 50)]
        return pages, store.search_sections(phrases, weights, scope, 50, docs), store.sections_on_pages(pages[:12], 3)

    with monkeypatch.context() as m:
        m.setattr(pg_store, "READ_AHEAD_DOCS", 0)  # refs read by statement
        plain = open_store(pg_dev_kb.url)
        try:
            expected = []
            for phrases in queries:
                with plain.snapshot():
                    expected.append(ask(plain, phrases))
        finally:
            plain.close()
    store = open_store(pg_dev_kb.url)
    try:
        for phrases, (pages, hits, on_pages) in zip(queries, expected, strict=True):
            with store.snapshot():
                seen = _statements(monkeypatch)
                assert ask(store, phrases) == (pages, hits, on_pages) and len(hits) > 10 and len(on_pages) > 12
                assert on_pages == dev_kb.sections_on_pages(pages[:12], 3)
                assert search._COUNTS in seen and not [s for s in seen if s != search._COUNTS and "FROM sections" in s]
                monkeypatch.undo()
        assert {d for d, _ in store._memo.known("document-refs", docs).items()} == set(docs)
    finally:
        store.close()


def test_the_refs_of_documents_holding_many_sections_are_not_read_ahead(pg_dev_kb, monkeypatch) -> None:
    """A scope whose documents new to the store hold more than REFS_AHEAD sections together has its cover and
    statement pages read with its counts, not its refs: its section search reads them by statement, the same
    hits as a store reading them ahead."""
    from jsonl_engine.store.types import SectionWeights

    weights = SectionWeights(title=3.0, ancestors=1.5, text=1.0)
    docs = [d.document_id for d in pg_dev_kb.documents()][:2]
    sections = sum(d.sections for d in pg_dev_kb.documents(document_ids=docs))
    phrases = [("net", "income"), ("total", "assets")]

    def ask(store):
        with store.snapshot():
            scope = store.scope(docs, ["approved"])
            store.frequencies("pages", phrases)
            with monkeypatch.context() as patched:
                seen = _statements(patched)
                hits = store.search_sections(phrases, weights, scope, 50, docs)
        return hits, seen, store._memo.known("document-refs", docs)

    ahead = open_store(pg_dev_kb.url)
    try:
        expected, seen, kept = ask(ahead)
        assert not [s for s in seen if "FROM sections" in s] and set(kept) == set(docs) and len(expected) > 10
    finally:
        ahead.close()
    for limit in (sections - 1, 0):
        store = open_store(pg_dev_kb.url)
        try:
            with monkeypatch.context() as patched:
                patched.setattr(search, "REFS_AHEAD", limit)
                hits, seen, kept = ask(store)
            assert hits == expected and kept == {} and [s for s in seen if "FROM sections" in s]
        finally:
            store.close()


def _read_ahead(args: tuple) -> list[str]:
    """The documents whose postings the counting statement (search._COUNTS) reads ahead, from its parameters."""
    return args[5]


def _first_pages_read(args: tuple) -> list[str]:
    """The documents whose cover and statement pages the counting statement reads, from its parameters."""
    return args[6]


def test_a_scoped_querys_postings_are_read_with_its_phrase_counts(pg_dev_kb, monkeypatch) -> None:
    """Inside a snapshot scoped to a few documents, counting the pages holding some phrases reads those
    documents' page and section postings of the phrases' words in the same statement (words already known to the
    store too): the page and section searches that follow read no postings, and find the very hits a store that
    does not read ahead finds; a scope of more documents reads nothing ahead."""
    from jsonl_engine.store.postgres import store as pg_store
    from jsonl_engine.store.types import SectionWeights

    weights = SectionWeights(title=3.0, ancestors=1.5, text=1.0)
    docs = [d.document_id for d in pg_dev_kb.documents()][:6]
    earlier = [("net", "income"), ("revenue",)]
    phrases = [("net", "income"), ("operating", "activities"), ("total", "assets"), ("revenue",),
               ("zzunseen",), ("of", "the"), ("cash",)]

    def searches(store, scope, scoped):
        return (store.search_pages(phrases, scope, 50, within=scoped),
                store.search_sections(phrases, weights, scope, 50, scoped))

    monkeypatch.setattr(pg_store, "READ_AHEAD_DOCS", 0)
    plain = open_store(pg_dev_kb.url)
    try:
        with plain.snapshot():
            expected = {}
            for n in (1, 2):
                scope = plain.scope(docs[:n], ["approved"])
                plain.frequencies("pages", phrases)
                expected[n] = searches(plain, scope, docs[:n])
    finally:
        plain.close()
    assert all(pages and sections for pages, sections in expected.values())
    monkeypatch.setattr(pg_store, "READ_AHEAD_DOCS", 1)  # a scope of 2 documents reads nothing ahead
    for n in (1, 2):
        store = open_store(pg_dev_kb.url)
        try:
            with store.snapshot(), monkeypatch.context() as patched:
                store.frequencies("sections", earlier)  # their lexemes known, their page counts not
                scope = store.scope(docs[:n], ["approved"])
                args: list = []
                seen = _statements(patched, args)
                store.frequencies("pages", phrases)
                assert seen == [search._COUNTS] and bool(_read_ahead(args[0])) == (n == 1)
                del seen[:]
                assert searches(store, scope, docs[:n]) == expected[n]
                assert len([s for s in seen if "FROM postings" in s]) == (0 if n == 1 else 1)  # pages with sections
        finally:
            store.close()


def test_a_scoped_querys_counts_bring_its_new_documents_first_pages(pg_dev_kb, monkeypatch) -> None:
    """Counting a query's phrases in a snapshot scoped to documents the store has not read yet reads their cover
    pages and stored statement pages too: asking for those next in the snapshot reads nothing and gets what the
    repository's statements read; a document read so once is not read ahead again."""
    docs = [d.document_id for d in pg_dev_kb.documents()][:2]
    covers, stored = Repository.cover_texts(pg_dev_kb, docs), Repository.statement_pages(pg_dev_kb, docs)
    assert all(covers.values()) and any(stored.values())
    store = open_store(pg_dev_kb.url)
    try:
        with store.snapshot():
            store.scope(docs, ["approved"])
            store.frequencies("pages", [("net", "income")])
            with monkeypatch.context() as patched:
                seen = _statements(patched)
                assert store.cover_texts(docs) == covers and store.statement_pages(docs) == stored
                assert seen == []
        with store.snapshot():
            store.scope(docs, ["approved"])
            with monkeypatch.context() as patched:
                args = []
                seen = _statements(patched, args)
                store.frequencies("pages", [("total", "assets")])
                assert seen == [search._COUNTS] and not _first_pages_read(args[0])
                assert store.cover_texts(docs) == covers  # not kept past its snapshot: read
                assert len(seen) == 2
    finally:
        store.close()


def test_one_janitor_serves_a_stream_of_snapshots(pg_server) -> None:
    """Snapshots one after another (a daemon answering queries) leave their ends to one janitor thread, not one
    started every other snapshot; it stops a while after the last one, that snapshot ended."""
    url = pg_server.new_database()
    store = open_store(url)
    try:
        sync.ingest_text(store, "# Doc\n\nSome words.\n", "d0", "text/markdown")
        janitors = []
        for _ in range(20):
            with store.snapshot():
                store.scope(None, ["approved"])
            janitors.append(store._db._janitor)
            time.sleep(0.04)  # past the janitor's rounds of ROLLBACK_AFTER_S, sometimes
        assert len(set(map(id, janitors))) == 1 and janitors[0] is not None
        for _ in range(100):
            if store._db._janitor is None:
                break
            time.sleep(0.05)
        assert store._db._janitor is None and not store._db._open
    finally:
        store.close()


def test_a_readers_statements_are_prepared_at_their_first_run(pg_dev_kb) -> None:
    """A fresh store's first scoped query has the server prepare (plan once) the statements its reader runs, the
    counts statement among them, not plan them again at each of their first runs; a snapshot's BEGIN, whose text
    changes with the last snapshot's version, is sent unprepared."""
    from jsonl_engine.store.types import SectionWeights

    docs = [d.document_id for d in pg_dev_kb.documents()][:1]
    store = open_store(pg_dev_kb.url)
    try:
        with store.snapshot():
            scope = store.scope(docs, ["approved"])
            store.frequencies("pages", [("net", "income"), ("revenue",)])
            store.search_pages([("net", "income"), ("revenue",)], scope, 20)
            store.search_sections([("revenue",)], SectionWeights(title=3.0, ancestors=1.5, text=1.0), scope, 20, docs)
            prepared = [r[0] for r in store._db.reader().execute("SELECT statement FROM pg_prepared_statements")]
        assert any("FROM word_stats WHERE lexeme = ANY($1::text[])" in s for s in prepared), prepared
        assert not [s for s in prepared if "BEGIN" in s or "ROLLBACK" in s]
        for _ in range(3):  # later snapshots keep them, and prepare no BEGIN
            with store.snapshot():
                store.frequencies("pages", [("net", "income")])
        again = [r[0] for r in store._db.reader().execute("SELECT statement FROM pg_prepared_statements")]
        assert set(prepared) <= set(again) and not [s for s in again if "BEGIN" in s]
    finally:
        store.close()
