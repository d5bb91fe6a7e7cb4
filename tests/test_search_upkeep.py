"""What keeps searches fast without changing them: the store's index upkeep after writes (`tidy_indexes`) and
the section statement run beside the page statement (retrieval/stages/candidates.py)."""

from __future__ import annotations

from concurrent.futures import Executor, Future

import pytest

from jsonl_engine.ingest.sync import ingest_text
from jsonl_engine.retrieval import retrieve
from jsonl_engine.retrieval.stages import candidates
from jsonl_engine.store import Store, open_store
from tests.support.sql import sqlite_connect

TOPICS = ("widgets", "gadgets", "sprockets", "gears", "valves", "pumps", "bearings", "levers")


def _doc(i: int, topic: str) -> str:
    return (f"# Company {i} annual report\n\n## Revenue\n\nCompany {i} sold {topic} worth ${i * 17} million; "
            f"cost of sales rose with the price of steel.\n\n## Risk factors\n\nDemand for {topic} may fall, "
            f"and operating income from {topic} depends on steel.\n")


def _answers(store: Store, scoped: str) -> list:
    out = []
    for query in ("steel cost of sales", "operating income from gadgets", "Company 3 revenue", "demand may fall"):
        for document_ids in (None, [scoped]):
            for unit in ("section", "page"):
                found = retrieve(store, query, document_ids=document_ids, limit=6, unit=unit)
                out.append([(p.section_id, p.page_start, p.page_end, p.score, p.snippet) for p in found.passages])
    return out


def _fts_segments(path) -> dict[str, int]:
    """Segments of each FTS5 index, from its structure record (%_data row 10: a 4-byte cookie, then varints
    for the number of levels and of segments)."""
    def varint(b: bytes, i: int) -> tuple[int, int]:
        v = 0
        while True:
            v, i = (v << 7) | (b[i] & 0x7F), i + 1
            if not b[i - 1] & 0x80:
                return v, i

    conn = sqlite_connect(path)  # the store's SQLite library: the store has the file open
    try:
        out = {}
        for table in ("pages_fts", "sections_fts"):
            block = conn.execute(f"SELECT block FROM {table}_data WHERE id = 10").fetchone()[0]
            _levels, i = varint(block, 4)
            out[table], _ = varint(block, i)
        return out
    finally:
        conn.close()


def test_tidy_indexes_leaves_every_ranking_as_it_was(kb_location) -> None:
    store = open_store(kb_location)
    try:
        ids = [ingest_text(store, _doc(i, topic), f"company {i}", "text/markdown").document_id
               for i, topic in enumerate(TOPICS)]  # one transaction each: one FTS5 segment each
        before = _answers(store, ids[2])
        assert any(before), "the queries must find something for the comparison to mean anything"
        segments = None if isinstance(kb_location, str) else _fts_segments(store.path)  # str: a PostgreSQL URL
        store.tidy_indexes()
        assert _answers(store, ids[2]) == before
        if segments is not None:
            after = _fts_segments(store.path)
            assert all(after[t] < segments[t] for t in segments), (segments, after)
            store.tidy_indexes()  # nothing left to merge: a no-op
            assert _fts_segments(store.path) == after
    finally:
        store.close()


class _Inline(Executor):
    """Runs a submitted call at once on the calling thread (inside its snapshot): the sequential reference."""

    def __init__(self) -> None:
        self.calls = 0

    def submit(self, fn, /, *args, **kwargs) -> Future:
        self.calls += 1
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:
            future.set_exception(exc)
        return future


def test_side_statements_rank_as_the_sequential_search(any_dev_kb, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = any_dev_kb.doc_ids
    asks = [("What was 3M's FY2022 capex?", [ids["3M_2022_10K"]]),  # one document: known in advance
            ("PepsiCo total current liabilities balance sheet 2022", [ids["PEPSICO_2022_10K"]]),
            ("What is 3M's FY2022 net sales?", None),  # names its issuer: the documents are guessed
            ("Has AMCOR's quick ratio improved or declined between FY2023 and FY2022?", None),
            ("What was the key agenda of the AMCOR's 8k filing dated 1st July 2022?", None),
            ("total current liabilities", None)]  # names nothing: no side statement

    def run() -> list:
        return [[(p.section_id, p.score, p.snippet) for p in retrieve(any_dev_kb, q, document_ids=d, limit=8).passages]
                for q, d in asks]

    threaded = run()
    inline = _Inline()
    monkeypatch.setattr(candidates, "_side_pool", lambda: inline)
    assert run() == threaded
    # the named questions took the side path, on a store that runs one (PostgreSQL runs the section search in the
    # query's own snapshot: no side statement)
    assert inline.calls >= 3 if any_dev_kb.side_searches else inline.calls == 0


def test_one_document_in_scope_searches_its_sections_on_the_calling_thread(any_dev_kb, monkeypatch) -> None:
    """Scoped to one document, both statements are small: the section search runs after the page search on the
    query's own thread and snapshot (a side thread reads through a connection and a page cache of its own, which
    a new daemon fills a second time); a question that names its issuer across the library still searches the
    documents guessed beside the page search, on a store that runs side searches."""
    ids, sides = any_dev_kb.doc_ids, []
    beside = candidates._beside

    def recording(store, read, *args):
        sides.append(read.__name__)
        return beside(store, read, *args)

    monkeypatch.setattr(candidates, "_beside", recording)
    scoped = retrieve(any_dev_kb, "What was 3M's FY2022 capex?", document_ids=[ids["3M_2022_10K"]], limit=8)
    assert scoped.passages and "search_sections" not in sides
    named = retrieve(any_dev_kb, "What is 3M's FY2022 net sales?", limit=8)
    assert named.passages
    assert ("search_sections" in sides) == any_dev_kb.side_searches


def test_side_reads_under_concurrent_writes_cache_consistent_counts(kb_location) -> None:
    """Searches while another thread keeps adding documents that hold the query's phrases: a side read caches
    counts under the KB generation it read them at (a count from a newer state under an older generation would
    put more matching rows than rows into a BM25 IDF)."""
    import threading

    reader, writer = open_store(kb_location), open_store(kb_location)
    try:
        ingest_text(reader, _doc(0, "widgets"), "company 0", "text/markdown")
        stop, failures = threading.Event(), []

        def write() -> None:
            i = 1
            while not stop.is_set() and i < 400:
                ingest_text(writer, _doc(i, "widgets") * 3, f"company {i}", "text/markdown")
                i += 1

        thread = threading.Thread(target=write)
        thread.start()
        try:
            for i in range(150):
                try:
                    retrieve(reader, f"steel cost of sales widgets operating income {i}", limit=3)
                    retrieve(reader, "demand for widgets may fall on steel", limit=3)
                except Exception as exc:  # noqa: BLE001 - any failure is the finding
                    failures.append(repr(exc))
        finally:
            stop.set()
            thread.join(60)
        assert not failures, failures[:3]
    finally:
        reader.close()
        writer.close()
