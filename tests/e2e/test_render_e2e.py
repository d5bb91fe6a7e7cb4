"""kb.render and claim locations through the daemon (issue 15)."""

from __future__ import annotations

import base64
import os
import shutil
from pathlib import Path

from tests.support.daemon import Daemon

DEADLINE_S = 60.0  # generous for a loaded 2-core machine; the old code never answered at all


def test_claim_pages_and_render_over_the_wire(sample_pdfs, tmp_path):
    with Daemon(tmp_path / "kb") as d:
        doc = d.result("kb.ingest", {"paths": [str(sample_pdfs["report"])]})["document_id"]
        out = d.result("kb.synthesize", {"query": "How does the company sell widgets in the liquidity section?"})
        claim = out["claims"][0]
        assert claim["boxes_status"] == "ok"
        where = claim["pages"][0]
        assert where["boxes"] and where["rotation"] == 0 and where["width"] > 500
        page = d.result("kb.read", {"document_id": doc, "page": where["page"]})
        assert page["text"][where["start"]:where["end"]].split() == claim["text"].split()[:len(
            page["text"][where["start"]:where["end"]].split())]
        span = {"document_id": doc, "page": where["page"], "start": where["start"], "end": where["end"]}
        as_file = d.result("kb.render", {**span, "crop": True, "scale": 1.5})
        path = Path(as_file["path"])
        assert path.parent == (tmp_path / "kb" / "cache" / "render").resolve()
        assert path.read_bytes()[:4] == b"\x89PNG" and as_file["data"] is None and as_file["pixel_boxes"]
        inline = d.result("kb.render", {**span, "output": "base64", "scale": 0.5})
        assert base64.b64decode(inline["data"])[:4] == b"\x89PNG" and inline["path"] is None
        bad = d.request("kb.render", {"document_id": doc, "page": 1, "crop": True})
        assert [e["error"]["code"] for e in bad if e["event"] == "error"] == ["invalid_params"]
        missing = d.request("kb.render", {"document_id": doc, "page": 999})
        assert [e["error"]["code"] for e in missing if e["event"] == "error"] == ["not_found"]


def test_identical_renders_in_parallel_to_a_file_all_succeed(sample_pdfs, tmp_path):
    # Each call writes its own temporary file before the rename (a name per process made them collide: issue 25).
    with Daemon(tmp_path / "kb") as d:
        doc = d.result("kb.ingest", {"paths": [str(sample_pdfs["report"])]})["document_id"]
        params = {"document_id": doc, "page": 1, "scale": 0.5}
        ids = [d.start("kb.render", params) for _ in range(24)]
        outcomes = [d.wait_done(i) for i in ids]
        assert [[e["event"] for e in events] for events in outcomes] == [["result", "done"]] * len(ids), \
            [e for events in outcomes for e in events if e["event"] == "error"]
        paths = {events[0]["data"]["path"] for events in outcomes}
        assert len(paths) == 1 and Path(paths.pop()).read_bytes()[:4] == b"\x89PNG"
        assert [p.name for p in (tmp_path / "kb" / "cache" / "render").iterdir() if p.suffix != ".png"] == []


def test_a_source_swapped_for_a_fifo_or_dev_zero_is_refused_and_blocks_nothing(sample_pdfs, tmp_path):
    # Issue 25: render opened the path under pdfium's lock without checking it was a regular file: a FIFO blocked
    # (and every later render and synthesize with it), /dev/zero was hashed forever, and EOF never ended the daemon.
    swapped, intact = tmp_path / "swapped.pdf", tmp_path / "intact.pdf"
    shutil.copy(sample_pdfs["report"], swapped)
    shutil.copy(sample_pdfs["outline"], intact)
    with Daemon(tmp_path / "kb", timeout=DEADLINE_S) as d:
        bad = d.result("kb.ingest", {"paths": [str(swapped)]})["document_id"]
        good = d.result("kb.ingest", {"paths": [str(intact)]})["document_id"]
        query = {"query": "How does the company sell widgets in the liquidity section?", "document_ids": [bad]}
        for make in (os.mkfifo, lambda p: os.symlink("/dev/zero", p)):
            swapped.unlink()
            make(swapped)
            for params in ({"document_id": bad, "page": 1}, {"document_id": bad, "page": 1, "output": "base64"}):
                err = d.error("kb.render", params)
                assert err["code"] == "unsupported_media" and err["data"]["reason"] == "file_changed", err
            claims = d.result("kb.synthesize", query)["claims"]
            assert claims and {c["boxes_status"] for c in claims} == {"file_changed"}
            assert d.result("kb.render", {"document_id": good, "page": 1})["path"]
        assert d.close(timeout=DEADLINE_S) == 0
