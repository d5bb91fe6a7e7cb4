"""SqliteStore: the Store interface over one SQLite file (WAL, FTS5). The only code that knows SQL, FTS5 syntax,
rowids and the SQLite library's exceptions (driver.py); those are translated into EngineErrors here. The verbs
that only call documents.py / search.py on a connection live in store/delegating.py.

With APSW, a search of a few documents scores with `bm25.FUNCTION` from cached statistics (each phrase's row count
per KB generation, as `page_frequencies` caches them, and the FTS table's totals per generation), read in one
snapshot with the statement: bm25()'s results to the bit, without its pass over the whole index per statement. The
function costs Python per matching row, so statements over many rows (corpus-wide, cover pages) keep bm25()."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from jsonl_engine.errors import EngineError, Internal
from jsonl_engine.store.delegating import DelegatingStore, DelegatingTransaction, translated
from jsonl_engine.store.sqlite import bm25, driver, search
from jsonl_engine.store.sqlite import documents as docs
from jsonl_engine.store.sqlite.db import Connections, unusable
from jsonl_engine.store.types import PageHit, PageKey, Phrase, Scope, SectionHit, SectionWeights

# The function scores a statement over at most MAX_SHARE of its table's rows when (rows in its rowid windows) x
# (phrases) <= COST_RATIO x (the phrases' rows in the whole table): Python's cost per row and phrase in the windows
# against bm25()'s count of the phrases' rows, plus its matching of every row between the first window and the last
# (one statement for all windows; the function takes one statement per window). Chosen on the 166-filing library and
# twice it (in process, the 65 dev questions corpus-wide then scoped, 53,358 pages; 0.25 / 1 / 2 / 4 / 8): corpus-wide
# p95 40-43 / 28-31 / 22-26 / 22-25 / 23 ms, scoped p95 16-22 / 11-12 / 9-10 / 8-10 / 10 ms. Statements over most
# of a table (corpus-wide, cover pages) keep bm25(): there every matching row costs the function Python.
COST_RATIO = 4.0
MAX_SHARE = 0.5


class _SqliteErrors:
    """The SQLite library's errors become EngineErrors naming the operation: an unusable file (damaged, truncated,
    an I/O error, a full disk) kb_unavailable with its reason, and its connections are opened again at their next
    use; anything else is a bug, internal."""

    _errors = driver.ERRORS
    _db: Connections

    def _translate(self, what: str, exc: BaseException) -> EngineError:
        error = unusable(self._db.path, exc)
        if error is None:
            return Internal(f"the KB store failed ({what}): {exc}")
        self._db.discard()
        return error


class SqliteTransaction(_SqliteErrors, DelegatingTransaction):
    """The writes of one transaction on the writer connection."""

    _docs = docs

    def __init__(self, conn: driver.Connection, db: Connections) -> None:
        super().__init__(conn)
        self._db = db


class SqliteStore(_SqliteErrors, DelegatingStore):
    _docs = docs
    _search = search

    def __init__(self, kb_dir: Path) -> None:
        super().__init__()
        self._db = Connections(kb_dir)
        self.kb_dir = self._db.kb_dir
        self.path = self._db.path
        # Score with the cached statistics when cheaper (APSW connections have the function); False: bm25() always.
        self.cached_bm25 = driver.APSW
        self.cost_ratio, self.max_share = COST_RATIO, MAX_SHARE

    def _begin(self, conn: driver.Connection) -> SqliteTransaction:
        return SqliteTransaction(conn, self._db)

    # ---- search

    def _frequencies(self, kind: str, phrases: Sequence[Phrase]) -> dict[Phrase, int]:
        conn, gen = self._conn(), self._generation()
        return {p: self._memo.get(f"df:{kind}", (gen, p), lambda p=p: search.frequency(conn, kind, p))
                for p in phrases}

    def _stats(self, kind: str, phrases: Sequence[Phrase],
               wins: Sequence[search.Window] | None = None) -> search.Stats | None:
        """What bm25() would compute for a statement on `kind`'s table MATCHing `phrases` inside the rowid windows
        `wins` (None: the whole table), or None to let bm25() compute it (see COST_RATIO). Call inside a snapshot
        holding the statement too, so the generation the values are cached under is its own."""
        if not self.cached_bm25 or not phrases:
            return None
        conn, gen = self._conn(), self._generation()
        rows, tokens = self._memo.get("fts:totals", (gen, kind), lambda: search.totals(conn, kind))
        scanned = rows if wins is None else min(rows, sum(hi - lo + 1 for lo, hi in wins))
        if scanned > self.max_share * rows:
            return None
        counts = self._frequencies(kind, phrases)
        if scanned * len(phrases) > self.cost_ratio * sum(counts[p] for p in phrases):
            return None
        return search.Stats(avgdl=tokens / rows if rows else 1.0,
                            idfs=tuple(bm25.idf(rows, counts[p]) for p in phrases))

    @translated
    def page_count(self) -> int:
        conn = self._conn()
        return self._memo.get("count", (self._generation(), "pages"), lambda: search.count(conn, "pages"))

    @translated
    def cover_count(self) -> int:
        conn = self._conn()
        return self._memo.get("count", (self._generation(), "covers"), lambda: search.count(conn, "covers"))

    @translated
    def search_pages(self, phrases: Sequence[Phrase], scope: Scope, limit: int,
                     within: Sequence[str] | None = None) -> list[PageHit]:
        with self.snapshot():
            conn, expr = self._conn(), search.match(phrases)
            if within is None:
                rows = search.search_pages(conn, expr, scope, limit, stats=self._stats("pages", phrases))
            else:
                wins = search.windows(conn, "pages", within)
                rows = search.search_pages_in(conn, expr, scope, limit, wins, self._stats("pages", phrases, wins)) \
                    if wins else []
                rows.sort(key=lambda p: (-p[2], p[0], p[1]))
        return [PageHit(d, n, s) for d, n, s in rows]

    @translated
    def search_sections(self, phrases: Sequence[Phrase], weights: SectionWeights, scope: Scope, limit: int,
                        within: Sequence[str]) -> list[SectionHit]:
        with self.snapshot():
            conn, expr = self._conn(), search.match(phrases)
            wins = search.windows(conn, "sections", within)
            hits = search.search_sections_in(conn, expr, scope, limit, weights, wins,
                                             self._stats("sections", phrases, wins)) if wins else []
            refs = search.load_sections(conn, [r for r, _ in hits])
        return [SectionHit(refs[r], s) for r, s in hits if r in refs]

    @translated
    def search_covers(self, phrases: Sequence[Phrase], scope: Scope) -> dict[str, float]:
        with self.snapshot():
            return search.search_covers(self._conn(), search.match(phrases), scope, self._stats("covers", phrases))

    @translated
    def pages_holding(self, phrases: Sequence[Phrase], document_ids: Sequence[str]) -> list[PageKey]:
        if not phrases or not document_ids:
            return []
        return search.pages_holding(self._conn(), search.match(phrases), document_ids)

    # ---- upkeep

    @translated
    def tidy_indexes(self) -> None:
        search.merge_segments(self._db.write)
