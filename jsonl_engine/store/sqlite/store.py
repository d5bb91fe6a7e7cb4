"""SqliteStore: the shared document repository (store/repository.py) over one SQLite file (WAL, FTS5), with
SQLite's dialect (its errors become EngineErrors in `SqliteDialect.translate`, the one place) and its text
index: FTS5 tables written with the rows, searched by the SearchIndex verbs below (statements in search.py).

With APSW, a search of a few documents scores with `bm25.FUNCTION` from cached statistics (each phrase's row count
per KB generation, as `frequencies` caches them, and the FTS table's totals per generation), read in one
snapshot with the statement: bm25()'s results to the bit, without its pass over the whole index per statement. The
function costs Python per matching row, so statements over many rows (corpus-wide, cover pages) keep bm25()."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from jsonl_engine.errors import EngineError, Internal
from jsonl_engine.store.dialect import Dialect, Sql
from jsonl_engine.store.repository import PAGES_PER_STATEMENT, Repository, section_ref
from jsonl_engine.store.sqlite import bm25, driver, search, terms
from jsonl_engine.store.sqlite.db import Connections, unusable
from jsonl_engine.store.types import (
    COVER_PAGES,
    PageHit,
    PageKey,
    Phrase,
    Scope,
    SectionHit,
    SectionRef,
    SectionWeights,
)

# The function scores a statement over at most MAX_SHARE of its table's rows when (rows in its rowid windows) x
# (phrases) <= COST_RATIO x (the phrases' rows in the whole table): Python's cost per row and phrase in the windows
# against bm25()'s count of the phrases' rows, plus its matching of every row between the first window and the last
# (one statement for all windows; the function takes one statement per window). Chosen on the 166-filing library and
# twice it (in process, the 65 dev questions corpus-wide then scoped, 53,358 pages; 0.25 / 1 / 2 / 4 / 8): corpus-wide
# p95 40-43 / 28-31 / 22-26 / 22-25 / 23 ms, scoped p95 16-22 / 11-12 / 9-10 / 8-10 / 10 ms. Statements over most
# of a table (corpus-wide, cover pages) keep bm25(): there every matching row costs the function Python.
COST_RATIO = 4.0
MAX_SHARE = 0.5
WINDOW_HITS = 64  # windows whose section rows are kept (at most SECTION_CANDIDATES rows each)
# The repository's REF_COLUMNS, read from section_refs (migration 9): the same values in the same order.
REF_COLUMNS = "rowid, id, document_id, title, ancestors, page_start, page_end, text_len, own_map"
PAGES_KEPT = 10_000  # pages whose sections are kept (about 3 kB each on the 10x library: 30 MB at most)
REFS_KEPT = 20_000  # section hits whose refs are kept (about 1 kB each: 20 MB at most)


DOCUMENTS_KEPT = 2_000  # documents whose page maps (rowid -> (document, number)) are kept (18 kB each at 150 pages)


def _in(scope: Scope, document_id: str) -> bool:
    return scope.complete or document_id in scope.documents


def _all_in(scope: Scope, documents: Sequence[str]) -> bool:
    return all(_in(scope, d) for d in documents)


class SqliteDialect(Dialect):
    """SQLite's SQL is the repository's own; what is SQLite's here is its errors: an unusable file (damaged,
    truncated, an I/O error, a full disk) is kb_unavailable with its reason, and its connections are opened again
    at their next use; anything else is a bug, internal."""

    errors = driver.ERRORS
    _db: Connections

    def __init__(self, db: Connections) -> None:
        self._db = db

    def translate(self, what: str, exc: BaseException) -> EngineError:
        error = unusable(self._db.path, exc)
        if error is None:
            return Internal(f"the KB store failed ({what}): {exc}")
        self._db.discard()
        return error


class SqliteStore(Repository):
    """The repository over one SQLite file, with its FTS5 text index (port.SearchIndex)."""

    side_searches = True

    def __init__(self, kb_dir: Path) -> None:
        db = Connections(kb_dir)
        super().__init__(SqliteDialect(db))
        self._db = db
        self.kb_dir = self._db.kb_dir
        self.path = self._db.path
        # Score with the cached statistics when cheaper (APSW connections have the function); False: bm25() always.
        self.cached_bm25 = driver.APSW
        self.cost_ratio, self.max_share = COST_RATIO, MAX_SHARE
        self._window_hits: dict[tuple, list[tuple]] = {}  # _window_sections' rows (at most WINDOW_HITS windows)

    # ---- the index's rows

    def _index_generation(self, sql: Sql) -> tuple:
        return search.generation(sql.conn)

    def _library_version(self, sql: Sql) -> int:
        """The reader connection's `PRAGMA data_version`: it changes when another connection (this process's
        writer included: readers never write) commits, and holds still inside a read transaction."""
        return sql.one("PRAGMA data_version")[0]  # type: ignore[index]

    def _write_text(self, sql: Sql, document_id: str, pages: list[tuple], sections: list[tuple]) -> None:
        """The rows, then their FTS rows (schema v2: no insert triggers; one statement per index)."""
        sql.many("INSERT INTO pages (document_id, number, text) VALUES (?, ?, ?)", pages)
        sql.many("INSERT INTO sections (id, document_id, parent_id, position, depth, ordinal, title, ancestors,"
                 " page_start, page_end, is_leaf, text, page_map, summary) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
                 " ?, ?)", sections)
        sql.run("INSERT INTO sections_fts (rowid, title, ancestors, text) "
                "SELECT rowid, title, ancestors, text FROM sections WHERE document_id = ?", (document_id,))
        sql.run("INSERT INTO pages_fts (rowid, text) SELECT rowid, text FROM pages WHERE document_id = ?",
                (document_id,))
        sql.run("INSERT INTO covers_fts (rowid, text) SELECT rowid, text FROM pages "
                f"WHERE document_id = ? AND number <= {COVER_PAGES}", (document_id,))
        sql.run(f"INSERT INTO section_refs ({REF_COLUMNS}) SELECT rowid, id, document_id, title, ancestors, page_start,"
                " page_end, length(text), CASE WHEN is_leaf THEN NULL ELSE page_map END FROM sections"
                " WHERE document_id = ? ORDER BY rowid", (document_id,))
        terms.add(sql.conn, terms.document_counts([(n, t) for _, n, t in pages], [(r[6], r[7], r[11]) for r in sections],
                                                  terms.kept(sql.conn)))

    def _delete_text(self, sql: Sql, document_id: str) -> None:
        terms.add(sql.conn, terms.stored(sql.conn, document_id), sign=-1)
        sql.run("DELETE FROM section_refs WHERE document_id = ?", (document_id,))

    # ---- reads kept (store.memo) per KB generation: a document's sections never change, but a document removed
    # and stored again has new rowids (and SQLite gives a removed newest row's rowid to the next row written)

    def _page_refs(self, sql: Sql, pages: Sequence[PageKey], back: int) -> Iterator[tuple[int, SectionRef]]:
        """Each page's sections kept (their rowids and refs), the pages not seen yet read together (questions
        about one document land on its same few pages: a statement, a note)."""
        if not pages:
            return iter(())
        gen = self._generation()

        def read(keys: list[tuple]) -> dict[tuple, tuple[tuple[int, SectionRef], ...]]:
            rows: list[list[Sequence[Any]]] = [[] for _ in keys]
            for i, row in self._page_rows(sql, [(d, n) for _, d, n, _ in keys], back):
                rows[i].append(row)
            refs = self._refs(gen, {row[0]: row for found in rows for row in found})
            return {key: tuple((row[0], refs[row[0]]) for row in found) for key, found in zip(keys, rows, strict=True)}

        keys = list(dict.fromkeys((gen, d, n, back) for d, n in pages))
        found = self._memo.get_many("page-sections", keys, read, PAGES_KEPT)
        return (pair for d, n in pages for pair in found[(gen, d, n, back)])

    def _refs(self, gen: tuple, rows: dict[int, Sequence[Any]]) -> dict[int, SectionRef]:
        """The refs of these REF_COLUMNS rows by rowid, each made once per KB generation: a section on the
        pages searched is often a section hit too, and questions come back to the same documents."""
        refs = self._memo.get_many("section-refs", [(gen, r) for r in rows],
                                   lambda missing: {k: section_ref(rows[k[1]]) for k in missing}, REFS_KEPT)
        return {r: refs[(gen, r)] for r in rows}

    def _page_rows(self, sql: Sql, pages: Sequence[PageKey], back: int) -> Iterator[tuple[int, Sequence[Any]]]:
        """The repository's rows, from section_refs, per chunk of pages one join of the pages (a VALUES list) with
        its (document_id, page_start) index, instead of a UNION ALL of one lookup per page: SQLite plans and runs
        40 arms, each sorted for the merge, in 0.55 ms where the join takes 0.2 ms (the 65 dev questions'
        lookups on the ten-times library, the same rows in the same order)."""
        for start in range(0, len(pages), PAGES_PER_STATEMENT):
            chunk = pages[start:start + PAGES_PER_STATEMENT]
            args = [a for i, (doc, page) in enumerate(chunk) for a in (start + i, doc, page - back, page)]
            rows = list(driver.tuples(
                sql.conn, f"WITH p(i, d, lo, hi) AS (VALUES {', '.join(['(?, ?, ?, ?)'] * len(chunk))}) "
                f"SELECT p.i, {REF_COLUMNS} FROM p JOIN section_refs s ON s.document_id = p.d "
                "AND s.page_start BETWEEN p.lo AND p.hi AND s.page_end >= p.hi "
                "ORDER BY p.i, s.page_start, s.rowid", args))
            for row in rows:
                yield row[0], row[1:]

    def _section_refs(self, sql: Sql, rowids: Sequence[int]) -> dict[int, SectionRef]:
        """The refs of these section rowids, kept (`_refs`)."""
        gen = self._generation()

        def read(missing: list[tuple[tuple, int]]) -> dict[tuple[tuple, int], SectionRef]:
            where, args = sql.any_of("rowid", [r for _, r in missing])
            return {(gen, r[0]): section_ref(r)
                    for r in driver.tuples(sql.conn, f"SELECT {REF_COLUMNS} FROM section_refs WHERE {where}", args)}

        refs = self._memo.get_many("section-refs", list(dict.fromkeys((gen, r) for r in rowids)), read, REFS_KEPT)
        return {r: ref for (_, r), ref in refs.items()}

    # ---- search

    def frequencies(self, kind: str, phrases: Sequence[Phrase]) -> dict[Phrase, int]:
        """One- and two-token phrases and the listed longer ones (the search vocabulary's) read from the term
        statistics (terms.py), others counted on the index unless a pair of their adjacent tokens is in no row."""
        conn, gen = self._conn(), self._generation()
        tokens = self._memo.get_many("fts-tokens", list(dict.fromkeys(phrases)), terms.phrase_tokens)
        if kind == "documents":
            spans = lambda: self._memo.get("page-spans", gen, lambda: search.page_spans(conn))  # noqa: E731
            count = lambda p: search.document_frequency(conn, p, spans)  # noqa: E731
        else:
            count = lambda p: search.frequency(conn, kind, p)  # noqa: E731

        def compute(keys: list[tuple[tuple, Phrase]]) -> dict[tuple[tuple, Phrase], int]:
            wanted = [k for _, p in keys for k in terms.keys(tokens[p])]
            found, listed = terms.lookup(conn, kind, wanted), terms.listed_among(conn, wanted)
            return {(g, p): terms.count(tokens[p], found, lambda p=p: count(p), listed) for g, p in keys}

        df = self._memo.get_many(f"df:{kind}", list(dict.fromkeys((gen, p) for p in phrases)), compute)
        return {p: df[(gen, p)] for p in phrases}

    def costly_counts(self, kind: str, phrases: Sequence[Phrase]) -> list[Phrase]:
        """The phrases of three tokens or more not listed in `term_phrases` and not counted yet in this KB
        generation: `frequencies` counts them on the index (a pass over it each) unless a pair of their tokens is
        in no row. One- and two-token phrases and the search vocabulary's are read from the term statistics,
        cheaper than a side thread's snapshot."""
        tokens = self._memo.get_many("fts-tokens", list(dict.fromkeys(phrases)), terms.phrase_tokens)
        gen = self._generation()
        long = {p: " ".join(tokens[p]) for p in phrases
                if len(tokens[p]) > 2 and not self._memo.has(f"df:{kind}", (gen, p))}
        if not long:
            return []
        listed = terms.listed_among(self._conn(), list(long.values()))
        return [p for p, key in long.items() if key not in listed]

    def _stats(self, kind: str, phrases: Sequence[Phrase],
               wins: Sequence[search.Window] | None = None) -> search.Stats | None:
        """What bm25() would compute for a statement on `kind`'s table MATCHing `phrases` inside the rowid windows
        `wins` (None: the whole table), or None to let bm25() compute it (see COST_RATIO). Call inside a snapshot
        holding the statement too, so the generation the values are cached under is its own."""
        if not self.cached_bm25 or not phrases:
            return None
        rows, tokens = self._totals(kind)
        scanned = rows if wins is None else min(rows, sum(hi - lo + 1 for lo, hi in wins))
        if scanned > self.max_share * rows:
            return None
        counts = self.frequencies(kind, phrases)
        if scanned * len(phrases) > self.cost_ratio * sum(counts[p] for p in phrases):
            return None
        return search.Stats(avgdl=tokens / rows if rows else 1.0,
                            idfs=tuple(bm25.idf(rows, counts[p]) for p in phrases))

    def _windows(self, table: str, documents: Sequence[str]) -> list[search.Window]:
        """`search.windows`, kept per KB generation and set of documents (a document's rows keep their rowids;
        questions come back to the same documents)."""
        conn, key = self._conn(), (self._generation(), table, tuple(sorted(set(documents))))
        return self._memo.get("windows", key, lambda: search.windows(conn, table, key[2]))

    def count(self, kind: str) -> int:
        """Documents from the KB generation; pages, cover pages and sections from their FTS table's row count
        (its averages record, kept by FTS5 with the rows: `search.totals`), which bm25() reads too, instead of a
        count of the rows: a scan of the pages' index per KB generation, 11-14 ms each for the pages and the cover
        pages of the ten-times library, paid by a new daemon's first queries."""
        if kind == "documents":
            return self._generation()[0]
        return self._totals(kind)[0]

    def _totals(self, kind: str) -> tuple[int, int]:
        """`search.totals` of `kind`'s FTS table, kept per KB generation."""
        conn = self._conn()
        return self._memo.get("fts:totals", (self._generation(), kind), lambda: search.totals(conn, kind))

    def search_pages(self, phrases: Sequence[Phrase], scope: Scope, limit: int,
                     within: Sequence[str] | None = None) -> list[PageHit]:
        with self.snapshot():
            conn, expr = self._conn(), search.match(phrases)
            if within is None:
                rows = search.search(conn, "pages", expr, scope, limit, stats=self._stats("pages", phrases))
            else:
                wins = self._windows("pages", within)
                stats = self._stats("pages", phrases, wins) if wins else None
                rows = self._window_pages(expr, scope, limit, within, wins, stats) if wins else []
                if rows is None:
                    rows = search.search_in(conn, "pages", expr, scope, limit, wins, stats)
        return [PageHit(d, n, s) for d, n, s in rows]

    def _window_pages(self, expr: str, scope: Scope, limit: int, within: Sequence[str], wins: Sequence[search.Window],
                      stats: search.Stats | None) -> list[tuple] | None:
        """`search_in` of the pages without its join with the pages' rows, where it runs one statement per window:
        each window's top rows by the FTS table alone (`search.search_window`), their rowids mapped to pages by
        the documents' page maps (rowid -> (document, number), kept per KB generation), the best `limit` of them
        kept (`search.best`). None (search with the join) when a document searched is out of scope or a row is of
        no document searched: then the filter would drop rows."""
        if not (len(wins) == 1 or stats is not None) or not _all_in(scope, within):
            return None
        conn, gen = self._conn(), self._generation()
        maps = self._memo.get_many("page-keys", list(dict.fromkeys((gen, d) for d in within)), lambda keys: {
            k: {r: (k[1], n) for r, n in search.page_numbers(conn, k[1]).items()} for k in keys}, DOCUMENTS_KEPT)
        key = maps[(gen, within[0])] if len(maps) == 1 else {r: pk for m in maps.values() for r, pk in m.items()}
        rows = search.best([hit for win in wins for hit in search.search_window(conn, "pages", expr, limit, win, stats)],
                           limit)
        if any(r not in key for r, _ in rows):  # a row of another document among them (one below them displaced none)
            return None
        return [(*key[r], s) for r, s in rows]

    def search_sections(self, phrases: Sequence[Phrase], weights: SectionWeights, scope: Scope, limit: int,
                        within: Sequence[str]) -> list[SectionHit]:
        with self.snapshot():
            conn, expr = self._conn(), search.match(phrases)
            wins = self._windows("sections", within)
            stats = self._stats("sections", phrases, wins) if wins else None
            if stats is not None and scope.complete:  # one statement per window, each window's rows kept a while
                hits = search.best([row for win in wins
                                    for row in self._window_sections(expr, limit, win, stats, weights)], limit)
            elif wins and (len(wins) == 1 or stats is not None) and _all_in(scope, within):
                # each window's top rows by the FTS table alone (as `_window_pages`), kept when all are in scope
                hits = search.best([hit for win in wins for hit in search.search_window(
                    conn, "sections", expr, limit, win, stats, weights)], limit)
                refs = self._section_refs(self._sql(), [r for r, _ in hits])
                if all(r in refs and _in(scope, refs[r].document_id) for r, _ in hits):
                    return [SectionHit(refs[r], s) for r, s in hits]
                hits = search.search_in(conn, "sections", expr, scope, limit, wins, stats, weights)
            else:
                hits = search.search_in(conn, "sections", expr, scope, limit, wins, stats, weights) if wins else []
            refs = self._section_refs(self._sql(), [r for r, _ in hits])
        return [SectionHit(refs[r], s) for r, s in hits if r in refs]

    def _window_sections(self, expr: str, limit: int, win: search.Window, stats: search.Stats,
                         weights: SectionWeights) -> list[tuple]:
        """`search.search` of one window of the whole library's sections, its rows kept for the next search of
        the same window and phrases in this KB generation: a question's section search of the documents guessed
        beside the page search and the one of the documents the pages then put first share documents."""
        key = (self._generation(), expr, limit, win, stats, weights)
        rows = self._window_hits.get(key)
        if rows is None:
            rows = search.search(self._conn(), "sections", expr, Scope({}, complete=True), limit, win, stats, weights)
            if len(self._window_hits) >= WINDOW_HITS:
                self._window_hits.clear()
            self._window_hits[key] = rows
        return rows

    def search_covers(self, phrases: Sequence[Phrase], scope: Scope) -> dict[str, float]:
        with self.snapshot():
            return search.search_covers(self._conn(), search.match(phrases), scope, self._stats("covers", phrases))

    def pages_holding(self, phrases: Sequence[Phrase], document_ids: Sequence[str]) -> list[PageKey]:
        if not phrases or not document_ids:
            return []
        return search.pages_holding(self._conn(), search.match(phrases), document_ids)

    # ---- upkeep

    def tidy_indexes(self) -> None:
        search.merge_segments(self._db.write)
