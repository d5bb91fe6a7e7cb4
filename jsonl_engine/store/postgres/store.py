"""PostgresStore: the shared document repository (store/repository.py) over one PostgreSQL database (psycopg 3),
with PostgreSQL's dialect (placeholders, arrays, NUL, the duplicate-content insert; psycopg's errors become
EngineErrors in `PostgresDialect.translate`, the one place, the connection string redacted) and its text index:
token counts, weighted tsvectors and the postings made from them written with the rows, searched by the
SearchIndex verbs below (BM25 from the postings, search.py)."""

from __future__ import annotations

import bisect
import functools
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from jsonl_engine.errors import EngineError, Internal, KBUnavailable
from jsonl_engine.store.dialect import Dialect, Sql
from jsonl_engine.store.location import describe
from jsonl_engine.store.postgres import indexing, search
from jsonl_engine.store.postgres.db import Connections, failure, psycopg  # db raises KBUnavailable without it
from jsonl_engine.store.postgres.replica import Routed
from jsonl_engine.store.postgres.text import CONFIG, section_words, stems
from jsonl_engine.store.repository import REF_COLUMNS as LENGTH_REF_COLUMNS
from jsonl_engine.store.repository import Repository, section_ref, statements_of
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


class PostgresDialect(Dialect):
    """PostgreSQL's differences: `%s` placeholders, `= ANY(array)` for lists, no NUL in text, the content hash's
    UNIQUE conflict skipped (`ON CONFLICT DO NOTHING RETURNING`), executemany on a cursor; and its errors become
    EngineErrors naming the operation (never the password), here only."""

    errors = (psycopg.Error,)

    def __init__(self, url: str, db: Connections | Routed) -> None:
        self._url, self._db = url, db

    def translate(self, what: str, exc: BaseException) -> EngineError:
        url = self._db.url_of(exc)  # the primary's, or the read replica's
        text = failure(url, exc)
        reason = _unusable(exc)
        if reason is None:
            return Internal(f"the KB store failed ({what}): {text}")
        problem = "is unreachable" if reason == "unreachable" else f"cannot be used ({reason})"
        server = "database" if url == self._url else "read replica"
        return KBUnavailable(f"the KB {server} {describe(url)} {problem} ({what}): {text}",
                             {"kb": describe(url), "reason": reason})

    def lost(self, exc: BaseException) -> bool:
        return self._db.lost(exc)

    @functools.lru_cache(maxsize=512)  # noqa: B019 (one dialect per store, statements are a fixed set)
    def statement(self, sql: str) -> str:
        return sql.replace("?", "%s")

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        values = list(values)
        if values and all(type(v) is int for v in values):  # rowids, page numbers
            return f"{column} = ANY(?::bigint[])", [int_array(values)]
        if values and all(type(v) is str for v in values):  # ids, statuses
            return f"{column} = ANY(?::text[])", [text_array(values)]
        return f"{column} = ANY(?)", [values]

    def text(self, value: str) -> str:
        """PostgreSQL text cannot hold NUL: U+FFFD instead (same length, so offsets and page maps hold)."""
        return value.replace("\x00", "\ufffd") if "\x00" in value else value

    def executemany(self, conn: Any, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with conn.cursor() as cur:
            cur.executemany(self.statement(sql), list(rows))

    def insert_new(self, conn: Any, table: str, columns: str, row: Sequence[Any]) -> bool:
        marks = ",".join("?" * len(row))
        return self.execute(conn, f"INSERT INTO {table} ({columns}) VALUES ({marks}) ON CONFLICT DO NOTHING "
                            "RETURNING 1", row).fetchone() is not None


def _unusable(exc: BaseException) -> str | None:
    """kb_unavailable's reason for a server error that says the database cannot be used, else None (a bug)."""
    state = getattr(exc, "sqlstate", None) or ""
    if state == "53100":
        return "disk_full"
    if state in ("XX001", "XX002"):  # data_corrupted, index_corrupted
        return "corrupt"
    if state.startswith("58"):  # system errors: I/O, undefined or duplicate files
        return "io_error"
    if state.startswith("53"):  # insufficient resources: out of memory, too many connections
        return "resources"
    if isinstance(exc, psycopg.OperationalError) and not isinstance(exc, psycopg.errors.QueryCanceled):
        return "unreachable"  # the connection failed or was closed, the server is shutting down
    return None


# The repository's REF_COLUMNS, the length of a section's text stored (migration 12), not counted
REF_COLUMNS = LENGTH_REF_COLUMNS.replace("length(text)", "text_len")
# A document's pages, then its sections, each in one statement (one trigger firing, one text_stats delta per
# kind), inserted in list order (rowids ascending, as row by row) and sent back with their tsvectors, from which
# indexing.py makes the document's postings and term pairs.
_PAGE_INSERT = (
    "INSERT INTO pages (document_id, number, text, ntok, tsv)"
    f" SELECT %s, n, t, k, to_tsvector('{CONFIG}', w)"
    " FROM unnest(%b::int[], %b::text[], %b::int[], %b::text[]) WITH ORDINALITY AS r(n, t, k, w, i) ORDER BY i"
    " RETURNING rowid, ntok, number, tsvectorsend(tsv)")
_SECTION_INSERT = (
    "INSERT INTO sections (id, document_id, parent_id, position, depth, ordinal, title, ancestors, page_start,"
    " page_end, is_leaf, text, page_map, summary, ntok, tsv)"
    " SELECT id, %s, parent_id, position, depth, ordinal, title, ancestors, page_start, page_end, is_leaf, text,"
    f" page_map, summary, ntok, setweight(to_tsvector('{CONFIG}', w_title), 'A')"
    f" || setweight(to_tsvector('{CONFIG}', w_ancestors), 'B') || setweight(to_tsvector('{CONFIG}', w_text), 'C')"
    " FROM unnest(%b::text[], %b::text[], %b::int[], %b::int[], %b::int[], %b::text[], %b::text[], %b::int[],"
    " %b::int[], %b::bool[], %b::text[], %b::text[], %b::text[], %b::int[], %b::text[], %b::text[], %b::text[])"
    " WITH ORDINALITY AS r(id, parent_id, position, depth, ordinal, title, ancestors, page_start, page_end, is_leaf,"
    " text, page_map, summary, ntok, w_title, w_ancestors, w_text, i) ORDER BY i"
    " RETURNING rowid, ntok, 0, tsvectorsend(tsv)")


def int_array(values: Iterable[int]) -> str:
    """Integers as an array's text (`{1,2,3}`), for a `?::bigint[]` or `?::int[]` argument: one string to send,
    where psycopg's list adapter spends some microseconds on each integer (finding the smallest type holding them
    all, then dumping each one in Python): a query sends a few hundred rowids and page numbers."""
    return "{" + ",".join(map(str, values)) + "}"


def text_array(values: Iterable[str]) -> str:
    """Strings as an array's text (`{"a","b \\"c\\""}`: each one quoted, its backslashes and double quotes escaped),
    for a `?::text[]` argument (as `int_array`: one string to send). Text holds no NUL (`PostgresDialect.text`)."""
    return "{" + ",".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values) + "}"


# sections_on_pages in one statement whatever the number of pages: its text is the same every time, so it is
# prepared once per connection and planned in microseconds (a UNION ALL of 40 lookups costs more to plan than to run)
_PAGE_SECTIONS = (
    "SELECT t.i, s.* FROM unnest(?::text[], ?::int[]) WITH ORDINALITY AS t(doc, page, i) CROSS JOIN LATERAL"
    f" (SELECT {REF_COLUMNS} FROM sections WHERE document_id = t.doc AND page_start BETWEEN t.page - ?::int"
    " AND t.page AND page_end >= t.page) s ORDER BY t.i, s.page_start, s.rowid")
# The refs of some section rowids (t.i 0) and the sections on some pages (_PAGE_SECTIONS, unordered), one statement
_REFS_AND_PAGE_SECTIONS = (
    f"SELECT 0, {REF_COLUMNS} FROM sections WHERE rowid = ANY(?::bigint[]) UNION ALL"
    " SELECT t.i, s.* FROM unnest(?::text[], ?::int[]) WITH ORDINALITY AS t(doc, page, i) CROSS JOIN LATERAL"
    f" (SELECT {REF_COLUMNS} FROM sections WHERE document_id = t.doc AND page_start BETWEEN t.page - ?::int"
    " AND t.page AND page_end >= t.page) s")
READ_AHEAD_DOCS = 4  # a scope of at most this many documents has its postings read with its phrases' counts
DOCUMENT_REFS = 64  # the documents whose every section's ref a store keeps (read with a query's first counts)


class PostgresStore(Repository):
    """The repository over one PostgreSQL database, with its tsvector text index (port.SearchIndex)."""

    backend = "postgresql"
    side_searches = False  # the section search after the page search, in the same snapshot
    version_per_connection = False  # a snapshot's version is the server's, whichever reader read it

    def __init__(self, url: str, read_url: str | None = None) -> None:
        search.require_numpy()
        db: Connections | Routed = Connections(url)
        db.snapshot_query = search.SNAPSHOT_GENERATION
        if read_url:  # reads on the replica, writes here
            db = Routed(db, read_url)
            db.replica.snapshot_query = search.SNAPSHOT_GENERATION
        super().__init__(PostgresDialect(url, db))
        self._db = db
        self._postings = search.Cache()
        self._firsts_read: set[str] = set()  # documents whose first pages a query's counts read (_keep_firsts)
        self._ahead: tuple[int, int] | None = None  # (pages, back) sections_on_pages last asked of a page search's
        self.url = url
        self.location = self._db.shown  # the URL without its password

    # ---- the index's rows

    def _index_generation(self, sql: Sql) -> tuple:
        row = self._db.begun() if getattr(self._local, "depth", 0) else None  # read with the snapshot's BEGIN
        return search.generation(sql.conn) if row is None else search.generation_of(row)

    def _library_version(self, sql: Sql) -> str | None:
        """What this thread's snapshot sees (db.SNAPSHOT_VERSION, read with its BEGIN): the library's scope, cards
        and routing index are read once per state of the KB, not per query; None outside a snapshot."""
        return self._db.version() if getattr(self._local, "depth", 0) else None

    def _write_text(self, sql: Sql, document_id: str, pages: list[tuple], sections: list[tuple]) -> None:
        """The rows with their token counts and weighted tsvectors (title A, ancestors B, text C), then what the
        tsvectors add to the index: postings and two-word phrases' counts (indexing.py)."""
        page_rows = []
        if pages:
            toks = stems([text for _d, _n, text in pages])
            args = ([n for _d, n, _t in pages], [t for _d, _n, t in pages], [len(t) for t in toks],
                    [" ".join(t) for t in toks])
            page_rows = [indexing.Row(*r) for r in sql.conn.execute(_PAGE_INSERT, (document_id, *args))]
        section_rows = []
        if sections:
            columns: list[list] = [[] for _ in range(17)]
            for r in sections:
                row = (r[0], *r[2:10], bool(r[10]), *r[11:], *section_words(r[6], r[7], r[11]))
                for column, value in zip(columns, row, strict=True):
                    column.append(value)
            section_rows = [indexing.Row(*r) for r in sql.conn.execute(_SECTION_INSERT, (document_id, *columns))]
        indexing.write(sql.conn, document_id, page_rows, section_rows)

    def _delete_text(self, sql: Sql, document_id: str) -> None:
        indexing.subtract(sql.conn, document_id)  # from its rows' tsvectors, still there

    def _page_sections(self, sql: Sql, pages: Sequence[PageKey], back: int) -> Iterator[Sequence[Any]]:
        """The repository's rows, in one statement (_PAGE_SECTIONS)."""
        return (row for _, row in self._page_rows(sql, pages, back))

    def _page_rows(self, sql: Sql, pages: Sequence[PageKey], back: int) -> Iterator[tuple[int, Sequence[Any]]]:
        if not pages:
            return iter(())
        rows = sql.rows(_PAGE_SECTIONS, ([d for d, _ in pages], int_array(n for _, n in pages), back))
        return ((row[0] - 1, row[1:]) for row in rows)

    def _page_refs(self, sql: Sql, pages: Sequence[PageKey], back: int) -> Iterator[tuple[int, SectionRef]]:
        """Each page's sections kept (store.memo: a document's sections never change), as their rowids and refs
        (each ref made once, shared with the section hits': `_refs`), the pages not seen yet read in one
        statement (or read ahead with the section hits' refs: `_section_refs`)."""
        if not pages:
            return iter(())
        found = self._found_pages()
        ahead = next((i for i, (a, b) in enumerate(zip(pages, found, strict=False)) if a != b),
                     min(len(pages), len(found)))
        if ahead:  # asked for a page search's best pages: read ahead as many next time (at least, when all)
            before = self._ahead[0] if self._ahead is not None and self._ahead[1] == back else 0
            self._ahead = (max(ahead, before) if ahead == len(found) else ahead, back)

        def read(keys: list[tuple[str, int, int]]) -> dict[tuple[str, int, int], tuple[tuple[int, SectionRef], ...]]:
            out = self._local_pages(keys)
            keys = [k for k in keys if k not in out]
            rows: list[list[Sequence[Any]]] = [[] for _ in keys]
            for i, row in self._page_rows(sql, [(d, n) for d, n, _ in keys], back):
                rows[i].append(row)
            return {**out, **self._page_entries(keys, rows)}

        found_refs = self._memo.get_many("page-sections", list(dict.fromkeys((d, n, back) for d, n in pages)), read)
        return (pair for d, n in pages for pair in found_refs[(d, n, back)])

    def _local_pages(self, keys: Sequence[tuple[str, int, int]]
                     ) -> dict[tuple[str, int, int], tuple[tuple[int, SectionRef], ...]]:
        """The page-sections entries of those `keys` (document, page, back) whose document's every ref is kept
        (`_keep_refs`): its sections starting at most `back` pages before the page and reaching it, by page_start
        then rowid (_PAGE_SECTIONS' rows), without a statement."""
        docs = self._memo.known("document-refs", list({d for d, _, _ in keys}))
        out = {}
        for d, n, back in keys:
            if d in docs:
                starts, ordered, _ = docs[d]
                found = [row for row in ordered[bisect.bisect_left(starts, n - back):bisect.bisect_right(starts, n)]
                         if row[6] >= n]  # REF_COLUMNS' page_start, page_end: 5, 6
                refs = self._refs({row[0]: row for row in found})
                out[(d, n, back)] = tuple((row[0], refs[row[0]]) for row in found)
        return out

    def _page_entries(self, keys: list[tuple[str, int, int]], rows: list[list[Sequence[Any]]]
                      ) -> dict[tuple[str, int, int], tuple[tuple[int, SectionRef], ...]]:
        """The page-sections entries of `keys` from each one's REF_COLUMNS rows, in order."""
        refs = self._refs({row[0]: row for found in rows for row in found})
        return {key: tuple((row[0], refs[row[0]]) for row in found) for key, found in zip(keys, rows, strict=True)}

    def _found_pages(self) -> list[PageKey]:
        """The pages this thread's last page search in this snapshot found, best first (none outside one)."""
        found = getattr(self._local, "found", None)
        version = self._db.version() if getattr(self._local, "depth", 0) else None
        return found[1] if found is not None and version is not None and found[0] == version else []

    def _refs(self, rows: dict[int, Sequence[Any]]) -> dict[int, SectionRef]:
        """The refs of these REF_COLUMNS rows by rowid, each made once (store.memo: a rowid is never reused, its
        row's REF_COLUMNS never change, a SectionRef is frozen)."""
        return self._memo.get_many("section-refs", list(rows),
                                   lambda missing: {r: section_ref(rows[r]) for r in missing})

    def _section_refs(self, sql: Sql, rowids: Sequence[int], documents: Sequence[str] = ()) -> dict[int, SectionRef]:
        """The refs of these section rowids (of `documents`, when given), kept (`_refs`: not remade from the row for
        each search's 200 hits), or taken from a document's every ref kept (`_keep_refs`). Read with those not
        kept, in the same statement: the sections on the best pages of this snapshot's page search not kept yet,
        as many pages and as far back as sections_on_pages last asked for a page search's best pages (the section
        search is followed by that: a round trip fewer; kept by page, whatever is asked next)."""
        def read(missing: list[int]) -> dict[int, SectionRef]:
            kept: dict[int, SectionRef] = {}
            for _, _, by_rowid in self._memo.known("document-refs", documents).values():
                kept.update(self._refs({r: by_rowid[r] for r in missing if r in by_rowid}))
            missing = [r for r in missing if r not in kept]
            if not missing:
                return kept
            count, back = self._ahead or (0, 0)
            keys = [k for k in dict.fromkeys((d, n, back) for d, n in self._found_pages()[:count])
                    if not self._memo.has("page-sections", k)]
            local = self._local_pages(keys)
            if local:
                self._memo.get_many("page-sections", list(local), lambda unseen: {k: local[k] for k in unseen})
                keys = [k for k in keys if k not in local]
            if not keys:
                where, args = sql.any_of("rowid", missing)
                return {**kept, **self._refs({r[0]: r for r in sql.rows(f"SELECT {REF_COLUMNS} FROM sections WHERE {where}",
                                                                        args)})}
            hits: dict[int, Sequence[Any]] = {}
            rows: list[list[Sequence[Any]]] = [[] for _ in keys]
            for row in sql.rows(_REFS_AND_PAGE_SECTIONS, (int_array(missing), [d for d, _, _ in keys],
                                                          int_array(n for _, n, _ in keys),
                                                          back)):
                if row[0]:
                    rows[row[0] - 1].append(row[1:])
                else:
                    hits[row[1]] = row[1:]
            for found in rows:  # _PAGE_SECTIONS' order
                found.sort(key=lambda row: (row[5], row[0]))
            entries = self._page_entries(keys, rows)
            self._memo.get_many("page-sections", keys, lambda unseen: {k: entries[k] for k in unseen})
            return {**kept, **self._refs(hits)}

        return self._memo.get_many("section-refs", list(dict.fromkeys(rowids)), read)

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """The repository's; what a snapshot remembers for its reads ahead (its scope, its page search's pages)
        forgotten when it ends."""
        outer = not getattr(self._local, "depth", 0)
        try:
            with super().snapshot():
                yield
        finally:
            if outer:
                self._local.scoped = self._local.found = self._local.firsts = None

    def scope(self, document_ids: Sequence[str] | None, statuses: Sequence[str]) -> Scope:
        """The repository's; a scope of a few documents asked inside a snapshot is remembered for it: counting the
        pages holding some phrases then reads those documents' postings of them ahead (`_scoped`)."""
        scope = super().scope(document_ids, statuses)
        if getattr(self._local, "depth", 0):  # the last scope asked in the snapshot (the whole library: none)
            self._local.scoped = None if document_ids is None else (
                self._db.version(), sorted(scope.documents)[:READ_AHEAD_DOCS + 1])
        return scope

    def _scoped(self) -> list[str]:
        """The documents of this snapshot's scope when it is a few documents (READ_AHEAD_DOCS at most), else none:
        a query scoped to them counts its phrases (frequencies "pages"), then searches their pages and sections for
        them, so the counting statement reads their postings of the phrases' words ahead, into the postings cache
        (search._counts), and the searches read no statement of postings."""
        scoped = getattr(self._local, "scoped", None)
        version = self._db.version() if getattr(self._local, "depth", 0) else None
        if scoped is None or version is None or scoped[0] != version or len(scoped[1]) > READ_AHEAD_DOCS:
            return []
        return scoped[1]

    # ---- the first reads of a document new to the daemon: its cover pages (routing), then its statement pages

    def _keep_firsts(self, asked: list[str], found: search.Firsts) -> None:
        """The first pages and stored statement pages of the documents of a scope new to the daemon, read with a
        query's counts (`frequencies`): the texts kept for this snapshot (`cover_texts` gives them), the statement
        pages per snapshot version (`statement_pages`)."""
        if not asked:
            return
        version = self._db.version()
        self._firsts_read.update(asked)
        self._local.firsts = (version, {d: first.covers for d, first in found.items()})
        stored = {(version, d): statements_of(first.statements) for d, first in found.items()}
        self._keep_refs({d: first.refs for d, first in found.items() if first.refs is not None})
        self._memo.get_many("stored-statements", list(stored), lambda missing: {k: stored[k] for k in missing})

    def _keep_refs(self, rows: dict[str, list[tuple]]) -> None:
        """Every section's ref of some documents (REF_COLUMNS rows), kept per document (DOCUMENT_REFS of them): a
        search of their sections (`_section_refs`) and the sections on their pages (`_local_pages`) then read
        none (a document's sections never change)."""
        entries = {}
        for doc, found in rows.items():  # the rows kept, each made a ref when first asked for (`_refs`)
            ordered = sorted(found, key=lambda row: (row[5], row[0]))  # _PAGE_SECTIONS' order
            entries[doc] = ([row[5] for row in ordered], ordered, {row[0]: row for row in ordered})
        self._memo.get_many("document-refs", list(entries), lambda missing: {d: entries[d] for d in missing},
                            max_entries=DOCUMENT_REFS)

    def cover_texts(self, document_ids: Sequence[str]) -> dict[str, list[str]]:
        """As the repository's, and in the same statement (inside a snapshot) the documents' stored statement pages,
        which a query reads next about a document new to it (`statement_pages`): kept per snapshot version (the
        same version, the same data), a round trip fewer. Those read with this snapshot's counts (`_keep_firsts`)
        are taken from there."""
        sql = self._sql()
        version = self._library_version(sql)
        if version is None or not document_ids:
            return super().cover_texts(document_ids)
        parts: dict[str, list[str]] = {d: [] for d in document_ids}
        firsts = getattr(self._local, "firsts", None)
        if firsts is not None and firsts[0] == version:
            for d in parts:
                if d in firsts[1]:
                    parts[d] = list(firsts[1][d])
        stored = {}
        ids = [d for d in dict.fromkeys(document_ids) if firsts is None or firsts[0] != version or d not in firsts[1]]
        if not ids:
            return parts
        for doc, number, text in sql.rows(
                f"SELECT document_id, number, text FROM pages WHERE number <= {COVER_PAGES} AND document_id = ANY(?)"
                " UNION ALL SELECT id, -1, statements FROM documents WHERE id = ANY(?) ORDER BY 1, 2", (ids, ids)):
            if number < 0:
                stored[(version, doc)] = statements_of(text)
            else:
                parts[doc].append(text)
        self._memo.get_many("stored-statements", list(stored), lambda missing: {k: stored[k] for k in missing})
        return parts

    def statement_pages(self, document_ids: Sequence[str]) -> dict[str, dict[int, str] | None]:
        """As the repository's, those read with the cover texts in this snapshot's version taken from there."""
        sql = self._sql()
        version = self._library_version(sql)
        ids = list(dict.fromkeys(document_ids))
        if version is None:
            return super().statement_pages(ids)
        kept = self._memo.known("stored-statements", [(version, d) for d in ids])
        out = {d: kept[(version, d)] for d in ids if (version, d) in kept}
        rest = [d for d in ids if d not in out]
        return {**out, **super().statement_pages(rest)} if rest else out

    # ---- search

    def _tsqueries(self, phrases: Sequence[Phrase]) -> dict[Phrase, search.Tsq]:
        """The phrases' lexemes (made in the daemon: search.tsqueries), kept (store.memo)."""
        return self._memo.get_many("tsqueries", list(dict.fromkeys(phrases)), search.tsqueries)

    def costly_counts(self, kind: str, phrases: Sequence[Phrase]) -> list[Phrase]:
        return []  # every phrase counted in one statement (search.frequencies)

    def frequencies(self, kind: str, phrases: Sequence[Phrase]) -> dict[Phrase, int]:
        gen = self._generation()
        src = self._source(gen)

        def count(keys: list[tuple[tuple, Phrase]]) -> dict[tuple[tuple, Phrase], int]:
            asked = list(dict.fromkeys(p for _, p in keys))
            tsqs = self._tsqueries(asked)
            also = ("sections",) if kind == "pages" else ()  # the section search's counts, in the same statement
            ahead = self._scoped() if kind == "pages" else []  # and the other phrases' words, their lexemes known
            others = [q for p, q in self._tsqueries(phrases).items() if p not in tsqs] if ahead else []
            firsts = [d for d in ahead if d not in self._firsts_read]  # documents new to the daemon: their first pages
            counts, more, first_pages = search.frequencies(src, kind, [tsqs[p] for p in asked], also, ahead, others,
                                                           firsts)
            self._keep_firsts(firsts, first_pages)
            for other, found in more.items():
                kept = {(gen, p): found[tsqs[p]] for p in asked if tsqs[p] in found}
                self._memo.get_many(f"df:{other}", list(kept), lambda missing, kept=kept: {
                    k: kept[k] for k in missing})
            by_phrase = dict(zip(asked, counts, strict=True))
            return {(gen, p): by_phrase[p] for _, p in keys}

        df = self._memo.get_many(f"df:{kind}", list(dict.fromkeys((gen, p) for p in phrases)), count)
        return {p: df[(gen, p)] for p in phrases}

    def _stats(self, kind: str) -> tuple[int, float]:
        conn = self._conn()
        return self._memo.get("bm25-stats", self._generation(), lambda: search.stats(conn))[kind]

    def _source(self, generation: tuple | None = None) -> search.Source:
        """The postings reader of this thread: the cache only inside a snapshot, where the generation it keys
        entries with is the one the statements see."""
        cache = self._postings if getattr(self._local, "depth", 0) else None
        return search.Source(self._conn(), cache, self._generation() if generation is None else generation)

    def _bm25(self, kind: str, phrases: Sequence[Phrase]) -> tuple[list[search.Tsq], list[float], float]:
        """The phrases' lexemes, IDFs and the kind's mean row length: what a BM25 search of `kind` needs."""
        rows, avgdl = self._stats(kind)
        df = self.frequencies(kind, phrases)
        tsqs = self._tsqueries(phrases)
        return [tsqs[p] for p in phrases], [search.idf(rows, df[p]) for p in phrases], avgdl

    def count(self, kind: str) -> int:
        return self._generation()[0] if kind == "documents" else self._stats(kind)[0]

    def search_pages(self, phrases: Sequence[Phrase], scope: Scope, limit: int,
                     within: Sequence[str] | None = None) -> list[PageHit]:
        if not phrases:
            return []
        rows = search.search_pages(self._source(), *self._bm25("pages", phrases), scope, limit, within)
        if getattr(self._local, "depth", 0):  # what `_section_refs` may read ahead for
            self._local.found = (self._db.version(), [(d, n) for d, n, _ in rows])
        return [PageHit(d, n, s) for d, n, s in rows]

    def search_sections(self, phrases: Sequence[Phrase], weights: SectionWeights, scope: Scope, limit: int,
                        within: Sequence[str]) -> list[SectionHit]:
        if not phrases or not within:
            return []
        hits = search.search_sections(self._source(), *self._bm25("sections", phrases), weights, scope, limit, within)
        refs = self._section_refs(self._sql(), [r for r, _ in hits], within)
        return [SectionHit(refs[r], s) for r, s in hits if r in refs]

    def search_covers(self, phrases: Sequence[Phrase], scope: Scope) -> dict[str, float]:
        if not phrases:
            return {}
        best: dict[str, float] = {}
        for doc, _n, score in search.search_pages(self._source(), *self._bm25("covers", phrases), scope, None,
                                                  covers=True):
            best[doc] = max(score, best.get(doc, score))
        return best

    def pages_holding(self, phrases: Sequence[Phrase], document_ids: Sequence[str]) -> list[PageKey]:
        if not phrases or not document_ids:
            return []
        tsqs = self._tsqueries(phrases)
        return search.pages_holding(self._source(), [tsqs[p] for p in phrases], document_ids)

    # ---- upkeep

    def tidy_indexes(self) -> None:
        with self._db.write() as conn:
            search.fold_stats(conn)
