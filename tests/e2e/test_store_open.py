"""Opening the KB waits on SQLite locks; it must never hold up the event loop (capabilities, cancel). A KB that
cannot be opened is `kb_unavailable`, naming the path and the problem, and the daemon keeps serving."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import pytest

from tests.support.daemon import Daemon


@pytest.mark.parametrize("method, params", [("kb.context", {"query": "widgets"}), ("kb.documents", {}),
                                            ("kb.synthesize", {"query": "widgets"})])
def test_the_daemon_answers_while_a_request_waits_to_open_a_locked_kb(tmp_path, method, params):
    kb = tmp_path / "kb"
    kb.mkdir()
    # Another process is creating this KB: the file is new and exclusively locked, so opening the store
    # (switching to WAL, migrating) has to wait for it.
    blocker = sqlite3.connect(kb / "kb.sqlite3", isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        with Daemon(kb) as d:
            waiting = d.start(method, params)
            time.sleep(0.5)  # the request is now waiting on the lock (a blocked loop would stall what follows)
            quick = d.start("capabilities")
            assert d.wait_done(quick, timeout=10)[-1]["status"] == "ok"
            assert not any(e["event"] == "done" for e in d.events_for(waiting))
            blocker.execute("ROLLBACK")
            assert d.wait_done(waiting, timeout=30)[-1]["status"] == "ok"
    finally:
        blocker.close()


def created_kb(kb: Path) -> Path:
    with Daemon(kb) as d:
        assert d.result("kb.documents") == {"documents": []}  # creates and migrates the KB file
    return kb / "kb.sqlite3"


def garbage(db: Path) -> None:
    db.write_bytes(b"this is no database " * 4096)


def truncated(db: Path) -> None:
    db.write_bytes(db.read_bytes()[: db.stat().st_size // 2])  # an interrupted copy


@pytest.mark.parametrize("damage, problem", [(garbage, "is not a valid SQLite database (file is not a database)"),
                                             (truncated, "is not a valid SQLite database (database disk image "
                                                         "is malformed)")])
def test_a_corrupt_kb_file_is_kb_unavailable_naming_the_file_and_the_daemon_keeps_serving(tmp_path, damage,
                                                                                          problem):
    db = created_kb(tmp_path / "kb")
    damage(db)
    with Daemon(tmp_path / "kb") as d:
        for method, params in [("kb.documents", {}), ("kb.context", {"query": "widgets"})]:
            err = d.error(method, params)
            assert err["code"] == "kb_unavailable"
            assert err["message"] == f"the KB file {db} {problem}"
            assert err["data"]["path"] == str(db)
        assert d.result("capabilities")["protocol"] == 1
        for leftover in tmp_path.glob("kb/kb.sqlite3*"):  # the user moves the damaged file away
            leftover.unlink()
        assert d.result("kb.documents") == {"documents": []}
        assert d.bad_lines == []


def test_a_kb_path_that_is_or_runs_through_a_file_is_kb_unavailable(tmp_path):
    a_file = tmp_path / "kb"
    a_file.write_text("a file, not a directory", encoding="utf-8")
    with Daemon(a_file) as d:
        assert d.error("kb.documents") == {"code": "kb_unavailable", "data": {"path": str(a_file)},
                                           "message": f"the KB directory {a_file} exists and is not a directory"}
    with Daemon(a_file / "sub") as d:
        err = d.error("kb.documents")
        assert err["code"] == "kb_unavailable"
        assert err["message"].startswith(f"cannot create the KB directory {a_file / 'sub'} (")
        assert d.result("capabilities")["protocol"] == 1


def test_a_kb_file_that_cannot_be_opened_is_kb_unavailable(tmp_path):
    (tmp_path / "kb" / "kb.sqlite3").mkdir(parents=True)
    with Daemon(tmp_path / "kb") as d:
        err = d.error("kb.context", {"query": "widgets"})
    assert err["code"] == "kb_unavailable" and err["data"]["sqlite_error"] == "SQLITE_CANTOPEN"
    assert err["message"].startswith(f"the KB file {tmp_path / 'kb' / 'kb.sqlite3'} cannot be opened")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_kb_directory_is_kb_unavailable(tmp_path):
    kb = tmp_path / "kb"
    kb.mkdir(mode=0o555)
    try:
        with Daemon(kb) as d:
            err = d.error("kb.documents")
    finally:
        kb.chmod(0o755)
    assert err == {"code": "kb_unavailable", "message": f"the KB directory {kb} is not writable",
                   "data": {"path": str(kb)}}
