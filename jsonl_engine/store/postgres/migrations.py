"""Ordered schema migrations of the PostgreSQL store, recorded in `schema_migrations` and applied under a
session advisory lock, so daemons starting together on a new database all get in (one migrates, the others
wait, then find the work done). Append new migrations at the end; never edit one that has shipped.

The text search configuration `jsonl_english` is stock PostgreSQL (no extension): until migration 11 the snowball
English stemmer (Porter2) without a stopword list; since, the `simple` dictionary over words the engine has stemmed
already, with FTS5's own tokenizer (text.stems: the Porter stems SQLite's index holds, every word kept). A migration is SQL, or a function given the connection (in its transaction) when
what it rewrites is derived in the engine (the index's tokens: indexing.reindex).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jsonl_engine.errors import Internal

LOCK_KEY = 0x6A736F6E6C  # "jsonl": the advisory lock that serialises migrations


def _porter(conn: Any) -> None:
    """Migration 11: FTS5's stems, made in the engine (text.stems), kept as they are; then everything derived from
    the stemmed words made again."""
    # Snowball's `porter` dictionary is not FTS5's Porter (words under three bytes, "-logy", "-bly"), and the
    # configuration copied from `english` kept words holding digits unstemmed ("1990s"), where FTS5 stems them.
    conn.execute("""
ALTER TEXT SEARCH CONFIGURATION jsonl_english
    ALTER MAPPING FOR asciiword, word, numword, asciihword, hword, hword_asciipart, hword_part, hword_numpart,
                      numhword, uint WITH simple;
""")
    from jsonl_engine.store.postgres import indexing  # numpy: only when a KB is migrated

    indexing.reindex(conn)


MIGRATIONS: list[tuple[int, str, str | Callable[[Any], None]]] = [
    (1, "documents, sections, pages; weighted tsvector columns with GIN indexes", """
CREATE TEXT SEARCH DICTIONARY jsonl_english_stem (TEMPLATE = snowball, Language = english);
CREATE TEXT SEARCH CONFIGURATION jsonl_english (COPY = english);
ALTER TEXT SEARCH CONFIGURATION jsonl_english
    ALTER MAPPING FOR asciiword, word, hword_asciipart, hword_part, asciihword, hword WITH jsonl_english_stem;

CREATE TABLE documents (
    seq         BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    id          TEXT COLLATE "C" PRIMARY KEY,
    title       TEXT NOT NULL,
    path        TEXT COLLATE "C",
    media_type  TEXT NOT NULL,
    sha256      TEXT COLLATE "C" NOT NULL UNIQUE,  -- one copy of each content, whatever daemons race
    pages       INTEGER NOT NULL,
    sections    INTEGER NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('approved', 'draft', 'contested', 'archived')),
    ingested_at TEXT COLLATE "C" NOT NULL,
    warnings    TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX documents_path ON documents(path);

CREATE TABLE sections (
    rowid       BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id          TEXT COLLATE "C" NOT NULL UNIQUE,
    document_id TEXT COLLATE "C" NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    parent_id   TEXT COLLATE "C" REFERENCES sections(id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,
    depth       INTEGER NOT NULL,
    ordinal     INTEGER NOT NULL,
    title       TEXT NOT NULL,
    ancestors   TEXT NOT NULL DEFAULT '[]',
    page_start  INTEGER NOT NULL,
    page_end    INTEGER NOT NULL,
    is_leaf     BOOLEAN NOT NULL,
    text        TEXT NOT NULL DEFAULT '',
    page_map    TEXT NOT NULL DEFAULT '[]',
    summary     TEXT NOT NULL DEFAULT '',
    ntok        INTEGER NOT NULL,   -- tokens of title + ancestors + text (BM25's document length)
    tsv         TSVECTOR NOT NULL   -- title A, ancestors B, text C
);
CREATE INDEX sections_document ON sections(document_id, position);
CREATE INDEX sections_parent ON sections(parent_id);
CREATE INDEX sections_pages ON sections(document_id, page_start);
CREATE INDEX sections_tsv ON sections USING gin (tsv);

CREATE TABLE pages (
    rowid       BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    document_id TEXT COLLATE "C" NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    number      INTEGER NOT NULL,
    text        TEXT NOT NULL,
    ntok        INTEGER NOT NULL,
    tsv         TSVECTOR NOT NULL,
    UNIQUE (document_id, number)
);
CREATE INDEX pages_tsv ON pages USING gin (tsv);
-- The first pages (cover, first page of a release) name the issuer and period: the document prior.
CREATE INDEX covers_tsv ON pages USING gin (tsv) WHERE number <= 2;
"""),
    (2, "document cards: derived fields (card, JSON; NULL until derived) and the user's values (meta, JSON)", """
-- documents.title becomes the card's title (the user's, else the derived one). Documents written before this
-- version get their cards derived from their stored pages when the KB is opened (identity/card.fill_missing).
ALTER TABLE documents ADD COLUMN card TEXT;
ALTER TABLE documents ADD COLUMN meta TEXT NOT NULL DEFAULT '{}';
CREATE INDEX documents_title ON documents(title);
"""),
    (3, "statement pages: each document's pages that hold a primary financial statement (JSON; NULL until judged)", """
-- {"page number": "income" | "balance" | "cash_flow"} (identity/statements.py judges them once); documents written
-- before this version are judged from their stored pages when the KB is opened (identity/statements.fill_missing).
ALTER TABLE documents ADD COLUMN statements TEXT;
"""),
    (4, "OCR: the words of the pages read by OCR, with their boxes, and each document's list of those pages", """
-- words: [[start, end, line, left, bottom, right, top], ...] (ingest/ocr.py), offsets into the page's text and
-- boxes in PDF points: a citation on a scanned page gets its boxes here, the file has no text layer there.
CREATE TABLE page_words (
    document_id TEXT COLLATE "C" NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    number      INTEGER NOT NULL,
    words       TEXT NOT NULL,
    PRIMARY KEY (document_id, number)
);
ALTER TABLE documents ADD COLUMN ocr_pages TEXT NOT NULL DEFAULT '[]';
"""),
    (5, "BM25's collection statistics (rows and tokens per kind) kept as deltas written with the rows", """
-- kind ('pages', 'covers' = pages numbered <= 2, 'sections') -> rows and tokens (ntok): the sums over the kind's
-- rows are its row count and total length (search.stats), read instead of counting the tables. Each write
-- appends its delta (triggers, in the writing transaction, so a rolled-back ingest leaves none; appended rather
-- than updated, so concurrent writers take no common lock); Store.tidy_indexes folds them into one row per kind.
CREATE TABLE text_stats (
    kind   TEXT COLLATE "C" NOT NULL CHECK (kind IN ('pages', 'covers', 'sections')),
    rows   BIGINT NOT NULL,
    tokens BIGINT NOT NULL
);
INSERT INTO text_stats SELECT 'pages', COUNT(*), COALESCE(SUM(ntok), 0) FROM pages;
INSERT INTO text_stats SELECT 'covers', COUNT(*), COALESCE(SUM(ntok), 0) FROM pages WHERE number <= 2;
INSERT INTO text_stats SELECT 'sections', COUNT(*), COALESCE(SUM(ntok), 0) FROM sections;

CREATE FUNCTION text_stats_pages() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE sign INTEGER := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
BEGIN
    INSERT INTO text_stats SELECT 'pages', sign * COUNT(*), sign * COALESCE(SUM(ntok), 0) FROM changed
        HAVING COUNT(*) > 0;
    INSERT INTO text_stats SELECT 'covers', sign * COUNT(*), sign * COALESCE(SUM(ntok), 0) FROM changed
        WHERE number <= 2 HAVING COUNT(*) > 0;
    RETURN NULL;
END $$;
CREATE FUNCTION text_stats_sections() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE sign INTEGER := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
BEGIN
    INSERT INTO text_stats SELECT 'sections', sign * COUNT(*), sign * COALESCE(SUM(ntok), 0) FROM changed
        HAVING COUNT(*) > 0;
    RETURN NULL;
END $$;
CREATE TRIGGER pages_stats_added AFTER INSERT ON pages REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION text_stats_pages();
CREATE TRIGGER pages_stats_removed AFTER DELETE ON pages REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION text_stats_pages();
CREATE TRIGGER sections_stats_added AFTER INSERT ON sections REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION text_stats_sections();
CREATE TRIGGER sections_stats_removed AFTER DELETE ON sections REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION text_stats_sections();
"""),
    (6, "tsvectors kept in their rows (STORAGE MAIN, rows up to a page) rather than in TOAST chunks", """
-- A search reads the tsvector of every candidate row; out of line (TOAST) that is an index lookup and the chunks
-- per row, in line it is the row's own page (EXPLAIN ANALYZE: -20% on a phrase count over 1,300 pages). The
-- text columns still go out of line first. Rows written before this version keep their storage until rewritten.
ALTER TABLE pages SET (toast_tuple_target = 8160);
ALTER TABLE pages ALTER COLUMN tsv SET STORAGE MAIN;
ALTER TABLE sections SET (toast_tuple_target = 8160);
ALTER TABLE sections ALTER COLUMN tsv SET STORAGE MAIN;
"""),
    (7, "postings: each word's rows per document and kind, with their positions, in place of the GIN indexes", """
-- (kind, lexeme, document) -> the rows of that kind in that document holding the lexeme (a tsvector's entry), as
-- one bytea of n entries, big-endian: rowids (int8 each), token counts (ntok, int4), page numbers (int4; 0 for
-- sections), position counts (int2), then each row's positions in turn (int2: position * 4 + weight, D=0..A=3,
-- stored minus 32768). A search reads the postings of its words and scores in the daemon (search.py), as FTS5
-- reads its doclists, instead of reading and ranking the tsvector of every candidate row. Written with the rows
-- (write_postings, in the writing transaction); removed with the document (ON DELETE CASCADE).
CREATE TABLE postings (
    kind        TEXT COLLATE "C" NOT NULL CHECK (kind IN ('pages', 'covers', 'sections')),
    lexeme      TEXT COLLATE "C" NOT NULL,
    document_id TEXT COLLATE "C" NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    n           INTEGER NOT NULL,
    data        BYTEA NOT NULL,
    PRIMARY KEY (kind, lexeme, document_id) INCLUDE (n)  -- a word's counts read from the index alone
);
CREATE INDEX postings_document ON postings(document_id);

CREATE FUNCTION write_postings(doc TEXT) RETURNS void LANGUAGE sql AS $$
INSERT INTO postings (kind, lexeme, document_id, n, data)
SELECT r.kind, r.lexeme, doc, COUNT(*),
       string_agg(int8send(r.rowid), ''::bytea ORDER BY r.rowid)
    || string_agg(int4send(r.ntok), ''::bytea ORDER BY r.rowid)
    || string_agg(int4send(r.number), ''::bytea ORDER BY r.rowid)
    || string_agg(int2send(COALESCE(cardinality(r.positions), 0)::int2), ''::bytea ORDER BY r.rowid)
    || COALESCE(string_agg(e.pos, ''::bytea ORDER BY r.rowid), ''::bytea)
FROM (SELECT 'pages' AS kind, x.rowid, x.ntok, x.number, u.lexeme, u.positions, u.weights
        FROM pages x, unnest(x.tsv) u WHERE x.document_id = doc
      UNION ALL
      SELECT 'covers', x.rowid, x.ntok, x.number, u.lexeme, u.positions, u.weights
        FROM pages x, unnest(x.tsv) u WHERE x.document_id = doc AND x.number <= 2
      UNION ALL
      SELECT 'sections', x.rowid, x.ntok, 0, u.lexeme, u.positions, u.weights
        FROM sections x, unnest(x.tsv) u WHERE x.document_id = doc) r,
     LATERAL (SELECT string_agg(int2send((q.p * 4 + CASE q.w WHEN 'A' THEN 3 WHEN 'B' THEN 2 WHEN 'C' THEN 1
                                                  ELSE 0 END - 32768)::int2), ''::bytea ORDER BY q.p) AS pos
              FROM unnest(r.positions, r.weights) AS q(p, w)) e
GROUP BY r.kind, r.lexeme
$$;
SELECT write_postings(id) FROM documents;
DROP INDEX pages_tsv;
DROP INDEX covers_tsv;
DROP INDEX sections_tsv;
"""),
    (8, "term statistics: the rows and documents holding each pair of adjacent words (a two-word phrase)", """
-- "lexeme lexeme" (the second at the next position of the same field) -> the pages, documents (with a page), cover
-- pages and sections holding it, as the postings' phrase matching counts them (search.frequencies reads them for
-- two-word phrases instead of matching the words' positions; one-word counts come from the postings' n). Added by
-- add_term_stats(doc, 1) in the transaction writing the document's rows, subtracted (-1) in the one deleting them;
-- concurrent writers of a common pair wait for each other's commit (in key order: no deadlock). A pair whose
-- counts fall to 0 loses its row: a removed document's words do not stay in the database.
CREATE TABLE term_stats (
    term     TEXT COLLATE "C" PRIMARY KEY,
    pages    INTEGER NOT NULL,
    docs     INTEGER NOT NULL,
    covers   INTEGER NOT NULL,
    sections INTEGER NOT NULL
);
CREATE FUNCTION term_pairs(doc TEXT) RETURNS TABLE (term TEXT, pages BIGINT, docs INTEGER, covers BIGINT,
                                                    sections BIGINT) LANGUAGE sql STABLE AS $$
WITH t AS (
    SELECT 'p' AS k, x.rowid, x.number, u.lexeme, q.p, q.w
      FROM pages x, unnest(x.tsv) u, unnest(u.positions, u.weights) AS q(p, w) WHERE x.document_id = doc
    UNION ALL
    SELECT 's', x.rowid, 0, u.lexeme, q.p, q.w
      FROM sections x, unnest(x.tsv) u, unnest(u.positions, u.weights) AS q(p, w) WHERE x.document_id = doc),
pairs AS (
    SELECT DISTINCT a.k, a.rowid, a.number, a.lexeme || ' ' || b.lexeme AS term
      FROM t a JOIN t b ON b.k = a.k AND b.rowid = a.rowid AND b.p = a.p + 1 AND b.w = a.w)
SELECT term, COUNT(*) FILTER (WHERE k = 'p'), MAX(CASE k WHEN 'p' THEN 1 ELSE 0 END),
       COUNT(*) FILTER (WHERE k = 'p' AND number <= 2), COUNT(*) FILTER (WHERE k = 's')
  FROM pairs GROUP BY term
$$;
CREATE FUNCTION add_term_stats(doc TEXT, sign INTEGER) RETURNS void LANGUAGE sql AS $$
INSERT INTO term_stats AS s (term, pages, docs, covers, sections)
SELECT term, sign * pages, sign * docs, sign * covers, sign * sections FROM term_pairs(doc) ORDER BY term
ON CONFLICT (term) DO UPDATE SET pages = s.pages + excluded.pages, docs = s.docs + excluded.docs,
    covers = s.covers + excluded.covers, sections = s.sections + excluded.sections;
DELETE FROM term_stats WHERE sign < 0 AND pages = 0 AND docs = 0 AND covers = 0 AND sections = 0
    AND term IN (SELECT term FROM term_pairs(doc));
$$;
SELECT add_term_stats(id, 1) FROM documents;
"""),
    (9, "kept phrases: the long phrases (three words or more) whose counts term_stats keeps too", """
-- A listed phrase (its lexemes, space-separated) is a key of term_stats like a pair, its counts added and
-- subtracted with the rows (indexing.phrase_counts: the same consecutive positions in one field as the read
-- path matches); search.frequencies reads them, a listed phrase with no row counting 0. Phrases are listed by
-- indexing.keep_vocabulary (after the migrations, under their lock): the search vocabulary's, each counted once.
CREATE TABLE term_phrases (
    phrase TEXT COLLATE "C" PRIMARY KEY
);
"""),
    (10, "word statistics: the rows and documents holding each lexeme, kept at ingest and removal", """
-- lexeme -> the pages, documents (with a page), cover pages and sections holding it: the sums of its postings'
-- n per kind and the count of its documents' page postings, which search.frequencies read per query for one-word
-- phrases (an index scan over every document holding a common word: 1,660 entries per word and kind at ten times
-- the shared library) and now reads here, one row per word. Added and subtracted (indexing.py) with the rows, in
-- the same transaction, after term_stats and in key order like it (concurrent writers wait, never in a cycle);
-- a lexeme no row holds loses its row. Filled from the postings (re-run safe: the table is recounted).
CREATE TABLE IF NOT EXISTS word_stats (
    lexeme   TEXT COLLATE "C" PRIMARY KEY,
    pages    INTEGER NOT NULL,
    docs     INTEGER NOT NULL,
    covers   INTEGER NOT NULL,
    sections INTEGER NOT NULL
);
DELETE FROM word_stats;
INSERT INTO word_stats (lexeme, pages, docs, covers, sections)
SELECT lexeme, COALESCE(SUM(n) FILTER (WHERE kind = 'pages'), 0), COUNT(*) FILTER (WHERE kind = 'pages'),
       COALESCE(SUM(n) FILTER (WHERE kind = 'covers'), 0), COALESCE(SUM(n) FILTER (WHERE kind = 'sections'), 0)
  FROM postings GROUP BY lexeme ORDER BY lexeme;
"""),
    (11, "FTS5's Porter stems (made in the engine) in place of snowball English; the text index made again", _porter),
    (12, "each section's length in characters, stored (text_len): read with its ref, not counted per query", """
-- SectionRef.text_len, which every search of sections reads for its hits and the sections on its pages: length()
-- of a UTF-8 text walks it character by character (2 us a section of the shared filings; 2.5 ms for a filing's
-- 626 sections, read ahead with a query's first counts). Stored (computed by the server when a row is written:
-- nothing in the write path changes); the table rewritten once.
ALTER TABLE sections ADD COLUMN IF NOT EXISTS text_len INTEGER GENERATED ALWAYS AS (length(text)) STORED;
"""),
]


def migrate(conn: Any) -> int:
    """Apply pending migrations (each in its own transaction) under the advisory lock; returns the version.
    `conn` is an autocommit psycopg connection."""
    conn.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
    try:
        conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                     "description TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
        version = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()[0]
        known = MIGRATIONS[-1][0]
        if version > known:
            raise Internal(f"this KB has schema version {version}, newer than this jsonl-engine knows ({known}): "
                           "upgrade jsonl-engine to use it")
        for number, description, sql in MIGRATIONS:
            if number <= version:
                continue
            with conn.transaction():
                if callable(sql):
                    sql(conn)
                else:
                    conn.execute(sql)
                conn.execute("INSERT INTO schema_migrations (version, description) VALUES (%s, %s)",
                             (number, description))
            version = number
        from jsonl_engine.store.postgres import indexing  # numpy and the search path: only once migrated

        indexing.keep_vocabulary(conn)
        return version
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))
