"""A PostgreSQL KB whose connections die under a running daemon (issue 25): after pg_terminate_backend and after a
server restart, the next requests (reads on every handler thread's reader, writes on the pooled writers, an
ingest) succeed: a dead connection is found at its first use and the request runs again on a fresh one. Errors
the server gives for an unusable database are kb_unavailable with a reason."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from jsonl_engine.errors import Internal, KBUnavailable
from jsonl_engine.store import open_store
from tests.support import pg
from tests.support.daemon import Daemon

DEADLINE_S = 60.0


@pytest.fixture
def own_server():
    """A server of this test's own: it is restarted under the daemon (the session's server serves other tests)."""
    if not pg.driver_available() or pg.server_bin() is None:
        pytest.skip("PostgreSQL (server binaries and psycopg) not installed")
    with pg.PgServer() as server:
        yield server


def _requests(doc: str) -> list[tuple[str, dict]]:
    """Reads (twice each, so that several handler threads hold a reader) and writes (pooled writers)."""
    reads = [("kb.documents", {}), ("kb.context", {"query": "widgets sold through the liquidity section"}),
             ("kb.outline", {"document_id": doc}), ("kb.read", {"document_id": doc, "page": 1}),
             ("kb.synthesize", {"query": "How does the company sell widgets?"})]
    writes = [("kb.review", {"document_id": doc, "status": "draft"}),
              ("kb.update", {"document_id": doc, "meta": {"title": "A report"}}),
              ("kb.review", {"document_id": doc, "status": "approved"})]
    return reads * 2 + writes


def _failures(d: Daemon, doc: str) -> list[tuple[str, dict]]:
    sent = [(m, d.start(m, p)) for m, p in _requests(doc)]
    failed = []
    for method, request_id in sent:
        events = d.wait_done(request_id)
        failed += [(method, e["error"]) for e in events if e["event"] == "error"]
    return failed


def test_terminated_backends_and_a_restart_cost_no_request(own_server, sample_pdfs, tmp_path):
    url = own_server.new_database()
    more = [tmp_path / f"copy-{k}.pdf" for k in range(2)]
    for k, path in enumerate(more):
        shutil.copy(sample_pdfs["outline"], path)
        with open(path, "ab") as fh:  # distinct bytes: a new document each
            fh.write(b"\n%" + str(k).encode() * 8 + b"\n")
    with Daemon(url, timeout=DEADLINE_S) as d:
        doc = d.result("kb.ingest", {"paths": [str(sample_pdfs["report"])]})["document_id"]
        assert _failures(d, doc) == []  # every connection in use: readers on several threads, pooled writers
        assert own_server.terminate_backends(url) >= 2
        assert _failures(d, doc) == []
        ingest = d.result("kb.ingest", {"paths": [str(more[0])]})
        assert ingest["error"] is None and not ingest["skipped"], ingest
        assert _failures(d, doc) == []
        own_server.restart()
        assert _failures(d, doc) == []
        ingest = d.result("kb.ingest", {"paths": [str(more[1])]})
        assert ingest["error"] is None and not ingest["skipped"], ingest
        assert len(d.result("kb.documents", {})["documents"]) == 3
        assert d.bad_lines == []


@pytest.mark.parametrize(("sqlstate", "code", "reason"), [("disk_full", "kb_unavailable", "disk_full"),
                                                           ("data_corrupted", "kb_unavailable", "corrupt"),
                                                           ("index_corrupted", "kb_unavailable", "corrupt"),
                                                           ("io_error", "kb_unavailable", "io_error"),
                                                           ("out_of_memory", "kb_unavailable", "resources"),
                                                           ("admin_shutdown", "kb_unavailable", "unreachable"),
                                                           ("division_by_zero", "internal", None)])
def test_server_errors_of_an_unusable_database_are_kb_unavailable_with_a_reason(pg_server, sqlstate, code, reason):
    import psycopg

    url = pg_server.new_database()
    store = open_store(url)
    try:
        with psycopg.connect(url, autocommit=True) as conn, pytest.raises(psycopg.Error) as raised:
            conn.execute(f"DO $$ BEGIN RAISE EXCEPTION 'raised' USING ERRCODE = '{sqlstate}'; END $$")
        error = store._translate("write", raised.value)  # the store's one translation edge, on a real error
        assert error.code == code and isinstance(error, KBUnavailable if reason else Internal)
        assert (error.data or {}).get("reason") == reason
        assert "raised" in error.message
    finally:
        store.close()


def test_a_read_retried_after_its_connection_died_sees_the_same_kb(pg_server, tmp_path: Path):
    from jsonl_engine.ingest import sync

    url = pg_server.new_database()
    store = open_store(url)
    try:
        note = tmp_path / "note.txt"
        note.write_text("Widgets are sold through distributors.\n", encoding="utf-8")
        assert sync.ingest_paths(store, [str(note)])[0].error is None
        before = [d.document_id for d in store.documents()]
        assert pg_server.terminate_backends(url) >= 1
        assert [d.document_id for d in store.documents()] == before  # retried once on a fresh reader
        assert pg_server.terminate_backends(url) >= 1
        with store.snapshot():  # the snapshot's BEGIN finds the dead reader and begins on a fresh one
            assert [d.document_id for d in store.documents()] == before
        assert pg_server.terminate_backends(url) >= 1
        assert store.remove(before[0]).document_id == before[0]  # a pooled writer found dead at BEGIN: replaced
        assert store.documents() == []
    finally:
        store.close()
