"""What only the PostgreSQL backend has: selection by URL, a clear error without the driver, redacted connection
strings, migrations under an advisory lock, content-hash idempotency between concurrent writers, and BM25 scores
equal to SQLite's FTS5 bm25()."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from jsonl_engine.config import load_settings
from jsonl_engine.errors import Internal, KBUnavailable
from jsonl_engine.ingest import outcome, parse_text, sync
from jsonl_engine.store import SectionWeights, describe, open_store, redact
from jsonl_engine.store.postgres.migrations import MIGRATIONS
from tests.conftest import kb_integrity
from tests.support.daemon import ROOT, Daemon
from tests.support.sql import sql

URL = "postgresql://alice:s3cr%40t@db.example:5432/kb"


def test_selection_by_flag_env_or_file(tmp_path: Path) -> None:
    config = tmp_path / "engine.toml"
    config.write_text(f'[kb]\nurl = "{URL}"\n')
    assert load_settings(config, env={}).kb_location == URL
    assert load_settings(config, kb_dir="local", env={}).kb_location == Path("local")  # the flag wins
    assert load_settings(config, env={"JSONL_ENGINE_KB": "envdir"}).kb_location == Path("envdir")
    assert load_settings(env={"JSONL_ENGINE_KB": URL}).kb_location == URL
    assert load_settings(kb_dir=URL, env={}).kb_location == URL
    assert load_settings(env={}).kb_location == Path(".jsonl-engine")
    settings = load_settings(kb_dir=URL, env={})
    assert "s3cr" not in repr(settings) and "s3cr" not in settings.model_dump_json()


def test_redaction() -> None:
    assert describe(URL) == "postgresql://alice:***@db.example:5432/kb"
    assert "s3cr" not in redact(f"failed: {URL} password=s3cr@t host=x")
    assert redact("postgres://u:pw@h/db?password=pw2") == "postgres://u:***@h/db?password=***"
    assert describe("/some/dir") == "/some/dir"


def test_unreachable_database_is_kb_unavailable_without_the_password() -> None:
    with pytest.raises(KBUnavailable) as err:
        open_store("postgresql://alice:hunter2hunter2@127.0.0.1:1/kb?connect_timeout=2")
    assert "hunter2" not in str(err.value.message) and "hunter2" not in repr(err.value.data)
    assert "alice:***@127.0.0.1:1" in err.value.message


@pytest.mark.parametrize(("module", "said"), [("psycopg", "pip install 'jsonl-engine[postgres]'"),
                                              ("numpy", "needs numpy: pip install 'jsonl-engine[postgres]'")])
def test_without_the_driver_or_numpy_the_error_says_what_to_install(module: str, said: str) -> None:
    code = (f"import sys; sys.modules[{module!r}] = None\n"
            "from jsonl_engine.store import open_store\n"
            "try:\n    open_store('postgresql://u:pw@127.0.0.1:1/x')\n"
            "except Exception as e:\n    print(type(e).__name__, e.message)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert "KBUnavailable" in out.stdout and said in out.stdout, out
    assert "pw" not in out.stdout.replace("pip", "")


def test_without_the_driver_the_daemon_starts_and_the_first_kb_request_says_what_to_install(tmp_path: Path) -> None:
    shim = tmp_path / "shim" / "psycopg"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError(\"No module named 'psycopg'\")\n")
    env = {"PYTHONPATH": f"{tmp_path / 'shim'}:{ROOT}"}
    with Daemon(kb_dir="postgresql://u:pw1234@127.0.0.1:1/x", env=env) as d:
        assert d.result("capabilities")["kb"]["backend"] == "postgresql"
        err = d.error("kb.context", {"query": "revenue"})
    assert err["code"] == "kb_unavailable", err
    assert "pip install 'jsonl-engine[postgres]'" in err["message"] and "pw1234" not in str(err)
    assert "pw1234" not in d.stderr


def test_capabilities_name_the_backend_never_the_password(pg_server, tmp_path: Path) -> None:
    url = pg_server.new_database().replace("postgres@", "postgres:topsecret@")  # trust auth ignores it
    with Daemon(kb_dir=url) as d:
        caps = d.result("capabilities")
        assert caps["kb"]["backend"] == "postgresql"
        assert caps["kb"]["location"] == url.replace("topsecret", "***")
        out = d.result("kb.ingest", {"text": "# T\n\nwombat words\n", "title": "t"})
        assert out["document_id"]
    assert "topsecret" not in d.stderr
    with Daemon(kb_dir=tmp_path / "kb") as d:
        assert d.result("capabilities")["kb"] == {"backend": "sqlite", "location": str(tmp_path / "kb")}


def test_migrations_are_recorded_and_a_newer_schema_is_refused(pg_server) -> None:
    url = pg_server.new_database()
    open_store(url).close()
    store = open_store(url)  # reopening applies nothing
    assert [r[0] for r in sql(store, "SELECT version FROM schema_migrations ORDER BY version")] == \
        [m[0] for m in MIGRATIONS]
    sql(store, "INSERT INTO schema_migrations (version, description) VALUES (%s, 'from the future')",
        (MIGRATIONS[-1][0] + 1,))
    store.close()
    with pytest.raises(Internal, match="newer than this jsonl-engine"):
        open_store(url)


def _open(url: str, barrier) -> str:
    try:
        barrier.wait(timeout=30)
        open_store(url).close()
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        return repr(exc)
    return "ok"


def test_daemons_opening_a_new_database_at_once_all_migrate_it(pg_server) -> None:
    import multiprocessing

    workers = 6
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, context.Pool(workers) as pool:
        barrier = manager.Barrier(workers)
        for _round in range(3):
            url = pg_server.new_database()
            assert pool.starmap(_open, [(url, barrier)] * workers, chunksize=1) == ["ok"] * workers
            store = open_store(url)
            assert [r[0] for r in sql(store, "SELECT version FROM schema_migrations")] == [m[0] for m in MIGRATIONS]
            store.close()


def test_racing_writers_store_one_copy(pg_server) -> None:
    """Two stores (as two daemons) write the same content at once, past the pre-check: one inserts, the other
    meets the UNIQUE content hash and reports a skip."""
    url = pg_server.new_database()
    a, b = open_store(url), open_store(url)
    parsed = parse_text("# Same\n\nnumbat words\n", "t", "text/markdown")
    sha, doc_id = outcome.content_id(b"# Same\n\nnumbat words\n")
    barrier = threading.Barrier(2)
    results: list = []

    def write(store) -> None:
        with store.transaction() as tx:  # both pass the check before either inserts
            assert tx.find_by_sha256(sha) is None
            barrier.wait(timeout=10)
        results.append(outcome.write_parsed(store, parsed, document_id=doc_id, sha256=sha, path=None,
                                            status="approved"))

    threads = [threading.Thread(target=write, args=(s,)) for s in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(r.skipped for r in results) == [False, True]
    assert kb_integrity(a)["documents"] == 1
    a.close()
    b.close()


def test_bm25_scores_equal_sqlite(pg_server, tmp_path: Path) -> None:
    text = ("# Annual report\n\nRevenue grew. Cash flows from operating activities rose; revenue and cash.\n\n"
            "## Cash flows\n\nPurchases of property plant and equipment. Cash flows cash flows.\n\n"
            "## Revenue\n\nNet revenue by segment. " + "Filler words here. " * 40 + "\n")
    stores = [open_store(tmp_path / "kb"), open_store(pg_server.new_database())]
    for store in stores:
        sync.ingest_text(store, text, "r", "text/markdown")
        sync.ingest_text(store, "# Other\n\nNothing about money; cash once.\n", "o", "text/markdown")
    phrases = [("cash", "flows"), ("revenue",), ("purchases", "of", "property")]
    answers = []
    for store in stores:
        scope = store.scope(None, ["approved"])
        pages = store.search_pages(phrases, scope, 10)
        sections = store.search_sections(phrases, SectionWeights(4.0, 1.5, 1.0), scope, 10, sorted(scope.documents))
        answers.append(([(h.number, round(h.score, 9)) for h in pages],
                        [(h.section.section_id, round(h.score, 9)) for h in sections],
                        {k: round(v, 9) for k, v in store.search_covers(phrases, scope).items()},
                        store.frequencies("pages", phrases), store.frequencies("documents", phrases)))
        store.close()
    assert answers[0] == answers[1]


def test_collection_statistics_are_kept_by_the_writes(pg_server) -> None:
    """BM25's N and total length per kind come from text_stats (deltas the writes leave in their transaction),
    equal to counting the tables after ingests, a removal, a rolled-back write, and their folding."""
    from jsonl_engine.store.postgres import search

    url = pg_server.new_database()
    store = open_store(url)

    def counted() -> dict:
        r = sql(store, "SELECT (SELECT COUNT(*) FROM pages), (SELECT COALESCE(SUM(ntok), 0) FROM pages),"
                       " (SELECT COUNT(*) FROM pages WHERE number <= 2),"
                       " (SELECT COALESCE(SUM(ntok), 0) FROM pages WHERE number <= 2),"
                       " (SELECT COUNT(*) FROM sections), (SELECT COALESCE(SUM(ntok), 0) FROM sections)")[0]
        return {kind: (n, tok / n if n else 0.0) for kind, n, tok in
                (("pages", r[0], r[1]), ("covers", r[2], r[3]), ("sections", r[4], r[5]))}

    def kept() -> dict:
        return search.stats(store._db.reader())

    assert kept() == counted() == {"pages": (0, 0.0), "covers": (0, 0.0), "sections": (0, 0.0)}
    ids = [sync.ingest_text(store, f"# Doc {i}\n\n" + "words here and there " * (5 + i) + "\n\n## Part\n\nmore "
                            f"text {i}\n", f"d{i}", "text/markdown").document_id for i in range(3)]
    assert kept() == counted() and kept()["sections"][0] > 0
    store.remove(ids[1])
    assert kept() == counted()
    with pytest.raises(RuntimeError), store.transaction() as tx:  # a write rolled back leaves no delta
        tx._conn.run("DELETE FROM pages WHERE document_id = %s", (ids[0],))
        raise RuntimeError("abandoned")
    assert kept() == counted()
    store.tidy_indexes()
    assert kept() == counted()
    assert sql(store, "SELECT COUNT(*) FROM text_stats")[0][0] == 3  # folded into a row per kind
    store.close()


_RICH = ("# Cash flows statement\n\nCash flows from operating activities. Net cash provided by operating activities "
         "rose; cash cash cash. Purchases of property, plant and equipment fell. Property plant equipment.\n\n"
         "## Net revenue\n\nRevenue by segment: net revenue, gross revenue, revenue revenue. Cash flows again and "
         "cash flows. " + "Filler words to lengthen the row. " * 25 + "\n\n"
         "## Operating income\n\nOperating income and operating expenses; income from operations. Revenue.\n")
_PHRASES = [("cash", "flows"), ("revenue",), ("purchases", "of", "property", "plant", "and", "equipment"),
            ("cash", "cash"), ("operating", "activities"), ("statement", "cash"), ("revenue", "net"),
            ("income", "from", "operations"), ("property", "plant", "equipment"), ("absentword",)]


def _ranking(store) -> tuple:
    """Every search of the rich library, scores as they are (no rounding)."""
    scope = store.scope(None, ["approved"])
    docs = sorted(scope.documents)
    weights = SectionWeights(4.0, 1.5, 1.0)
    return ([tuple(h) for h in store.search_pages(_PHRASES, scope, 50)],
            [tuple(h) for h in store.search_pages(_PHRASES[2:5], scope, 3, within=docs[:1])],
            [(h.section.section_id, h.score) for h in store.search_sections(_PHRASES, weights, scope, 50, docs)],
            [(h.section.section_id, h.score) for h in store.search_sections(_PHRASES[:4], SectionWeights(1.0, 0.3, 0.7),
                                                                             scope, 50, docs)],
            store.search_covers(_PHRASES, scope), store.pages_holding(_PHRASES[3:6], docs),
            *(store.frequencies(kind, _PHRASES) for kind in ("pages", "covers", "sections", "documents")))


def _rich_library(store) -> None:
    sync.ingest_text(store, _RICH, "rich", "text/markdown")
    sync.ingest_text(store, "# Other\n\nNothing about money; cash once. Flows of water.\n", "o", "text/markdown")
    sync.ingest_text(store, "# Revenue\n\n" + "Revenue and cash flows, operating activities. " * 30 + "\n", "r",
                     "text/markdown")


def test_bm25_from_postings_is_bit_identical_to_sqlite(pg_server, tmp_path: Path) -> None:
    """Pages, sections (field weights, dyadic or not), covers, phrase counts and the pages holding a phrase: the
    same floats, not merely close, from PostgreSQL's postings as from FTS5 (phrases of one to six words, a
    repeated word, a phrase across a field's end that must not match)."""
    answers = []
    for store in (open_store(tmp_path / "kb"), open_store(pg_server.new_database())):
        _rich_library(store)
        answers.append(_ranking(store))
        store.close()
    assert answers[0][0] and answers[0][2] and answers[0][4]
    assert answers[1] == answers[0]


def test_a_kb_made_before_postings_gets_them_and_searches_alike(pg_server) -> None:
    """A KB at schema version 6 (GIN indexes, no postings) upgrades: migration 7 writes every document's
    postings from its stored tsvectors, and the searches give what a KB written with postings gives; a removal
    then takes a document's postings with it."""
    url = pg_server.new_database()
    store = open_store(url)
    _rich_library(store)
    expected = _ranking(store)
    store.close()
    with psycopg_connect(url) as conn:  # back to version 6, as main left it
        conn.execute("DROP TABLE term_stats; DROP FUNCTION add_term_stats(TEXT, INTEGER); DROP FUNCTION "
                     "term_pairs(TEXT); DROP TABLE term_phrases; DELETE FROM schema_migrations WHERE version >= 8")
        conn.execute("DROP TABLE postings; DROP FUNCTION write_postings(TEXT); DELETE FROM schema_migrations "
                     "WHERE version = 7; CREATE INDEX pages_tsv ON pages USING gin (tsv); CREATE INDEX covers_tsv "
                     "ON pages USING gin (tsv) WHERE number <= 2; CREATE INDEX sections_tsv ON sections USING "
                     "gin (tsv)")
    store = open_store(url)
    assert _ranking(store) == expected
    kb_integrity(store)
    doc = store.documents()[0].document_id
    store.remove(doc)
    assert sql(store, "SELECT COUNT(*) FROM postings WHERE document_id = %s", (doc,)) == [(0,)]
    kb_integrity(store)
    store.close()


def psycopg_connect(url: str):
    import psycopg

    return psycopg.connect(url, autocommit=True)
