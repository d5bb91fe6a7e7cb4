"""The PostgreSQL text index as ingest writes it (store/postgres/indexing.py: postings and term pairs computed in
the store from the rows' tsvectors) equals what the SQL of migrations 7 and 8 computes from the stored rows
(write_postings, term_pairs: kb_integrity recounts both, and text_stats), on real filings, a replacement and a
removal, and on a section long enough that PostgreSQL caps its positions (several lexemes then share the last
position, a lexeme keeps at most 255). The index tokenizer gives the tokens of its regular-expression definition."""

from __future__ import annotations

import re
import sqlite3
import unicodedata

import psycopg
import pytest

from jsonl_engine.ingest import parse_file, sync
from jsonl_engine.store import open_store
from jsonl_engine.store.postgres.text import PRIVATE, tokens
from tests.conftest import kb_integrity
from tests.support.sql import sql

REAL = ("AMCOR_2022_8K_dated-2022-07-01", "PEPSICO_2023_8K_dated-2023-05-05", "FOOTLOCKER_2022_8K_dated-2022-05-20")


@pytest.fixture
def pg_kb(pg_server):
    store = open_store(pg_server.new_database("pgindex"))
    yield store
    store.close()


def test_real_filings_index_rows_equal_the_sql_recounts(pg_kb, dev_pdfs, tmp_path):
    outcomes = sync.ingest_paths(pg_kb, [str(dev_pdfs / f"{name}.pdf") for name in REAL])
    assert not [o for o in outcomes if o.error]
    assert kb_integrity(pg_kb)["documents"] == 3
    assert sql(pg_kb, "SELECT COUNT(*) FROM term_stats WHERE covers > 0")[0][0] > 0
    # the large values are compressed with lz4 (db.WRITER_SETTINGS; the Debian server has it), not the default pglz
    assert {r[0] for r in sql(pg_kb, "SELECT pg_column_compression(data) FROM postings UNION "
                                     "SELECT pg_column_compression(text) FROM pages")} == {"lz4", None}
    # the same content under another path replaces nothing (a skip); a changed file at a path replaces its document
    path = tmp_path / "report.md"
    path.write_text("# Report\n\nNet sales rose in the second quarter.\n", encoding="utf-8")
    first = sync.ingest_paths(pg_kb, [str(path)])[0].document_id
    path.write_text("# Report\n\nNet sales fell in the second quarter.\n", encoding="utf-8")
    assert sync.ingest_paths(pg_kb, [str(path)])[0].document_id != first
    kb_integrity(pg_kb)
    pg_kb.remove(outcomes[1].document_id)
    kb_integrity(pg_kb)
    assert "net sale" in {r[0] for r in sql(pg_kb, "SELECT term FROM term_stats")}


def _long_section() -> str:
    """A page of ~17,000 tokens: past position 16,383 PostgreSQL gives every token that position, so the lexemes
    after it share it; 'common' occurs far more than the 255 positions a lexeme keeps."""
    words = []
    for i in range(8600):
        words += ["common", f"w{i % 997}x"]
    words += [f"tail{i}" for i in range(300)] + ["common"] * 5
    words += ["total", "current", "assets"] * 2  # a listed long phrase, all at the last position
    return " ".join(words)


def test_capped_positions_index_rows_equal_the_sql_recounts(pg_kb):
    text = (f"# Long\n\nIntro words here.\n\n## Body part\n\n{_long_section()}\n\n## After\n\ncommon tail1 ends"
            " total current assets\n")
    doc = sync.ingest_text(pg_kb, text, "long", "text/markdown").document_id
    sync.ingest_text(pg_kb, "# Other\n\ncommon w1x common w2x tail5 tail6\n", "other", "text/markdown")
    # the text is one page (its sections are split into parts)
    shared = sql(pg_kb, "SELECT COUNT(*) FROM pages p, unnest(p.tsv) u WHERE p.document_id = %s"
                        " AND 16383 = ANY(u.positions)", (doc,))[0][0]
    assert shared > 2  # several lexemes at the capped position: the pairs there are every combination
    assert sql(pg_kb, "SELECT MAX(cardinality(u.positions)) FROM pages p, unnest(p.tsv) u"
                      " WHERE p.document_id = %s", (doc,))[0][0] == 255  # MAXNUMPOS - 1
    kb_integrity(pg_kb)
    pg_kb.remove(doc)
    kb_integrity(pg_kb)
    assert sql(pg_kb, "SELECT COUNT(*) FROM term_stats WHERE term LIKE 'tail2%%'")[0][0] == 0


_TOKEN = re.compile(r"[^\W_]+")


def _reference(text: str) -> list[str]:
    """The index tokenizer's definition: runs of alphanumerics of the text decomposed, without combining marks,
    lowercased (FTS5's unicode61 remove_diacritics 2)."""
    if not text.isascii():
        text = "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))
        text = "".join(PRIVATE.format(ord(c)) if unicodedata.category(c) == "Co" else c for c in text.lower())
    return _TOKEN.findall(text.lower())


def test_the_tokenizer_gives_the_tokens_of_its_definition(dev_pdfs):
    texts = ["Fiscal years 2018, 1,577 running cafés", "naïve ÅNGSTRÖM über-résumé 10-K FY2018 Q2'19", "",
             "  ", "a\u00a0b\tc\nd\x1cé\u2003f", "Straße ﬁnancial ½ ２０１８ 東京 Ελλάδα x²y", "İSTANBUL İi",
             "e\u0301\u0302 a_b ÉCOLE — “quoted” • 12½%", "x" * 300 + " long", "\x00nul\ufffdrepl"]
    parsed = parse_file(str(dev_pdfs / f"{REAL[0]}.pdf"))
    texts += parsed.pages + [s.text for s in parsed.sections] + [s.title for s in parsed.sections]
    assert any(not t.isascii() for t in parsed.pages)
    for text in texts:
        assert tokens(text) == _reference(text), text[:80]


def test_a_private_use_character_is_a_token_character_as_in_fts5(pg_kb) -> None:
    """FTS5's unicode61 counts private-use characters (a symbol font's bullet) as token characters: the tokenizer
    gives as many tokens as FTS5 finds, and PostgreSQL's parser keeps each one whole, at its position."""
    texts = ["net \uf0b7 income", "a\uf0b7b \ue000\ue001 c", "\uf0b7Revenue grew \uf0a7 5%", "no bullet here"]
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize = 'porter unicode61 remove_diacritics 2')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    with psycopg.connect(pg_kb.url) as conn:
        for i, text in enumerate(texts, 1):
            db.execute("INSERT INTO t(rowid, x) VALUES (?, ?)", (i, text))
            fts5 = [row[0] for row in db.execute("SELECT offset FROM v WHERE doc = ? ORDER BY offset", (i,))]
            assert len(tokens(text)) == len(fts5) and tokens(text) == _reference(text), text
            (parsed,) = conn.execute("SELECT array_length(tsvector_to_array(to_tsvector('simple', %s)), 1)",
                                     (" ".join(tokens(text)),)).fetchone()
            positions = conn.execute("SELECT max(p) FROM unnest(to_tsvector('simple', %s)) u, unnest(u.positions) p",
                                     (" ".join(tokens(text)),)).fetchone()[0]
            assert positions == len(fts5) and parsed == len(set(tokens(text))), text


def test_real_filings_long_phrase_counts_are_read_as_counted(pg_kb, dev_pdfs, monkeypatch):
    """The vocabulary's long phrases (migration 9) are read from term_stats, and equal the counts of matching
    them on the postings, in every kind, after ingesting real filings and after removing one."""
    from jsonl_engine import vocabulary
    from jsonl_engine.store.postgres import search
    from tests.test_store_termstats import KINDS, _counted

    listed = {r[0] for r in sql(pg_kb, "SELECT phrase FROM term_phrases")}
    assert "purchas of properti plant and equip" in listed and "cash flow" not in listed
    names = (*REAL, "BESTBUY_2024Q2_10Q")  # a quarterly report: statements printing the vocabulary's long phrases
    outcomes = sync.ingest_paths(pg_kb, [str(dev_pdfs / f"{name}.pdf") for name in names])
    assert not [o for o in outcomes if o.error]
    phrases = [tuple(p.split()) for p in vocabulary.PHRASES]
    longs = [p for p in phrases if len(p) >= 3]
    counted_calls = []
    original = search._phrase_count

    def spy(q, found, documents):
        counted_calls.append(q)
        return original(q, found, documents)

    for removed in (False, True):
        if removed:  # the quarterly report: most of the long phrases' counts fall to 0
            pg_kb.remove(outcomes[-1].document_id)
        expected = {kind: _counted(pg_kb, kind, phrases) for kind in KINDS}
        if not removed:
            assert sum(expected["pages"][p] for p in longs) > 0 and sum(expected["sections"][p] for p in longs) > 0
        with monkeypatch.context() as m:
            m.setattr(search, "_phrase_count", spy)
            counted_calls.clear()
            read = {kind: pg_kb.frequencies(kind, phrases) for kind in KINDS}
        assert read == expected
        assert not [q for q in counted_calls if search.long_key(q) in listed]  # read, not counted
        kb_integrity(pg_kb)


def test_word_counts_are_kept_and_a_kb_made_before_them_gets_them(pg_server, dev_pdfs):
    """One-word phrases' counts (migration 10, word_stats) are read as counted on the postings, in every kind;
    a KB made before them (version 9) gets them from its postings when opened, and keeps them through a removal:
    no row left for a word no document holds any more."""
    from tests.test_store_termstats import KINDS, _counted

    url = pg_server.new_database("words")
    store = open_store(url)
    outcomes = sync.ingest_paths(store, [str(dev_pdfs / f"{name}.pdf") for name in REAL[:2]])
    only = sync.ingest_text(store, "# Memo\n\nzqxjunique words, revenue and zqxjunique again.\n", "memo",
                            "text/markdown").document_id
    words = [("revenue",), ("net",), ("zqxjunique",), ("absentword",), ("the",), ("2022",)]
    expected = {kind: _counted(store, kind, words) for kind in KINDS}
    assert expected["pages"][("zqxjunique",)] == 1 and expected["documents"][("the",)] == 2
    store.close()
    with psycopg_connect(url) as conn:  # back to version 9, as main left it (the later migrations run again)
        conn.execute("DROP TABLE word_stats; DELETE FROM schema_migrations WHERE version >= 10")
    store = open_store(url)
    try:
        assert {kind: store.frequencies(kind, words) for kind in KINDS} == expected
        kb_integrity(store)
        store.remove(only)
        assert sql(store, "SELECT COUNT(*) FROM word_stats WHERE lexeme = 'zqxjuniqu'") == [(0,)]
        assert {kind: store.frequencies(kind, words) for kind in KINDS} == \
            {kind: _counted(store, kind, words) for kind in KINDS}
        kb_integrity(store)
        store.remove(outcomes[0].document_id)
        kb_integrity(store)
    finally:
        store.close()


def psycopg_connect(url: str):
    import psycopg

    return psycopg.connect(url, autocommit=True)


_INDEX = ("SELECT rowid, document_id, number, ntok, tsv::text FROM pages ORDER BY rowid",
          "SELECT rowid, document_id, ntok, tsv::text FROM sections ORDER BY rowid",
          "SELECT kind, lexeme, document_id, n, data FROM postings ORDER BY kind, lexeme, document_id",
          "SELECT * FROM term_stats ORDER BY term", "SELECT * FROM word_stats ORDER BY lexeme",
          "SELECT phrase FROM term_phrases ORDER BY phrase",
          "SELECT kind, SUM(rows), SUM(tokens) FROM text_stats GROUP BY kind ORDER BY kind")

_SCHEMA = ("SELECT c.relname, pg_get_indexdef(i.indexrelid), con.conname, pg_get_constraintdef(con.oid)"
           " FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
           " LEFT JOIN pg_constraint con ON con.conindid = i.indexrelid AND con.conrelid = i.indrelid"
           " WHERE i.indrelid = 'postings'::regclass ORDER BY 1")


def test_a_kb_stemmed_by_snowball_english_is_made_again_as_ingested_with_fts5_stems(pg_server, dev_pdfs, monkeypatch):
    """Migration 11 on a KB written with the snowball English stemmer (version 10): its tsvectors, token counts,
    postings, term and word statistics, listed phrases and text_stats become those of the same documents
    ingested with FTS5's stems (text.stems), row for row; the reindex run again changes nothing."""
    from jsonl_engine.store.postgres import indexing, migrations, search
    from jsonl_engine.store.postgres.text import CONFIG, stems

    memo = ("# Memo\n\nThe proceeds, formerly quarterly, fund international \uf0b7 operations of the 1990s.\n\n"
            "## Total current assets\n\nTotal current assets rose.\n")

    def fill(url: str) -> None:
        store = open_store(url)
        try:
            assert not [o for o in sync.ingest_paths(store, [str(dev_pdfs / f"{n}.pdf") for n in REAL[:2]]) if o.error]
            sync.ingest_text(store, memo, "memo", "text/markdown")
        finally:
            store.close()

    old, new = pg_server.new_database("english"), pg_server.new_database("porter")

    def stemmed_by_the_server(phrases):
        """The phrases' lexemes as engines before migration 11 had the server make them (phraseto_tsquery of the
        words' stems: the snowball stemmer then stemmed them again), for the vocabulary's listing."""
        with psycopg_connect(old) as conn:
            rows = conn.execute(f"SELECT phraseto_tsquery('{CONFIG}', q)::text FROM unnest(%s::text[])"
                                " WITH ORDINALITY AS t(q, i) ORDER BY i", ([" ".join(w) for w in stems([" ".join(p) for p in phrases])],))
            found = [re.findall(r"'([^']*)'", r[0]) for r in rows]
        return {p: search.Tsq(tuple(f), tuple(range(len(f)))) for p, f in zip(phrases, found, strict=True)}

    with monkeypatch.context() as m:
        m.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:10])
        m.setattr(search, "tsqueries", stemmed_by_the_server)
        fill(old)
    with psycopg_connect(old) as conn:
        assert conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] == 10
        english = [conn.execute(q).fetchall() for q in _INDEX]
        assert conn.execute("SELECT COUNT(*) FROM word_stats WHERE lexeme = 'proceed'").fetchone()[0] > 0
    fill(new)
    store = open_store(old)  # migrated to 11
    try:
        kb_integrity(store)
    finally:
        store.close()
    with psycopg_connect(old) as conn, psycopg_connect(new) as fresh:
        porter = [fresh.execute(q).fetchall() for q in _INDEX]
        assert [r[0] for r in fresh.execute("SELECT lexeme FROM word_stats WHERE lexeme IN ('proce', 'formerli',"
                                            " 'quarterli', 'intern', '1990') ORDER BY 1")] == \
            ["1990", "formerli", "intern", "proce", "quarterli"]
        migrated = [conn.execute(q).fetchall() for q in _INDEX]
        for query, a, b, before in zip(_INDEX, migrated, porter, english, strict=True):
            assert a == b, query
            assert a != before or query.startswith("SELECT kind, SUM"), query  # the stems changed every table
        # the postings' indexes, dropped while they are written, built again as a fresh KB has them
        assert conn.execute(_SCHEMA).fetchall() == fresh.execute(_SCHEMA).fetchall()
        assert {r[0] for r in conn.execute(_SCHEMA)} >= {"postings_pkey", "postings_document"}
        with conn.transaction():
            assert indexing.reindex(conn) == 3
            assert [conn.execute(q).fetchall() for q in _INDEX] == porter


def test_a_kb_made_before_the_stored_text_length_gets_it_and_new_sections_too(pg_server, monkeypatch):
    """Migration 12 stores each section's length in characters (text_len, read with its ref): a KB at version 11
    gets it for every section, non-ASCII texts counted in characters, and sections written after get it too; the
    refs read from it are those the length counted per query gives (the repository's REF_COLUMNS)."""
    from jsonl_engine.store.postgres import migrations
    from jsonl_engine.store.repository import REF_COLUMNS as COUNTED
    from jsonl_engine.store.repository import section_ref

    url = pg_server.new_database("textlen")
    memo = "# Café – résumé\n\nNet sales rose 5% ½ year on year: “record” quarter.\n\n## Notes\n\nPlain text here.\n"
    with monkeypatch.context() as m:
        m.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:11])
        store = open_store(url)
        try:
            sync.ingest_text(store, memo, "before", "text/markdown")
        finally:
            store.close()
    with psycopg_connect(url) as conn:
        assert conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] == 11
    store = open_store(url)  # migrated to 12
    try:
        sync.ingest_text(store, memo.replace("Café", "Thé"), "after", "text/markdown")
        [(total, same, wide)] = sql(store, "SELECT COUNT(*), COUNT(*) FILTER (WHERE text_len = length(text)),"
                                           " COUNT(*) FILTER (WHERE octet_length(text) > length(text)) FROM sections")
        assert total == same >= 4 and wide >= 2  # both documents' sections, non-ASCII ones among them
        docs = [d.document_id for d in store.documents()]
        counted = sql(store, f"SELECT {COUNTED} FROM sections ORDER BY rowid")
        with store.snapshot():
            refs = store._section_refs(store._sql(), [r[0] for r in counted])
        assert refs == {r[0]: section_ref(r) for r in counted} and len(docs) == 2
    finally:
        store.close()


def test_a_migration_stopped_midway_leaves_the_kb_as_it_was(pg_server, dev_pdfs, monkeypatch):
    """Migration 11 fails after its first document's rows are rewritten (its postings written, their indexes
    dropped, its counts sent): the KB is still at version 10 with every row, statistic and index it had, and
    migrates when opened again."""
    from jsonl_engine.store.postgres import indexing, migrations

    old = pg_server.new_database("stopped")
    with monkeypatch.context() as m:
        m.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:10])
        store = open_store(old)
        try:
            assert not [o for o in sync.ingest_paths(store, [str(dev_pdfs / f"{n}.pdf") for n in REAL[:2]]) if o.error]
        finally:
            store.close()
    with psycopg_connect(old) as conn:
        before = [conn.execute(q).fetchall() for q in (*_INDEX, _SCHEMA)]
    sent = []

    def stop(cur, table, counted):
        sent.append(table)
        if len(sent) > 2:  # the second document's first counts
            raise RuntimeError("stopped")
        return copy_counts(cur, table, counted)

    copy_counts = indexing._copy_counts
    with monkeypatch.context() as m:
        m.setattr(indexing, "_copy_counts", stop)
        with pytest.raises(Exception, match="stopped"):
            open_store(old)
    assert len(sent) == 3
    with psycopg_connect(old) as conn:
        assert conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] == 10
        assert [conn.execute(q).fetchall() for q in (*_INDEX, _SCHEMA)] == before
    store = open_store(old)
    try:
        kb_integrity(store)
    finally:
        store.close()
    with psycopg_connect(old) as conn:
        assert conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] == len(migrations.MIGRATIONS)
