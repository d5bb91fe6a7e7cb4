"""Ordered schema migrations, recorded in `schema_migrations`. Opening an older KB applies the missing ones.

Append new migrations at the end; never edit one that has shipped.
"""

from __future__ import annotations

from collections.abc import Callable

from jsonl_engine.errors import Internal
from jsonl_engine.store.sqlite import driver, terms
from jsonl_engine.store.sqlite.driver import Connection

MIGRATIONS: list[tuple[int, str, str]] = [
    (1, "documents, sections, pages and their FTS5 indexes", """
CREATE TABLE documents (
    id          TEXT PRIMARY KEY,
    title       TEXT NOT NULL,
    path        TEXT,
    media_type  TEXT NOT NULL,
    sha256      TEXT NOT NULL,
    pages       INTEGER NOT NULL,
    sections    INTEGER NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('approved', 'draft', 'contested', 'archived')),
    ingested_at TEXT NOT NULL,
    warnings    TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX documents_path ON documents(path);
CREATE INDEX documents_sha256 ON documents(sha256);

CREATE TABLE sections (
    rowid       INTEGER PRIMARY KEY,
    id          TEXT NOT NULL UNIQUE,
    document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    parent_id   TEXT REFERENCES sections(id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,
    depth       INTEGER NOT NULL,
    ordinal     INTEGER NOT NULL,
    title       TEXT NOT NULL,
    ancestors   TEXT NOT NULL DEFAULT '[]',
    page_start  INTEGER NOT NULL,
    page_end    INTEGER NOT NULL,
    is_leaf     INTEGER NOT NULL,
    text        TEXT NOT NULL DEFAULT '',
    page_map    TEXT NOT NULL DEFAULT '[]',
    summary     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX sections_document ON sections(document_id, position);
CREATE INDEX sections_parent ON sections(parent_id);
CREATE INDEX sections_pages ON sections(document_id, page_start);

CREATE TABLE pages (
    rowid       INTEGER PRIMARY KEY,
    document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    number      INTEGER NOT NULL,
    text        TEXT NOT NULL,
    UNIQUE (document_id, number)
);

CREATE VIRTUAL TABLE sections_fts USING fts5(
    title, ancestors, text, content='sections', content_rowid='rowid',
    tokenize = "porter unicode61 remove_diacritics 2"
);
CREATE TRIGGER sections_fts_insert AFTER INSERT ON sections BEGIN
    INSERT INTO sections_fts(rowid, title, ancestors, text)
    VALUES (new.rowid, new.title, new.ancestors, new.text);
END;
CREATE TRIGGER sections_fts_delete AFTER DELETE ON sections BEGIN
    INSERT INTO sections_fts(sections_fts, rowid, title, ancestors, text)
    VALUES ('delete', old.rowid, old.title, old.ancestors, old.text);
END;

CREATE TRIGGER sections_fts_update AFTER UPDATE OF title, ancestors, text ON sections BEGIN
    INSERT INTO sections_fts(sections_fts, rowid, title, ancestors, text)
    VALUES ('delete', old.rowid, old.title, old.ancestors, old.text);
    INSERT INTO sections_fts(rowid, title, ancestors, text) VALUES (new.rowid, new.title, new.ancestors, new.text);
END;

CREATE VIRTUAL TABLE pages_fts USING fts5(
    text, content='pages', content_rowid='rowid', tokenize = "porter unicode61 remove_diacritics 2"
);
CREATE TRIGGER pages_fts_insert AFTER INSERT ON pages BEGIN
    INSERT INTO pages_fts(rowid, text) VALUES (new.rowid, new.text);
END;
CREATE TRIGGER pages_fts_delete AFTER DELETE ON pages BEGIN
    INSERT INTO pages_fts(pages_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
END;

-- The first pages (cover, first page of a release) name the issuer and period: the document prior.
-- Contentless (it indexes a subset of pages; rowid = pages.rowid), so integrity-check sees no missing rows.
CREATE VIRTUAL TABLE covers_fts USING fts5(
    text, content='', tokenize = "porter unicode61 remove_diacritics 2"
);
CREATE TRIGGER covers_fts_insert AFTER INSERT ON pages WHEN new.number <= 2 BEGIN
    INSERT INTO covers_fts(rowid, text) VALUES (new.rowid, new.text);
END;
CREATE TRIGGER covers_fts_delete AFTER DELETE ON pages WHEN old.number <= 2 BEGIN
    INSERT INTO covers_fts(covers_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
END;
"""),
    (2, "index a document's FTS rows in bulk at insert, not row by row from triggers", """
-- Writing the 30 dev filings took 1.9-2.0 s of CPU with a trigger-fired FTS insert per row, 0.93 s with one
-- INSERT ... SELECT per document and index (SqliteStore._write_text does that now). Delete and update stay on triggers.
DROP TRIGGER sections_fts_insert;
DROP TRIGGER pages_fts_insert;
DROP TRIGGER covers_fts_insert;
"""),
    (3, "document cards: derived fields (card, JSON; NULL until derived) and the user's values (meta, JSON)", """
-- documents.title becomes the card's title (the user's, else the derived one). Documents written before this
-- version get their cards derived from their stored pages when the KB is opened (identity/card.fill_missing).
ALTER TABLE documents ADD COLUMN card TEXT;
ALTER TABLE documents ADD COLUMN meta TEXT NOT NULL DEFAULT '{}';
CREATE INDEX documents_title ON documents(title);
"""),
    (4, "statement pages: each document's pages that hold a primary financial statement (JSON; NULL until judged)", """
-- {"page number": "income" | "balance" | "cash_flow"} (identity/statements.py judges them once); documents written
-- before this version are judged from their stored pages when the KB is opened (identity/statements.fill_missing).
ALTER TABLE documents ADD COLUMN statements TEXT;
"""),
    (5, "FTS5 'merge' commands merge any level holding two b-tree segments (usermerge=2)", """
-- Each search statement reads every segment of its index; after a batch of writes the store merges them
-- (Store.tidy_indexes, search.merge_segments). Automatic merges during writes keep FTS5's default (4).
INSERT INTO pages_fts(pages_fts, rank) VALUES ('usermerge', 2);
INSERT INTO sections_fts(sections_fts, rank) VALUES ('usermerge', 2);
INSERT INTO covers_fts(covers_fts, rank) VALUES ('usermerge', 2);
"""),
    (6, "OCR: the words of the pages read by OCR, with their boxes, and each document's list of those pages", """
-- words: [[start, end, line, left, bottom, right, top], ...] (ingest/ocr.py), offsets into the page's text and
-- boxes in PDF points: a citation on a scanned page gets its boxes here, the file has no text layer there.
CREATE TABLE page_words (
    document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    number      INTEGER NOT NULL,
    words       TEXT NOT NULL,
    PRIMARY KEY (document_id, number)
);
ALTER TABLE documents ADD COLUMN ocr_pages TEXT NOT NULL DEFAULT '[]';
"""),
    (7, "term statistics: rows (and documents) holding each token and each pair of adjacent tokens, per kind", """
-- term: one FTS5 token, or two adjacent ones separated by a space -> the pages, documents (with a page), cover pages
-- and sections holding it. Written with the rows, subtracted at removal (terms.py); a query's one- and two-word
-- phrases read their counts here instead of counting them on the index. The migration fills it from the stored
-- rows (terms.fill, in the same transaction). One row per term for every kind: half the writes of a row per kind.
CREATE TABLE term_stats (
    term     TEXT PRIMARY KEY,
    pages    INTEGER NOT NULL,
    docs     INTEGER NOT NULL,
    covers   INTEGER NOT NULL,
    sections INTEGER NOT NULL
) WITHOUT ROWID;
"""),
    (8, "term statistics: the phrases of three tokens or more whose counts are kept too", """
-- phrase: FTS5 tokens separated by spaces. Each listed phrase is a key of term_stats, added and subtracted with the
-- rows like a pair (terms.py); the writer lists the search vocabulary's long phrases when it opens the KB
-- (terms.keep_vocabulary), counting each once on the index. Other long phrases are counted on the index per query.
CREATE TABLE term_phrases (
    phrase TEXT PRIMARY KEY
) WITHOUT ROWID;
"""),
    (9, "section refs: what ranking reads of each section, its text's length instead of its text", """
-- One row per row of sections (the same rowid): a section as ranking sees it (store.types.SectionRef), the length
-- of its text, and an internal node's page map (NULL for a leaf). A query reads these for its section hits and the
-- sections on its best pages: rows of about 230 bytes, many to a page of the file, instead of the sections' rows
-- (their text, 1.4 kB on average), each a page of its own and its length counted character by character.
-- Written with the sections and deleted before them (SqliteStore._write_text, _delete_text).
CREATE TABLE section_refs (
    rowid       INTEGER PRIMARY KEY,
    id          TEXT NOT NULL,
    document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    title       TEXT NOT NULL,
    ancestors   TEXT NOT NULL,
    page_start  INTEGER NOT NULL,
    page_end    INTEGER NOT NULL,
    text_len    INTEGER NOT NULL,
    own_map     TEXT
);
INSERT INTO section_refs SELECT rowid, id, document_id, title, ancestors, page_start, page_end, length(text),
    CASE WHEN is_leaf THEN NULL ELSE page_map END FROM sections ORDER BY rowid;
CREATE INDEX section_refs_pages ON section_refs(document_id, page_start);
"""),
]
# Migrations with a step that SQL cannot do, run after their SQL in the same transaction.
STEPS: dict[int, Callable[[Connection], None]] = {7: terms.fill}


def current_version(conn: Connection) -> int:
    conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations ("
                 "version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at TEXT NOT NULL)")
    row = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
    return row[0] or 0


def migrate(conn: Connection) -> int:
    """Apply pending migrations, each in its own transaction. Returns the resulting version."""
    version = current_version(conn)
    known = MIGRATIONS[-1][0]
    if version > known:  # an older engine would write rows the newer schema does not expect (e.g. FTS rows)
        raise Internal(f"this KB has schema version {version}, newer than this jsonl-engine knows ({known}): "
                       "upgrade jsonl-engine to use it")
    for number, description, sql in MIGRATIONS:
        if number <= version:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            if _applied(conn, number):  # another process (a second daemon on this KB) got there first
                conn.execute("COMMIT")
                version = number
                continue
            for statement in _statements(sql):
                conn.execute(statement)
            if number in STEPS:
                STEPS[number](conn)
            conn.execute("INSERT INTO schema_migrations VALUES (?, ?, datetime('now'))", (number, description))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        version = number
    return version


def _applied(conn: Connection, number: int) -> bool:
    return conn.execute("SELECT 1 FROM schema_migrations WHERE version = ?", (number,)).fetchone() is not None


def _statements(sql: str) -> list[str]:
    """Split a migration script into statements; trigger bodies contain `;` so split on complete statements."""
    statements, buffer = [], ""
    for line in sql.strip().splitlines(keepends=True):
        buffer += line
        if driver.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements
