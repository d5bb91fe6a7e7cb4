"""Opening the KB waits on SQLite locks; it must never hold up the event loop (capabilities, cancel)."""

from __future__ import annotations

import sqlite3
import time

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
