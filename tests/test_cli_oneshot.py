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


def run(*args: str, kb: Path, env: dict[str, str] | None = None, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "jsonl_engine", *args, "--kb", str(kb)], capture_output=True,
                          text=True, env=daemon_env(env), cwd=kw.pop("cwd", ROOT), timeout=120, **kw)


WIDE = {"COLUMNS": "400"}  # for tests that parse long lines: nothing wrapped or cut


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
    assert out.returncode == 3, out.stderr  # a file failed, the others went in
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["outcome", "pages", "sections", "document", "path", "note"]
    assert lines[1].split()[:4] == ["failed", "0", "0", "broken.pdf"] and "broken.pdf" in lines[1]
    assert re.match(r"added +1 +1 +notes ", lines[2])
    assert re.match(r"added +1 +3 +Quillon Ferries 20.*…  ….*/docs0/quillon\.md$", lines[3]), lines  # cut to fit
    assert lines[-1] == "2 added, 0 skipped, 1 failed"
    assert all(len(line) <= 80 for line in lines), lines
    assert "document 3/3: " in out.stderr and "\x1b[" not in out.stderr  # plain lines: stderr is a pipe
    assert f"jsonl-engine ingest: cannot read {folder / 'broken.pdf'}: broken.pdf is corrupt" in out.stderr
    assert "open it in a viewer, or ingest another copy" in out.stderr  # what to do about it
    assert f"creating a new KB at {kb} (--kb)" in out.stderr

    again = run("ingest", str(folder / "quillon.md"), kb=kb)
    assert again.returncode == 0 and again.stdout.splitlines()[-1] == "0 added, 1 skipped, 0 failed"
    assert "creating" not in again.stderr

    ask = run("ask", "What were Quillon fuel costs in 2030?", kb=kb)
    assert ask.returncode == 0, ask.stderr
    assert ask.stdout.splitlines() == [  # at 80 columns: the citation wraps, indented
        "Fuel costs at Quillon were $12.5 million in 2030. [1]", "",
        '[1] Quillon Ferries 2030 Report, p. 1: "Fuel costs at Quillon were $12.5 million', '    in 2030."']
    as_json = orjson.loads(run("ask", "What were Quillon fuel costs in 2030?", "--json", kb=kb).stdout)
    assert as_json["claims"][0]["text"] == "Fuel costs at Quillon were $12.5 million in 2030."
    one = run("ask", "Quillon ferries, passengers and fuel in 2030", "--max-claims", "1", kb=kb).stdout.splitlines()
    assert one[0].endswith(" [1]") and not any(line.startswith("[2]") for line in one)
    assert any(re.fullmatch(r"\(\d+ more claims: --max-claims\)", line) for line in one), one
    tiny = run("ask", "What were Quillon fuel costs in 2030?", "--max-chars", "5", kb=kb).stdout.splitlines()
    assert tiny[0] == "(no answer: the first line does not fit in --max-chars; raise it)"

    docs = orjson.loads(run("docs", "--json", kb=kb).stdout)["documents"]
    quillon = next(d["document_id"] for d in docs if d["title"] == "Quillon Ferries 2030 Report")
    table = run("docs", kb=kb, env=WIDE).stdout.splitlines()
    assert table[0].split() == ["id", "kind", "pages", "status", "title", "path"] and len(table) == 3
    kind = next(d["card"]["kind"] for d in docs if d["document_id"] == quillon) or "markdown"  # else the file type
    assert any(re.fullmatch(rf"{quillon}  {kind} +1  approved  Quillon Ferries 2030 Report +{folder}/quillon.md",
                            line) for line in table), table
    outline = run("outline", quillon, kb=kb).stdout.splitlines()
    assert outline == ["Quillon Ferries 2030 Report", f"  Quillon Ferries 2030 Report  (p. 1)  {quillon}:0",
                       f"    Fleet  (p. 1)  {quillon}:0.0", f"    Fuel  (p. 1)  {quillon}:0.1"]
    page = run("read", quillon, "--page", "1", kb=kb)
    assert page.returncode == 0 and "Quillon Ferries ran 9 ferries in 2030." in page.stdout
    section = run("read", f"{quillon}:0.1", kb=kb)
    assert section.stdout == "## Fuel\n\nFuel costs at Quillon were $12.5 million in 2030.\n"


def test_call_errors_and_exit_codes(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    refused = run("call", "kb.documents", kb=kb)
    assert refused.returncode == 1 and f"no KB at {kb}" in refused.stderr and not kb.exists()
    created = run("call", "kb.ingest", '{"text": "A note.", "title": "Note"}', kb=kb)
    assert created.returncode == 0 and f"creating a new KB at {kb}" in created.stderr
    assert run("call", "kb.remove", orjson.dumps({"document_id": orjson.loads(created.stdout.splitlines()[0])
                                                  ["data"]["document_id"]}).decode(), kb=kb).returncode == 0
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
    assert run("ingest", kb=kb).returncode == 2  # no PATH
    llm = run("ask", "anything", "--llm", kb=kb)
    assert llm.returncode == 1 and "llm_unavailable" in llm.stderr


def on_terminal(args: list[str], env: dict[str, str], stdout_too: bool = True) -> tuple[int, str, str]:
    """Run with stderr (and stdout, unless `stdout_too` is false: then a pipe) on a pseudo-terminal: (exit code,
    what the terminal received, what the pipe received)."""
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
    out = subprocess.run([sys.executable, "-m", "jsonl_engine", *args], stdout=slave if stdout_too else
                         subprocess.PIPE, stderr=slave, env=daemon_env(env), cwd=ROOT, timeout=120)
    os.close(slave)
    reader.join(10)
    os.close(master)
    return out.returncode, b"".join(chunks).decode("utf-8", "replace"), (out.stdout or b"").decode()


def test_ingest_shows_a_progress_bar_on_a_terminal(tmp_path: Path, folder: Path) -> None:
    code, tty, stdout = on_terminal(["ingest", str(folder), "--kb", str(tmp_path / "kb")],
                                    {"TERM": "xterm", "COLUMNS": "120"}, stdout_too=False)
    assert code == 0 and stdout.splitlines()[-1] == "2 added, 0 skipped, 0 failed"
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
    out = run("ask", QUESTION_PDF, "--render", str(pictures), "--scale", "1.5", kb=kb, env=WIDE)
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
                         capture_output=True, text=True, env=daemon_env({**gateway.env(), **WIDE}), cwd=ROOT,
                         timeout=120)
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


# ---- a new user's first hour (issue 29) -------------------------------------------------------------------


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None, **kw) -> subprocess.CompletedProcess[str]:
    """`jsonl-engine ARGS` as typed: no --kb added, run in `cwd`."""
    return subprocess.run([sys.executable, "-m", "jsonl_engine", *args], capture_output=True, text=True,
                          env=daemon_env(env), cwd=cwd, timeout=120, **kw)


def test_global_options_work_before_or_after_the_command(tmp_path: Path, folder: Path) -> None:
    work, before, after = tmp_path / "work", tmp_path / "before", tmp_path / "after"
    work.mkdir()
    out = cli("--kb", str(before), "ingest", str(folder / "notes.txt"), "--log-level", "info", cwd=work)
    assert out.returncode == 0, out.stderr
    assert (before / "kb.sqlite3").exists() and not (work / ".jsonl-engine").exists()  # not the default KB
    assert " INFO jsonl_engine" in out.stderr  # the daemon logged at the level given after the command
    assert cli("ingest", str(folder / "quillon.md"), "--kb", str(after), cwd=work).returncode == 0
    for args in (("--kb", str(before), "docs", "--json"), ("docs", "--json", "--kb", str(before))):
        listed = cli(*args, cwd=work)
        assert [d["title"] for d in orjson.loads(listed.stdout)["documents"]] == ["notes"], args
    clash = cli("--kb", str(before), "docs", "--kb", str(after), cwd=work)
    assert clash.returncode == 2 and "--kb given twice" in clash.stderr and clash.stdout == ""
    assert cli("--kb", str(before), "docs", "--kb", str(before), cwd=work).returncode == 0  # once in effect
    bad = cli("docs", "--kb", str(before), "--log-level", "loud", cwd=work)
    assert bad.returncode == 2 and "'loud' is not a log level" in bad.stderr
    assert not (work / ".jsonl-engine").exists()


def test_read_commands_refuse_a_kb_that_does_not_exist(tmp_path: Path) -> None:
    work, missing = tmp_path / "work", tmp_path / "nowhere" / "kb"
    work.mkdir()
    doc = "0123456789abcdef"
    for args in (["docs"], ["ask", "anything"], ["read", doc, "--page", "1"], ["outline", doc],
                 ["render", doc, "--page", "1"]):
        out = cli(*args, "--kb", str(missing), cwd=work)
        assert out.returncode == 1 and out.stdout == "", (args, out.stdout)
        assert f"jsonl-engine {args[0]}: no KB at {missing} (--kb)" in out.stderr, out.stderr
        assert f"create it: jsonl-engine ingest PATH --kb {missing}" in out.stderr and "Traceback" not in out.stderr
    assert not missing.parent.exists()  # nothing created
    default = cli("docs", cwd=work)
    assert default.returncode == 1
    assert f"no KB at {work / '.jsonl-engine'} (the default: ./.jsonl-engine in the current folder)" in default.stderr
    from_env = cli("docs", cwd=work, env={"JSONL_ENGINE_KB": str(missing)})
    assert from_env.returncode == 1 and f"no KB at {missing} ($JSONL_ENGINE_KB)" in from_env.stderr
    assert not (work / ".jsonl-engine").exists() and not missing.parent.exists()


def test_an_empty_kb_says_what_to_run(tmp_path: Path, folder: Path) -> None:
    kb = tmp_path / "kb"
    assert run("ingest", str(folder / "notes.txt"), kb=kb).returncode == 0
    (doc,) = orjson.loads(run("docs", "--json", kb=kb).stdout)["documents"]
    assert run("call", "kb.remove", orjson.dumps({"document_id": doc["document_id"]}).decode(), kb=kb).returncode == 0
    hint = f"this KB has no documents: run `jsonl-engine ingest PATH --kb {kb}`"
    docs = run("docs", kb=kb)
    assert docs.returncode == 0 and docs.stdout == "" and hint in docs.stderr
    ask = run("ask", "How long is the Quillon pier?", kb=kb)
    assert ask.returncode == 1 and hint in ask.stderr and "(no answer" not in ask.stdout


def test_help_has_examples_explains_its_words_and_fits_80_columns(monkeypatch, capsys) -> None:
    from jsonl_engine.cli import main
    from jsonl_engine.cli_oneshot import COMMANDS

    monkeypatch.setenv("COLUMNS", "200")  # a wide terminal: help still fits 80 columns
    for command in [[], ["serve"], ["schemas"], *([c] for c in COMMANDS)]:
        with pytest.raises(SystemExit) as exited:
            main([*command, "--help"])
        text = capsys.readouterr().out
        assert exited.value.code == 0
        assert re.search(r"\nEXAMPLES\n  \$ .*jsonl-engine", text), command
        assert max(len(line) for line in text.splitlines()) <= 80, command
        if command:
            assert "global options (before or after the command)" in text or command == ["schemas"]
        else:
            for words in ("PATH      a file or a folder", "question  what to ask", "LEVEL     the daemon's log",
                          "NO_COLOR, TERM=dumb", "EXIT CODES", "130  interrupted"):
                assert words in text, words


@pytest.mark.parametrize("setting", [{"NO_COLOR": "1"}, {"TERM": "dumb"}], ids=["NO_COLOR", "TERM=dumb"])
def test_no_color_and_a_dumb_terminal_get_no_escape_codes(tmp_path: Path, folder: Path, setting) -> None:
    kb = str(tmp_path / "kb")
    code, text, _ = on_terminal(["ingest", str(folder), "--kb", kb], {"TERM": "xterm", **setting})
    assert code == 0 and "document 2/2:" in text and "2 added, 0 skipped, 0 failed" in text  # plain lines
    assert "\x1b" not in text
    code, text, _ = on_terminal(["docs", "--kb", kb], {"TERM": "xterm", **setting})
    assert code == 0 and "Quillon Ferries" in text and "\x1b" not in text


def _pdf(path: Path, pages: int, label: str) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", "", 11)
    for i in range(pages):
        pdf.add_page()
        pdf.multi_cell(0, 6, f"{label} page {i + 1}: the harbour log of the day. " * 8)
    pdf.output(str(path))


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def test_progress_totals_are_counted_before_the_bars_start(tmp_path: Path) -> None:
    """Every frame of the bars shows the final totals: files and PDF pages are counted first (old: the pages
    total grew as files were opened, the documents total was unknown until the first one finished)."""
    pytest.importorskip("rich")
    from jsonl_engine.cli_oneshot import _finish_plan, _start_plan

    docs = tmp_path / "docs"
    docs.mkdir()
    for name, pages in (("a.pdf", 3), ("b.pdf", 5), ("c.pdf", 9)):
        _pdf(docs / name, pages, name)
    (docs / "notes.md").write_text("# Notes\n\nThe pier is 300 metres long.\n", encoding="utf-8")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    os.mkfifo(docs / "pipe.pdf")  # counting never opens it (it would block)
    plan = _finish_plan(_start_plan([str(docs)]))
    assert plan == {str(docs / "a.pdf"): 3, str(docs / "b.pdf"): 5, str(docs / "broken.pdf"): 1,
                    str(docs / "c.pdf"): 9, str(docs / "notes.md"): 1, str(docs / "pipe.pdf"): 1}
    os.unlink(docs / "pipe.pdf")
    (docs / "broken.pdf").unlink()

    code, text, _ = on_terminal(["ingest", str(docs), "--kb", str(tmp_path / "kb")],
                                {"TERM": "xterm", "COLUMNS": "80"}, stdout_too=False)
    assert code == 0
    plain = ANSI.sub("", text)
    pages = re.findall(r"pages [━╸╺╴╶ ]*(\d+)/(\S+)", plain)
    documents = re.findall(r"documents [━╸╺╴╶ ]*(\d+)/(\S+)", plain)
    assert pages and documents, plain
    assert {total for _, total in pages} == {"18"} and ("18", "18") in pages, pages
    assert {total for _, total in documents} == {"4"} and ("4", "4") in documents, documents
    drawn = re.sub(r"\x1b\[[0-9;?]*m", "", text)  # colours out, cursor moves (line ends) kept
    frames = [line for line in re.split(r"\x1b\[[0-9;?]*[A-Za-z]|\r|\n", drawn) if "━" in line]
    assert max(len(line) for line in frames) <= 80, max(frames, key=len)  # one line per bar at 80 columns


def test_no_leaked_semaphores_after_an_ingest(tmp_path: Path, folder: Path, sample_pdfs) -> None:
    """The daemon leaves by os._exit: its pool's queues were never released, and multiprocessing's resource
    tracker printed 'There appear to be 5 leaked semaphore objects' after every ingest, one-shot or Client."""
    from tests.support.client import engine

    for round in range(3):
        out = run("ingest", str(folder), str(sample_pdfs["report"]), kb=tmp_path / f"kb{round}")
        assert out.returncode == 0, out.stderr
        assert "leaked semaphore" not in out.stderr and "resource_tracker" not in out.stderr, out.stderr
    for round in range(3):
        client = engine(tmp_path / f"client{round}")
        with client:
            events = list(client.stream("kb.ingest", {"paths": [str(folder), str(sample_pdfs["report"])]}))
            assert sum(e["event"] == "result" for e in events) == 3
        assert client.returncode == 0
        assert "leaked semaphore" not in client.stderr_text and "resource_tracker" not in client.stderr_text, \
            client.stderr_text


def test_docs_shows_kind_and_path_within_80_columns_and_every_command_has_json(tmp_path: Path, folder: Path,
                                                                                 sample_pdfs) -> None:
    kb = tmp_path / "kb"
    long_title = "The Quillon Harbour Authority's Very Long Annual Statement of Ferries, Piers and Fuel 2030"
    deep = tmp_path / "a-folder-with-a-long-name" / "another-long-folder-name"
    deep.mkdir(parents=True)
    (deep / "statement.md").write_text(f"# {long_title}\n\nThe pier is 300 metres long.\n", encoding="utf-8")
    out = run("ingest", str(folder), str(deep), str(sample_pdfs["report"]), "--json", kb=kb)
    assert out.returncode == 0 and "creating a new KB" in out.stderr
    ingested = [orjson.loads(line) for line in out.stdout.splitlines()]
    assert len(ingested) == 4 and all(r["document_id"] and r["error"] is None for r in ingested)

    table = run("docs", kb=kb).stdout.splitlines()
    assert table[0].split() == ["id", "kind", "pages", "status", "title", "path"]
    assert len(table) == 5 and max(len(line) for line in table) <= 80, table
    row = next(line for line in table if line.startswith(ingested[2]["document_id"]))  # the statement
    assert row.endswith("/statement.md") and "…" in row.split("approved", 1)[1]  # title cut, path cut
    assert re.search(r"…[^ ]*statement\.md$", row)  # the path keeps its end
    cards = {d["document_id"]: d["card"] for d in orjson.loads(run("docs", "--json", kb=kb).stdout)["documents"]}
    for r in ingested:  # the card's kind, else the file type
        kind = cards[r["document_id"]]["kind"] or {"text/plain": "text", "text/markdown": "markdown"}[r["media_type"]]
        line = next(line for line in table if line.startswith(r["document_id"]))
        assert re.match(rf"{r['document_id']}  {kind} +{r['pages']}  approved  ", line), (line, kind)

    statement = ingested[2]["document_id"]
    jsons = {
        "docs": run("docs", "--json", kb=kb),
        "ask": run("ask", "How long is the pier?", "--json", kb=kb),
        "outline": run("outline", statement, "--json", kb=kb),
        "read": run("read", statement, "--page", "1", "--json", kb=kb),
        "render": run("render", ingested[3]["document_id"], "--page", "1", "--json", kb=kb),
        "call": run("call", "kb.documents", "--json", kb=kb),
    }
    for name, result in jsons.items():
        assert result.returncode == 0, (name, result.stderr)
        values = [orjson.loads(line) for line in result.stdout.splitlines()]
        assert values and all(isinstance(v, dict) for v in values), name
    assert [d["path"] for d in orjson.loads(jsons["docs"].stdout)["documents"]].count(str(deep / "statement.md")) == 1


def test_ingest_exit_codes_and_next_steps(tmp_path: Path, folder: Path) -> None:
    from jsonl_engine.cli_oneshot import next_step

    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4 not really")
    alone = run("ingest", str(broken), kb=tmp_path / "kb")
    assert alone.returncode == 1  # nothing went in
    assert f"cannot read {broken}: broken.pdf is corrupt" in alone.stderr and "Traceback" not in alone.stderr
    some = run("ingest", str(broken), str(folder / "notes.txt"), kb=tmp_path / "kb")
    assert some.returncode == 3 and some.stdout.splitlines()[-1] == "1 added, 0 skipped, 1 failed"
    assert "[ocr] extra" in next_step({"code": "unsupported_media", "reason": "needs_ocr", "message": "x.pdf is "
                                                                                                   "scanned"})
    assert next_step({"code": "unsupported_media", "reason": "needs_ocr", "message": "install Tesseract"}) is None
    assert "viewer" in next_step({"code": "unsupported_media", "reason": "no_text"})
    assert "password" in next_step({"code": "unsupported_media", "reason": "encrypted"})
    assert next_step({"code": "not_found"}) == "check the path"


# ---- one-shot faults (issue 25, item 8) -------------------------------------------------------------------


def test_ingest_refuses_an_empty_path(tmp_path: Path, folder: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "private.txt").write_text("Not for the KB.\n", encoding="utf-8")
    out = cli("ingest", "", "--kb", str(tmp_path / "kb"), cwd=work)
    assert out.returncode == 2 and "PATH is empty" in out.stderr and out.stdout == ""
    assert not (tmp_path / "kb").exists()  # the current folder was not ingested
    mixed = cli("ingest", str(folder / "notes.txt"), "", "--kb", str(tmp_path / "kb"), cwd=work)
    assert mixed.returncode == 2 and not (tmp_path / "kb").exists()


def test_render_into_a_missing_folder_a_full_disk_or_a_directory_is_a_message(tmp_path: Path, sample_pdfs) -> None:
    pytest.importorskip("PIL")
    kb = tmp_path / "kb"
    added = run("ingest", str(sample_pdfs["report"]), "--json", kb=kb)
    document = orjson.loads(added.stdout)["document_id"]
    targets = {str(tmp_path / "missing" / "page.png"): "no folder", str(tmp_path): "it is a directory"}
    if os.path.exists("/dev/full"):
        targets["/dev/full"] = "No space left on device"
    for target, why in targets.items():
        out = run("render", document, "--page", "1", "-o", target, kb=kb)
        assert out.returncode == 1 and out.stdout == "", (target, out.stdout)
        assert out.stderr.splitlines() == [f"jsonl-engine render: cannot write {target}: {why}" +
                                           (f" {os.path.dirname(target)}" if why == "no folder" else "")], out.stderr
    pictures = tmp_path / "a-file"
    pictures.write_text("not a folder")
    ask = run("ask", QUESTION_PDF, "--render", str(pictures), kb=kb)
    assert ask.returncode == 1 and "cannot write pictures into" in ask.stderr and "Traceback" not in ask.stderr


def test_ingest_with_stdout_closed_reports_it_without_a_traceback(tmp_path: Path, folder: Path) -> None:
    kb = tmp_path / "kb"
    out = subprocess.run(["sh", "-c", 'exec "$0" -m jsonl_engine ingest "$1" --kb "$2" >&-', sys.executable,
                          str(folder), str(kb)], capture_output=True, text=True, env=daemon_env(), cwd=ROOT,
                         timeout=120)
    assert out.returncode == 1, out.stderr
    assert "jsonl-engine ingest: cannot write the output (stdout is closed)" in out.stderr
    assert "Traceback" not in out.stderr and "Exception ignored" not in out.stderr
    assert len(orjson.loads(run("docs", "--json", kb=kb).stdout)["documents"]) == 2  # the ingest itself finished


def _descendants(root: int) -> set[int]:
    found, changed = {root}, True
    while changed:
        changed = False
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) in found:
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) in found:
                found.add(int(entry))
                changed = True
    return found - {root}


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_prints_one_line_exits_130_and_leaves_nothing_running(tmp_path: Path) -> None:
    import signal
    import time

    docs = tmp_path / "docs"
    docs.mkdir()
    _pdf(docs / "log.pdf", 150, "log")  # over one batch: extracted in parallel by the pool's workers
    data = (docs / "log.pdf").read_bytes()
    for i in range(8):  # distinct bytes (a comment after %%EOF), the same pages: nothing is skipped
        (docs / f"copy{i}.pdf").write_bytes(data + f"\n% copy {i}\n".encode())
    kb = tmp_path / "kb"
    # Ctrl-C live in the CLI as in a terminal, even when this test runs where SIGINT is ignored (a shell's
    # background job): a process that starts with SIGINT ignored rightly keeps ignoring it
    proc = subprocess.Popen([sys.executable, "-m", "jsonl_engine", "ingest", str(docs), "--kb", str(kb)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=daemon_env(), cwd=ROOT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert proc.stderr is not None
        before = []
        for line in proc.stderr:
            before.append(line)
            if line.startswith("extract "):  # the daemon and its pool are at work
                break
        children = _descendants(proc.pid)
        assert len([pid for pid in children if _running(pid)]) >= 2, before  # the daemon, the forkserver...
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert err.splitlines()[-1] == "jsonl-engine ingest: interrupted" and out == ""
    assert "Traceback" not in err and "KeyboardInterrupt" not in err and "leaked semaphore" not in err, err
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(_running(pid) for pid in children):
        time.sleep(0.05)
    assert not [pid for pid in children if _running(pid)]  # the daemon, its forkserver, workers, tracker
    listed = run("docs", "--json", kb=kb)  # the KB is whole: each document fully in or out
    assert listed.returncode == 0 and all(d["pages"] == 150 for d in orjson.loads(listed.stdout)["documents"])


def test_tables_cut_titles_at_the_end_and_paths_at_the_start() -> None:
    from jsonl_engine.cli_oneshot import fit

    header, row = ["id", "title", "path"], ["a1", "A very long title that goes on and on", "/home/me/reports/2030/q4.pdf"]
    lines = fit(header, [row], shrink={1: "end", 2: "start"}, total=40)
    assert [len(line) for line in lines] == [len(lines[0]), 40] and lines[0].split() == header
    _, title, path = lines[1].split("  ")
    assert title.startswith("A very long") and title.endswith("…") and len(title) == 17
    assert path == "…orts/2030/q4.pdf"  # the end of a path is what tells files apart
    assert fit(header, [row], shrink={1: "end", 2: "start"}, total=200)[1].split("  ") == row  # room: nothing cut


def test_the_daemon_started_from_a_terminal_says_what_it_is(tmp_path: Path) -> None:
    """`jsonl-engine` alone on a terminal waited without a word: it now says on stderr (stdout stays protocol)."""
    master, slave = os.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "jsonl_engine", "--kb", str(tmp_path / "kb")], stdin=slave,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=daemon_env(), cwd=ROOT)
    os.close(slave)
    try:
        assert proc.stdout is not None
        ready = orjson.loads(proc.stdout.readline())
        assert ready["event"] == "ready"
        os.write(master, b"\x04")  # Ctrl-D: end of input
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0 and out == b""
    assert b"the daemon, reading JSON requests on stdin" in err and b"jsonl-engine --help" in err


def test_a_streamed_answer_is_wrapped_as_it_arrives() -> None:
    import textwrap

    from jsonl_engine.cli_oneshot import StreamWrap

    text = ("Revenue rose to $4.2 billion in 2030 [1], while fuel costs at the Quillon ferries fell by twelve "
            "per cent [2]; the pier, 300 metres long, was repaired twice [3].")
    wrap = StreamWrap(40)
    pieces = [text[i:i + 7] for i in range(0, len(text), 7)]  # deltas cut anywhere, mid-word included
    out = "".join(wrap.feed(p) for p in pieces) + wrap.finish()
    assert out == textwrap.fill(text, 40, break_long_words=False, break_on_hyphens=False)
    assert StreamWrap(10).feed("a\nbb cc dd ee") + "" == "a\nbb cc dd"  # "ee" waits for the next space or the end
