"""The KB file failing under a running daemon (issue 25): truncated, damaged, restored, out of space. Every request
gets its one `done`, the failures are kb_unavailable with a reason (never internal, never a dead daemon), and the
daemon serves again once the file is usable, without a restart."""

from __future__ import annotations

import os
import resource
import shutil
from pathlib import Path

from tests.support.daemon import Daemon

DEADLINE_S = 60.0
REASONS = {"corrupt", "io_error", "disk_full", "locked"}


def _kb_with_documents(tmp_path: Path, *pdfs: Path) -> tuple[Path, list[str]]:
    """A KB holding the PDFs, written by a daemon that exited cleanly (the WAL checkpointed into kb.sqlite3)."""
    kb = tmp_path / "kb"
    with Daemon(kb, timeout=DEADLINE_S) as d:
        ids = [d.result("kb.ingest", {"paths": [str(p)]})["document_id"] for p in pdfs]
        assert d.close() == 0
    return kb, ids


def _requests(doc: str) -> list[tuple[str, dict]]:
    return [("kb.documents", {}), ("kb.context", {"query": "widgets sold through the liquidity section"}),
            ("kb.outline", {"document_id": doc}), ("kb.read", {"document_id": doc, "page": 2}),
            ("kb.synthesize", {"query": "How does the company sell widgets?"}),
            ("kb.review", {"document_id": doc, "status": "draft"})]


def _outcomes(d: Daemon, doc: str) -> list[tuple[str, str | None]]:
    """(method, error code or None) of each request, sent together; every one must end with one done, and fail, if
    it does, with kb_unavailable."""
    sent = [(m, d.start(m, p)) for m, p in _requests(doc)]
    out = []
    for method, request_id in sent:
        events = d.wait_done(request_id)
        assert [e["event"] for e in events].count("done") == 1, events
        errors = [e["error"] for e in events if e["event"] == "error"]
        if errors:
            assert errors[0]["code"] == "kb_unavailable", (method, errors[0])
            assert errors[0]["data"]["reason"] in REASONS and errors[0]["data"]["path"], errors[0]
        out.append((method, errors[0]["code"] if errors else None))
    return out


def test_a_kb_file_truncated_under_the_daemon_is_kb_unavailable_not_a_sigbus(sample_pdfs, tmp_path):
    # Reads mapped the file: truncated while reads were running, a mapped page past the end killed the daemon
    # with SIGBUS (issue 25: 4 of 4 rounds).
    kb, (doc,) = _kb_with_documents(tmp_path, sample_pdfs["report"])
    path = kb / "kb.sqlite3"
    original = path.read_bytes()
    for keep in (len(original) // 3, 4096, 0):
        path.write_bytes(original)
        with Daemon(kb, timeout=DEADLINE_S) as d:
            d.result("kb.update", {"document_id": doc, "meta": {"title": "Before the truncation"}})  # a write
            assert all(code is None for _m, code in _outcomes(d, doc))
            burst = [d.start(m, p) for m, p in _requests(doc)[:-1] * 6]  # reads in flight during the truncation
            os.truncate(path, keep)
            failed = [code for _m, code in _outcomes(d, doc) if code]
            for request_id in burst:
                events = d.wait_done(request_id)
                failed += [e["error"]["code"] for e in events if e["event"] == "error"]
            assert failed and set(failed) == {"kb_unavailable"}, failed
            assert d.proc.poll() is None and d.result("capabilities")["name"] == "jsonl-engine"
            assert d.bad_lines == []


def test_a_damaged_kb_file_is_kb_unavailable_and_serves_again_once_restored(sample_pdfs, tmp_path):
    kb, (doc, _other) = _kb_with_documents(tmp_path, sample_pdfs["report"], sample_pdfs["outline"])
    path = kb / "kb.sqlite3"
    original = path.read_bytes()
    with Daemon(kb, timeout=DEADLINE_S) as d:
        assert d.result("capabilities")  # the store opens at the first request that needs it: open it intact
        assert d.result("kb.documents", {})["documents"]
        with open(path, "r+b") as fh:  # every page but the first (the schema) overwritten in place
            fh.seek(4096)
            fh.write(bytes(range(256)) * ((len(original) - 4096) // 256))
        assert any(code for _m, code in _outcomes(d, doc))
        with open(path, "r+b") as fh:  # restored in place, as a backup copied back would be
            fh.write(original)
        assert _outcomes(d, doc) == [(m, None) for m, _p in _requests(doc)]
        assert d.proc.poll() is None and d.bad_lines == []


def test_a_full_disk_is_kb_unavailable_and_ingest_resumes_once_there_is_room(sample_pdfs, tmp_path):
    # The daemon may write files of at most `cap` bytes (RLIMIT_FSIZE: writes past it fail as on a full disk).
    kb, _ids = _kb_with_documents(tmp_path, sample_pdfs["outline"])
    files = []
    for k in range(12):
        files.append(tmp_path / f"filing-{k}.pdf")
        shutil.copy(sample_pdfs["report"], files[-1])
        with open(files[-1], "ab") as fh:  # distinct bytes, the same text: each is a new document
            fh.write(b"\n%" + str(k).encode() * 8 + b"\n")
    cap = (kb / "kb.sqlite3").stat().st_size + 64 * 1024
    with Daemon(kb, timeout=DEADLINE_S) as d:
        resource.prlimit(d.proc.pid, resource.RLIMIT_FSIZE, (cap, resource.RLIM_INFINITY))
        events = d.request("kb.ingest", {"paths": [str(f) for f in files]})
        errors = [e["data"]["error"] for e in events if e["event"] == "result" and e["data"]["error"]]
        errors += [e["error"] for e in events if e["event"] == "error"]
        assert errors, "the cap was never reached"
        assert {e["code"] for e in errors} == {"kb_unavailable"}, errors
        reasons = {e["reason"] if "reason" in e else e["data"]["reason"] for e in errors}  # per file / per request
        assert reasons <= {"disk_full", "io_error"}, errors
        resource.prlimit(d.proc.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        again = [e["data"] for e in d.request("kb.ingest", {"paths": [str(f) for f in files]})
                 if e["event"] == "result"]
        assert len(again) == len(files) and all(r["error"] is None for r in again), again
        assert len(d.result("kb.documents", {})["documents"]) == len(files) + 1
        assert d.proc.poll() is None and d.bad_lines == []
