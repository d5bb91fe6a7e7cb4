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
    one = run("ask", "Quillon ferries, passengers and fuel in 2030", "--max-claims", "1", kb=kb).stdout.splitlines()
    assert one[0].endswith(" [1]") and not any(line.startswith("[2]") for line in one)
    assert any(re.fullmatch(r"\(\d+ more claims: --max-claims\)", line) for line in one), one
    tiny = run("ask", "What were Quillon fuel costs in 2030?", "--max-chars", "5", kb=kb).stdout.splitlines()
    assert tiny[0] == "(no answer: the first line does not fit in --max-chars; raise it)"

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


QUESTION_PDF = "How does the company sell widgets in the liquidity section?"


def test_ask_render_writes_highlighted_pictures_of_the_cited_pages(tmp_path: Path, sample_pdfs) -> None:
    """`ask --render DIR`: a PNG per cited PDF page, its path under the citation, highlight-coloured pixels inside
    the quote's boxes (as kb.render places them) and none outside; `render` writes one page."""
    pytest.importorskip("PIL")
    from tests.support.client import engine
    from tests.support.highlight import highlight_pixels

    kb, pictures = tmp_path / "kb", tmp_path / "pictures"
    assert run("ingest", str(sample_pdfs["report"]), kb=kb).returncode == 0
    out = run("ask", QUESTION_PDF, "--render", str(pictures), "--scale", "1.5", kb=kb)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    cited = [i for i, line in enumerate(lines) if re.match(r"\[\d+\] ", line)]
    assert cited
    with engine(kb) as client:
        result = client.call("kb.synthesize", {"query": QUESTION_PDF, "max_chars": 2000})
        claims = {" ".join(c["text"].split()): c for c in result["claims"]}
        for i in cited:
            n = int(lines[i][1:lines[i].index("]")])
            claim = claims[lines[i].split(': "', 1)[1][:-1]]
            paths = [line.strip() for line in lines[i + 1:i + 1 + len(claim["pages"])]]
            assert paths == [str(pictures / f"cite{n}-p{p['page']}.png") for p in claim["pages"]]
            for where, path in zip(claim["pages"], paths, strict=True):
                png = Path(path).read_bytes()
                expected = client.call("kb.render", {"document_id": claim["document_id"], "page": where["page"],
                                                     "start": where["start"], "end": where["end"], "crop": True,
                                                     "scale": 1.5, "output": "base64"})
                assert expected["boxes"] == where["boxes"]
                inside, area, outside = highlight_pixels(png, expected["pixel_boxes"])
                assert outside == 0 and inside > 0.4 * area, (path, inside, area, outside)
        first = claims[lines[cited[0]].split(': "', 1)[1][:-1]]["pages"][0]
    page = run("render", claim["document_id"], "--page", str(first["page"]), "--start",
               str(first["start"]), "--end", str(first["end"]), "-o", str(tmp_path / "one.png"), kb=kb)
    assert page.returncode == 0 and page.stdout.strip() == str(tmp_path / "one.png")
    assert (tmp_path / "one.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    cached = run("render", claim["document_id"], "--page", "1", kb=kb)
    assert cached.returncode == 0 and Path(cached.stdout.strip()).parent == (kb / "cache" / "render").resolve()
    assert run("render", claim["document_id"], "--page", "1", "--start", "3", kb=kb).returncode == 2


def test_render_without_pillow_says_how_to_get_it(tmp_path: Path, folder: Path) -> None:
    blocker = tmp_path / "blocker" / "PIL"  # a PIL package that cannot be imported, first on the path
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('No module named PIL (blocked by the test)')\n")
    env = daemon_env({"PYTHONPATH": f"{blocker.parent}{os.pathsep}{ROOT}"})
    kb = tmp_path / "kb"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "jsonl_engine", *args, "--kb", str(kb)], capture_output=True,
                              text=True, env=env, cwd=ROOT, timeout=120)

    assert cli("ingest", str(folder)).returncode == 0
    for out in (cli("ask", "Quillon fuel costs", "--render", str(tmp_path / "pics")),
                cli("render", "0123456789abcdef", "--page", "1")):
        assert out.returncode == 2 and out.stdout == ""
        assert "need Pillow: pip install 'jsonl-engine[render]'" in out.stderr


def test_ask_llm_streams_the_answer_with_numbered_citations(tmp_path: Path, folder: Path, gateway) -> None:
    """`ask --llm` on the loopback LLM server (tests/support/gateway.py playing both kb.answer roles): the answer
    streamed from the LLM with its section markers numbered [1], [2]... in order of use, then one line per
    citation with the verified quote the span reader found in that section."""
    from tests.support.answer_script import AnswerScript, first_words, offered_ids
    from tests.support.client import engine

    script = AnswerScript()
    gateway.responder = script
    kb = tmp_path / "kb"
    assert run("ingest", str(folder), kb=kb).returncode == 0
    question = "What were Quillon fuel costs in 2030?"
    out = subprocess.run([sys.executable, "-m", "jsonl_engine", "ask", question, "--llm", "--kb", str(kb)],
                         capture_output=True, text=True, env=daemon_env(gateway.env()), cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    (answer_request,) = script.seen["answer"]
    assert answer_request.body["stream"] is True  # streamed as it arrives
    ids = offered_ids(answer_request)
    assert ids
    with engine(kb) as client:
        sections = {sid: client.call("kb.read", {"section_id": sid})["text"] for sid in ids}
        titles = {d["document_id"]: d["title"] for d in client.call("kb.documents")["documents"]}
    lines = out.stdout.splitlines()
    assert lines[0] == " ".join(f"Finding {n} is stated in the filing [{n}]." for n in range(1, len(ids) + 1))
    assert lines[1] == ""
    assert lines[2:] == [f'[{n}] {titles[sid.split(":")[0]]}, p. 1: "{first_words(sections[sid])}"'
                         for n, sid in enumerate(ids, 1)]
    assert gateway.unexpected == 0
