"""The wire contract, with the daemon as a real subprocess."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from tests.support.daemon import ROOT, Daemon


@pytest.fixture
def daemon(tmp_path: Path):
    with Daemon(tmp_path / "kb", plugins=True) as d:
        yield d
        assert d.bad_lines == []


def assert_well_formed(d: Daemon) -> None:
    """Every line parsed; per id exactly one done, last; results xor one error before it."""
    assert d.bad_lines == []
    for key, events in d.by_id.items():
        if key == (False, None):
            continue
        kinds = [e["event"] for e in events]
        assert kinds.count("done") == 1 and kinds[-1] == "done", (key, kinds)
        body = kinds[:-1]
        errors = body.count("error")
        results = body.count("result")
        assert (errors == 1 and results == 0) or (errors == 0 and results >= 1), (key, kinds)
        assert all(k in ("progress", "delta") for k in body[: len(body) - max(errors, results)]), kinds


def test_ready_then_capabilities_lists_exactly_the_registered_methods(daemon: Daemon) -> None:
    assert daemon.ready["data"]["protocol"] == 1
    caps = daemon.result("capabilities")
    names = [m["name"] for m in caps["methods"]]
    assert names == sorted(names)
    assert {"capabilities", "cancel", "shutdown", "test.sleep", "test.noisy"} <= set(names)
    for m in caps["methods"]:
        assert m["params_schema"] == f"{m['name']}.params.json"
        assert "result" in m["events"]
    assert "lexical" in caps["strategies"]
    assert_well_formed(daemon)


def test_output_written_to_fd1_by_a_handler_never_reaches_the_protocol(daemon: Daemon) -> None:
    assert daemon.result("test.noisy", {"text": "STRAY"}) == {"value": "STRAY"}
    assert daemon.result("capabilities")["name"] == "jsonl-engine"
    assert daemon.bad_lines == []
    time.sleep(0.2)
    assert daemon.stderr.count("STRAY") >= 3
    assert_well_formed(daemon)


MALFORMED = [
    (b"this is not json\n", "parse_error", None),
    (b'{"id": 1, "method": "capabilities", "params": {}\xff\xfe}\n', "parse_error", None),
    (b'[1, 2, 3]\n', "invalid_request", None),
    (b'{"id": "m1"}\n', "invalid_request", "m1"),
    (b'{"id": "m2", "method": "capabilities", "params": [1]}\n', "invalid_request", "m2"),
    (b'{"id": "m3", "method": "no.such.method"}\n', "method_not_found", "m3"),
    (b'{"id": "m4", "method": "test.sleep", "params": {"seconds": "soon"}}\n', "invalid_params", "m4"),
    (b'{"id": "m5", "method": "capabilities", "params": {"bogus": true}}\n', "invalid_params", "m5"),
    (b'{"id": 1.5, "method": "capabilities"}\n', "invalid_request", None),
    (b'{"method": "capabilities"}\n', "invalid_request", None),
    (b'{"id": true, "method": "capabilities"}\n', "invalid_request", None),
    (b'{"id": 1, "method": "capabilities", "params": {"x": NaN}}\n', "parse_error", None),
    # Valid JSON with a number no request value can be: the id is readable, so it gets the answer (issue 25).
    (b'{"id": "n1", "method": "capabilities", "params": {"x": 1e999}}\n', "invalid_params", "n1"),
    (b'{"id": "n2", "method": "test.sleep", "params": {"seconds": -1e999}}\n', "invalid_params", "n2"),
    (b'{"id": "n3", "method": "capabilities", "params": {"x": [' + b"7" * 5000 + b']}}\n', "invalid_params", "n3"),
    (b'{"id": "n4", "method": "capabilities", "params": {"x": "\\ud800", "y": 1e400}}\n', "invalid_params", "n4"),
    (b'{"id": 1e999, "method": "capabilities"}\n', "invalid_request", None),
]


@pytest.mark.parametrize(("line", "code", "echo_id"), MALFORMED)
def test_malformed_input_gets_its_code_and_the_daemon_keeps_serving(daemon: Daemon, line, code, echo_id):
    daemon.send(line)
    events = daemon.wait_done(echo_id)
    assert [e["event"] for e in events] == ["error", "done"]
    assert events[0]["error"]["code"] == code
    assert "Traceback" not in events[0]["error"]["message"]
    assert daemon.result("capabilities")["name"] == "jsonl-engine"
    assert_well_formed(daemon)


def test_invalid_params_names_the_field_not_validator_text(daemon: Daemon) -> None:
    err = daemon.error("test.sleep", {"seconds": -1})
    assert err["code"] == "invalid_params"
    assert err["data"]["field"] == "seconds"
    assert "pydantic" not in err["message"] and "greater_than" not in err["message"]
    err = daemon.error("test.sleep", {})
    assert err["data"]["fields"] == ["seconds"]


def test_over_long_line_is_rejected_and_reading_resyncs(tmp_path: Path) -> None:
    with Daemon(tmp_path / "kb", env={"JSONL_ENGINE_MAX_LINE_BYTES": "4096"}) as d:
        d.send(b'{"id": "big", "method": "capabilities", "pad": "' + b"x" * 10_000 + b'"}\n')
        events = d.wait_done(None)
        assert events[0]["error"]["code"] == "payload_too_large"
        assert d.result("capabilities")["name"] == "jsonl-engine"
        assert_well_formed(d)


def test_the_cr_of_a_crlf_line_end_does_not_count_against_the_limit(tmp_path: Path) -> None:
    limit = 4096
    with Daemon(tmp_path / "kb", env={"JSONL_ENGINE_MAX_LINE_BYTES": str(limit)}) as d:
        def line(request_id: str, size: int) -> bytes:
            head = b'{"id": "' + request_id.encode() + b'", "method": "capabilities", "params": {}}'
            return head + b" " * (size - len(head))  # JSON allows trailing whitespace

        d.send(line("lf", limit) + b"\n")
        d.send(line("crlf", limit) + b"\r\n")
        d.proc.stdin.write(line("split", limit) + b"\r")  # the CR and LF in separate writes
        d.proc.stdin.flush()
        d.send(b"\n")
        for request_id in ("lf", "crlf", "split"):
            assert d.wait_done(request_id)[-1]["status"] == "ok", request_id
        d.send(line("over", limit + 1) + b"\r\n")  # one byte over, CR not counted: still over
        assert d.wait_done(None)[0]["error"]["code"] == "payload_too_large"
        assert not d.events_for("over")
        assert_well_formed(d)


def test_ten_mib_request_is_handled_cleanly(daemon: Daemon) -> None:
    text = "é" * (5 * 1024 * 1024)  # 10 MiB of UTF-8
    request_id = daemon.start("test.echo", {"text": text})
    events = daemon.wait_done(request_id)
    assert events[-1]["status"] == "ok"
    assert [e for e in events if e["event"] == "result"][0]["data"]["value"] == text
    assert_well_formed(daemon)


def test_crlf_input_and_id_types_echoed_unchanged(daemon: Daemon) -> None:
    daemon.send(b'{"id": 7, "method": "capabilities"}\r\n')
    daemon.send(b'{"id": "7", "method": "capabilities"}\r\n')
    daemon.send(b'{"id": 0, "method": "capabilities"}\n')
    for request_id in (7, "7", 0):
        events = daemon.wait_done(request_id)
        assert all(type(e["id"]) is type(request_id) and e["id"] == request_id for e in events)
        assert events[-1]["status"] == "ok"


def test_unicode_round_trip(daemon: Daemon) -> None:
    for text in ["emoji 😀🚀", "中文字符 日本語 한국어", "mixed ünïcödé \u2028 line sep", "tab\tand\nnewline"]:
        assert daemon.result("test.echo", {"text": text}) == {"value": text}
    daemon.send(b'{"id": "sur", "method": "test.echo", "params": {"text": "a\\ud800b"}}\n')
    events = daemon.wait_done("sur")
    assert events[-1]["status"] == "ok"
    assert [e for e in events if e["event"] == "result"][0]["data"]["value"] == "a\ufffdb"
    raw = b"".join(orjson.dumps(e) for e in daemon.lines)
    assert b"\r" not in raw
    assert_well_formed(daemon)


def test_duplicate_in_flight_id_is_answered_under_id_null(daemon: Daemon) -> None:
    """The duplicate is refused under id null, so the request in flight keeps exactly one `done`."""
    daemon.start("test.sleep", {"seconds": 0.5}, id="dup")
    daemon.start("test.sleep", {"seconds": 0}, id="dup")
    refused = daemon.wait_done(None)
    assert refused[0]["error"]["code"] == "invalid_request"
    assert refused[0]["error"]["data"] == {"field": "id", "id": "dup"}
    assert [e["event"] for e in daemon.wait_done("dup")] == ["result", "done"]


def test_capabilities_answers_while_slow_requests_are_in_flight(daemon: Daemon) -> None:
    slow = daemon.start("test.sleep", {"seconds": 3})
    blocking = daemon.start("test.block", {"seconds": 3})
    assert daemon.result("capabilities")["name"] == "jsonl-engine"
    assert not daemon.events_for(slow) and not daemon.events_for(blocking)  # answered before either finished
    daemon.result("cancel", {"target": slow})
    daemon.result("cancel", {"target": blocking})
    daemon.wait_done(slow)
    daemon.wait_done(blocking)
    assert_well_formed(daemon)


def test_cancel_running_and_unknown(daemon: Daemon) -> None:
    running = daemon.start("test.sleep", {"seconds": 30, "ticks": 300})
    daemon.wait_event(running, "progress")
    assert daemon.result("cancel", {"target": running}) == {"cancelled": True}
    events = daemon.wait_done(running)
    assert events[-1]["status"] == "cancelled"
    assert events[-2]["error"]["code"] == "cancelled"
    time.sleep(0.3)
    assert daemon.events_for(running)[-1]["event"] == "done"  # nothing after done
    assert daemon.result("cancel", {"target": "never-sent"}) == {"cancelled": False}
    assert daemon.result("cancel", {"target": running}) == {"cancelled": False}
    assert_well_formed(daemon)


def test_cancel_of_a_thread_handler_sends_nothing_after_done(daemon: Daemon) -> None:
    running = daemon.start("test.block", {"seconds": 30})
    time.sleep(0.2)
    assert daemon.result("cancel", {"target": running}) == {"cancelled": True}
    assert daemon.wait_done(running)[-1]["status"] == "cancelled"
    time.sleep(0.3)
    assert daemon.events_for(running)[-1]["event"] == "done"


def test_internal_error_keeps_serving_and_hides_the_traceback(daemon: Daemon) -> None:
    err = daemon.error("test.crash", {})
    assert err["code"] == "internal" and "Traceback" not in err["message"]
    assert daemon.error("test.missing", {"text": "x"})["code"] == "not_found"
    assert daemon.result("capabilities")["name"] == "jsonl-engine"
    time.sleep(0.2)
    assert "ZeroDivisionError" in daemon.stderr


def test_overloaded_when_too_many_requests_are_in_flight(tmp_path: Path) -> None:
    with Daemon(tmp_path / "kb", plugins=True, env={"JSONL_ENGINE_MAX_IN_FLIGHT": "2"}) as d:
        a = d.start("test.sleep", {"seconds": 1})
        b = d.start("test.sleep", {"seconds": 1})
        assert d.error("test.sleep", {"seconds": 0})["code"] == "overloaded"
        d.wait_done(a)
        d.wait_done(b)
        assert d.result("capabilities")["name"] == "jsonl-engine"


def test_shutdown_finishes_in_flight_work_then_exits_zero(daemon: Daemon) -> None:
    slow = daemon.start("test.sleep", {"seconds": 0.5})
    stop = daemon.start("shutdown")
    late = daemon.start("capabilities")
    assert daemon.wait_done(late)[0]["error"]["code"] == "shutting_down"
    assert daemon.wait_done(slow)[-1]["status"] == "ok"
    stop_events = daemon.wait_done(stop)
    assert stop_events[0]["data"]["ok"] is True
    assert daemon.proc.wait(5) == 0
    order = [(e["id"], e["event"]) for e in daemon.lines]
    assert order.index((slow, "done")) < order.index((stop, "done"))
    assert order[-1] == (stop, "done")


def test_eof_drains_in_flight_requests_then_exits_zero(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "jsonl_engine", "--kb", str(tmp_path / "kb"), "--plugin",
         "tests.support.plugin_methods"],
        input=b'{"id": 1, "method": "test.sleep", "params": {"seconds": 0.5}}\n'
              b'{"id": 2, "method": "capabilities"}\n',
        capture_output=True, cwd=ROOT, timeout=30, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0
    events = [orjson.loads(line) for line in proc.stdout.splitlines()]
    assert events[0]["event"] == "ready"
    assert [(e["id"], e["event"]) for e in events if e["id"] == 1] == [(1, "result"), (1, "done")]
    assert events[-1]["event"] == "done"


def test_sigterm_cancels_in_flight_work_and_exits_within_two_seconds(daemon: Daemon) -> None:
    a = daemon.start("test.sleep", {"seconds": 60})
    b = daemon.start("test.block", {"seconds": 60})
    time.sleep(0.3)
    t0 = time.monotonic()
    daemon.proc.send_signal(signal.SIGTERM)
    code = daemon.proc.wait(5)
    elapsed = time.monotonic() - t0
    assert code == 0 and elapsed < 2.0, elapsed
    time.sleep(0.1)
    for request_id in (a, b):
        done = daemon.events_for(request_id)[-1]
        assert done["event"] == "done" and done["status"] == "cancelled", done
    assert_well_formed(daemon)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return not any(line.startswith("State:") and "Z" in line for line in fh)
    except FileNotFoundError:
        return False


PARENT_SCRIPT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-m", "jsonl_engine", "--kb", sys.argv[1]],
                         stdin=int(sys.argv[2]), pass_fds=(int(sys.argv[2]),))
print(child.pid, flush=True)
time.sleep(600)
"""
DEATH_SIGNAL_BIT = 1 << (signal.SIGUSR1 - 1)  # in /proc/<pid>/status SigCgt once the daemon caught its parent's death
PARENT_DEADLINE_S = 30.0  # generous: a loaded 2-core machine; the outcome is awaited, never a fixed sleep


def _armed(pid: int) -> bool:
    """Whether the daemon runs its own code: it has recorded its parent and catches the signal of its death."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            caught = next(line for line in fh if line.startswith("SigCgt:"))
    except (FileNotFoundError, StopIteration):
        return False
    return bool(int(caught.split()[1], 16) & DEATH_SIGNAL_BIT)


def _wait(condition, deadline_s: float = PARENT_DEADLINE_S) -> bool:
    deadline = time.monotonic() + deadline_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@contextlib.contextmanager
def _parent_of_a_daemon(tmp_path: Path, script: str):
    """A parent process running `script`, which spawns the daemon and prints its pid; yields (parent, daemon pid,
    the write end of the daemon's stdin). The daemon's stdout is the parent's (readable as `parent.stdout`); its
    stdin is a pipe whose write end this test keeps open, so only the parent watch can end the daemon."""
    read_fd, write_fd = os.pipe()
    parent = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "kb"), str(read_fd)],
                              stdout=subprocess.PIPE, pass_fds=(read_fd,), cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    os.close(read_fd)
    daemon_pid = None
    try:
        daemon_pid = int(parent.stdout.readline())
        yield parent, daemon_pid, write_fd
    finally:
        os.close(write_fd)
        parent.kill()
        parent.wait()
        parent.stdout.close()
        if daemon_pid is not None and _alive(daemon_pid):
            os.kill(daemon_pid, signal.SIGKILL)


def _kill_parent(tmp_path: Path, delay_s: float | None) -> tuple[bool, float]:
    """Start a parent that spawns the daemon, kill the parent `delay_s` after the daemon started running its own
    code (None: once it is ready), and return whether the daemon exited, and how long after the kill."""
    with _parent_of_a_daemon(tmp_path, PARENT_SCRIPT) as (parent, daemon_pid, _stdin):
        if delay_s is None:
            assert orjson.loads(parent.stdout.readline())["event"] == "ready"
        else:
            assert _wait(lambda: _armed(daemon_pid) or not _alive(daemon_pid)), "the daemon never started"
            time.sleep(delay_s)  # the random moment of start-up under test, not a wait for an outcome
        parent.kill()
        parent.wait()
        killed = time.monotonic()
        gone = _wait(lambda: not _alive(daemon_pid))
        return gone, time.monotonic() - killed


def test_daemon_exits_when_its_parent_is_killed(tmp_path: Path) -> None:
    gone, _after = _kill_parent(tmp_path, None)
    assert gone


THREAD_PARENT_SCRIPT = """
import signal, subprocess, sys, threading, time
spawned = []

def spawn():  # spawn the daemon, wait until it catches the parent-death signal, then end this thread
    child = subprocess.Popen([sys.executable, "-m", "jsonl_engine", "--kb", sys.argv[1]], stdin=int(sys.argv[2]),
                             pass_fds=(int(sys.argv[2]),))
    spawned.append(child)
    bit = 1 << (signal.SIGUSR1 - 1)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with open(f"/proc/{child.pid}/status") as fh:
            if int(next(l for l in fh if l.startswith("SigCgt:")).split()[1], 16) & bit:
                return
        time.sleep(0.01)

thread = threading.Thread(target=spawn)
thread.start()
thread.join()
print(spawned[0].pid, flush=True)
time.sleep(600)
"""


def test_the_thread_that_spawned_the_daemon_ending_does_not_end_it(tmp_path: Path) -> None:
    # Linux sends the parent-death signal when the spawning *thread* ends: the daemon checks its parent first.
    with _parent_of_a_daemon(tmp_path, THREAD_PARENT_SCRIPT) as (parent, daemon_pid, stdin):
        assert orjson.loads(parent.stdout.readline())["event"] == "ready"
        os.write(stdin, b'{"id": "after", "method": "capabilities"}\n')
        events = [orjson.loads(parent.stdout.readline()) for _ in range(2)]
        assert [(e["id"], e["event"]) for e in events] == [("after", "result"), ("after", "done")]
        parent.kill()
        parent.wait()
        assert _wait(lambda: not _alive(daemon_pid))


def test_daemon_exits_when_its_parent_is_killed_during_start_up(tmp_path: Path) -> None:
    # Issue 25: the parent was recorded only once the server ran, so a parent killed during the start-up left an
    # orphan (60 of 60 killed 0-300 ms after the spawn). Moments drawn at random, many times.
    rng = random.Random()
    delays = [rng.uniform(0.0, 0.3) for _ in range(8)]
    outcomes = [(delay, *_kill_parent(tmp_path, delay)) for delay in delays]
    assert [o for o in outcomes if not o[1]] == [], outcomes


def test_broken_stdout_pipe_ends_the_daemon_quietly(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "jsonl_engine", "--kb", str(tmp_path / "kb")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    proc.stdout.readline()
    proc.stdout.close()
    for _ in range(50):
        try:
            proc.stdin.write(b'{"id": 1, "method": "capabilities"}\n' * 100)
            proc.stdin.flush()
        except BrokenPipeError:
            break
        time.sleep(0.02)
    assert proc.wait(5) == 0
    assert b"Traceback" not in proc.stderr.read()
