"""The README's commands as a new user runs them: the quick start's two CI commands (install and run, the test
suite) are the ones `.ci/run` runs, and every shell command of the quick start runs as written (with this
checkout's interpreter for `.venv/bin/...`, the pip steps left to CI), printing what the README shows."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.support.client import daemon_env
from tests.support.daemon import ROOT

VENV_TOOL = ".venv/bin/jsonl-engine"


def _quick_start() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text.split("## Quick start", 1)[1].split("\n## ", 1)[0]


def _blocks(kind: str) -> list[str]:
    return [block.strip() for block in re.findall(rf"```{kind}\n(.*?)```", _quick_start(), flags=re.S)]


def _ci_commands() -> tuple[str, str]:
    blocks = _blocks("sh")
    return blocks[0], next(b for b in blocks if "pytest" in b)


def test_the_quick_start_opens_the_readme_and_ci_runs_its_two_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert re.findall(r"^## (.+)$", text, flags=re.M)[0] == "Quick start"  # the README opens with it
    install, test = _ci_commands()
    assert "\n" not in install and "\n" not in test
    assert install.startswith("python3 -m venv .venv && .venv/bin/pip install -e '.[")
    assert f"{VENV_TOOL} ingest --sample && {VENV_TOOL} ask " in install  # something useful first, not the daemon
    extras = re.search(r"install -e '\.\[([a-z,]+)\]'", install).group(1).split(",")
    if any("--render" in block for block in _blocks("sh")):
        assert "render" in extras  # what the quick start shows is installed by its install command
    assert "progress" in extras  # the bars
    assert "pytest" in test
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert f"\n{install}\n" in ci and f"\n{test}" in ci


def _as_here(command: str) -> str:
    """A README command with this checkout's interpreter for the venv's tool, the install steps dropped."""
    steps = [s for s in command.split(" && ") if "pip install" not in s and "python3 -m venv" not in s]
    return " && ".join(steps).replace(VENV_TOOL, f"{shlex.quote(sys.executable)} -m jsonl_engine")


def test_every_quick_start_command_runs_as_written(tmp_path: Path) -> None:
    pytest.importorskip("PIL")
    home, work = tmp_path / "home", tmp_path / "work"
    reports = home / "Documents" / "reports"
    reports.mkdir(parents=True)
    (reports / "harbour.md").write_text("# Harbour Report 2030\n\nThe harbour dredged 40,000 cubic metres of sand "
                                        "in 2030.\n", encoding="utf-8")
    work.mkdir()
    env = daemon_env({"HOME": str(home)})  # `~/Documents/reports` is the folder above

    def sh(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env, cwd=work, timeout=180)

    blocks = [b for b in _blocks("sh") if "pytest" not in b]
    first = sh(_as_here(blocks[0]))
    assert first.returncode == 0, first.stderr
    assert "creating a new KB at" in first.stderr and (work / ".jsonl-engine" / "kb.sqlite3").exists()
    (shown,) = _blocks("text")
    assert first.stdout.endswith(shown + "\n"), first.stdout  # the answer exactly as the README shows it

    for command in blocks[1].splitlines():
        out = sh(_as_here(command))
        assert out.returncode == 0, (command, out.stderr)
        assert "Traceback" not in out.stderr
        if " ask " in command:
            assert "Repainting the tower cost 48,000 euros in 2031. [1]" in out.stdout
            assert list((work / "pictures").glob("cite1-p*.png")), out.stdout
        if command.endswith(" docs"):
            assert "Harbour Report" in out.stdout and "Tern Point" in out.stdout and "harbour.md" in out.stdout

    daemon = sh(_as_here(blocks[2]))
    events = [orjson.loads(line) for line in daemon.stdout.splitlines()]
    assert daemon.returncode == 0 and [e["event"] for e in events] == ["ready", "result", "done"]
    assert "visitors" in events[1]["data"]["items"][0]["text"]
