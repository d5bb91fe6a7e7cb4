"""Several daemons on one PostgreSQL database (the team setup): two ingest overlapping sets of files while two
query; kb.remove while others query; every document ends up stored once and whole. (A daemon SIGKILLed
mid-ingest: tests/e2e/test_ingest_e2e.py, on both backends.)"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from jsonl_engine.store import open_store
from tests.conftest import kb_integrity
from tests.support.daemon import Daemon

QUERIES = ["net sales 2022", "capital expenditure", "dividends paid", "total current liabilities"]


def _results(events: list[dict]) -> list[dict]:
    return [e["data"] for e in events if e["event"] == "result"]


def _query_until(d: Daemon, stop: threading.Event, errors: list, answered: list) -> None:
    i = 0
    while not stop.is_set():
        events = d.request("kb.context", {"query": QUERIES[i % len(QUERIES)], "limit": 3}, timeout=120)
        if events[-1].get("status") != "ok" or any(e["event"] == "error" for e in events):
            errors.append(events)
        answered.append(1)
        i += 1


@pytest.fixture
def files(tmp_path: Path, dev_pdfs: Path, sample_pdfs: dict) -> list[Path]:
    """Small documents: generated PDFs, a dev 8-K, markdown notes."""
    out = [sample_pdfs["report"], sample_pdfs["outline"], dev_pdfs / "AMCOR_2022_8K_dated-2022-07-01.pdf"]
    for i in range(5):
        note = tmp_path / f"note{i}.md"
        note.write_text(f"# Note {i}\n\n## Sales\n\nNet sales {i} rose in 2022; capital expenditure {i}.\n")
        out.append(note)
    return out


def test_four_daemons_two_ingesting_overlapping_sets_two_querying(pg_server, files: list[Path],
                                                                   tmp_path: Path) -> None:
    url = pg_server.new_database()
    # The same bytes under two folders: path differs, content hash the same -> one copy each.
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    for f in files:
        shutil.copy(f, mirror / f.name)
    set_a = [str(f) for f in files[:6]]
    set_b = [str(mirror / f.name) for f in files[2:]]  # overlaps files[2:6] by content
    with Daemon(url) as qa, Daemon(url) as qb, Daemon(url) as ia, Daemon(url) as ib:
        stop, errors, answered = threading.Event(), [], []
        queriers = [threading.Thread(target=_query_until, args=(d, stop, errors, answered)) for d in (qa, qb)]
        for t in queriers:
            t.start()
        outcomes: dict[str, list[dict]] = {}
        ingesters = [threading.Thread(target=lambda d=d, key=key, paths=paths: outcomes.__setitem__(
            key, _results(d.request("kb.ingest", {"paths": paths}, timeout=240))))
            for d, key, paths in ((ia, "a", set_a), (ib, "b", set_b))]
        for t in ingesters:
            t.start()
        for t in ingesters:
            t.join(300)
        stop.set()
        for t in queriers:
            t.join(120)
        assert not errors, (errors[:1], qa.stderr[-3000:], qb.stderr[-3000:])
        assert answered
        everything = outcomes["a"] + outcomes["b"]
        assert all(o["error"] is None for o in everything), everything
        stored = {o["document_id"] for o in everything}
        assert len(stored) == len(files)
        # each overlapping content was written by exactly one daemon, skipped by the other
        for doc in stored:
            written = [o for o in everything if o["document_id"] == doc and not o["skipped"]]
            assert len(written) == 1, (doc, [o for o in everything if o["document_id"] == doc])
        listed = qa.result("kb.documents", {})["documents"]
        assert sorted(d["document_id"] for d in listed) == sorted(stored)
        for d in (qa, qb, ia, ib):
            assert not d.bad_lines
    store = open_store(url)
    assert kb_integrity(store)["documents"] == len(files)
    store.close()


def test_remove_while_other_daemons_query(pg_server, files: list[Path]) -> None:
    url = pg_server.new_database()
    with Daemon(url) as writer, Daemon(url) as qa, Daemon(url) as qb:
        ids = [o["document_id"] for o in _results(writer.request("kb.ingest", {"paths": [str(f) for f in files]},
                                                                 timeout=240))]
        stop, errors, answered = threading.Event(), [], []
        queriers = [threading.Thread(target=_query_until, args=(d, stop, errors, answered)) for d in (qa, qb)]
        for t in queriers:
            t.start()
        for doc in ids[:-1]:
            assert writer.result("kb.remove", {"document_id": doc})["removed"]
        stop.set()
        for t in queriers:
            t.join(120)
        assert not errors, errors[:1]
        assert [d["document_id"] for d in qa.result("kb.documents", {})["documents"]] == ids[-1:]
        found = qb.result("kb.context", {"query": "capital expenditure", "limit": 5})["items"]
        assert {i["document_id"] for i in found} <= {ids[-1]}
    store = open_store(url)
    assert kb_integrity(store)["documents"] == 1
    store.close()
