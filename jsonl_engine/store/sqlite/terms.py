"""Term statistics of the SQLite text index, kept at ingest and removal: per kind ("pages", "covers", "sections"),
each FTS5 token and each pair of adjacent tokens (a two-word phrase), the rows holding it, and for pages the
documents holding it. A query's one- and two-word phrases read their counts here (one statement) instead of
counting their matches over the whole index (a pass over each phrase's doclist, 6-80 ms a phrase at 265k pages).

The counts are exactly FTS5's: the tokens are the ones FTS5 indexed, made by the same SQLite library's FTS5
tokenizer (TOKENIZE, the tables' own) from the same text, and a phrase "a b" is in a row when b follows a in one
of its columns, as FTS5 matches it. With APSW the tokenizer is called directly; with `sqlite3` a private in-memory
FTS5 table tokenizes the text (its `fts5vocab` instance table lists the tokens with their offsets). A phrase is
tokenized the same way (`phrase_tokens`): one or two tokens read their counts, a key never written counts 0; any
other phrase is counted on the index as before.

Written in the transaction that writes (or deletes) the document's rows: a rolled-back ingest leaves no counts.
A key no row holds any more is deleted at removal: a removed document's words do not stay in the KB file.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from jsonl_engine.store.sqlite import driver
from jsonl_engine.store.sqlite.driver import Connection
from jsonl_engine.store.types import COVER_PAGES, TERM_STATS_COLUMN, Phrase

TOKENIZER, TOKENIZER_ARGS = "porter", ("unicode61", "remove_diacritics", "2")  # migrations.py's tables' tokenize
Counts = dict[str, tuple[int, int, int, int]]  # "token" or "token token" -> (pages, documents, covers, sections)

_local = threading.local()


def _apsw_tokenizer() -> Any:
    tok = getattr(_local, "apsw", None)
    if tok is None:
        conn = driver.apsw.Connection(":memory:")
        tok = conn.fts5_tokenizer(TOKENIZER, list(TOKENIZER_ARGS))
        _local.apsw, _local.apsw_conn = tok, conn
    return tok


def _memory() -> Any:
    """This thread's private `sqlite3` in-memory database with an FTS5 table to tokenize text with."""
    conn = getattr(_local, "memory", None)
    if conn is None:
        import sqlite3

        conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(c, tokenize = '{TOKENIZER} {' '.join(TOKENIZER_ARGS)}')")
        conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
        _local.memory = conn
    return conn


def tokenize(texts: Sequence[str]) -> list[list[str]]:
    """Each text's FTS5 tokens, in order, as the index holds them."""
    if driver.APSW:
        tok, flags = _apsw_tokenizer(), driver.apsw.FTS5_TOKENIZE_DOCUMENT
        return [tok(t.encode("utf-8"), flags, None, include_offsets=False, include_colocated=False) if t else []
                for t in texts]
    conn = _memory()
    out: list[list[str]] = [[] for _ in texts]
    conn.execute("BEGIN")
    try:
        conn.executemany("INSERT INTO t (rowid, c) VALUES (?, ?)", [(i, t) for i, t in enumerate(texts) if t])
        last: tuple[int, int] = (-1, -1)
        for doc, offset, term in conn.execute("SELECT doc, offset, term FROM v ORDER BY doc, offset"):
            if (doc, offset) == last:  # a colocated token (none with these tokenizers): FTS5 matches either
                raise ValueError("colocated FTS5 tokens are not supported")
            out[doc].append(term)
            last = (doc, offset)
    finally:
        conn.execute("ROLLBACK")
    return out


def _keys(tokens: list[str]) -> set[str]:
    keys = set(tokens)
    keys.update(map(" ".join, zip(tokens, tokens[1:], strict=False)))
    return keys


def document_counts(pages: Iterable[tuple[int, str]], sections: Iterable[tuple[str, str, str]]) -> Counts:
    """key -> (pages, documents, covers, sections) holding it, of one document: its pages as (number, text), its
    sections as (title, ancestors, text), the columns of their FTS rows."""
    pages, sections = list(pages), list(sections)
    in_pages: collections.Counter[str] = collections.Counter()
    in_covers: collections.Counter[str] = collections.Counter()
    in_sections: collections.Counter[str] = collections.Counter()
    for (number, _), tokens in zip(pages, tokenize([t for _, t in pages]), strict=True):
        keys = _keys(tokens)
        in_pages.update(keys)
        if number <= COVER_PAGES:
            in_covers.update(keys)
    flat = tokenize([t for row in sections for t in row])
    for i in range(len(sections)):
        keys = _keys(flat[3 * i])
        keys.update(_keys(flat[3 * i + 1]), _keys(flat[3 * i + 2]))
        in_sections.update(keys)
    return {k: (in_pages[k], 1 if k in in_pages else 0, in_covers[k], in_sections[k])
            for k in in_pages.keys() | in_sections.keys()}


_ADD = ("INSERT INTO term_stats (term, pages, docs, covers, sections) VALUES (?, ?, ?, ?, ?) ON CONFLICT (term) "
        "DO UPDATE SET pages = pages + excluded.pages, docs = docs + excluded.docs, covers = covers + excluded.covers, "
        "sections = sections + excluded.sections")


def add(conn: Connection, counts: Counts, sign: int = 1) -> None:
    """Add (sign 1) or subtract (sign -1) a document's counts, in key order (the table's: fewer pages touched)."""
    conn.executemany(_ADD, [(k, *(sign * n for n in counts[k])) for k in sorted(counts)])
    if sign < 0:  # a term no document holds any more leaves the file: a removed document's words do not stay
        conn.executemany("DELETE FROM term_stats WHERE term = ? AND pages = 0 AND docs = 0 AND covers = 0 "
                         "AND sections = 0", [(k,) for k in sorted(counts)])


def stored(conn: Connection, document_id: str) -> Counts:
    """A stored document's counts, from its rows' text (to subtract them when it is removed)."""
    pages = [(r[0], r[1]) for r in conn.execute("SELECT number, text FROM pages WHERE document_id = ?", (document_id,))]
    sections = [(r[0], r[1], r[2]) for r in conn.execute(
        "SELECT title, ancestors, text FROM sections WHERE document_id = ?", (document_id,))]
    return document_counts(pages, sections)


def fill(conn: Connection) -> None:
    """Every stored document's counts (the migration that adds the table)."""
    for (doc,) in conn.execute("SELECT id FROM documents ORDER BY rowid").fetchall():
        add(conn, stored(conn, doc))


def phrase_tokens(phrases: Sequence[Phrase]) -> dict[Phrase, tuple[str, ...]]:
    """Each phrase's FTS5 tokens, as a MATCH of the phrase (search.quote) makes them."""
    return {p: tuple(t) for p, t in zip(phrases, tokenize([" ".join(p) for p in phrases]), strict=True)}


def keys(tokens: tuple[str, ...]) -> list[str]:
    """The statistics' keys a phrase's count reads: the phrase itself (one or two tokens), else each pair of its
    adjacent tokens (a row holding the phrase holds each of them, in the same column)."""
    if 1 <= len(tokens) <= 2:
        return [" ".join(tokens)]
    return list(map(" ".join, zip(tokens, tokens[1:], strict=False)))


def count(tokens: tuple[str, ...], found: dict[str, int], counted: Callable[[], int]) -> int:
    """A phrase's count from the looked-up keys (`lookup`), or `counted()` on the index: a phrase of three tokens
    or more with no pair missing (or of none, which FTS5 resolves itself)."""
    if 1 <= len(tokens) <= 2:
        return found[" ".join(tokens)]
    if any(found[k] == 0 for k in keys(tokens)):
        return 0
    return counted()


def lookup(conn: Connection, kind: str, keys: Sequence[str]) -> dict[str, int]:
    """key -> rows of `kind` holding it ("documents": documents with a page holding it); 0 when never written."""
    wanted = sorted(set(keys))
    found = {r[0]: r[1] for r in conn.execute(
        f"SELECT term, {TERM_STATS_COLUMN[kind]} FROM term_stats WHERE term IN ({','.join('?' * len(wanted))})",
        wanted)} if wanted else {}
    return {k: found.get(k, 0) for k in keys}
