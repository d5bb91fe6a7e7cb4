"""Drive the daemon as a real subprocess: write request lines, collect events per request id."""

from __future__ import annotations

import contextlib
import os
import queue
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[2]
TEST_PLUGIN = "tests.support.plugin_methods"


class Daemon:
    """`with Daemon(kb_dir) as d: d.result("capabilities")`.

    Every stdout line is parsed as JSON (a line that is not is recorded in `bad_lines`, which tests check).
    """

    def __init__(self, kb_dir: Path | str | None = None, *, env: dict[str, str] | None = None,
                 args: list[str] | None = None, plugins: bool = False, timeout: float = 60.0,
                 cwd: Path | str | None = None) -> None:
        self.kb_dir = kb_dir
        self.timeout = timeout
        cmd = [sys.executable, "-m", "jsonl_engine"]
        if kb_dir is not None:
            cmd += ["--kb", str(kb_dir)]
        if plugins:
            cmd += ["--plugin", TEST_PLUGIN]
        cmd += list(args or [])
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("JSONL_ENGINE_")}
        full_env["PYTHONPATH"] = str(ROOT) + os.pathsep + full_env.get("PYTHONPATH", "")
        full_env.update(env or {})
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=full_env, cwd=cwd or ROOT)
        self.lines: list[dict[str, Any]] = []
        self.bad_lines: list[bytes] = []
        self.by_id: dict[Any, list[dict[str, Any]]] = defaultdict(list)
        self._events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._cond = threading.Condition()
        self.stderr_chunks: list[bytes] = []
        self._next_id = 0
        self._readers = [threading.Thread(target=self._read_stdout, daemon=True),
                         threading.Thread(target=self._read_stderr, daemon=True)]
        for reader in self._readers:
            reader.start()
        self.ready = self.next_event(timeout)
        assert self.ready.get("event") == "ready", self.ready

    # ---- reading ------------------------------------------------------------------------------------------

    def _read_stdout(self) -> None:
        for raw in self.proc.stdout:
            try:
                event = orjson.loads(raw)
            except orjson.JSONDecodeError:
                self.bad_lines.append(raw)
                continue
            if not isinstance(event, dict) or "event" not in event or "id" not in event:
                self.bad_lines.append(raw)
                continue
            with self._cond:
                self.lines.append(event)
                if event["event"] != "ready":
                    self.by_id[_key(event["id"])].append(event)
                self._cond.notify_all()
            self._events.put(event)
        self._events.put(None)
        with self._cond:
            self._cond.notify_all()

    def _read_stderr(self) -> None:
        for raw in self.proc.stderr:
            self.stderr_chunks.append(raw)

    @property
    def stderr(self) -> str:
        return b"".join(self.stderr_chunks).decode("utf-8", "replace")

    def next_event(self, timeout: float | None = None) -> dict[str, Any]:
        event = self._events.get(timeout=timeout or self.timeout)
        if event is None:
            raise EOFError("daemon closed stdout")
        return event

    def events_for(self, request_id: Any) -> list[dict[str, Any]]:
        with self._cond:
            return list(self.by_id.get(_key(request_id), []))

    def wait_done(self, request_id: Any, timeout: float | None = None) -> list[dict[str, Any]]:
        deadline = time.monotonic() + (timeout or self.timeout)
        key = _key(request_id)
        with self._cond:
            while True:
                events = self.by_id.get(key, [])
                if any(e["event"] == "done" for e in events):
                    return list(events)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"no done for {request_id!r}; got {events}\nstderr:\n{self.stderr[-3000:]}")
                if self.proc.poll() is not None and self._events.empty():
                    raise EOFError(f"daemon exited ({self.proc.returncode}) before done for {request_id!r}:"
                                   f"\n{self.stderr[-3000:]}")
                self._cond.wait(min(remaining, 0.2))

    def wait_event(self, request_id: Any, kind: str, timeout: float | None = None) -> dict[str, Any]:
        deadline = time.monotonic() + (timeout or self.timeout)
        with self._cond:
            while True:
                for event in self.by_id.get(_key(request_id), []):
                    if event["event"] == kind:
                        return event
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no {kind} event for {request_id!r}")
                self._cond.wait(0.1)

    # ---- writing ------------------------------------------------------------------------------------------

    def new_id(self) -> str:
        self._next_id += 1
        return f"t{self._next_id}"

    def send(self, obj: Any) -> None:
        data = obj if isinstance(obj, bytes) else orjson.dumps(obj) + b"\n"
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def start(self, method: str, params: dict[str, Any] | None = None, id: Any = None) -> Any:
        request_id = self.new_id() if id is None else id
        request: dict[str, Any] = {"id": request_id, "method": method}
        if params is not None:
            request["params"] = params
        self.send(request)
        return request_id

    def request(self, method: str, params: dict[str, Any] | None = None, id: Any = None,
                timeout: float | None = None) -> list[dict[str, Any]]:
        return self.wait_done(self.start(method, params, id), timeout)

    def result(self, method: str, params: dict[str, Any] | None = None, timeout: float | None = None
               ) -> dict[str, Any]:
        events = self.request(method, params, timeout=timeout)
        results = [e for e in events if e["event"] == "result"]
        assert events[-1]["status"] == "ok" and len(results) == 1, events
        return results[0]["data"]

    def error(self, method: str, params: dict[str, Any] | None = None, timeout: float | None = None
              ) -> dict[str, Any]:
        events = self.request(method, params, timeout=timeout)
        errors = [e for e in events if e["event"] == "error"]
        assert len(errors) == 1 and events[-1]["status"] in ("error", "cancelled"), events
        return errors[0]["error"]

    def close_stdin(self) -> None:
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.close()

    def close(self, timeout: float = 10.0) -> int:
        self.close_stdin()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    def __enter__(self) -> Daemon:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.close()
        if self.proc.poll() is not None:
            for reader in self._readers:  # they end at EOF; closing their pipes under them races
                reader.join(timeout=5)
        for stream in (self.proc.stdout, self.proc.stderr):
            with contextlib.suppress(OSError):
                stream.close()


def _key(request_id: Any) -> tuple[bool, Any]:
    return (isinstance(request_id, str), request_id)
