"""The one-shot commands as a user runs them: `python -m jsonl_engine ingest|ask|docs|outline|read|call`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import orjson
import pytest

from jsonl_engine.cli_oneshot import Renumber
from tests.support.client import daemon_env
from tests.support.daemon import ROOT

REPORT = ("# Quillon Ferries 2030 Report\n\n## Fleet\n\nQuillon Ferries ran 9 ferries in 2030. Each ferry carried "
          "400 passengers.\n\n## Fuel\n\nFuel costs at Quillon were $12.5 million in 2030.\n")


def run(*args: str, kb: Path, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "jsonl_engine", *args, "--kb", str(kb)], capture_output=True,
                          text=True, env=daemon_env(), cwd=ROOT, timeout=120, **kw)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("docs")
    (root / "quillon.md").write_text(REPORT, encoding="utf-8")
    (root / "notes.txt").write_text("Harbour notes: the Quillon pier is 300 metres long.\n", encoding="utf-8")
    return root


def test_ingest_ask_docs_outline_read(tmp_path: Path, folder: Path) -> None:
    kb = tmp_path / "kb"
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    try:
        out = run("ingest", str(folder), kb=kb)
    finally:
        (folder / "broken.pdf").unlink()
    assert out.returncode == 1, out.stderr  # a file failed
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["outcome", "pages", "sections", "document", "path", "note"]
    assert re.match(r"failed +0 +0 +broken\.pdf .*broken\.pdf is corrupt", lines[1])
    assert re.match(r"added +1 +1 +notes ", lines[2])
    assert re.match(r"added +1 +3 +Quillon Ferries 2030 Report ", lines[3])
    assert lines[-1] == "2 added, 0 skipped, 1 failed"
    assert "document 3/3: " in out.stderr and "\x1b[" not in out.stderr  # plain lines: stderr is a pipe

    again = run("ingest", str(folder / "quillon.md"), kb=kb)
    assert again.returncode == 0 and again.stdout.splitlines()[-1] == "0 added, 1 skipped, 0 failed"

    ask = run("ask", "What were Quillon fuel costs in 2030?", kb=kb)
    assert ask.returncode == 0, ask.stderr
    assert ask.stdout.splitlines() == [
        "Fuel costs at Quillon were $12.5 million in 2030. [1]", "",
        '[1] Quillon Ferries 2030 Report, p. 1: "Fuel costs at Quillon were $12.5 million in 2030."']
    as_json = orjson.loads(run("ask", "What were Quillon fuel costs in 2030?", "--json", kb=kb).stdout)
    assert as_json["claims"][0]["text"] == "Fuel costs at Quillon were $12.5 million in 2030."

    docs = orjson.loads(run("docs", "--json", kb=kb).stdout)["documents"]
    quillon = next(d["document_id"] for d in docs if d["title"] == "Quillon Ferries 2030 Report")
    table = run("docs", kb=kb).stdout.splitlines()
    assert table[0].split() == ["id", "pages", "sections", "status", "title"] and len(table) == 3
    assert any(line.startswith(quillon) and line.endswith("Quillon Ferries 2030 Report") for line in table)
    outline = run("outline", quillon, kb=kb).stdout.splitlines()
    assert outline == ["Quillon Ferries 2030 Report", f"  Quillon Ferries 2030 Report  (p. 1)  {quillon}:0",
                       f"    Fleet  (p. 1)  {quillon}:0.0", f"    Fuel  (p. 1)  {quillon}:0.1"]
    page = run("read", quillon, "--page", "1", kb=kb)
    assert page.returncode == 0 and "Quillon Ferries ran 9 ferries in 2030." in page.stdout
    section = run("read", f"{quillon}:0.1", kb=kb)
    assert section.stdout == "## Fuel\n\nFuel costs at Quillon were $12.5 million in 2030.\n"


def test_call_errors_and_exit_codes(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    ok = run("call", "kb.documents", kb=kb)
    events = [orjson.loads(line) for line in ok.stdout.splitlines()]
    assert ok.returncode == 0 and [e["event"] for e in events] == ["result", "done"]
    assert events[0]["data"] == {"documents": []} and events[1]["status"] == "ok"

    bad = run("call", "kb.context", '{"query": "x", "limit": 0}', kb=kb)
    events = [orjson.loads(line) for line in bad.stdout.splitlines()]
    assert bad.returncode == 1 and [e["event"] for e in events] == ["error", "done"]
    assert events[0]["error"]["code"] == "invalid_params" and events[0]["error"]["data"]["field"] == "limit"
    assert "invalid_params" in bad.stderr

    missing = run("read", "0123456789abcdef", "--page", "1", kb=kb)
    assert missing.returncode == 1 and "not_found" in missing.stderr and missing.stdout == ""
    assert run("call", "kb.context", "{not json", kb=kb).returncode == 2
    assert run("call", "kb.context", "[1]", kb=kb).returncode == 2
    assert run("read", "0123456789abcdef", kb=kb).returncode == 2  # neither --page nor a section id
    assert run("ask", "x", "--strategy", "lexical", kb=kb).returncode == 2
    assert run("ingest", kb=kb).returncode == 2  # argparse: PATH required
    llm = run("ask", "anything", "--llm", kb=kb)
    assert llm.returncode == 1 and "llm_unavailable" in llm.stderr


def test_ingest_shows_a_progress_bar_on_a_terminal(tmp_path: Path, folder: Path) -> None:
    master, slave = os.openpty()
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    env = daemon_env({"TERM": "xterm", "COLUMNS": "120"})
    out = subprocess.run([sys.executable, "-m", "jsonl_engine", "ingest", str(folder), "--kb", str(tmp_path / "kb")],
                         stdout=subprocess.PIPE, stderr=slave, text=True, env=env, cwd=ROOT, timeout=120)
    os.close(slave)
    reader.join(10)
    os.close(master)
    tty = b"".join(chunks).decode("utf-8", "replace")
    assert out.returncode == 0 and out.stdout.splitlines()[-1] == "2 added, 0 skipped, 0 failed"
    assert "documents" in tty and "2/2" in tty and "━" in tty  # rich's bar, with the documents count
    assert "document 2/2:" not in tty  # not the plain lines


def test_renumber_across_deltas() -> None:
    r = Renumber()
    sid = "0123456789abcdef:1.2"
    parts = ["Revenue rose [", sid[:7], sid[7:] + "] and costs fell [c0123456789ab", "]. See [note] [", sid, "]."]
    text = "".join(r.feed(p) for p in parts) + r.finish()
    assert text == "Revenue rose [1] and costs fell [2]. See [note] [1]."
    assert r.numbers == {sid: 1, "c0123456789ab": 2}
