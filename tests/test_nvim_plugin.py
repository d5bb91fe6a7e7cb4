"""The Neovim plugin (editors/nvim) in the real Neovim, headless, on the real daemon and a KB built in the test."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from jsonl_engine.cli_oneshot import Renumber, citations, numbered
from tests.support.client import daemon_env, engine
from tests.support.daemon import ROOT

NVIM = shutil.which("nvim")
QUESTION = "What were Quillon fuel costs in 2030?"
NOTES = ("# Quillon Harbour Notes\n\n## Piers\n\nThe Quillon pier is 300 metres long.\n\n"
         "## Fuel\n\nCafé prices at the pier — naïve guesses aside — were stable. "
         "Fuel costs at Quillon were $12.5 million in 2030.\n")


def _pdf(path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", "", 12)
    pdf.add_page()
    pdf.multi_cell(0, 6, "Quillon Ferries Annual Report 2030\n\nThe fleet had 9 ferries.")
    pdf.add_page()
    pdf.multi_cell(0, 6, "Operating costs\n\nQuillon fuel costs in 2030 were lower than the harbour budget, "
                         "the ferries report says.")
    pdf.output(str(path))


def _drive(script: str, env: dict[str, str], cwd: Path, out: Path) -> dict:
    """Run tests/nvim/`script` in headless Neovim with the plugin on the runtime path; the report it wrote."""
    proc = subprocess.run([NVIM, "--headless", "-u", "NONE", "-i", "NONE", "--cmd",
                           f"set rtp^={ROOT / 'editors' / 'nvim'}", "--cmd", "runtime plugin/jsonl_engine.lua",
                           "-S", str(ROOT / "tests" / "nvim" / script)],
                          env=env, cwd=cwd, capture_output=True, text=True, timeout=240)
    assert out.exists(), (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    return orjson.loads(out.read_bytes())


def _position(lines: list[str], offset: int) -> tuple[int, int]:
    """(row, byte col), 0-based, of a character offset into "\\n".join(lines)."""
    for row, line in enumerate(lines):
        if offset <= len(line):
            return row, len(line[:offset].encode("utf-8"))
        offset -= len(line) + 1
    raise AssertionError("offset beyond the text")


@pytest.mark.skipif(NVIM is None, reason="nvim is not installed (.ci/run installs Debian's neovim)")
def test_kbask_float_quickfix_and_highlight(tmp_path: Path) -> None:
    docs, kb, out = tmp_path / "docs", tmp_path / "kb", tmp_path / "report.json"
    docs.mkdir()
    (docs / "notes.md").write_text(NOTES, encoding="utf-8")
    _pdf(docs / "ferries.pdf")
    env = daemon_env({"KB_TEST_OUT": str(out), "KB_TEST_KB": str(kb), "KB_TEST_DOCS": str(docs),
                      "KB_TEST_PYTHON": sys.executable, "KB_TEST_QUESTION": QUESTION})
    report = _drive("drive.lua", env, tmp_path, out)
    assert report.get("lua_error") is None and "timeout" not in report, report

    # what the daemon says, through the Python client on the same KB
    with engine(kb) as client:
        result = client.call("kb.synthesize", {"query": QUESTION, "max_chars": 2000})
        paths = {d["document_id"]: d["path"] for d in client.call("kb.documents")["documents"]}
        cites = citations("kb.synthesize", result)
        renumber = Renumber({c["marker"] for c in cites})
        answer = renumber.feed(result["answer"]) + renumber.finish()
        listed = numbered(renumber, cites)
        sections = {c["section_id"]: client.call("kb.read", {"section_id": c["section_id"]})["text"]
                    for _, c in listed}
    assert len(listed) >= 1 and answer.count("[1]") >= 1
    assert any(c["quote"] == "Fuel costs at Quillon were $12.5 million in 2030." for _, c in listed)

    assert [n["msg"] for n in report["notes"]][0] == f"jsonl-engine: ingested {docs}: 2 added, 0 skipped, 0 failed"
    echoes = report["echoes"]
    assert f"jsonl-engine: document 2/2 {docs / 'notes.md'}" in echoes  # progress in the message area
    assert "jsonl-engine: extract 2/2 ferries.pdf: 2/2 pages" in echoes

    assert report["float"]["relative"] == "editor" and report["float"]["current"]
    quote_lines = [f'[{n}] {c["document_title"]}, p. {c["page"]}: "{" ".join(c["quote"].split())}"' for n, c in listed]
    assert report["float"]["lines"] == [*answer.split("\n"), "", *quote_lines]

    assert report["qf_title"] == f"KbAsk: {QUESTION}"
    assert len(report["qf"]) == len(listed) == len(report["opened"])
    for (n, c), item, opened in zip(listed, report["qf"], report["opened"], strict=True):
        text = sections[c["section_id"]]
        lines = text.split("\n")
        start, end = _position(lines, c["quote_start"]), _position(lines, c["quote_end"])
        assert item["bufname"] == opened["name"] == f"kb://{c['section_id']}"
        assert (item["lnum"], item["col"]) == (start[0] + 1, start[1] + 1)
        where = f" ({paths[c['document_id']]} p. {c['page']})" if paths[c["document_id"]] else ""
        assert item["text"] == f'[{n}] {c["document_title"]}, p. {c["page"]}{where}: {" ".join(c["quote"].split())}'
        assert opened["lines"] == lines and opened["buftype"] == "nofile"
        assert opened["cursor"] == [start[0] + 1, start[1]]
        assert [start[0], start[1], end[0], end[1], "KbQuote"] in opened["marks"]
        # the highlighted bytes are the quote
        assert "\n".join(lines).encode()[_byte(lines, start):_byte(lines, end)].decode() == c["quote"]
        # :KbRender: a PNG of the PDF quote with its boxes highlighted; a text document has none
        if (paths[c["document_id"]] or "").endswith(".pdf"):
            assert c["boxes_status"] == "ok" and len(opened["render"]) == len(c["pages"]) >= 1
            for png in opened["render"]:
                assert Path(png).parent == (kb / "cache" / "render").resolve()
                assert Path(png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        else:
            assert opened["render"] is None
            assert f"jsonl-engine: no picture for [{n}]: not_pdf (a text document)" in [m["msg"] for m in report["notes"]]
    assert any(opened["render"] for opened in report["opened"])  # the PDF's page was rendered
    fuel = next(i for i, (_, c) in enumerate(listed) if c["quote"].startswith("Fuel costs"))
    assert report["opened"][fuel]["cursor"][1] > len("Café prices")  # a byte column past the non-ASCII text
    notes = [n["msg"] for n in report["notes"]]
    for _, c in listed:
        path = paths[c["document_id"]]
        assert (f"jsonl-engine: {path}  page {c['page']}" if path else
                f"jsonl-engine: no file for this document (it was ingested as text); page {c['page']}") in notes

    assert report["context"][0].startswith("1. Piers — Quillon Harbour Notes, p. 1-1")
    assert notes[-1].startswith("jsonl-engine: llm_unavailable: ")


def _byte(lines: list[str], pos: tuple[int, int]) -> int:
    return sum(len(line.encode()) + 1 for line in lines[: pos[0]]) + pos[1]


@pytest.mark.skipif(NVIM is None, reason="nvim is not installed (.ci/run installs Debian's neovim)")
def test_kbask_with_an_llm(tmp_path: Path, gateway) -> None:
    """llm = true: :KbAsk sends kb.answer (stream = false) to a daemon whose LLM is the loopback scripted server;
    the float shows the LLM's answer with its section markers numbered and a line per verified citation, and
    the quickfix list points at each quote."""
    from jsonl_engine.ingest.sync import ingest_text
    from jsonl_engine.store import open_store
    from tests.support.answer_script import AnswerScript, first_words, offered_ids

    script = AnswerScript()
    gateway.responder = script
    kb, out = tmp_path / "kb", tmp_path / "report.json"
    store = open_store(kb)
    assert ingest_text(store, NOTES, "Quillon Harbour Notes", "text/markdown").error is None
    store.close()
    env = daemon_env({**gateway.env(), "KB_TEST_OUT": str(out), "KB_TEST_KB": str(kb),
                      "KB_TEST_PYTHON": sys.executable, "KB_TEST_QUESTION": QUESTION})
    report = _drive("drive_llm.lua", env, tmp_path, out)
    assert report.get("lua_error") is None and "timeout" not in report and not report["notes"], report
    (answer_request,) = script.seen["answer"]
    assert not answer_request.body.get("stream") and report["method"] == "kb.answer"
    ids = offered_ids(answer_request)
    with engine(kb) as client:
        sections = {sid: client.call("kb.read", {"section_id": sid})["text"] for sid in ids}
    assert ids and report["float"] == [
        " ".join(f"Finding {n} is stated in the filing [{n}]." for n in range(1, len(ids) + 1)), "",
        *(f'[{n}] Quillon Harbour Notes, p. 1: "{first_words(sections[sid])}"' for n, sid in enumerate(ids, 1))]
    for n, (sid, item) in enumerate(zip(ids, report["qf"], strict=True), 1):
        lines = sections[sid].split("\n")
        row, col = _position(lines, sections[sid].index(first_words(sections[sid])))
        assert item["bufname"] == f"kb://{sid}" and (item["lnum"], item["col"]) == (row + 1, col + 1)
        assert item["text"].startswith(f"[{n}] Quillon Harbour Notes, p. 1")
    assert gateway.unexpected == 0
