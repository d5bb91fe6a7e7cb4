"""The KB store on each backend (SQLite file, PostgreSQL database: the `store` fixture): atomic ingest,
replacement, removal, review status and index consistency; then each backend's own schema and migrations."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from jsonl_engine.errors import Cancelled, Internal, NotFound
from jsonl_engine.ingest import outcome, parse_text, pipeline, sync
from jsonl_engine.store import DuplicateContent, open_store
from jsonl_engine.store.sqlite.migrations import MIGRATIONS
from tests.conftest import kb_integrity as integrity
from tests.support.sql import fts_hits, sql


@pytest.fixture
def store(kb_location):
    s = open_store(kb_location)
    yield s
    s.close()


def write_md(tmp_path, name: str, body: str):
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    return path


def test_ingest_skip_replace_remove(store, tmp_path):
    path = write_md(tmp_path, "guide.md", "# Guide\n\nThe zebra crossing rule.\n\n## Part\n\nMore words.\n")
    first = sync.ingest_paths(store, [str(tmp_path)])
    assert len(first) == 1 and first[0].error is None and not first[0].skipped
    doc_id = first[0].document_id
    assert doc_id and len(doc_id) == 16 and first[0].title == "Guide" and first[0].sections == 2
    assert fts_hits(store, "zebra") == 1

    again = sync.ingest_paths(store, [str(path)])
    assert again[0].skipped and again[0].document_id == doc_id and "same content" in again[0].reason

    path.write_text("# Guide\n\nThe yak crossing rule.\n", encoding="utf-8")
    changed = sync.ingest_paths(store, [str(path)])[0]
    assert not changed.skipped and changed.document_id != doc_id and doc_id in changed.reason
    assert [d.document_id for d in store.documents()] == [changed.document_id]
    assert fts_hits(store, "zebra") == 0 and fts_hits(store, "yak") == 1
    integrity(store)

    removed = store.remove(changed.document_id)
    assert removed.sections == 1
    assert integrity(store) == {"documents": 0, "sections": 0, "pages": 0, "sections_fts": 0}
    assert fts_hits(store, "yak") == 0
    with pytest.raises(NotFound):
        store.remove(changed.document_id)


def test_section_ids_are_stable_across_remove_and_reingest(store):
    text = "# A\n\n" + "Alpha words. " * 500 + "\n\n## B\n\nBeta words.\n"
    first = sync.ingest_text(store, text, "t", "text/markdown")
    ids = [s.section_id for s in store.document_sections(first.document_id)]
    store.remove(first.document_id)
    second = sync.ingest_text(store, text, "t", "text/markdown")
    assert second.document_id == first.document_id
    assert [s.section_id for s in store.document_sections(second.document_id)] == ids
    assert ids[0] == f"{first.document_id}:0"


def test_a_failed_transaction_leaves_nothing(store):
    parsed = parse_text("# Kept out\n\nquokka text\n", "x", "text/markdown")
    with pytest.raises(Cancelled):
        outcome.write_parsed(store, parsed, document_id="feedfeedfeedfeed", sha256="f" * 64, path=None,
                             status="approved", cancelled=lambda: True)
    assert integrity(store)["documents"] == 0 and fts_hits(store, "quokka") == 0


def test_replacement_is_atomic(store, tmp_path):
    path = write_md(tmp_path, "a.md", "# Old\n\nold marmot text\n")
    old = sync.ingest_paths(store, [str(path)])[0]
    path.write_text("# New\n\nnew marmot text\n", encoding="utf-8")
    parsed = parse_text(path.read_text(), "a", "text/markdown")
    sha, new_id = outcome.file_digest(str(path))
    with pytest.raises((Internal, DuplicateContent)), store.transaction() as tx:
        # the new version fails half-way (its rows again: a duplicate id): the old version must survive untouched
        tx.insert(parsed, document_id=new_id, sha256=sha, path=str(path), replace=[old.document_id])
        tx.insert(parsed, document_id=new_id, sha256=sha, path=str(path))
    docs = store.documents()
    assert [d.document_id for d in docs] == [old.document_id]
    assert fts_hits(store, "old") == 1
    integrity(store)


def test_review_status_and_filtering(store):
    out = sync.ingest_text(store, "plain words", "Memo", status="draft")
    assert out.status == "draft"
    before, info = store.update_document(out.document_id, status="contested")
    assert (before.status, info.status) == ("draft", "contested")
    assert [d.status for d in store.documents(["contested"])] == ["contested"]
    assert store.documents(["approved"]) == []
    assert store.documents([]) == []


def test_outline_read_and_pages(store):
    text = "# Top\n\nintro\n\n## One\n\nfirst\n\n### Deep\n\ndeeper\n\n## Two\n\nsecond\n"
    out = sync.ingest_text(store, text, "t", "text/markdown")
    doc, roots = store.outline(out.document_id)
    assert doc.title == "t" and [r.title for r in roots] == ["Top"]
    assert [c.title for c in roots[0].children] == ["One", "Two"]
    assert roots[0].children[0].children[0].title == "Deep"
    _doc, shallow = store.outline(out.document_id, max_depth=1)
    assert shallow[0].children == []
    deep = store.section(roots[0].children[0].children[0].section_id)
    assert deep.ancestors == ["Top", "One"] and deep.text == "### Deep\n\ndeeper" and deep.is_leaf
    assert deep.page_map == [(0, 1)] and deep.status == "approved"
    page = store.page(out.document_id, 1)
    assert page.text == text
    with pytest.raises(NotFound):
        store.page(out.document_id, 2)
    with pytest.raises(NotFound):
        store.section("nope:0")


def test_expand_paths_reports_missing_and_empty(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "docs" / ".hidden").mkdir(parents=True)
    (tmp_path / "docs" / "b.txt").write_text("b")
    (tmp_path / "docs" / "a.md").write_text("a")
    (tmp_path / "docs" / "skip.csv").write_text("c")
    (tmp_path / "docs" / ".hidden" / "h.md").write_text("h")
    out = list(pipeline.expand_paths([str(tmp_path / "missing.pdf"), str(tmp_path / "empty"), str(tmp_path / "docs")]))
    assert out[0][1].error["code"] == "not_found"
    assert out[1][1].skipped and "no supported files" in out[1][1].reason
    assert [p.rsplit("/", 1)[-1] for p, early in out[2:]] == ["a.md", "b.txt"]


def test_reopening_keeps_data_and_schema_version(tmp_path):
    kb = tmp_path / "kb"
    store = open_store(kb)
    out = sync.ingest_text(store, "# Kept\n\nlemur\n", "t", "text/markdown")
    store.close()
    copy = tmp_path / "copy"
    shutil.copytree(kb, copy)
    reopened = open_store(copy)
    version = sql(reopened, "SELECT MAX(version) FROM schema_migrations")[0][0]
    assert version == MIGRATIONS[-1][0]
    assert reopened.document(out.document_id).title == "t"
    assert fts_hits(reopened, "lemur") == 1
    reopened.close()


def test_a_version_1_kb_migrates_and_keeps_its_index(tmp_path):
    """v1 indexed FTS rows from insert triggers; v2 drops them and indexes in SqliteStore._write_text. A v1 KB opened now
    keeps its documents searchable, and what is ingested after the migration is indexed exactly once."""
    from jsonl_engine.store.sqlite.migrations import _statements

    kb = tmp_path / "kb"
    kb.mkdir()
    conn = sqlite3.connect(kb / "kb.sqlite3", isolation_level=None)
    conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, description TEXT NOT NULL, "
                 "applied_at TEXT NOT NULL)")
    for statement in _statements(MIGRATIONS[0][2]):
        conn.execute(statement)
    conn.execute("INSERT INTO schema_migrations VALUES (1, 'v1', datetime('now'))")
    conn.execute("INSERT INTO documents (id, title, path, media_type, sha256, pages, sections, status, ingested_at) "
                 "VALUES ('old', 'Old', NULL, 'text/plain', 'x', 1, 1, 'approved', '2026-01-01T00:00:00Z')")
    conn.execute("INSERT INTO pages (document_id, number, text) VALUES ('old', 1, 'an aardvark page')")
    conn.execute("INSERT INTO sections (id, document_id, position, depth, ordinal, title, page_start, page_end, "
                 "is_leaf, text) VALUES ('old:0', 'old', 0, 0, 0, 'Old', 1, 1, 1, 'an aardvark page')")
    conn.close()

    store = open_store(kb)
    assert sql(store, "SELECT MAX(version) FROM schema_migrations")[0][0] == MIGRATIONS[-1][0]
    triggers = {r[0] for r in sql(store, "SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    assert not triggers & {"sections_fts_insert", "pages_fts_insert", "covers_fts_insert"}, triggers
    assert {"sections_fts_delete", "pages_fts_delete", "covers_fts_delete", "sections_fts_update"} <= triggers
    assert fts_hits(store, "aardvark") == 1
    sync.ingest_text(store, "# New\n\nan aardvark and a lemur\n", "t", "text/markdown")
    assert fts_hits(store, "aardvark") == 2
    assert fts_hits(store, "lemur") == 1
    assert sql(store, "SELECT COUNT(*) FROM covers_fts WHERE covers_fts MATCH 'lemur'")[0][0] == 1
    counts = integrity(store)
    assert counts["documents"] == 2
    # the v1 rows were indexed by the old triggers: removing them now must take exactly their FTS rows out
    store.remove("old")
    assert fts_hits(store, "aardvark") == 1
    assert integrity(store)["documents"] == 1
    store.close()


def _open_store(kb: str, barrier) -> str:
    try:
        barrier.wait(timeout=20)  # all six workers call Store() together, released the same instant
        open_store(Path(kb)).close()
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        return repr(exc)
    return "ok"


def test_daemons_opening_a_new_kb_at_once_all_migrate_it(tmp_path):
    """Several clients may spawn daemons on one new KB at the same moment: each migration is applied once, and
    every opener succeeds (the WAL switch is retried; the version is re-read inside the migration's write
    transaction)."""
    import multiprocessing

    workers, rounds = 6, 16  # plain `journal_mode=WAL` (no retry) fails ~20-40% of rounds on a loaded 2-CPU box
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, context.Pool(workers) as pool:
        barrier = manager.Barrier(workers)
        for attempt in range(rounds):
            kb = tmp_path / f"kb{attempt}"
            kb.mkdir()
            # chunksize 1 and a barrier of `workers`: each task holds its own worker until all have arrived
            results = pool.starmap(_open_store, [(str(kb), barrier)] * workers, chunksize=1)
            assert results == ["ok"] * workers, (attempt, results)
            conn = sqlite3.connect(kb / "kb.sqlite3")
            versions = [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
            conn.close()
            assert versions == [number for number, _description, _sql in MIGRATIONS], attempt


def test_a_kb_from_a_newer_engine_is_refused_untouched(tmp_path):
    """Opening must refuse before writing anything. The KB is built without Store (as the newer engine would
    have built it), so that a write this engine's migrate() makes first cannot already be in the "before"."""
    from jsonl_engine.errors import Internal
    from jsonl_engine.store.sqlite.migrations import _statements

    kb = tmp_path / "kb"
    kb.mkdir()
    path = kb / "kb.sqlite3"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, description TEXT NOT NULL, "
                 "applied_at TEXT NOT NULL)")
    future = MIGRATIONS[-1][0] + 1
    for number, description, script in [*MIGRATIONS, (future, "from the future", "CREATE TABLE novelty (x TEXT);")]:
        for statement in _statements(script):
            conn.execute(statement)
        conn.execute("INSERT INTO schema_migrations VALUES (?, ?, datetime('now'))", (number, description))
    from jsonl_engine.store.repository import Transaction
    from jsonl_engine.store.sqlite.store import SqliteDialect, SqliteStore

    class Rows:  # the repository's rows and index rows, written on this connection without opening a Store
        dialect = SqliteDialect(None)  # type: ignore[arg-type]
        _write_text = SqliteStore._write_text

    conn.execute("BEGIN IMMEDIATE")
    Transaction(Rows(), conn).insert(parse_text("# Future\n\nokapi words\n", "t", "text/markdown"),  # type: ignore[arg-type]
                                     document_id="f" * 16, sha256="f" * 64, path=None)
    conn.execute("COMMIT")
    conn.close()

    def dump() -> str:
        conn = sqlite3.connect(path)
        try:
            return "\n".join(conn.iterdump())
        finally:
            conn.close()

    before = dump()
    assert "okapi" in before and "from the future" in before
    with pytest.raises(Internal, match="newer than this jsonl-engine") as refused:
        open_store(kb)
    assert dump() == before
    # The refused Store closed its writer itself (`refused` keeps the traceback, and so the half-built Store,
    # alive: garbage collection cannot have closed it): nothing holds the file, and the last close removed the WAL.
    assert not (kb / "kb.sqlite3-wal").exists()
    conn = sqlite3.connect(path, isolation_level=None, timeout=0.5)
    try:
        conn.execute("BEGIN EXCLUSIVE")
        conn.execute("ROLLBACK")
    finally:
        conn.close()
    assert refused.value.code == "internal"  # (and `refused` stayed referenced through the checks above)


def _verbs(protocol: type) -> set[str]:
    return {name for cls in protocol.__mro__ if cls.__module__ == "jsonl_engine.store.port"
            for name, value in vars(cls).items() if callable(value) and not name.startswith("_")}


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_every_verb_of_the_port_is_implemented_once_at_the_error_edge(backend: str) -> None:
    """Each backend is the shared repository plus its text index: every verb of the port (Store, its SearchIndex,
    Transaction) runs inside the one edge that maps the driver's errors, the few that translate themselves aside."""
    from jsonl_engine.store.port import Store
    from jsonl_engine.store.port import Transaction as TransactionPort
    from jsonl_engine.store.repository import NOT_AT_THE_EDGE, Repository, Transaction

    if backend == "sqlite":
        from jsonl_engine.store.sqlite import SqliteStore as backend_class
    else:
        pytest.importorskip("psycopg")
        from jsonl_engine.store.postgres import PostgresStore as backend_class
    assert issubclass(backend_class, Repository)
    for cls, protocol in ((backend_class, Store), (Transaction, TransactionPort)):
        verbs = _verbs(protocol)
        assert len(verbs) >= 3
        missing = sorted(v for v in verbs if not callable(getattr(cls, v, None)))
        assert not missing, (cls, missing)
        outside = sorted(v for v in verbs - NOT_AT_THE_EDGE if not getattr(getattr(cls, v), "at_the_edge", False))
        assert not outside, (cls, outside)


def test_a_driver_error_inside_a_shared_verb_becomes_an_engine_error(kb_location) -> None:
    """A statement of the shared repository failing in the driver (a table gone) surfaces as the backend's
    EngineError, never as the driver's exception."""
    from jsonl_engine.errors import EngineError

    store = open_store(kb_location)
    try:
        with store.transaction() as tx:
            tx._conn.run("DROP TABLE page_words")
        with pytest.raises(EngineError) as raised:
            store.page_words([("d" * 16, 1)])
        assert raised.value.code in ("kb_unavailable", "internal")
        assert "page_words" in raised.value.message or (raised.value.data or {}).get("reason") == "corrupt"
    finally:
        store.close()


def test_cards_are_the_documents_cards_and_follow_a_users_values(store):
    a = sync.ingest_text(store, "# Quarterly memo\n\nplain words", "Alpha memo")
    b = sync.ingest_text(store, "# Annual memo\n\nother words", "Beta memo")
    infos = {d.document_id: d for d in store.documents()}
    cards = store.cards()
    assert set(cards) == set(infos) == {a.document_id, b.document_id}
    assert all(cards[d] == infos[d].card for d in infos)
    assert list(store.cards([b.document_id])) == [b.document_id] and store.cards([]) == {}
    store.update_document(a.document_id, meta={"fiscal_year": 2031})  # a user's value: the card read follows it
    assert store.cards([a.document_id])[a.document_id].fiscal_year == 2031
    assert store.cards()[b.document_id] is store.cards()[b.document_id]  # decoded once, shared (read only)


def test_the_librarys_cards_are_read_again_when_any_writer_changed_the_kb(kb_location):
    """The whole library's cards and scope are kept while the KB is unchanged (SQLite: the same objects, with what
    routing derived from them), and read again after a write through this store or another one (a second
    daemon)."""
    mine, other = open_store(kb_location), open_store(kb_location)
    try:
        a = sync.ingest_text(mine, "# Alpha memo\n\nplain words", "Alpha memo")
        first = mine.cards()
        assert set(first) == {a.document_id}
        if isinstance(kb_location, Path):
            assert mine.cards() is first
        assert set(mine.scope(None, ["approved"]).documents) == {a.document_id}
        b = sync.ingest_text(other, "# Beta memo\n\nother words", "Beta memo")
        assert set(mine.cards()) == {a.document_id, b.document_id}
        assert set(mine.scope(None, ["approved"]).documents) == {a.document_id, b.document_id}
        other.update_document(b.document_id, status="draft")  # the library's scope follows too, per statuses
        assert set(mine.scope(None, ["approved"]).documents) == {a.document_id}
        assert set(mine.scope(None, ["draft"]).documents) == {b.document_id}
        assert not mine.scope(None, ["approved"]).complete and mine.scope(None, ["approved", "draft"]).complete
        other.update_document(a.document_id, meta={"fiscal_year": 2031})
        assert mine.cards()[a.document_id].fiscal_year == 2031
        mine.update_document(a.document_id, meta={"fiscal_year": 2032})
        assert mine.cards()[a.document_id].fiscal_year == 2032
        other.remove(b.document_id)
        assert set(mine.cards()) == {a.document_id}
        with mine.snapshot():  # inside a snapshot the map is the snapshot's
            held = mine.cards()
            sync.ingest_text(other, "# Gamma memo\n\nmore words", "Gamma memo")
            assert set(mine.cards()) == set(held) == {a.document_id}
        assert len(mine.cards()) == 2
    finally:
        mine.close()
        other.close()


def _pages_pdf(path: Path, pages: list[str]) -> str:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", "", 11)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 6, text)
    pdf.output(str(path))
    return str(path)


def test_a_phrases_document_count_is_the_documents_holding_it_on_any_page(store, tmp_path):
    """frequencies("documents") counts documents, not pages, however many of a document's pages hold the phrase,
    after a removal and a later ingest too (SQLite skips from a match to the end of its document's pages)."""
    def add(name: str, pages: list[str]) -> str:
        [out] = sync.ingest_paths(store, [_pages_pdf(tmp_path / f"{name}.pdf", pages)])
        assert out.error is None, out.error
        return out.document_id

    filler = "Ordinary words about the weather and the harbour. " * 3
    a = add("a", [f"zebra crossing {filler}", f"zebra crossing again {filler}", f"zebra {filler}"])
    b = add("b", [f"quiet page {filler}", f"a zebra crossing here {filler}"])
    c = add("c", [f"yak {filler}", f"yak crossing {filler}", f"nothing {filler}"])
    phrases = [("zebra",), ("zebra", "crossing"), ("yak",), ("crossing",), ("okapi",)]
    assert store.frequencies("documents", phrases) == {("zebra",): 2, ("zebra", "crossing"): 2, ("yak",): 1,
                                                       ("crossing",): 3, ("okapi",): 0}
    store.remove(b)
    d = add("d", [f"okapi {filler}", f"okapi zebra {filler}", f"zebra crossing {filler}"])
    assert store.frequencies("documents", phrases) == {("zebra",): 2, ("zebra", "crossing"): 2, ("yak",): 1,
                                                       ("crossing",): 3, ("okapi",): 1}
    store.remove(a)
    assert store.frequencies("documents", phrases) == {("zebra",): 1, ("zebra", "crossing"): 1, ("yak",): 1,
                                                       ("crossing",): 2, ("okapi",): 1}
    assert {c, d} == {x.document_id for x in store.documents()}


def test_sqlite_section_reads_kept_follow_the_kb_generation(tmp_path):
    """The SQLite store keeps section refs and each page's sections per KB generation: after the newest document
    is removed, the next one written takes its rowids; its section hits and pages read as a fresh store reads
    them, never as the removed document's."""
    from jsonl_engine.ingest.sync import ingest_text
    from jsonl_engine.retrieval.weights import SECTION_WEIGHTS
    from jsonl_engine.store import open_store

    def read(store, doc):
        scope = store.scope(None, ("approved",))
        with store.snapshot():
            hits = store.search_sections([("revenue",)], SECTION_WEIGHTS, scope, 10, [doc])
            return [(h.section.document_id, h.section.section_id, h.score) for h in hits], store.sections_on_pages([(doc, 1)], 1)

    store = open_store(tmp_path / "kb")
    try:
        ingest_text(store, "# Report\n\nIntro.\n\n## Revenue\n\nRevenue rose.\n", "a", "text/markdown")
        b = ingest_text(store, "# Other\n\n## Revenue\n\nRevenue fell.\n", "b", "text/markdown").document_id
        hits, pages = read(store, b)
        assert hits and {d for d, _, _ in hits} == {b} and pages
        store.remove(b)
        c = ingest_text(store, "# Third\n\n## Revenue\n\nRevenue held.\n\n## More\n\nMore text.\n", "c",
                        "text/markdown").document_id
        hits, pages = read(store, c)
        fresh = open_store(tmp_path / "kb")
        try:
            assert (hits, pages) == read(fresh, c)
            assert hits and {d for d, _, _ in hits} == {c} and {r.document_id for r in pages} == {c}
        finally:
            fresh.close()
    finally:
        store.close()
