"""Every request ends: exactly one `done`, last, whatever the timing of a cancel, the values in a line or the
lines around it; and the daemon exits 0 at EOF. The daemon runs as a real subprocess."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from jsonl_engine.wire.envelope import AnyEvent
from tests.support.daemon import ROOT, Daemon

EVENT = TypeAdapter(AnyEvent)
EXIT_TIMEOUT_S = 10  # a hang guard, not a measurement: the daemon exits at EOF in well under a second


def run_daemon(kb: Path, stdin: bytes, *, cwd: Path | None = None) -> tuple[list[dict[str, Any]], int, str]:
    """Feed `stdin` in one write, close it, and return (events, exit code, stderr)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JSONL_ENGINE_")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, "-m", "jsonl_engine", "--kb", str(kb)], input=stdin,
                          capture_output=True, env=env, cwd=cwd or ROOT, timeout=EXIT_TIMEOUT_S)
    events = [orjson.loads(line) for line in proc.stdout.splitlines()]
    for event in events:
        EVENT.validate_python(event)
    return events, proc.returncode, proc.stderr.decode("utf-8", "replace")


def by_id(events: list[dict[str, Any]]) -> dict[tuple[bool, Any], list[dict[str, Any]]]:
    grouped: dict[tuple[bool, Any], list[dict[str, Any]]] = {}
    for event in events:
        if event["event"] != "ready":
            grouped.setdefault((type(event["id"]) is str, event["id"]), []).append(event)
    return grouped


def assert_one_done_last(events: list[dict[str, Any]]) -> None:
    kinds = [e["event"] for e in events]
    assert kinds.count("done") == 1 and kinds[-1] == "done", kinds


# ---- cancel timing -----------------------------------------------------------------------------------------

def _request(request_id: str, method: str, params: dict[str, Any] | None = None) -> bytes:
    body: dict[str, Any] = {"id": request_id, "method": method}
    if params is not None:
        body["params"] = params
    return orjson.dumps(body) + b"\n"


def _assert_cancel_outcome(events: list[dict[str, Any]], cancel_events: list[dict[str, Any]]) -> None:
    assert_one_done_last(events)
    assert_one_done_last(cancel_events)
    cancelled = [e for e in cancel_events if e["event"] == "result"][0]["data"]["cancelled"]
    if cancelled:
        assert events[-1]["status"] == "cancelled", events
        assert [e["error"]["code"] for e in events if e["event"] == "error"] == ["cancelled"]
    else:
        assert events[-1]["status"] == "ok", events


def test_a_cancel_in_the_same_write_as_its_target_ends_the_target(tmp_path: Path) -> None:
    """The reported repro: both lines in one write, the target not yet started."""
    stdin = b"".join(_request(f"a{i}", "kb.documents") + _request(f"c{i}", "cancel", {"target": f"a{i}"})
                     for i in range(100))
    events, code, stderr = run_daemon(tmp_path / "kb", stdin)
    assert code == 0, stderr
    grouped = by_id(events)
    for i in range(100):
        _assert_cancel_outcome(grouped[(True, f"a{i}")], grouped[(True, f"c{i}")])
    assert sum(grouped[(True, f"a{i}")][-1]["status"] == "cancelled" for i in range(100)) == 100


@pytest.mark.parametrize("gap_s", [0.0, 0.001], ids=["back-to-back", "1ms-apart"])
def test_a_cancel_at_any_moment_ends_its_target_once(tmp_path: Path, gap_s: float) -> None:
    with Daemon(tmp_path / "kb") as daemon:
        for i in range(100):
            daemon.send(_request(f"a{i}", "kb.documents"))
            if gap_s:
                time.sleep(gap_s)
            daemon.send(_request(f"c{i}", "cancel", {"target": f"a{i}"}))
        for i in range(100):
            _assert_cancel_outcome(daemon.wait_done(f"a{i}"), daemon.wait_done(f"c{i}"))
        assert daemon.result("shutdown")["ok"] is True
        assert daemon.proc.wait(EXIT_TIMEOUT_S) == 0
        assert daemon.bad_lines == []


# ---- a thread stuck in cancelled work does not hold the daemon ------------------------------------------------

def test_eof_after_cancelling_a_stuck_thread_exits(tmp_path: Path) -> None:
    with Daemon(tmp_path / "kb", plugins=True) as daemon:
        daemon.start("test.stuck", {"seconds": 120}, id="stuck")
        daemon.wait_event("stuck", "progress")  # in flight: its thread is about to block
        assert daemon.result("cancel", {"target": "stuck"}) == {"cancelled": True}
        assert daemon.wait_done("stuck")[-1]["status"] == "cancelled"
        assert daemon.close(timeout=EXIT_TIMEOUT_S) == 0


def test_sigterm_with_a_stuck_thread_exits(tmp_path: Path) -> None:
    with Daemon(tmp_path / "kb", plugins=True) as daemon:
        daemon.start("test.stuck", {"seconds": 120}, id="stuck")
        daemon.wait_event("stuck", "progress")
        daemon.proc.send_signal(signal.SIGTERM)
        assert daemon.proc.wait(EXIT_TIMEOUT_S) == 0
        assert daemon.wait_done("stuck")[-1]["status"] == "cancelled"


# ---- values no event can carry ------------------------------------------------------------------------------

def test_an_id_beyond_64_bits_is_refused_under_id_null(tmp_path: Path) -> None:
    big = str(1 << 70).encode()
    # The lone surrogate sends the line through the stdlib parser, which keeps the big integer exact.
    stdin = (b'{"id": ' + big + b', "method": "capabilities", "params": {}, "x": "\\ud800"}\n'
             b'{"id": 2, "method": "capabilities"}\n')
    events, code, stderr = run_daemon(tmp_path / "kb", stdin)
    assert code == 0, stderr
    grouped = by_id(events)
    assert [e["error"]["code"] for e in grouped[(False, None)] if e["event"] == "error"] == ["invalid_request"]
    assert grouped[(False, 2)][-1]["status"] == "ok"


def test_deep_nesting_with_an_escape_is_a_parse_error(tmp_path: Path) -> None:
    line = b'{"id": 1, "method": "capabilities", "params": {"x": ' + b"[" * 5000 + b'"\\u00e9"' + b"]" * 5000 + b"}}\n"
    events, code, stderr = run_daemon(tmp_path / "kb", line)
    assert code == 0, stderr
    errors = [e["error"]["code"] for e in events if e["event"] == "error"]
    assert errors == ["parse_error"]


# ---- the fuzz: generated hostile lines mixed with valid requests ----------------------------------------------

METHODS = ["capabilities", "kb.documents", "kb.outline", "kb.read", "kb.remove", "kb.review", "kb.context",
           "kb.synthesize", "kb.answer", "kb.ingest", "cancel", "shutdown", "no.such.method", ""]
PARAM_NAMES = ["query", "limit", "max_chars", "max_tokens", "document_id", "document_ids", "statuses", "page",
               "section_id", "status", "strategy", "include_text", "target", "max_depth", "reader", "llm",
               "text", "title", "media_type", "unknown_key"]

json_scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-(1 << 70), max_value=1 << 70),
    st.sampled_from([0, -1, 1 << 62, 1 << 63, (1 << 64) - 1, 2 ** 53 + 1]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    st.sampled_from(["", " ", "approved", "draft", "lexical", "agentic", "a\ud800b", "\x00"]),
    st.integers(1000, 20000).map(lambda n: "x" * n),
)
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)), max_leaves=12)

# ids the daemon must answer under (strings and 64-bit integers); each is used once, so "exactly one done"
# holds per id. Unusable ids (floats, bools, objects, absent) are answered under id null.
unusable_ids = st.one_of(st.none(), st.booleans(), st.floats(allow_nan=False, allow_infinity=False),
                         st.lists(st.integers(), max_size=2), st.just({"a": 1}))


@st.composite
def request_lines(draw, serial: int, ingest_paths: list[str]) -> tuple[bytes, Any]:
    """One line and the usable id it carries (None when it has none)."""
    kind = draw(st.sampled_from(["valid", "valid", "hostile", "hostile", "hostile", "garbage"]))
    if kind == "garbage":
        line = draw(st.one_of(st.binary(max_size=80),
                              st.sampled_from([b"{", b"[]", b"null", b'{"id": NaN}', b"\xff\xfe", b'"x"',
                                               b'{"id":1,"method":"capabilities"' + b" " * 10])))
        return line.replace(b"\n", b" ") + b"\n", None
    request_id: Any = draw(st.sampled_from([f"r{serial}", serial]))
    usable = True
    if kind == "hostile" and draw(st.integers(0, 3)) == 0:
        request_id, usable = draw(unusable_ids), False
    method = draw(st.sampled_from(METHODS))
    if kind == "valid":
        method, params = draw(st.sampled_from([
            ("capabilities", {}), ("kb.documents", {}), ("kb.context", {"query": "revenue growth"}),
            ("kb.synthesize", {"query": "what was revenue?"}), ("kb.ingest", {"paths": ingest_paths}),
            ("cancel", {"target": f"r{max(serial - 1, 0)}"}), ("kb.read", {"document_id": "nope", "page": 1}),
        ]))
    else:
        params = draw(st.dictionaries(st.sampled_from(PARAM_NAMES), json_values, max_size=4))
        if method == "kb.ingest":
            params["paths"] = draw(st.lists(st.sampled_from([*ingest_paths, "", "missing.txt"]), max_size=3))
    body: Any = {"id": request_id, "method": method, "params": params}
    if kind == "hostile":
        if draw(st.integers(0, 3)) == 0:
            body["params"] = draw(json_values)  # params of any type
        if draw(st.integers(0, 9)) == 0:
            body = draw(json_values)  # not even an object
            usable = False
    line = orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS, default=str) if _dumpable(body) else b"{}"
    return line + b"\n", request_id if usable and _dumpable(body) else None


def _dumpable(body: Any) -> bool:
    try:
        orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return False
    return True


def _is_shutdown(request: dict[str, Any]) -> bool:
    return request.get("method") == "shutdown" and request.get("params") in (None, {})


FUZZ_EXAMPLES = int(os.environ.get("JSONL_ENGINE_FUZZ_EXAMPLES", "10"))  # a daemon each: the long run on demand (200)
LINES_PER_EXAMPLE = 60  # more lines than this overrun what hypothesis draws for one example


# No shrinking: each step of it reruns a daemon; a failure reports the example as generated.
@pytest.mark.timeout(600)
@settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=True,
          phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzzed_lines_each_usable_id_gets_one_done_and_the_daemon_exits(tmp_path: Path, data: st.DataObject
                                                                        ) -> None:
    """Valid requests, hostile envelopes and values, garbage bytes; every stdout line is a valid event,
    every usable id gets exactly one `done`, last, and the daemon exits 0 at EOF."""
    run_dir = Path(tmp_path) / f"run{time.monotonic_ns()}"
    docs = run_dir / "docs"
    docs.mkdir(parents=True)
    (docs / "notes.txt").write_text("Revenue grew 12% in 2022.\n\nCosts fell.\n", encoding="utf-8")
    ingest_paths = [str(docs / "notes.txt"), str(docs)]
    lines: list[bytes] = []
    usable: list[Any] = []
    after_shutdown: set[tuple[bool, Any]] = set()  # usable ids sent after a valid shutdown request
    for serial in range(LINES_PER_EXAMPLE):
        line, request_id = data.draw(request_lines(serial, ingest_paths))
        lines.append(line)
        if request_id is None or orjson.loads(line).get("id") != request_id:
            continue
        key = (type(request_id) is str, request_id)
        if after_shutdown or _is_shutdown(orjson.loads(line)):
            after_shutdown.add(key)
        usable.append(request_id)
    events, code, stderr = run_daemon(run_dir / "kb", b"".join(lines), cwd=docs)
    assert code == 0, stderr[-2000:]
    grouped = by_id(events)
    for request_id in usable:
        key = (type(request_id) is str, request_id)
        if key in after_shutdown and key not in grouped:
            continue  # the daemon may exit before it reads the lines that follow a shutdown
        assert_one_done_last(grouped[key])
    for key, group in grouped.items():
        if key != (False, None):
            assert_one_done_last(group)
    internal = [e for e in events if e["event"] == "error" and e["error"]["code"] == "internal"]
    assert internal == [], internal[:3]  # hostile input is the client's error, never the daemon's bug
