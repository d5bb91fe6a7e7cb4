"""The Python client (`jsonl_engine.client.Client`) on a test daemon: the test environment, the test plugin."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from jsonl_engine.client import Client, RequestError
from tests.support.daemon import ROOT, TEST_PLUGIN


def daemon_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """os.environ without JSONL_ENGINE_* settings, with the repository on PYTHONPATH, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JSONL_ENGINE_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra or {})
    return env


def engine(kb_dir: Path | str, *, env: dict[str, str] | None = None, plugins: bool = False,
           timeout: float = 60.0) -> Client:
    """A Client on a daemon serving `kb_dir` (stderr kept in `stderr_text`)."""
    return Client(kb_dir, args=["--plugin", TEST_PLUGIN] if plugins else [], env=daemon_env(env), cwd=ROOT,
                  stderr=subprocess.PIPE, timeout=timeout)


def error_of(client: Client, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """The error a request ends with, as the wire's `error` object (fails the test if it succeeds)."""
    try:
        result = client.call(method, params)
    except RequestError as exc:
        return {"code": exc.code, "message": exc.message, "data": exc.data}
    raise AssertionError(f"{method} {params} succeeded: {result}")
