"""kb.ingest and the document methods through the real daemon: batches with bad files, idempotency,
cancellation, answering while a large filing ingests, and SIGKILL in the middle of a write."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from jsonl_engine.store import open_store
from tests.conftest import kb_integrity
from tests.support.daemon import Daemon

RESULT_KEYS = {"document_id", "title", "path", "media_type", "pages", "sections", "status", "skipped", "reason",
               "warnings", "error", "summary_usage", "ocr_pages"}


def results(events: list[dict]) -> list[dict]:
    return [e["data"] for e in events if e["event"] == "result"]


def test_batch_with_bad_files_and_document_methods(tmp_path, sample_pdfs, kb_location):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "guide.md").write_text("# Guide\n\nThe ocelot paragraph.\n\n## Setup\n\nSteps.\n", encoding="utf-8")
    paths = [str(sample_pdfs[n]) for n in ("report", "encrypted", "truncated", "not_pdf")]
    paths += [str(tmp_path / "missing.pdf"), str(notes)]
    with Daemon(kb_location) as d:
        events = d.request("kb.ingest", {"paths": paths, "status": "draft"})
        assert events[-1]["status"] == "ok" and not d.bad_lines
        out = results(events)
        assert all(set(r) == RESULT_KEYS for r in out)
        assert [r["path"].rsplit("/", 1)[-1] for r in out] == [
            "report.pdf", "encrypted.pdf", "truncated.pdf", "not_pdf.pdf", "missing.pdf", "guide.md"]
        report, encrypted, truncated, not_pdf, missing, guide = out
        assert report["error"] is None and report["status"] == "draft" and report["pages"] == 6
        assert report["media_type"] == "application/pdf" and report["title"] == \
            "ACME Holdings plc, annual report, fiscal year 2023"  # the card's title (parse_file keeps the heading)
        assert [r["error"]["reason"] for r in (encrypted, truncated, not_pdf)] == ["encrypted", "corrupt", "not_pdf"]
        assert all(r["error"]["code"] == "unsupported_media" and r["document_id"] is None
                   for r in (encrypted, truncated, not_pdf))
        assert missing["error"]["code"] == "not_found"
        assert guide["media_type"] == "text/markdown" and guide["sections"] == 2
        stages = [e["data"]["stage"] for e in events if e["event"] == "progress"]
        assert {"document", "extract", "write"} <= set(stages)
        assert stages[-1] == "index"  # the search index is tidied once, after the documents were written

        events = d.request("kb.ingest", {"paths": [str(sample_pdfs["report"])]})
        again = results(events)
        assert again[0]["skipped"] and again[0]["document_id"] == report["document_id"] and again[0]["reason"]
        assert "index" not in {e["data"]["stage"] for e in events if e["event"] == "progress"}  # nothing written

        docs = d.result("kb.documents", {})["documents"]
        assert {x["document_id"] for x in docs} == {report["document_id"], guide["document_id"]}
        assert d.result("kb.documents", {"statuses": ["approved"]}) == {"documents": []}

        tree = d.result("kb.outline", {"document_id": report["document_id"], "max_depth": 2})
        part = next(s for s in tree["sections"] if s["title"] == "PART I")
        assert [c["title"] for c in part["children"]][0] == "Item 1. Business"
        assert all(c["children"] == [] for c in part["children"])
        item7 = part["children"][1]
        deep = d.result("kb.outline", {"document_id": report["document_id"]})
        item7_deep = next(s for s in deep["sections"] if s["title"] == "PART I")["children"][1]
        assert item7_deep["children"] and item7_deep["section_id"] == item7["section_id"]

        parent = d.result("kb.read", {"section_id": item7_deep["section_id"]})
        assert parent["children"] == [c["section_id"] for c in item7_deep["children"]]
        chunk = d.result("kb.read", {"section_id": item7_deep["children"][0]["section_id"]})
        assert chunk["children"] == []
        assert item7["title"].startswith("Item 7.") and item7["title"] in chunk["text"]  # after the page header
        assert chunk["path"] == ["PART I", item7["title"]] and chunk["page_map"][0] == [0, chunk["page_start"]]
        page = d.result("kb.read", {"document_id": report["document_id"], "page": 1})
        assert sample_pdfs["report_headings"]["_special"] in page["text"] and page["section_id"] is None

        assert d.error("kb.read", {"document_id": report["document_id"]})["data"]["field"] == "page"
        assert d.error("kb.read", {"document_id": report["document_id"], "page": 99})["code"] == "not_found"
        assert d.error("kb.outline", {"document_id": "0000000000000000"})["code"] == "not_found"
        assert d.error("kb.ingest", {"text": "words"})["data"]["field"] == "title"
        assert d.error("kb.review", {"document_id": guide["document_id"], "status": "lost"})["code"] == \
            "invalid_params"

        reviewed = d.result("kb.review", {"document_id": guide["document_id"], "status": "approved"})
        assert reviewed == {"document_id": guide["document_id"], "status": "approved", "previous_status": "draft"}
        removed = d.result("kb.remove", {"document_id": report["document_id"]})
        assert removed["removed"] and removed["pages"] == 6
        assert d.error("kb.remove", {"document_id": report["document_id"]})["code"] == "not_found"
        inline = results(d.request("kb.ingest", {"text": "Inline words.", "title": "Inline"}))[0]
        assert inline["media_type"] == "text/plain" and inline["path"] is None and inline["pages"] == 1
        assert not d.bad_lines
    store = open_store(kb_location)
    assert kb_integrity(store)["documents"] == 2
    store.close()


def test_daemon_answers_while_a_300_page_filing_ingests(tmp_path, dev_pdfs):
    big = dev_pdfs / "AMERICANWATERWORKS_2022_10K.pdf"
    with Daemon(tmp_path / "kb") as d:
        d.request("kb.ingest", {"text": "# Water\n\nCapital expenditure on pipes.\n", "title": "Water",
                                "media_type": "text/markdown"})
        ingest = d.start("kb.ingest", {"paths": [str(big)]})
        d.wait_event(ingest, "progress")
        answered = [d.request("capabilities"), d.request("kb.documents", {}),
                    d.request("kb.context", {"query": "capital expenditure"})]
        ingest_events = d.events_for(ingest)
        assert not any(e["event"] == "done" for e in ingest_events), "the ingest ended before the probes"
        assert all(a[-1]["status"] == "ok" for a in answered)
        done = d.wait_done(ingest, timeout=120)
        assert results(done)[0]["pages"] == 306 and done[-1]["status"] == "ok"
        extract = [e["data"] for e in done if e["event"] == "progress" and e["data"]["stage"] == "extract"]
        assert len(extract) > 3 and extract[-1]["done"] == extract[-1]["total"] == 306


def test_cancel_leaves_the_kb_as_before(tmp_path, dev_pdfs):
    with Daemon(tmp_path / "kb") as d:
        first = results(d.request("kb.ingest", {"paths": [str(dev_pdfs / "AMCOR_2022_8K_dated-2022-07-01.pdf")]}))
        ingest = d.start("kb.ingest", {"paths": [str(dev_pdfs / "PEPSICO_2022_10K.pdf")]})
        d.wait_event(ingest, "progress")
        assert d.result("cancel", {"target": ingest}) == {"cancelled": True}
        events = d.wait_done(ingest)
        assert events[-1]["status"] == "cancelled" and results(events) == []
        assert [x["document_id"] for x in d.result("kb.documents", {})["documents"]] == [first[0]["document_id"]]
        again = results(d.request("kb.ingest", {"paths": [str(dev_pdfs / "PEPSICO_2022_10K.pdf")]}, timeout=120))
        assert again[0]["pages"] == 503 and not again[0]["skipped"]
    store = open_store(tmp_path / "kb")
    assert kb_integrity(store)["documents"] == 2
    store.close()


def _descendants(root: int) -> list[int]:
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        parents[int(text.split()[0])] = int(text[text.rindex(")") + 2:].split()[1])
    found, frontier = [], [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        found += children
        frontier += children
    return found


def _running(pid: int) -> bool:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return text[text.rindex(")") + 2] != "Z"


def test_sigkill_during_a_write_leaves_no_partial_document(kb_location, dev_pdfs):
    """On both backends: SQLite rolls the WAL back, PostgreSQL the killed connection's transaction."""
    kb = kb_location
    with Daemon(kb) as d:
        early = results(d.request("kb.ingest", {"paths": [str(dev_pdfs / "AMCOR_2022_8K_dated-2022-07-01.pdf")]}))[0]
        before = open_store(kb)
        early_pages = [before.page(early["document_id"], n).text for n in range(1, 10)]
        early_sections = [(s.section_id, s.text) for s in before.document_sections(early["document_id"])]
        before.close()
        ingest = d.start("kb.ingest", {"paths": [str(dev_pdfs / "PEPSICO_2022_10K.pdf")]})
        while True:  # kill as soon as the big document's write transaction starts
            event = d.next_event()
            if event.get("id") != ingest:
                continue
            if event["event"] == "progress" and event["data"]["stage"] == "write":
                helpers = _descendants(d.proc.pid)
                os.kill(d.proc.pid, signal.SIGKILL)
                break
            assert event["event"] == "progress", event
        d.proc.wait(10)
        assert d.proc.returncode == -signal.SIGKILL
    assert helpers  # the forkserver and its pool workers
    deadline = time.monotonic() + 5
    while any(_running(pid) for pid in helpers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in helpers if _running(pid)], "the killed daemon left processes behind"
    store = open_store(kb)
    counts = kb_integrity(store)
    docs = store.documents()
    assert docs[0].document_id == early["document_id"]
    if len(docs) == 2:  # the commit won the race against the kill: then the document is complete
        assert docs[1].pages == 503 and counts["pages"] == 503 + 9
    else:
        assert counts == {"documents": 1, "pages": 9, "sections": early["sections"], "sections_fts": early["sections"]}
    assert [store.page(early["document_id"], n).text for n in range(1, 10)] == early_pages
    assert [(s.section_id, s.text) for s in store.document_sections(early["document_id"])] == \
        early_sections
    store.close()


@pytest.mark.parametrize("name", ["truncated", "encrypted"])
def test_pdfium_messages_never_reach_stdout(tmp_path, sample_pdfs, name):
    with Daemon(tmp_path / "kb") as d:
        out = results(d.request("kb.ingest", {"paths": [str(sample_pdfs[name])]}))
        assert out[0]["error"]["code"] == "unsupported_media"
        assert d.result("capabilities")["name"] == "jsonl-engine"
    assert d.bad_lines == []
