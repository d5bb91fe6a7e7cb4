"""What a document's rows add to the PostgreSQL text index, computed in the store from the rows' tsvectors (sent
back by the statements inserting the rows, in `tsvectorsend`'s binary form): its postings (migration 7) and the
counts of its pairs of adjacent lexemes (term_stats, migration 8). The SQL functions `write_postings(doc)` and
`term_pairs(doc)` define the same rows over the stored tsvectors (migrations run them on documents stored before
them; the tests recount with them): here they come from whole-array operations (numpy) over the document's
positions instead of per-row SQL (unnest, a self-join on positions, ordered aggregates), and are written with one
COPY and one statement, not per row.

A tsvector in binary: the entry count (int4), then per entry (lexemes in byte order) the lexeme, a NUL, its count
of positions (int2) and the positions (uint16 each, ascending: weight label << 14 | position, A=3 .. D=0, the
position capped at 16383, where lexemes may share one).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any, NamedTuple

from jsonl_engine import vocabulary
from jsonl_engine.store.postgres import search
from jsonl_engine.store.postgres.text import CONFIG, section_words, stems

COVER_PAGES = 2  # the 'covers' kind: pages numbered up to this (migration 7's `number <= 2`)
_KEY_LAST = 0x3FFF  # the highest position a tsvector holds


def _numpy() -> Any:
    """numpy (required when the store is opened, search.require_numpy), imported at the first write."""
    return importlib.import_module("numpy")


class Row(NamedTuple):
    """One indexed row: its rowid, token count, page number (0 for a section) and tsvector (tsvectorsend)."""

    rowid: int
    ntok: int
    number: int
    tsv: bytes


class Entries(NamedTuple):
    """The tsvector entries of a document's rows, row by row: per entry its row (index into the rows), lexeme (an
    index into `lexemes`) and positions (a slice of `raw`, from `start`, `count` long)."""

    lexemes: list[str]
    row: Any  # numpy int64 arrays, one item per entry
    lexeme: Any
    start: Any
    count: Any
    raw: Any  # numpy uint16: every entry's positions, in entry order


def entries(rows: Sequence[Row]) -> Entries:
    """Parse the rows' tsvectors."""
    np = _numpy()
    buf = b"".join(r.tsv for r in rows)
    ids: dict[bytes, int] = {}
    get = ids.get
    lex_of: list[int] = []
    starts: list[int] = []
    counts: list[int] = []
    per_row = []
    base = 0
    for row in rows:
        n = int.from_bytes(buf[base:base + 4], "big")
        per_row.append(n)
        at = base + 4
        for _ in range(n):
            end = buf.index(0, at)
            word = buf[at:end]
            k = get(word)
            if k is None:
                k = ids[word] = len(ids)
            lex_of.append(k)
            npos = (buf[end + 1] << 8) | buf[end + 2]
            at = end + 3
            starts.append(at)
            counts.append(npos)
            at += 2 * npos
        base += len(row.tsv)
    count = np.array(counts, dtype=np.int64)
    byte = np.frombuffer(buf, dtype=np.uint8)
    first = _gather(np.array(starts, dtype=np.int64), count, 2)  # each position's first byte
    raw = (byte[first].astype(np.uint16) << 8) | byte[first + 1]
    start = np.cumsum(count) - count
    return Entries([w.decode() for w in ids], np.repeat(np.arange(len(rows), dtype=np.int64), per_row),
                   np.array(lex_of, dtype=np.int64), start, count, raw)


def _gather(start: Any, count: Any, step: int = 1) -> Any:
    """The indexes start[0], start[0] + step, .. (count[0] of them), then start[1], .., concatenated."""
    np = _numpy()
    begins = np.cumsum(count) - count
    return step * np.arange(int(count.sum()), dtype=np.int64) + np.repeat(start - step * begins, count)


def postings(document_id: str, rows: Sequence[Row], parsed: Entries, kind: str,
             chosen: Any) -> list[tuple[str, str, str, int, bytes]]:
    """The postings rows of `kind` (write_postings' layout, search.Posting reads it): per lexeme, its entries of
    the `chosen` rows (a boolean per row) in rowid order: rowids (int8), token counts (int4), page numbers (int4),
    position counts (int2), then each row's positions (int2: position * 4 + weight label - 32768), big-endian."""
    np = _numpy()
    keep = np.flatnonzero(chosen[parsed.row])
    if not len(keep):
        return []
    rowids = np.array([r.rowid for r in rows], dtype=np.int64)
    order = keep[np.lexsort((rowids[parsed.row[keep]], parsed.lexeme[keep]))]  # by lexeme, then rowid
    lex = parsed.lexeme[order]
    bounds = np.flatnonzero(np.diff(lex)) + 1
    firsts = np.concatenate(([0], bounds))
    lasts = np.concatenate((bounds, [len(order)]))
    row = parsed.row[order]
    count = parsed.count[order]
    ids = rowids[row].astype(">i8").tobytes()
    ntoks = np.array([r.ntok for r in rows], dtype=np.int64)[row].astype(">i4").tobytes()
    numbers = np.array([r.number for r in rows], dtype=np.int64)[row].astype(">i4").tobytes()
    counts = count.astype(">i2").tobytes()
    raw = parsed.raw[_gather(parsed.start[order], count)].astype(np.int32)
    codes = (((raw & _KEY_LAST) << 2) | (raw >> 14)) - 32768
    positions = codes.astype(">i2").tobytes()
    pos_at = np.concatenate(([0], np.cumsum(count)))
    out = []
    for a, b, k in zip(firsts.tolist(), lasts.tolist(), lex[firsts].tolist(), strict=True):
        p, q = int(pos_at[a]), int(pos_at[b])
        data = b"".join((ids[8 * a:8 * b], ntoks[4 * a:4 * b], numbers[4 * a:4 * b], counts[2 * a:2 * b],
                         positions[2 * p:2 * q]))
        out.append((kind, parsed.lexemes[k], document_id, b - a, data))
    return out


class Pairs(NamedTuple):
    """A document's term pairs: the terms ("a b") in key order, and per term its counts of page rows, documents
    (1 when a page row holds it, else 0), cover page rows and section rows (a numpy int64 array, 4 per term)."""

    terms: list[str]
    counts: Any


def term_pairs(rows: Sequence[Row], parsed: Entries, is_page: Any) -> Pairs:
    """term_pairs(doc) (migration 8) from the parsed rows: each pair of lexemes "a b" with b at the next position
    of a in the same row and field (weight label), with the rows of each kind holding it (`is_page`: page rows;
    cover pages are page rows numbered up to COVER_PAGES)."""
    np = _numpy()
    if not len(parsed.row):
        return Pairs([], np.zeros((0, 4), dtype=np.int64))
    raw = parsed.raw.astype(np.int64)
    key = (np.repeat(parsed.row, parsed.count) << 16) | raw  # row, weight label, position: raw is label << 14 | p
    lex = np.repeat(parsed.lexeme, parsed.count)
    order = np.argsort(key)
    key, lex = key[order], lex[order]
    # each occurrence pairs with every occurrence one position on, in the same row and weight (several lexemes
    # may share the capped last position): found by a binary search of the next key
    target = key + 1
    lo = np.searchsorted(key, target, "left")
    n = np.searchsorted(key, target, "right") - lo
    n[(key & _KEY_LAST) == _KEY_LAST] = 0
    a = np.repeat(np.arange(len(key), dtype=np.int64), n)
    b = _gather(lo, n)
    nrows, nlex = len(rows), len(parsed.lexemes)
    if nlex * nlex * nrows >= 1 << 62:  # pragma: no cover (a document far beyond any filing)
        raise ValueError("too many distinct words and rows in one document for the term statistics")
    # lexemes numbered in code point order: then the order of (a, b) is the order of "a b" (no lexeme holds a
    # character at or below the space), the C collation's: term_stats' key order
    words = sorted(parsed.lexemes)
    rank = np.empty(nlex, dtype=np.int64)
    rank[np.array(sorted(range(nlex), key=parsed.lexemes.__getitem__), dtype=np.int64)] = np.arange(nlex)
    lex = rank[lex]
    # distinct (term, row), term = a * nlex + b; then per term the rows of each kind
    pair = np.sort((lex[a] * nlex + lex[b]) * nrows + (key[a] >> 16))
    pair = pair[np.concatenate(([True], pair[1:] != pair[:-1]))]
    term, row = pair // nrows, pair % nrows
    starts = np.flatnonzero(np.concatenate(([True], term[1:] != term[:-1])))
    page = is_page[row]
    cover = page & (np.array([r.number for r in rows], dtype=np.int64)[row] <= COVER_PAGES)
    counts = np.empty((len(starts), 4), dtype=np.int64)
    counts[:, 0] = np.add.reduceat(page.astype(np.int64), starts)
    counts[:, 1] = counts[:, 0] > 0
    counts[:, 2] = np.add.reduceat(cover.astype(np.int64), starts)
    counts[:, 3] = np.diff(np.concatenate((starts, [len(term)]))) - counts[:, 0]
    firsts = [w + " " for w in words]
    term = term[starts]
    return Pairs([firsts[i] + words[j] for i, j in zip((term // nlex).tolist(), (term % nlex).tolist(),
                                                       strict=True)], counts)


def phrase_counts(rows: Sequence[Row], parsed: Entries, is_page: Any, kept: Sequence[str]) -> Pairs:
    """The listed long phrases (`kept`: keys of term_phrases, migration 9, lexemes space-separated) this document
    holds, counted as term_pairs counts a pair: the rows holding the phrase's lexemes at consecutive positions in
    one row and field (weight label), as the read path matches them (search._phrase_matches: a code plus 4 * k
    is the position k words on in the same field; past the capped last position, none)."""
    np = _numpy()
    ids = {w: i for i, w in enumerate(parsed.lexemes)}
    numbers = np.array([r.number for r in rows], dtype=np.int64)
    found: list[str] = []
    counts: list[Any] = []
    places: dict[str, Any] = {}

    def at_of(word: str) -> Any:
        """The word's places (row << 16 | weight label << 14 | position), sorted (a row's positions are in
        position order, not in label order)."""
        if word not in places:
            e = np.flatnonzero(parsed.lexeme == ids[word])
            n = parsed.count[e]
            places[word] = np.sort((np.repeat(parsed.row[e], n) << 16) | parsed.raw[_gather(parsed.start[e], n)])
        return places[word]

    for phrase in sorted(kept):
        words = phrase.split(" ")
        if any(w not in ids for w in words):
            continue
        at = at_of(words[0])
        at = at[(at & _KEY_LAST) + (len(words) - 1) <= _KEY_LAST]  # the last word's position within the cap
        for j, w in enumerate(words[1:], 1):
            if not at.size:
                break
            held = at_of(w)
            place = np.minimum(np.searchsorted(held, at + j), held.size - 1)
            at = at[held[place] == at + j]
        if not at.size:
            continue
        row = np.unique(at >> 16)
        page = is_page[row]
        n_pages = int(page.sum())
        found.append(phrase)
        counts.append([n_pages, int(n_pages > 0), int((page & (numbers[row] <= COVER_PAGES)).sum()),
                       len(row) - n_pages])
    return Pairs(found, np.array(counts, dtype=np.int64).reshape(-1, 4))


def _merged(*parts: Pairs) -> Pairs:
    """Several documents' term counts as one, in key order (the keys are distinct)."""
    np = _numpy()
    terms = [t for p in parts for t in p.terms]
    counts = np.concatenate([p.counts for p in parts]) if terms else np.zeros((0, 4), dtype=np.int64)
    order = sorted(range(len(terms)), key=terms.__getitem__)
    return Pairs([terms[i] for i in order], counts[np.array(order, dtype=np.int64)] if terms else counts)


# A writer holds term_phrases in ROW SHARE from before it reads the listing until its commit; listing a phrase takes
# EXCLUSIVE (search.keep_phrases): it counts every committed row, then every writer reads it.
def _kept(cur: Any) -> list[str]:
    cur.execute("LOCK TABLE term_phrases IN ROW SHARE MODE")
    return [r[0] for r in cur.execute("SELECT phrase FROM term_phrases")]


_ADD_TERMS = (
    "INSERT INTO term_stats AS s (term, pages, docs, covers, sections) "
    "SELECT t, p, d, c, x FROM unnest(string_to_array(%s, E'\\n'), %s::int[], %s::int[], %s::int[], %s::int[]) "
    "WITH ORDINALITY AS u(t, p, d, c, x, i) ORDER BY i "
    "ON CONFLICT (term) DO UPDATE SET pages = s.pages + excluded.pages, docs = s.docs + excluded.docs,"
    " covers = s.covers + excluded.covers, sections = s.sections + excluded.sections")
_DROP_EMPTY = ("DELETE FROM term_stats WHERE term = ANY(string_to_array(%s, E'\\n'))"
               " AND pages = 0 AND docs = 0 AND covers = 0 AND sections = 0")
_STORED = "SELECT rowid, ntok, {number}, tsvectorsend(tsv) FROM {table} WHERE document_id = %s ORDER BY rowid"


def _kinds(pages: Sequence[Row], sections: Sequence[Row]) -> tuple[list[Row], Any]:
    np = _numpy()
    rows = [*pages, *sections]
    is_page = np.zeros(len(rows), dtype=bool)
    is_page[:len(pages)] = True
    return rows, is_page


def write(conn: Any, document_id: str, pages: Sequence[Row], sections: Sequence[Row]) -> None:
    """A new document's postings (one COPY) and its pairs added to term_stats (one statement)."""
    rows, is_page = _kinds(pages, sections)
    parsed = entries(rows)
    with conn.cursor() as cur:
        _copy_postings(cur, document_id, rows, parsed, is_page)
        _add_terms(cur, _merged(term_pairs(rows, parsed, is_page),
                                phrase_counts(rows, parsed, is_page, _kept(cur))), 1)
        _add_words(cur, word_counts(rows, parsed, is_page), 1)


def _copy_postings(cur: Any, document_id: str, rows: Sequence[Row], parsed: Entries, is_page: Any) -> None:
    """The document's postings of each kind, in one COPY."""
    np = _numpy()
    numbers = np.array([r.number for r in rows], dtype=np.int64)
    with cur.copy("COPY postings (kind, lexeme, document_id, n, data) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(["text", "text", "text", "int4", "bytea"])
        for kind, chosen in (("pages", is_page), ("covers", is_page & (numbers <= COVER_PAGES)),
                             ("sections", ~is_page)):
            for posting in postings(document_id, rows, parsed, kind, chosen):
                copy.write_row(posting)


def subtract(conn: Any, document_id: str) -> None:
    """Before a document's rows are deleted: its pairs subtracted from term_stats, a pair no row holds any more
    deleted (its postings go with the document: ON DELETE CASCADE)."""
    with conn.cursor() as cur:
        kept = _kept(cur)
        pages, sections = ([Row(*r) for r in cur.execute(_STORED.format(table=t, number=n), (document_id,))]
                           for t, n in (("pages", "number"), ("sections", "0")))
        rows, is_page = _kinds(pages, sections)
        parsed = entries(rows)
        terms = _add_terms(cur, _merged(term_pairs(rows, parsed, is_page), phrase_counts(rows, parsed, is_page, kept)),
                           -1)
        if terms:
            cur.execute(_DROP_EMPTY, (terms,))
        words = _add_words(cur, word_counts(rows, parsed, is_page), -1)
        if words:
            cur.execute(_DROP_EMPTY_WORDS, (words,))


def word_counts(rows: Sequence[Row], parsed: Entries, is_page: Any) -> Pairs:
    """The document's lexemes (word_stats, migration 10) in key order, each with its counts of page rows,
    documents (1 when a page row holds it), cover page rows and section rows: what its postings of each kind
    add to the sums of their n (a tsvector holds a lexeme once per row: one entry is one row)."""
    np = _numpy()
    nlex = len(parsed.lexemes)
    if not nlex:
        return Pairs([], np.zeros((0, 4), dtype=np.int64))
    page = is_page[parsed.row]
    cover = page & (np.array([r.number for r in rows], dtype=np.int64)[parsed.row] <= COVER_PAGES)
    counts = np.empty((nlex, 4), dtype=np.int64)
    counts[:, 0] = np.bincount(parsed.lexeme, weights=page, minlength=nlex)
    counts[:, 1] = counts[:, 0] > 0
    counts[:, 2] = np.bincount(parsed.lexeme, weights=cover, minlength=nlex)
    counts[:, 3] = np.bincount(parsed.lexeme, weights=~page, minlength=nlex)
    order = sorted(range(nlex), key=parsed.lexemes.__getitem__)  # code point order: the C collation's
    return Pairs([parsed.lexemes[i] for i in order], counts[np.array(order, dtype=np.int64)])


_ADD_WORDS = (
    "INSERT INTO word_stats AS s (lexeme, pages, docs, covers, sections) "
    "SELECT t, p, d, c, x FROM unnest(string_to_array(%s, E'\\n'), %s::int[], %s::int[], %s::int[], %s::int[]) "
    "WITH ORDINALITY AS u(t, p, d, c, x, i) ORDER BY i "
    "ON CONFLICT (lexeme) DO UPDATE SET pages = s.pages + excluded.pages, docs = s.docs + excluded.docs,"
    " covers = s.covers + excluded.covers, sections = s.sections + excluded.sections")
_DROP_EMPTY_WORDS = ("DELETE FROM word_stats WHERE lexeme = ANY(string_to_array(%s, E'\\n'))"
                     " AND pages = 0 AND docs = 0 AND covers = 0 AND sections = 0")


def _add_words(cur: Any, words: Pairs, sign: int) -> str:
    """The lexemes' counts times `sign` added to word_stats, in key order (as _add_terms, after it); returns the
    lexemes, one a line."""
    if not words.terms:
        return ""
    text = "\n".join(words.terms)
    cur.execute(_ADD_WORDS, (text, *("{" + ",".join(map(str, c)) + "}" for c in (sign * words.counts).T.tolist())))
    return text


def _add_terms(cur: Any, pairs: Pairs, sign: int) -> str:
    """The pairs' counts times `sign` added to term_stats, in key order (concurrent writers of a common pair wait
    for each other's commit, never in a cycle); returns the terms, one a line (sent as text: a lexeme holds no
    white space, and one string and array literals cost a fraction of psycopg's arrays of 40,000 items)."""
    if not pairs.terms:
        return ""
    terms = "\n".join(pairs.terms)
    cur.execute(_ADD_TERMS, (terms, *("{" + ",".join(map(str, c)) + "}" for c in (sign * pairs.counts).T.tolist())))
    return terms


def keep_vocabulary(conn: Any) -> list[str]:
    """List the search vocabulary's long phrases not listed yet (a KB made before them, or by an engine with a
    smaller vocabulary): each counted once by the read path (search._phrase_count) over every committed row, with
    term_phrases held EXCLUSIVE so no writer is between reading the listing and committing (`_kept`), its counts
    added to term_stats and the phrase listed, in one transaction. `conn`: autocommit (migrations.migrate's).
    Returns the keys listed."""
    phrases = [tuple(p.split()) for p in vocabulary.PHRASES]
    wanted = sorted({k for q in search.tsqueries(phrases).values() if (k := search.long_key(q)) is not None})
    listed = {r[0] for r in conn.execute("SELECT phrase FROM term_phrases")}
    if not set(wanted) - listed:
        return []
    np = _numpy()
    with conn.transaction():
        conn.execute("LOCK TABLE term_phrases IN EXCLUSIVE MODE")
        new = sorted(set(wanted) - {r[0] for r in conn.execute("SELECT phrase FROM term_phrases")})
        if not new:
            return []
        tsqs = [search.Tsq(tuple(k.split(" ")), tuple(range(len(k.split(" "))))) for k in new]
        src = search.Source(conn, None, ())
        counts = np.zeros((len(new), 4), dtype=np.int64)
        for column, (table, documents) in enumerate((("pages", False), ("pages", True), ("covers", False),
                                                     ("sections", False))):
            for i, q in enumerate(tsqs):
                found = src.read(table, q.lexemes, q.lexemes, None)
                counts[i, column] = search._phrase_count(q, found, documents)
        held = counts.any(axis=1)
        with conn.cursor() as cur:
            _add_terms(cur, Pairs([k for k, h in zip(new, held.tolist(), strict=True) if h], counts[held]), 1)
            cur.execute("INSERT INTO term_phrases (phrase) SELECT unnest(%s::text[])", (new,))
    return new


# The rows' token counts and tsvectors made again from their stored text, as _write_text makes them at ingest (the
# same words, the configuration of the moment), sent back as the inserts send them.
_REINDEX_PAGES = (
    f"UPDATE pages p SET ntok = r.k, tsv = to_tsvector('{CONFIG}', r.w)"
    " FROM unnest(%s::bigint[], %s::int[], %s::text[]) AS r(id, k, w) WHERE p.rowid = r.id"
    " RETURNING p.rowid, p.ntok, p.number, tsvectorsend(p.tsv)")
_REINDEX_SECTIONS = (
    f"UPDATE sections s SET ntok = r.k, tsv = setweight(to_tsvector('{CONFIG}', r.a), 'A')"
    f" || setweight(to_tsvector('{CONFIG}', r.b), 'B') || setweight(to_tsvector('{CONFIG}', r.c), 'C')"
    " FROM unnest(%s::bigint[], %s::int[], %s::text[], %s::text[], %s::text[]) AS r(id, k, a, b, c)"
    " WHERE s.rowid = r.id RETURNING s.rowid, s.ntok, 0, tsvectorsend(s.tsv)")


# The documents' counts as reindex sends them, summed by the server at the end: each document's term_stats keys
# (pairs and listed phrases) and word_stats keys, one row per document and key, in temporary tables (dropped at
# the end and at commit; a killed migration leaves none). Written as COPY text: a key is ASCII letters and digits
# (text.stems), never a tab, a newline or a backslash.
_COUNTS = ("CREATE TEMPORARY TABLE {table} (key TEXT COLLATE \"C\" NOT NULL, pages INTEGER NOT NULL,"
           " docs INTEGER NOT NULL, covers INTEGER NOT NULL, sections INTEGER NOT NULL) ON COMMIT DROP")
_SUMMED = ("INSERT INTO {stats} ({key}, pages, docs, covers, sections)"
           " SELECT key, SUM(pages), SUM(docs), SUM(covers), SUM(sections) FROM {table} GROUP BY key ORDER BY key")
_COUNTED = (("reindex_terms", "term_stats", "term"), ("reindex_words", "word_stats", "lexeme"))


def _copy_counts(cur: Any, table: str, counted: Pairs) -> None:
    """A document's counts sent to `table` (one COPY)."""
    if not counted.terms:
        return
    p, d, c, x = counted.counts.T.tolist()
    with cur.copy(f"COPY {table} (key, pages, docs, covers, sections) FROM STDIN") as copy:
        copy.write("".join([f"{k}\t{a}\t{b}\t{e}\t{f}\n" for k, a, b, e, f in zip(counted.terms, p, d, c, x,
                                                                                     strict=True)]))


def _drop_indexes(conn: Any, table: str) -> list[str]:
    """Drop the (emptied) table's indexes and unique constraints; returns the statements making them again, as
    they were. Built once from the filled table (a sort) rather than kept row by row: 10 million postings at ten
    times the shared library, inserted in document order, would land at random places in every index."""
    constraints = conn.execute("SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint"
                               " WHERE conrelid = %s::regclass AND contype IN ('p', 'u') ORDER BY conname",
                               (table,)).fetchall()
    indexes = conn.execute("SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid) FROM pg_index"
                           " WHERE indrelid = %s::regclass AND indexrelid NOT IN (SELECT conindid FROM pg_constraint"
                           " WHERE conrelid = %s::regclass) ORDER BY 1", (table, table)).fetchall()
    for name, _ in constraints:
        conn.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
    for name, _ in indexes:
        conn.execute(f"DROP INDEX {name}")
    return ([f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}' for name, definition in constraints]
            + [definition for _, definition in indexes])


def reindex(conn: Any) -> int:
    """Everything the text index derives from the stemmed words made again from the stored text, in the caller's
    transaction (a migration changing the stemmer or the tokenizer): the rows' token counts and tsvectors, the
    postings (each document's as at ingest), term_stats and word_stats (the documents' counts as at ingest, sent
    document by document to temporary tables and summed by the server at the end, each key written once: not one
    upsert per document and key, and not summed in the daemon, whose memory would grow with the library's keys:
    1.7 million pairs at ten times the shared library), the listed long phrases (their keys are lexemes: the
    vocabulary's listed again, stemmed anew, and counted with the rows) and text_stats (recounted). A document's
    rows at a time in the daemon's memory, whatever the library's size. The postings' indexes are dropped and
    built again once they are written (`_drop_indexes`). Re-run safe: nothing is read from what it
    rewrites. Returns the documents reindexed."""
    conn.execute("TRUNCATE postings, term_stats, word_stats, term_phrases")
    rebuilt = _drop_indexes(conn, "postings")
    phrases = [tuple(p.split()) for p in vocabulary.PHRASES]
    wanted = sorted({k for q in search.tsqueries(phrases).values() if (k := search.long_key(q)) is not None})
    conn.execute("INSERT INTO term_phrases (phrase) SELECT unnest(%s::text[])", (wanted,))
    for table, _, _ in _COUNTED:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
        conn.execute(_COUNTS.format(table=table))
    documents = [r[0] for r in conn.execute("SELECT id FROM documents ORDER BY seq").fetchall()]
    for doc in documents:
        stored = conn.execute("SELECT rowid, text FROM pages WHERE document_id = %s", (doc,)).fetchall()
        toks = stems([text for _, text in stored])
        pages = sorted(Row(*r) for r in conn.execute(_REINDEX_PAGES, (
            [r[0] for r in stored], [len(t) for t in toks], [" ".join(t) for t in toks])))
        stored = conn.execute("SELECT rowid, title, ancestors, text FROM sections WHERE document_id = %s",
                              (doc,)).fetchall()
        fields = [section_words(title, ancestors, text) for _, title, ancestors, text in stored]
        sections = sorted(Row(*r) for r in conn.execute(_REINDEX_SECTIONS, (
            [r[0] for r in stored], *([f[i] for f in fields] for i in range(4)))))
        del stored, toks, fields
        rows, is_page = _kinds(pages, sections)
        parsed = entries(rows)
        with conn.cursor() as cur:
            _copy_postings(cur, doc, rows, parsed, is_page)
            _copy_counts(cur, _COUNTED[0][0], _merged(term_pairs(rows, parsed, is_page),
                                                      phrase_counts(rows, parsed, is_page, wanted)))
            _copy_counts(cur, _COUNTED[1][0], word_counts(rows, parsed, is_page))
    conn.execute("SET LOCAL maintenance_work_mem = '128MB'")
    for statement in rebuilt:
        conn.execute(statement)
    # the sums made by the server (hashed, spilled to disk past work_mem; not analysed first: 36 s at ten times
    # the shared library for a plan the table's size gives too)
    conn.execute("SET LOCAL work_mem = '64MB'")
    for table, stats, key in _COUNTED:
        conn.execute(_SUMMED.format(stats=stats, key=key, table=table))
        conn.execute(f"DROP TABLE {table}")
    conn.execute("DELETE FROM text_stats")
    conn.execute("INSERT INTO text_stats SELECT 'pages', COUNT(*), COALESCE(SUM(ntok), 0) FROM pages"
                 " UNION ALL SELECT 'covers', COUNT(*), COALESCE(SUM(ntok), 0) FROM pages"
                 f" WHERE number <= {COVER_PAGES} UNION ALL SELECT 'sections', COUNT(*), COALESCE(SUM(ntok), 0)"
                 " FROM sections")
    return len(documents)
