"""The full-text reads of the PostgreSQL text index: BM25 over pages, sections and cover pages, phrase counts
(the counterpart of sqlite/search.py).

Ranking is FTS5's bm25(), computed here from postings, so both backends rank alike: for each phrase,
    idf * (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * D / avgdl)),  k1 = 1.2, b = 0.75,
summed over the query's phrases in their order (the same floating-point operations as FTS5's C code), where
- tf is the phrase's occurrences in the row, each counted with the weight of its field (sections: title,
  ancestors, text as tsvector weights A, B, C), added in position order (which is field order);
- D is the row's token count (all fields), avgdl the table's mean (text_stats, cached per KB generation);
- idf = ln((N - n + 0.5) / (n + 0.5)) (at least 1e-6) with n the rows holding the phrase, N all rows (FTS5
  counts over the whole table, whatever the scope: so does this).
The postings table (migration 7) holds, per kind, word (lexeme) and document, the rows holding the word with
their token counts and the word's positions: what FTS5's doclists hold. A search reads the postings of its
phrases' words in one statement (positions only for the words of multi-word phrases), matches each phrase on
the positions (`a b` where b follows a, as `a <-> b` does) and scores the rows holding any phrase in the
daemon; a one-word phrase's count of rows is the sum of its postings' lengths, kept in word_stats. A phrase's
lexemes are made here (tsqueries, memoised by the store), as the server's parser makes them of the same stems.
"""

from __future__ import annotations

import collections
import functools
import heapq
import importlib
import importlib.util
import itertools
import math
import struct
import threading
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from jsonl_engine.errors import KBUnavailable
from jsonl_engine.store.postgres.text import lexemes as text_lexemes
from jsonl_engine.store.postgres.text import stems
from jsonl_engine.store.types import COVER_PAGES, TERM_STATS_COLUMN, PageKey, Phrase, Scope, SectionWeights

K1, B = 1.2, 0.75
MIN_IDF = 1e-6
ENTRY = 18  # bytes per row of a posting before the positions: rowid (8), ntok (4), page number (4), count (2)
CACHE_BYTES = 64 << 20  # postings data a store keeps (Cache)
TABLE_ROW = 32  # bytes a row of a Table takes
DOC_ENTRY = 200  # bytes a Cache entry of one document's posting takes besides its data (key, entry, Posting)
PLAIN = (1.0, 1.0, 1.0, 1.0)  # weight of each tsvector label D, C, B, A: pages count every hit once


class Tsq(NamedTuple):
    """A phrase as the index holds it: its lexemes in order and each one's offset in positions from the first
    (`a <-> b` is b one position after a, `a <2> b` two); no lexemes when the phrase holds no indexed word."""

    lexemes: tuple[str, ...]
    offsets: tuple[int, ...]


def tsqueries(phrases: Sequence[Phrase]) -> dict[Phrase, Tsq]:
    """Each phrase as the index holds it, made here, not by the server: its words' stems (`text.stems`, as the rows'
    were written) read as the `jsonl_english` configuration reads them (`text.lexemes`), one position apart:
    what phraseto_tsquery of the stems gives (the configuration keeps every token: no gaps), without a round trip."""
    found: dict[Phrase, Tsq] = {}
    phrases = list(dict.fromkeys(phrases))
    for phrase, written in zip(phrases, stems([" ".join(p) for p in phrases]), strict=True):
        lexemes = tuple(text_lexemes(written))
        found[phrase] = Tsq(lexemes, tuple(range(len(lexemes))))
    return found


class Posting:
    """One document's rows holding one lexeme (a postings row, decoded): rowids, token counts, page numbers, and
    each row's positions as codes, decoded on demand when the data holds them. A code is position * 4 + weight
    label (D=0, C=1, B=2, A=3) less 32768: `code & 3` is the label, and a code plus 4 * k is the position k
    words on in the same field (the fields are apart: FIELD_END, text.py)."""

    alone = False  # kept in the cache by itself (one document's entry): its arrays are kept on it too (`table`)

    def __init__(self, document_id: str, n: int, data: bytes) -> None:
        self.document_id, self.n, self.data = document_id, n, data

    @functools.cached_property
    def rowids(self) -> tuple[int, ...]:
        return struct.unpack_from(f">{self.n}q", self.data, 0)

    @functools.cached_property
    def ntoks(self) -> tuple[int, ...]:
        return struct.unpack_from(f">{self.n}i", self.data, 8 * self.n)

    @functools.cached_property
    def numbers(self) -> tuple[int, ...]:
        return struct.unpack_from(f">{self.n}i", self.data, 12 * self.n)

    @functools.cached_property
    def counts(self) -> tuple[int, ...]:
        return struct.unpack_from(f">{self.n}h", self.data, 16 * self.n)

    @functools.cached_property
    def _starts(self) -> list[int]:
        return list(itertools.accumulate(self.counts, initial=0))

    def codes(self, i: int) -> tuple[int, ...]:
        """Row i's position codes, ascending."""
        return struct.unpack_from(f">{self.counts[i]}h", self.data, ENTRY * self.n + 2 * self._starts[i])

    def table(self, np: Any) -> Table:
        """This posting as a Table, made once when it is `alone`: a search of one document (a scope) reads each
        lexeme's postings of it from the cache as one Posting, kept across queries, so its arrays are not made again
        per query (the cache counts them: `_kept_bytes`)."""
        done = self.__dict__.get("_table")
        if done is None:
            done = _one_table(np, self)
            if self.alone:
                self.__dict__["_table"] = done
        return done

    def global_codes(self, np: Any) -> Any:
        """`_global_codes` of this posting alone, made once (as `table`)."""
        done = self.__dict__.get("_global")
        if done is None:
            n, data = self.n, self.data
            rowids = np.frombuffer(data, ">i8", n).astype(np.int64)
            done = np.repeat((rowids << ROW_SHIFT) + 32768, np.frombuffer(data, ">i2", n, 16 * n)) \
                + np.frombuffer(data, ">i2", offset=ENTRY * n)
            if done.size > 1 and not bool((done[1:] > done[:-1]).all()):  # as _global_codes
                done.sort()
            if self.alone:
                self.__dict__["_global"] = done
        return done


class Postings(dict[str, Posting]):
    """One lexeme's postings read (document id -> its posting), with the global codes of all of them once
    computed (`codes`: every phrase holding the lexeme matches on the same array), or of some rows only
    (`codes_in`: a common word matched only where a rarer one of the phrase is)."""

    _codes: Any = None
    _arrays: Any = None
    _whole: Postings | None = None  # the cache's entry this read is of (its `table` is kept there)

    def codes(self, np: Any) -> Any:
        if self._codes is None:
            postings = list(self.values())
            self._codes = postings[0].global_codes(np) if len(postings) == 1 else _global_codes(np, postings)
        return self._codes

    def size(self) -> int:
        """How many position codes the postings hold (without decoding them)."""
        return sum((len(p.data) - ENTRY * p.n) // 2 for p in self.values())

    def codes_in(self, np: Any, rows: Any) -> Any:
        """The global codes of the rows whose rowid is in `rows` (a sorted int64 array), ascending: the same
        values `codes()` holds for them, without building the array of every row."""
        if self._codes is not None:  # built for this read already: the rows' runs of it (it is sorted)
            starts = np.searchsorted(self._codes, rows << ROW_SHIFT)
            kept = np.searchsorted(self._codes, (rows + 1) << ROW_SHIFT) - starts
            ends = np.cumsum(kept)
            if not ends.size or not ends[-1]:
                return np.empty(0, dtype=np.int64)
            return self._codes[np.repeat(starts - (ends - kept), kept) + np.arange(int(ends[-1]))]
        if self._arrays is None:
            rowids, counts, codes = _arrays(np, list(self.values()))
            self._arrays = rowids, counts, codes, np.cumsum(counts) - counts
        rowids, counts, codes, starts = self._arrays
        keep = np.flatnonzero(np.isin(rowids, rows))
        if not keep.size:
            return np.empty(0, dtype=np.int64)
        kept = counts[keep]
        ends = np.cumsum(kept)
        at = np.repeat(starts[keep] - (ends - kept), kept) + np.arange(int(ends[-1]))  # the kept rows' codes
        out = np.repeat((rowids[keep] << ROW_SHIFT) + 32768, kept) + codes[at]
        if out.size > 1 and not bool(np.all(out[1:] > out[:-1])):
            out.sort()
        return out


Found = dict[str, Postings]  # lexeme -> its postings


class Cache:
    """Whole postings (every document's, with positions when `placed`) of the lexemes read most recently, per
    KB generation, up to `max_bytes` (counted as twice their data: the postings decode it into tuples): a word
    common to many queries ("of", "net") is sent by the server once per daemon, not once per query. Shared by
    the daemon's threads."""

    def __init__(self, max_bytes: int = CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self._entries: collections.OrderedDict[tuple, tuple[bool, Any, int]] = collections.OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: tuple, placed: bool) -> Postings | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or placed and not entry[0]:
                return None
            self._entries.move_to_end(key)
            found = Postings(entry[1])  # its codes() computed for this read, not kept (8 bytes a position)
            found._whole = entry[1]
            return found

    def get_docs(self, key: tuple, placed: bool, documents: Sequence[str]) -> tuple[Postings, list[str]]:
        """A lexeme's postings of some documents kept by `put_docs` (`key` as for `get`): those found, and the
        documents none is kept for (a document kept without the lexeme is found, holding none of it)."""
        found, unknown = Postings(), []
        with self._lock:
            for doc in documents:
                entry = self._entries.get((*key, doc))
                if entry is None or placed and not entry[0]:
                    unknown.append(doc)
                    continue
                self._entries.move_to_end((*key, doc))
                if entry[1] is not None:
                    found[doc] = entry[1]
        return found, unknown

    def put_docs(self, key: tuple, placed: bool, documents: Sequence[str], postings: Postings) -> None:
        """Keep a lexeme's postings read for some documents, one entry a document (none for a document absent
        from `postings`: it holds no row with the lexeme): a search of a few documents (a scope, the documents
        a question names) reads each word of them from the server once per daemon, as a search of the whole
        library reads it once (`put`)."""
        self.put_many([(key, placed, documents, postings)])

    def put_many(self, reads: Sequence[tuple[tuple, bool, Sequence[str], Postings]]) -> None:
        """`put_docs` of several reads (key, placed, documents, postings), under one taking of the lock."""
        with self._lock:
            for key, placed, documents, postings in reads:
                for doc in documents:
                    posting = postings.get(doc)
                    if posting is not None:
                        posting.alone = True
                    size = DOC_ENTRY + (0 if posting is None else _kept_bytes(posting))
                    self._keep((*key, doc), (placed, posting, size))

    def _keep(self, key: tuple, entry: tuple[bool, Any, int]) -> None:
        old = self._entries.pop(key, None)
        if old is not None:
            self._bytes -= old[2]
        self._entries[key] = entry
        self._bytes += entry[2]
        while self._bytes > self.max_bytes:
            self._bytes -= self._entries.popitem(last=False)[1][2]

    def put(self, key: tuple, placed: bool, postings: Postings) -> None:
        # and the tuples decoded from it, and its `table` (TABLE_ROW bytes a row, its codes shared with the data);
        # a lexeme of one document: its posting keeps its arrays (`_kept_bytes`)
        size = sum(_kept_bytes(p) if len(postings) == 1 else 2 * len(p.data) + TABLE_ROW * p.n
                   for p in postings.values())
        if size > self.max_bytes // 4:
            return
        if len(postings) == 1:
            next(iter(postings.values())).alone = True
        with self._lock:
            self._keep(key, (placed, postings, size))


def _kept_bytes(posting: Posting) -> int:
    """What the cache counts for a posting kept alone (one document's): its data twice (the tuples decoded from
    it), its `table` (TABLE_ROW bytes a row, its codes shared with the data) and its global codes (8 bytes a
    code, 4 times the data's 2)."""
    return 2 * len(posting.data) + TABLE_ROW * posting.n + 4 * (len(posting.data) - ENTRY * posting.n)


class Source:
    """Where a search reads postings: the thread's connection, the store's cache and the KB generation seen."""

    def __init__(self, conn: Any, cache: Cache | None, generation: tuple) -> None:
        self.conn, self.cache, self.generation = conn, cache, generation

    def _kept(self, kind: str, lexemes: Sequence[str], placed: Sequence[str], wanted: set[str] | None
              ) -> tuple[Found, list[str], dict[str, list[str]]]:
        """What the cache holds of a read: the postings found, the lexemes to read, and for a read of some
        documents, per lexeme, the documents none is kept for."""
        found: Found = {}
        missing = []
        unknown: dict[str, list[str]] = {}
        for lex in lexemes:
            whole = None if self.cache is None else self.cache.get((self.generation, kind, lex), lex in placed)
            if whole is not None:
                found[lex] = whole if wanted is None else Postings((d, p) for d, p in whole.items() if d in wanted)
            elif wanted is not None and self.cache is not None:
                found[lex], unknown[lex] = self.cache.get_docs((self.generation, kind, lex), lex in placed,
                                                               sorted(wanted))
                if unknown[lex]:
                    missing.append(lex)
            else:
                missing.append(lex)
        return found, missing, unknown

    def read(self, kind: str, lexemes: Sequence[str], placed: Sequence[str],
             documents: Sequence[str] | None, also: str | None = None) -> Found:
        """The postings of `lexemes` in `kind` ("pages", "covers", "sections"), of `documents` only when given,
        with positions for the `placed` ones: from the cache, the rest in one statement (then kept: whole, or
        per document). `also`: another kind whose postings of the same lexemes and documents (with positions)
        a search after this one will read: read in the same statement, into the cache only (a scoped page
        search and its section search: one round trip, not two)."""
        if not lexemes or documents is not None and not documents:
            return {}
        wanted = None if documents is None else set(documents)
        found, missing, unknown = self._kept(kind, lexemes, placed, wanted)
        if not missing:
            return found
        other: list[str] = []
        other_unknown: dict[str, list[str]] = {}
        if also is not None and wanted is not None and self.cache is not None:
            _f, other, other_unknown = self._kept(also, lexemes, lexemes, wanted)
        sql, args = _statement(kind, missing, placed, wanted, unknown)
        if other:  # each row flagged: of `kind` (true) or of `also`
            sql += (" UNION ALL SELECT false, lexeme, document_id, n, data FROM postings WHERE kind = %s "
                    "AND lexeme = ANY(%s) AND document_id = ANY(%s)")
            args += [also, other, sorted({d for lex in other for d in other_unknown.get(lex, wanted or ())})]
        read: Found = {lex: Postings() for lex in missing}
        more: Found = {lex: Postings() for lex in other}
        for this, lexeme, doc, n, data in self.conn.execute(sql, args, binary=True).fetchall():  # rows made in C
            (read if this else more)[lexeme][doc] = Posting(doc, n, data)
        if self.cache is not None:
            for lex, postings in more.items():
                self.cache.put_docs((self.generation, also, lex), True, other_unknown[lex], postings)
        if self.cache is not None:
            for lex, postings in read.items():
                if wanted is None:
                    self.cache.put((self.generation, kind, lex), lex in placed, postings)
                else:
                    docs = unknown[lex]
                    self.cache.put_docs((self.generation, kind, lex), lex in placed, docs, postings)
                    found[lex].update((d, postings[d]) for d in docs if d in postings)
        for lex in missing if self.cache is None or wanted is None else ():
            found[lex] = read[lex]
        return found


def _statement(kind: str, missing: list[str], placed: Sequence[str], wanted: set[str] | None,
               unknown: dict[str, list[str]]) -> tuple[str, list[Any]]:
    """The statement reading the `missing` lexemes' postings (Source.read) and its arguments."""
    sql = ("SELECT true, lexeme, document_id, n, CASE WHEN lexeme = ANY(%s) THEN data ELSE substring(data FROM 1 "
           f"FOR n * {ENTRY}) END FROM postings WHERE kind = %s AND lexeme = ANY(%s)")
    args: list[Any] = [sorted(set(placed) & set(missing)), kind, missing]
    if wanted is not None:
        sql += " AND document_id = ANY(%s)"
        args.append(sorted({d for lex in missing for d in unknown.get(lex, wanted)}))
    return sql, args


def read(src: Source, kind: str, tsqs: Sequence[Tsq], documents: Sequence[str] | None, positions: bool,
         also: str | None = None) -> Found:
    """The postings of the phrases' lexemes in `kind`, of `documents` only when given: with positions for the
    lexemes of multi-word phrases (all, with `positions`); `also` as in Source.read."""
    lexemes = sorted({lex for q in tsqs for lex in q.lexemes})
    placed = lexemes if positions else sorted({lex for q in tsqs if len(q.lexemes) > 1 for lex in q.lexemes})
    return src.read(kind, lexemes, placed, documents, also)


def hits(q: Tsq, found: Found, weights: Sequence[float]) -> Iterator[tuple[Posting, int, float]]:
    """The rows holding phrase `q`: (posting, index of the row in it, tf), tf its occurrences each counted with
    the weight of its label (added in position order, as FTS5 adds them in column order)."""
    if len(q.lexemes) == 1:
        return _word_hits(found.get(q.lexemes[0], {}), weights)
    return _phrase_hits(q, found, weights) if q.lexemes else iter(())


def _word_hits(postings: dict[str, Posting], weights: Sequence[float]) -> Iterator[tuple[Posting, int, float]]:
    plain = tuple(weights) == PLAIN
    for posting in postings.values():
        for i, count in enumerate(posting.counts):
            if plain:
                yield posting, i, float(count)
            else:
                tf = 0.0
                for code in posting.codes(i):
                    tf += weights[code & 3]
                yield posting, i, tf


ROW_SHIFT = 17  # a row's codes as one array over the library: rowid << 17 + 32768 + code (a 17th bit between rows)


def require_numpy() -> None:
    """KBUnavailable when numpy (of the `postgres` extra) is not installed: said when the store is opened, not at
    the first phrase."""
    try:
        found = importlib.util.find_spec("numpy") is not None
    except ValueError:  # sys.modules holds None for it: imports of it fail
        found = False
    if not found:
        raise KBUnavailable("the PostgreSQL KB backend needs numpy: pip install 'jsonl-engine[postgres]'",
                            {"backend": "postgresql"})


@functools.cache
def _numpy() -> Any:
    """numpy, imported at the first search (not when the store is opened: 0.1-0.2 s)."""
    return importlib.import_module("numpy")


def _arrays(np: Any, postings: list[Posting]) -> tuple[Any, Any, Any]:
    """These postings' rowids (int64), each row's count of codes (int64) and every code (int16, big-endian), the
    postings in the order of their first rowid."""
    postings = sorted(postings, key=lambda p: struct.unpack_from(">q", p.data)[0])  # by first rowid
    view = [memoryview(p.data) for p in postings]
    rowids = np.frombuffer(b"".join(v[:8 * p.n] for v, p in zip(view, postings, strict=True)), dtype=">i8")
    counts = np.frombuffer(b"".join(v[16 * p.n:ENTRY * p.n] for v, p in zip(view, postings, strict=True)),
                           dtype=">i2")
    codes = np.frombuffer(b"".join(v[ENTRY * p.n:] for v, p in zip(view, postings, strict=True)), dtype=">i2")
    return rowids.astype(np.int64), counts.astype(np.int64), codes


def _global_codes(np: Any, postings: list[Posting]) -> Any:
    """Every position code of these postings' rows, made unique over the library by the rowid, ascending (an
    int64 array, built with whole-array operations)."""
    rowids, counts, codes = _arrays(np, postings)
    out = np.repeat((rowids << ROW_SHIFT) + 32768, counts) + codes
    if out.size > 1 and not bool(np.all(out[1:] > out[:-1])):  # documents written at once share a rowid range
        out.sort()
    return out


def _phrase_matches(q: Tsq, found: Found, restricted: bool = False) -> tuple[list[int], list[Posting]]:
    """The global code of the first word of each place where a multi-word phrase's lexemes follow one another
    at their offsets in one field (FTS5's phrase, PostgreSQL's `<->`), ascending, and the first lexeme's
    postings (`_match_codes`, as lists)."""
    at, firsts = _match_codes(q, found, restricted)
    return (at.tolist(), list(firsts.values())) if firsts else ([], [])


def _match_codes(q: Tsq, found: Found, restricted: bool = False) -> tuple[Any, Postings]:
    """`_phrase_matches` as an int64 array, and the first lexeme's postings (empty when nothing matches).
    Whole-array operations from the rarest lexeme: a code plus 4 * k is the code of the word k positions on in
    the same field and row (a shift past a row's codes lands between rows, on no code)."""
    np = _numpy()
    none = np.empty(0, dtype=np.int64), Postings()
    lists = [found.get(lex) or Postings() for lex in q.lexemes]
    if any(not by_doc for by_doc in lists):
        return none
    order = sorted(range(len(lists)), key=lambda j: (lists[j].size(), j))
    at = lists[order[0]].codes(np) - 4 * q.offsets[order[0]]  # first-word codes of the candidates
    for j in order[1:]:
        if not at.size:
            return none
        # with `restricted` (a count over the whole library: once per phrase, its words' codes not built for any
        # other phrase), the next lexeme's codes in the candidates' rows only (a code plus 4 * k stays in its row)
        codes = lists[j].codes_in(np, np.unique(at >> ROW_SHIFT)) if restricted else lists[j].codes(np)
        if not codes.size:
            return none
        wanted = at + 4 * q.offsets[j]
        place = np.minimum(np.searchsorted(codes, wanted), codes.size - 1)
        at = at[codes[place] == wanted]
    return (at, lists[0]) if at.size else none


def _rows(postings: list[Posting], rowids: set[int]) -> dict[int, tuple[Posting, int]]:
    """rowid -> (its posting, its index there), for these rowids."""
    out: dict[int, tuple[Posting, int]] = {}
    for p in postings:
        if not rowids.isdisjoint(p.rowids):
            where = dict(zip(p.rowids, range(p.n), strict=True))
            out.update((r, (p, where[r])) for r in rowids.intersection(p.rowids))
    return out


def _phrase_hits(q: Tsq, found: Found, weights: Sequence[float]) -> Iterator[tuple[Posting, int, float]]:
    """A multi-word phrase's rows: each of its matches counts the weight of its field, in position order."""
    at, firsts = _phrase_matches(q, found)
    tfs: dict[int, float] = {}
    for code in at:  # by row, then position: field order
        rowid = code >> ROW_SHIFT
        tfs[rowid] = tfs.get(rowid, 0.0) + weights[code & 3]
    rows = _rows(firsts, set(tfs))
    for rowid, tf in tfs.items():
        yield *rows[rowid], tf


def _phrase_count(q: Tsq, found: Found, documents: bool) -> int:
    """The rows (or with `documents`, the documents) holding a multi-word phrase."""
    at, firsts = _phrase_matches(q, found, restricted=True)
    rowids = {code >> ROW_SHIFT for code in at}
    if not documents:
        return len(rowids)
    return sum(1 for p in firsts if not rowids.isdisjoint(p.rowids))


def bm25(tsqs: Sequence[Tsq], idfs: Sequence[float], avgdl: float, found: Found,
         weights: Sequence[float] = PLAIN) -> tuple[dict[int, float], dict[int, tuple[Posting, int]]]:
    """Every row holding a phrase: rowid -> its score (FTS5's bm25() summed over the phrases in their order: a
    phrase a row lacks adds 0.0, which changes no sum), and rowid -> (its posting, its index there)."""
    avgdl = avgdl or 1.0
    k1p, short = K1 + 1.0, 1 - B
    scores: dict[int, float] = {}
    where: dict[int, tuple[Posting, int]] = {}
    for q, value in zip(tsqs, idfs, strict=True):
        for posting, i, tf in hits(q, found, weights):
            rowid = posting.rowids[i]
            term = value * ((tf * k1p) / (tf + K1 * (short + ((B * posting.ntoks[i]) / avgdl))))
            before = scores.get(rowid)
            if before is None:
                scores[rowid] = term
                where[rowid] = (posting, i)
            else:
                scores[rowid] = before + term
    return scores, where


class Table(NamedTuple):
    """One lexeme's postings (of every document read) as arrays, one entry per row, in rowid order: what the
    whole-array scoring (`bm25_top`) reads. `first` and `codes` in the order the rows' codes were read."""

    rowids: Any  # int64, ascending
    ntoks: Any  # int32
    numbers: Any  # int32, page numbers
    docs: Any  # int32, index in doc_ids
    doc_ids: list[str]
    counts: Any  # int32, each row's count of codes
    first: Any  # int64, where each row's codes start in `codes`
    codes: Any  # int16, big-endian, a view of the joined data (none when the positions were not read)
    tfs: dict[tuple[float, ...], Any] | None = None  # one document's: each row's tf of a word, per weights


def table(np: Any, postings: Postings) -> Table:
    """A lexeme's postings as a Table, kept on the Postings read (every phrase holding the lexeme uses it), or on
    the cache's entry when the read is of one (built once per KB generation, not per search)."""
    items = list(postings.values())
    if len(items) == 1 and items[0].alone:  # one document's (a scope's) kept by the cache: kept on its Posting
        return items[0].table(np)
    holder = postings if postings._whole is None else postings._whole
    done = holder.__dict__.get("_table")
    if done is None:
        done = holder.__dict__["_table"] = _one_table(np, items[0]) if len(items) == 1 else _table(np, items)
    return done


def _table(np: Any, items: list[Posting]) -> Table:
    """These postings as one Table."""
    views = [memoryview(p.data) for p in items]

    def column(start: int, end: int, dtype: str, native: Any) -> Any:
        return np.frombuffer(b"".join(v[start * p.n:end * p.n] for v, p in zip(views, items, strict=True)),
                             dtype=dtype).astype(native)

    rowids, ntoks, numbers, counts = column(0, 8, ">i8", np.int64), column(8, 12, ">i4", np.int32), \
        column(12, 16, ">i4", np.int32), column(16, ENTRY, ">i2", np.int32)
    codes = np.frombuffer(b"".join(v[ENTRY * p.n:] for v, p in zip(views, items, strict=True)), dtype=">i2")
    docs = np.repeat(np.arange(len(items), dtype=np.int32), [p.n for p in items])
    first = np.cumsum(counts, dtype=np.int64) - counts
    order = np.argsort(rowids, kind="stable")  # documents written at once share a rowid range
    return Table(rowids[order], ntoks[order], numbers[order], docs[order], [p.document_id for p in items],
                 counts[order], first[order], codes)


def _one_table(np: Any, p: Posting) -> Table:
    """`_table` of one posting: its columns read in place (no joined copies), sorted only if its rows are not in
    rowid order already (they are as written)."""
    n, data = p.n, p.data
    rowids = np.frombuffer(data, ">i8", n).astype(np.int64)
    ntoks = np.frombuffer(data, ">i4", n, 8 * n).astype(np.int32)
    numbers = np.frombuffer(data, ">i4", n, 12 * n).astype(np.int32)
    counts = np.frombuffer(data, ">i2", n, 16 * n).astype(np.int32)
    first = np.cumsum(counts, dtype=np.int64) - counts
    docs = np.zeros(n, dtype=np.int32)
    if n > 1 and not bool((rowids[1:] > rowids[:-1]).all()):
        order = np.argsort(rowids, kind="stable")
        rowids, ntoks, numbers, counts, first = rowids[order], ntoks[order], numbers[order], counts[order], first[order]
    return Table(rowids, ntoks, numbers, docs, [p.document_id], counts, first,
                 np.frombuffer(data, ">i2", offset=ENTRY * n), {})


def exact_sums(weights: Sequence[float], most: int) -> bool:
    """Whether every sum of up to `most` of these weights is exact in floating point, so that the order of the
    additions cannot change it: each weight is a multiple of 2^-s (a float's exact fraction has a power of two
    below), and `most` times the largest stays below 2^53 units of 2^-s (FTS5 adds a row's weights in position
    order; with these weights any order gives its sum, bit for bit)."""
    if not all(math.isfinite(w) for w in weights):
        return False
    scale = max(float(w).as_integer_ratio()[1] for w in weights)
    return max(map(abs, weights)) * most * scale < 2.0 ** 53


_exact_sums = functools.lru_cache(maxsize=1024)(exact_sums)  # by a tuple of weights: a search asks it per phrase


class Terms(NamedTuple):
    """One phrase's rows holding it (rowids ascending, unique) with each row's token count, tf and place."""

    rowids: Any
    ntoks: Any
    tf: Any  # float64
    docs: Any  # int64, index in the doc list of the search
    numbers: Any


def _terms(np: Any, q: Tsq, found: Found, weights: Any, plain: bool, doc_index: dict[str, int]) -> Terms | None:
    """The rows holding phrase `q` as arrays (as `hits` yields them), None when a row's tf could depend on the
    order of its additions (`exact_sums`)."""
    if len(q.lexemes) == 1:
        postings = found.get(q.lexemes[0])
        if not postings:
            return Terms(*(np.empty(0, dtype=np.int64),) * 5)
        t = table(np, postings)
        tf = _word_tfs(np, t, weights, plain)
        if tf is None:
            return None
        remap = np.array([doc_index.setdefault(d, len(doc_index)) for d in t.doc_ids], dtype=np.int64)
        return Terms(t.rowids, t.ntoks, tf, remap[t.docs], t.numbers)
    at, firsts = _match_codes(q, found)
    if not at.size:
        return Terms(*(np.empty(0, dtype=np.int64),) * 5)
    rows = at >> ROW_SHIFT  # ascending, as `at` is: a row's codes are one run
    new = np.empty(rows.size, dtype=bool)
    new[0] = True
    np.not_equal(rows[1:], rows[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    rowids = rows[starts]
    counts = np.empty(starts.size, dtype=np.int64)
    counts[:-1] = starts[1:] - starts[:-1]
    counts[-1] = rows.size - starts[-1]
    if plain:
        tf = counts.astype(np.float64)
    else:
        if not _exact_sums(tuple(weights.tolist()), int(counts.max())):
            return None
        tf = np.bincount(np.cumsum(new) - 1, weights=weights[at & 3], minlength=rowids.size)
    t = table(np, firsts)
    at_row = np.searchsorted(t.rowids, rowids)
    remap = np.array([doc_index.setdefault(d, len(doc_index)) for d in t.doc_ids], dtype=np.int64)
    return Terms(rowids, t.ntoks[at_row], tf, remap[t.docs[at_row]], t.numbers[at_row])


def _word_tfs(np: Any, t: Table, weights: Any, plain: bool) -> Any:
    """Each row's tf of a one-word phrase (`_terms`), None when it could depend on the order of its additions;
    kept on the Table's posting when it is one document's (`Posting.table`), per weights."""
    key = tuple(weights.tolist())
    done = t.tfs.get(key) if t.tfs is not None else None
    if done is not None:
        return done
    if plain:
        tf = t.counts.astype(np.float64)
    else:
        if t.counts.size and not _exact_sums(key, int(t.counts.max())):
            return None
        # each row's codes in the order read: the rows' entries of `first`/`counts` map back to them
        rows_read = np.argsort(t.first, kind="stable")
        group = np.repeat(rows_read, t.counts[rows_read])
        tf = np.bincount(group, weights=weights[t.codes & 3], minlength=t.rowids.size)
    if t.tfs is not None and len(t.tfs) < 4:
        t.tfs[key] = tf
    return tf


def bm25_top(tsqs: Sequence[Tsq], idfs: Sequence[float], avgdl: float, found: Found, limit: int | None,
             weights: Sequence[float] = PLAIN) -> list[tuple[int, float, str, int]] | None:
    """`best(bm25(...))` with whole-array operations (numpy): (rowid, score, document id, page number) of the top
    `limit` rows (all with None), the same scores to the bit: each phrase's term computed with the same
    floating-point operations in the same order, summed per row in the phrases' order (from 0.0: 0.0 + x is x).
    None when a weighted tf's sum could depend on the order of its additions (then `bm25` scores)."""
    np = _numpy()
    w = np.array(weights, dtype=np.float64)
    plain = tuple(weights) == PLAIN
    doc_index: dict[str, int] = {}
    parts = []
    for q in tsqs:
        terms = _terms(np, q, found, w, plain, doc_index)
        if terms is None:
            return None
        parts.append(terms)
    if not parts or not any(t.rowids.size for t in parts):
        return []
    # every phrase's rows at once, in the phrases' order: each term the same operations on the same floats (its
    # phrase's idf repeated over its rows), summed per row by bincount, which adds them in that order from 0.0
    rowids, first, at = np.unique(np.concatenate([t.rowids for t in parts]), return_index=True, return_inverse=True)
    docs = np.concatenate([t.docs for t in parts])[first]
    numbers = np.concatenate([t.numbers for t in parts])[first]
    tf = np.concatenate([t.tf for t in parts])
    ntoks = np.concatenate([t.ntoks for t in parts])
    value = np.repeat(np.array(idfs, dtype=np.float64), [t.rowids.size for t in parts])
    avgdl = avgdl or 1.0
    k1p, short = K1 + 1.0, 1 - B
    term = value * ((tf * k1p) / (tf + K1 * (short + ((B * ntoks) / avgdl))))
    scores = np.bincount(at.ravel(), weights=term, minlength=rowids.size)  # a phrase holds a row once
    order = np.lexsort((rowids, -scores))  # score descending, ties by rowid (as `best`)
    if limit is not None:
        order = order[:limit]
    names = list(doc_index)
    return [(r, s, names[d], n) for r, s, d, n in zip(rowids[order].tolist(), scores[order].tolist(),
                                                     docs[order].tolist(), numbers[order].tolist(), strict=True)]


def best(scores: dict[int, float], limit: int | None) -> list[tuple[int, float]]:
    """(rowid, score) by score, best first, ties by rowid (the SQL statements' `ORDER BY score DESC, rowid`)."""
    def key(item: tuple[int, float]) -> tuple[float, int]:
        return -item[1], item[0]

    return sorted(scores.items(), key=key) if limit is None else heapq.nsmallest(limit, scores.items(), key=key)


def idf(rows: int, hits: int) -> float:
    value = math.log((rows - hits + 0.5) / (hits + 0.5))
    return value if value > 0.0 else MIN_IDF


def documents(scope: Scope, within: Sequence[str] | None = None) -> list[str] | None:
    """The documents a search reads: `within` (when given) in scope; None for every document."""
    if within is None:
        return None if scope.complete else sorted(scope.documents)
    return sorted(d for d in set(within) if scope.complete or d in scope.documents)


def paired(q: Tsq) -> str | None:
    """A two-word phrase's key in term_stats (migration 8): its lexemes, the second one position on; else None."""
    return f"{q.lexemes[0]} {q.lexemes[1]}" if q.offsets == (0, 1) else None


def pairs_of(q: Tsq) -> list[str]:
    """The term_stats keys of a longer phrase's adjacent lexemes (a row holding the phrase holds each of them in
    the same field), when its lexemes follow one another; else none."""
    if len(q.lexemes) < 3 or q.offsets != tuple(range(len(q.lexemes))):
        return []
    return [f"{a} {b}" for a, b in zip(q.lexemes, q.lexemes[1:], strict=False)]


def long_key(q: Tsq) -> str | None:
    """A phrase of three lexemes or more following one another: its key in term_phrases and term_stats."""
    return " ".join(q.lexemes) if len(q.lexemes) >= 3 and q.offsets == tuple(range(len(q.lexemes))) else None


# Statements of the counts (frequencies): one text whatever is asked (empty arrays read nothing), so each reader
# connection prepares it once (a reader prepares a statement text at its first run: db.READER_PREPARE_THRESHOLD) and the server plans it once,
# not at every query. Every row: (what, key, pages, docs, covers, sections, text, data, title, ancestors, page map),
# `what` one of
_WORD, _PAIR, _LONG, _PAGES, _SECTIONS, _COVER, _STATEMENTS, _REF = range(1, 9)
_NONE = ", NULL, NULL, NULL"  # the columns of a section's ref only
_COUNTED = ("pages", "docs", "covers", "sections")  # the count columns of word_stats and term_stats, as read here
_COLUMN = {kind: 2 + _COUNTED.index(column) for kind, column in TERM_STATS_COLUMN.items()}  # a count row's, per kind
# The sections whose refs a query's first counts read ahead at most (a large filing's, or a few smaller ones')
REFS_AHEAD = 1500
_COUNTS = (
    # a word's counts in every kind (its postings', migration 10); a pair's (term_stats, migration 8); a listed
    # longer phrase's (term_phrases, migration 9: listed, never written, counts 0): one index lookup a key
    f"SELECT {_WORD}, lexeme, pages::bigint, docs, covers, sections, NULL::text, NULL::bytea, NULL::text,"
    " NULL::text, NULL::text FROM word_stats WHERE lexeme = ANY(%s::text[])"
    f" UNION ALL SELECT {_PAIR}, term, pages, docs, covers, sections, NULL, NULL{_NONE} FROM term_stats"
    " WHERE term = ANY(%s::text[])"
    f" UNION ALL SELECT {_LONG}, l.phrase, COALESCE(s.pages, 0), COALESCE(s.docs, 0), COALESCE(s.covers, 0),"
    f" COALESCE(s.sections, 0), NULL, NULL{_NONE} FROM term_phrases l LEFT JOIN term_stats s ON s.term = l.phrase"
    " WHERE l.phrase = ANY(%s::text[])"
    # read ahead: some documents' page and section postings of some lexemes (positions on pages for some only)
    f" UNION ALL SELECT CASE WHEN kind = 'pages' THEN {_PAGES} ELSE {_SECTIONS} END, lexeme, n, 0, 0, 0,"
    " document_id, CASE WHEN kind = 'sections' OR lexeme = ANY(%s::text[]) THEN data"
    f" ELSE substring(data FROM 1 FOR n * {ENTRY}) END{_NONE} FROM postings WHERE kind = ANY('{{pages,sections}}'::text[])"
    " AND lexeme = ANY(%s::text[]) AND document_id = ANY(%s::text[])"
    # some documents' cover pages, their stored statement pages and section counts, and their sections' refs
    # (REF_COLUMNS) when they hold REFS_AHEAD sections at most together
    f" UNION ALL SELECT {_COVER}, document_id, number, 0, 0, 0, text, NULL{_NONE} FROM pages"
    f" WHERE number <= {COVER_PAGES} AND document_id = ANY(%s::text[])"
    f" UNION ALL SELECT {_STATEMENTS}, id, sections, 0, 0, 0, statements, NULL{_NONE} FROM documents"
    " WHERE id = ANY(%s::text[])"
    f" UNION ALL SELECT {_REF}, id, rowid, page_start, page_end, text_len, document_id, NULL, title, ancestors,"
    " CASE WHEN is_leaf THEN NULL ELSE page_map END FROM sections WHERE document_id = ANY(%s::text[])"
    " AND (SELECT COALESCE(SUM(sections), 0) FROM documents WHERE id = ANY(%s::text[])) <= %s::bigint")


def _keep_ahead(src: Source, documents: Sequence[str], placed: dict[str, bool],
                read: dict[tuple[str, str], Postings]) -> None:
    """A read ahead's postings into the cache, per lexeme and document (one absent from a lexeme's rows holds none
    of it): sections' with positions, pages' with positions when `placed` says so."""
    if src.cache is None:
        return
    none = Postings()
    src.cache.put_many([((src.generation, kind, lex), many or kind == "sections", documents, read.get((kind, lex), none))
                        for lex, many in placed.items() for kind in ("pages", "sections")])


class First(NamedTuple):
    """What a query's counts read of a document new to the daemon (`frequencies`' `firsts`)."""

    covers: list[str]  # its cover pages' texts, in page order
    statements: str | None  # its stored statement pages
    refs: list[tuple] | None  # its sections' refs, as rows of REF_COLUMNS (repository.py); None when not read


Firsts = dict[str, First]  # document id -> what was read of it


def _counts(src: Source, kinds: Sequence[str], single: list[str], pairs: list[str], longs: list[str],
            ahead: Sequence[str] = (), placed: dict[str, bool] | None = None, firsts: Sequence[str] = ()
            ) -> tuple[dict[tuple[str, int, str], int], Firsts]:
    """frequencies' statement (_COUNTS): (kind, words, key) -> count for the one-word (1), two-word (2) and listed
    longer (3) keys, in each of `kinds`. With `ahead` (some documents), the same statement reads the page and
    section postings of those documents for the lexemes `placed` ({lexeme: in a phrase of several words}), into
    the cache (with positions: sections always, pages when the lexeme is in a phrase of several words): the page
    and section searches of those documents that follow read them there (a round trip fewer). `firsts`: documents
    whose cover pages' texts, stored statement pages and sections' refs the statement reads too (the second value:
    the documents found)."""
    placed = placed if ahead and src.cache is not None and placed else {}
    if not (single or pairs or longs or placed or firsts):
        return {}, {}
    many = sorted(lex for lex, m in placed.items() if m)
    rows = src.conn.execute(_COUNTS, (single, pairs, longs, many, sorted(placed), sorted(ahead) if placed else [],
                                      *[list(firsts)] * 4, REFS_AHEAD), binary=True)
    counts: dict[tuple[str, int, str], int] = {}
    read: dict[tuple[str, str], Postings] = {}
    covers: dict[str, list[tuple[int, str]]] = {}
    stored: dict[str, tuple[str | None, int]] = {}
    refs: dict[str, list[tuple]] = {}
    columns = [(k, _COLUMN[k]) for k in kinds]
    for row in rows.fetchall():  # made in C, not one __next__ a row
        what, key = row[0], row[1]
        if what <= _LONG:
            for k, column in columns:
                counts[(k, what, key)] = int(row[column])
        elif what <= _SECTIONS:
            kind, doc = "pages" if what == _PAGES else "sections", row[6]
            read.setdefault((kind, key), Postings())[doc] = Posting(doc, row[2], row[7])
        elif what == _COVER:  # a cover page: its number and text
            covers.setdefault(key, []).append((int(row[2]), row[6]))
        elif what == _STATEMENTS:  # a document's stored statement pages and its count of sections
            stored[key] = (row[6], row[2])
        else:  # a section's ref: as a row of REF_COLUMNS
            refs.setdefault(row[6], []).append((row[2], key, row[6], row[8], row[9], row[3], row[4], row[5], row[10]))
    _keep_ahead(src, ahead, placed, read)
    found = {d: First([text for _, text in sorted(covers.get(d, ()))], statements,
                      got if len(got := refs.get(d, [])) == sections else None)  # all its sections, or none read
             for d, (statements, sections) in stored.items()}
    return counts, found


def frequencies(src: Source, kind: str, tsqs: Sequence[Tsq], also: Sequence[str] = (), ahead: Sequence[str] = (),
                more_tsqs: Sequence[Tsq] = (), firsts: Sequence[str] = ()
                ) -> tuple[list[int], dict[str, dict[Tsq, int]], Firsts]:
    """Rows of `kind` ("pages", "covers", "sections", "documents") holding each phrase: a one-word phrase's
    count read from word_stats (its postings' lengths summed, documents: their number, kept at ingest; a word
    never written counts 0), a two-word phrase's read from term_stats (kept at ingest; a pair never written
    counts 0), a listed longer one's too (term_phrases, migration 9; no row: 0), in one statement; other longer
    phrases matched here on their lexemes' postings, unless a pair of their adjacent lexemes is in no row (0).
    With `also` (other kinds), the same statement counts the one- and two-word and listed phrases there too:
    (counts, {kind: {phrase: count}}, firsts) (a term_stats row holds every kind's count; a search of pages is
    followed by one of sections). `ahead`: documents whose page and section postings of these phrases' words
    (and `more_tsqs`') the statement reads into the cache (`_counts`), those of words the cache holds for them
    already left out. `firsts`: as `_counts`' (the third value)."""
    if not tsqs:
        return [], {k: {} for k in also}, {}
    table = "pages" if kind == "documents" else kind
    single = sorted({q.lexemes[0] for q in tsqs if len(q.lexemes) == 1})
    pairs = sorted({key for q in tsqs if (key := paired(q)) is not None} | {k for q in tsqs for k in pairs_of(q)})
    longs = sorted({key for q in tsqs if (key := long_key(q)) is not None})
    placed: dict[str, bool] = {}
    if ahead and src.cache is not None:
        for q in (*tsqs, *more_tsqs):
            for lex in q.lexemes:
                placed[lex] = placed.get(lex, False) or len(q.lexemes) > 1
        placed = {lex: many for lex, many in placed.items() if any(
            src.cache.get_docs((src.generation, k, lex), many or k == "sections", ahead)[1] for k in ("pages", "sections"))}
    counts, found_firsts = _counts(src, (kind, *also), single, pairs, longs, ahead, placed, firsts)
    absent = {q for q in tsqs if any(counts.get((kind, 2, k), 0) == 0 for k in pairs_of(q))}  # count 0: not matched
    listed = {q for q in tsqs if (key := long_key(q)) is not None and (kind, 3, key) in counts}
    matched = sorted({lex for q in tsqs if len(q.lexemes) > 1 and paired(q) is None and q not in absent
                      and q not in listed for lex in q.lexemes})
    found = src.read(table, matched, matched, None)
    out = []
    for q in tsqs:
        if len(q.lexemes) == 1:
            out.append(counts.get((kind, 1, q.lexemes[0]), 0))
        elif (key := paired(q)) is not None:
            out.append(counts.get((kind, 2, key), 0))
        elif q in absent:
            out.append(0)
        elif q in listed:
            out.append(counts[(kind, 3, long_key(q))])
        else:
            out.append(_phrase_count(q, found, kind == "documents") if q.lexemes else 0)
    more = {k: {q: counts.get((k, 1, q.lexemes[0]), 0) if len(q.lexemes) == 1 else counts.get((k, 2, key), 0)
                for q in tsqs if len(q.lexemes) == 1 or (key := paired(q)) is not None} for k in also}
    for k in also:  # and the listed long phrases
        more[k].update((q, counts[(k, 3, key)]) for q in listed if (key := long_key(q)) is not None)
    return out, more, found_firsts


def search_pages(src: Source, tsqs: Sequence[Tsq], idfs: Sequence[float], avgdl: float, scope: Scope,
                 limit: int | None, within: Sequence[str] | None = None,
                 covers: bool = False) -> list[tuple[str, int, float]]:
    """Top pages (cover pages with `covers`) by BM25: (document_id, page number, score)."""
    # A scoped page search is followed by the section search of the same phrases in the same documents: their
    # section postings are read with the pages' (scope.complete: a search of every document, not prefetched).
    also = None if covers or scope.complete else "sections"
    found = read(src, "covers" if covers else "pages", tsqs, documents(scope, within), False, also)
    top = bm25_top(tsqs, idfs, avgdl, found, limit)
    if top is not None:
        return [(doc, number, score) for _rowid, score, doc, number in top]
    scores, where = bm25(tsqs, idfs, avgdl, found)
    return [(where[rowid][0].document_id, where[rowid][0].numbers[where[rowid][1]], score)
            for rowid, score in best(scores, limit)]


def pages_holding(src: Source, tsqs: Sequence[Tsq], document_ids: Sequence[str]) -> list[PageKey]:
    """The pages of the documents holding any of the phrases, by document id and number (no score)."""
    found = read(src, "pages", tsqs, document_ids, False)
    return sorted({(posting.document_id, posting.numbers[i]) for q in tsqs for posting, i, _ in hits(q, found, PLAIN)})


def search_sections(src: Source, tsqs: Sequence[Tsq], idfs: Sequence[float], avgdl: float, weights: SectionWeights,
                    scope: Scope, limit: int, within: Sequence[str]) -> list[tuple[int, float]]:
    """Top sections of the `within` documents by field-weighted BM25: (section rowid, score)."""
    labels = (1.0, weights.text, weights.ancestors, weights.title)  # tsvector labels D, C, B, A
    found = read(src, "sections", tsqs, documents(scope, within), labels != PLAIN)
    top = bm25_top(tsqs, idfs, avgdl, found, limit, labels)
    if top is not None:
        return [(rowid, score) for rowid, score, _doc, _number in top]
    return best(bm25(tsqs, idfs, avgdl, found, labels)[0], limit)


def stats(conn: Any) -> dict[str, tuple[int, float]]:
    """kind -> (rows, mean tokens per row) for pages, covers and sections: the sums of the deltas the writes left
    in text_stats (migration 5), a few rows, instead of counting the tables."""
    sums = {kind: (int(n), int(tok)) for kind, n, tok in
            conn.execute("SELECT kind, SUM(rows), SUM(tokens) FROM text_stats GROUP BY kind")}
    return {kind: (n, float(tok) / n if n else 0.0)
            for kind in ("pages", "covers", "sections") for n, tok in [sums.get(kind, (0, 0))]}


def fold_stats(conn: Any) -> None:
    """text_stats' deltas folded into one row per kind (the sums unchanged; rows other writers have not committed
    yet are not seen, so stay as they are)."""
    conn.execute("WITH gone AS (DELETE FROM text_stats RETURNING kind, rows, tokens) "
                 "INSERT INTO text_stats SELECT kind, SUM(rows), SUM(tokens) FROM gone GROUP BY kind")


GENERATION = "SELECT COUNT(*), COALESCE(MAX(seq), 0) FROM documents"
# GENERATION read with each snapshot's BEGIN (db.Connections.snapshot_query): not counted again while no transaction
# has committed since the last snapshot (the documents' count is a scan of their index: 0.3 ms at 1,657 documents)
SNAPSHOT_GENERATION = GENERATION + " WHERE {changed}"


def generation(conn: Any) -> tuple:
    """Changes whenever a document is added or removed: the count and the newest sequence number (never reused)."""
    return generation_of(conn.execute(GENERATION).fetchone())


def generation_of(row: Sequence[Any]) -> tuple:
    """The generation from a row of GENERATION (a snapshot reads it with its BEGIN: db.Connections.begun)."""
    return (int(row[0]), int(row[1]))
