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

Longer phrases are kept for a list, `term_phrases` (migration 8): the phrases of three tokens or more of the
engine's search vocabulary (jsonl_engine/vocabulary.py), which queries ask most and which cost the most to count
(tens of milliseconds a phrase at 265k pages, each kind). A phrase listed there is a key of `term_stats` like a
pair, added and subtracted with the rows (a row holds it when its tokens follow one another in one column, as
FTS5 matches a phrase); a phrase is listed by `keep`, which counts it once on the index in the same transaction,
when the writer opens the KB (`keep_vocabulary`: the phrases of the code's vocabulary not listed yet). Any other
phrase of three tokens or more is counted on the index.
"""

from __future__ import annotations

import collections
import functools
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from jsonl_engine import vocabulary
from jsonl_engine.store.sqlite import driver, search
from jsonl_engine.store.sqlite.driver import Connection
from jsonl_engine.store.types import COVER_PAGES, TERM_STATS_COLUMN, Phrase

TOKENIZER, TOKENIZER_ARGS = "porter", ("unicode61", "remove_diacritics", "2")  # migrations.py's tables' tokenize
Counts = dict[str, tuple[int, int, int, int]]  # "token" or "token token" -> (pages, documents, covers, sections)
Kept = list[tuple[str, tuple[str, ...]]]  # the listed phrases: (key, the keys of its pairs)

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


def _pairs(tokens: Sequence[str]) -> list[str]:
    return list(map(" ".join, zip(tokens, tokens[1:], strict=False)))


def _keys(tokens: list[str], kept: Kept = ()) -> set[str]:
    """The keys one column's tokens hold: each token, each pair, and each listed phrase found in them (its tokens
    in a row: first its pairs, then the phrase itself, space-separated, in the column's tokens so joined)."""
    keys = set(tokens)
    keys.update(_pairs(tokens))
    candidates = [key for key, pairs in kept if keys.issuperset(pairs)]
    if candidates:
        line = f" {' '.join(tokens)} "
        keys.update(key for key in candidates if f" {key} " in line)
    return keys


def document_counts(pages: Iterable[tuple[int, str]], sections: Iterable[tuple[str, str, str]],
                    kept: Kept = ()) -> Counts:
    """key -> (pages, documents, covers, sections) holding it, of one document: its pages as (number, text), its
    sections as (title, ancestors, text), the columns of their FTS rows; `kept`: the listed phrases (`kept`)."""
    pages, sections = list(pages), list(sections)
    in_pages: collections.Counter[str] = collections.Counter()
    in_covers: collections.Counter[str] = collections.Counter()
    in_sections: collections.Counter[str] = collections.Counter()
    for (number, _), tokens in zip(pages, tokenize([t for _, t in pages]), strict=True):
        keys = _keys(tokens, kept)
        in_pages.update(keys)
        if number <= COVER_PAGES:
            in_covers.update(keys)
    flat = tokenize([t for row in sections for t in row])
    for i in range(len(sections)):
        keys = _keys(flat[3 * i], kept)
        keys.update(_keys(flat[3 * i + 1], kept), _keys(flat[3 * i + 2], kept))
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
    return document_counts(pages, sections, kept(conn))


def fill(conn: Connection) -> None:
    """Every stored document's counts (the migration that adds the table: no phrase is listed yet)."""
    for (doc,) in conn.execute("SELECT id FROM documents ORDER BY rowid").fetchall():
        add(conn, stored(conn, doc))


def _listing(conn: Connection) -> bool:
    """Whether the KB has the list of kept phrases (migration 8; migration 7's `fill` runs before it)."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'term_phrases'").fetchone() \
        is not None


def kept(conn: Connection) -> Kept:
    """The phrases whose counts the statistics keep, with their pairs' keys (read in the writing transaction)."""
    if not _listing(conn):
        return []
    return [(key, tuple(_pairs(key.split(" ")))) for (key,) in conn.execute("SELECT phrase FROM term_phrases")]


def keep(conn: Connection, phrases: Sequence[Phrase]) -> list[str]:
    """Keep the counts of these phrases (those of three tokens or more, not kept yet) from now on: each counted
    once on the index, in every kind, inside the caller's write transaction (so no write comes between the count
    and the listing), added to the statistics and listed. Returns the keys listed."""
    have = {key for key, _ in kept(conn)}
    new: dict[str, Phrase] = {}
    for phrase, tokens in phrase_tokens(list(dict.fromkeys(phrases))).items():
        key = " ".join(tokens)
        if len(tokens) >= 3 and key not in have:
            new.setdefault(key, phrase)
    if not new:
        return []
    spans = functools.cache(lambda: search.page_spans(conn))  # read once, when a phrase is in many documents
    counts: Counts = {}
    for key, phrase in new.items():  # counted from the phrase as a query writes it (search.quote), as before
        n = (search.frequency(conn, "pages", phrase), search.document_frequency(conn, phrase, spans),
             search.frequency(conn, "covers", phrase), search.frequency(conn, "sections", phrase))
        if any(n):
            counts[key] = n
    add(conn, counts)
    conn.executemany("INSERT INTO term_phrases (phrase) VALUES (?)", [(key,) for key in sorted(new)])
    return sorted(new)


def vocabulary_phrases() -> list[Phrase]:
    """The search vocabulary's phrases (jsonl_engine/vocabulary.py) as queries ask them (retrieval/query.py)."""
    return [tuple(p.split()) for p in vocabulary.PHRASES]


def keep_vocabulary(conn: Connection) -> list[str]:
    """List the vocabulary's long phrases not listed yet (a KB made before them, or by an engine with a smaller
    vocabulary), in one write transaction of `conn` (the writer, outside a transaction); nothing written when every
    one is listed. Phrases listed but no longer in the vocabulary stay: their counts are still right."""
    wanted = {p: " ".join(tokens) for p, tokens in phrase_tokens(vocabulary_phrases()).items() if len(tokens) >= 3}
    have = {key for key, _ in kept(conn)}
    if have.issuperset(wanted.values()):
        return []
    conn.execute("BEGIN IMMEDIATE")
    try:
        listed = keep(conn, list(wanted))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return listed


def phrase_tokens(phrases: Sequence[Phrase]) -> dict[Phrase, tuple[str, ...]]:
    """Each phrase's FTS5 tokens, as a MATCH of the phrase (search.quote) makes them."""
    return {p: tuple(t) for p, t in zip(phrases, tokenize([" ".join(p) for p in phrases]), strict=True)}


def keys(tokens: tuple[str, ...]) -> list[str]:
    """The statistics' keys a phrase's count reads: the phrase itself, and for three tokens or more each pair of
    its adjacent tokens (a row holding the phrase holds each of them, in the same column)."""
    if not tokens:
        return []
    return [" ".join(tokens), *(_pairs(tokens) if len(tokens) > 2 else [])]


def count(tokens: tuple[str, ...], found: dict[str, int], counted: Callable[[], int],
          listed: frozenset[str] | set[str] = frozenset()) -> int:
    """A phrase's count from the looked-up keys (`lookup`; `listed`: the phrases of `term_phrases` among them,
    `listed_among`), or `counted()` on the index: a phrase of three tokens or more neither listed nor with a pair
    missing (or of no token, which FTS5 resolves itself)."""
    key = " ".join(tokens)
    if 1 <= len(tokens) <= 2 or key in listed:
        return found[key]
    if any(found[k] == 0 for k in keys(tokens)[1:]):
        return 0
    return counted()


def listed_among(conn: Connection, keys: Sequence[str]) -> set[str]:
    """Which of these keys are listed phrases (their counts kept)."""
    wanted = sorted({k for k in keys if k.count(" ") >= 2})
    if not wanted:
        return set()
    return {r[0] for r in conn.execute(
        f"SELECT phrase FROM term_phrases WHERE phrase IN ({','.join('?' * len(wanted))})", wanted)}


def lookup(conn: Connection, kind: str, keys: Sequence[str]) -> dict[str, int]:
    """key -> rows of `kind` holding it ("documents": documents with a page holding it); 0 when never written."""
    wanted = sorted(set(keys))
    found = {r[0]: r[1] for r in conn.execute(
        f"SELECT term, {TERM_STATS_COLUMN[kind]} FROM term_stats WHERE term IN ({','.join('?' * len(wanted))})",
        wanted)} if wanted else {}
    return {k: found.get(k, 0) for k in keys}
