"""The README's two set-up commands are the ones CI runs."""

from __future__ import annotations

import re

from tests.support.daemon import ROOT


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Set up on a fresh machine", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", section, flags=re.S)]


def test_readme_has_exactly_two_setup_commands_and_ci_runs_them() -> None:
    commands = _readme_commands()
    assert len(commands) == 2 and all("\n" not in c for c in commands), commands
    install, test = commands
    assert "pip install" in install and "jsonl-engine" in install
    assert "pytest" in test
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert f"{install} < /dev/null" in ci
    assert test in ci
