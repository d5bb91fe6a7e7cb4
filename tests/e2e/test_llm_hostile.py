"""Hostile LLM endpoints through the daemon subprocess: whatever an upstream error body echoes, the daemon's
output never carries the API key (in any case) nor an unbounded piece of the body."""

from __future__ import annotations

import orjson

from jsonl_engine.ingest.sync import ingest_text
from jsonl_engine.llm.gateway import MAX_DETAIL_CHARS
from jsonl_engine.store import open_store
from tests.support.answer_script import AnswerScript
from tests.support.daemon import Daemon
from tests.support.gateway import API_KEY, Reply, error

ARGS = ["--plugin", "tests.support.llm_methods", "--log-level", "INFO"]  # INFO: the retry log lines too
SHOUTED_KEY = API_KEY.upper()
HUGE = "z" * 1_000_000


def leaks_key(text: str) -> bool:
    return API_KEY.lower() in text.lower()


def output(d: Daemon) -> tuple[str, str]:
    """Everything the daemon wrote: stdout (every line was JSON) and stderr."""
    assert d.bad_lines == []
    return orjson.dumps(d.lines).decode(), d.stderr


def test_error_bodies_echoing_the_key_or_a_megabyte_reach_stdout_masked_and_cut(tmp_path, gateway):
    echo = error(400, f"invalid api key {SHOUTED_KEY} (Authorization: Bearer {SHOUTED_KEY})")
    gateway.push(echo, echo, error(400, HUGE), Reply(status=400, body=HUGE.encode()),
                 error(503, SHOUTED_KEY), error(503, SHOUTED_KEY))
    with Daemon(tmp_path / "kb", env=gateway.env(JSONL_ENGINE_LLM_MAX_RETRIES="1"), args=ARGS) as d:
        errors = [d.error("test.llm", {"prompt": "net sales?", "stream": stream})
                  for stream in (True, False, True, False, True)]
        d.close()
    stdout, stderr = output(d)
    assert not leaks_key(stdout) and not leaks_key(stderr)
    assert [e["data"]["status"] for e in errors] == [400, 400, 400, 400, 503]
    assert all(e["message"].endswith("invalid api key *** (Authorization: Bearer ***)") for e in errors[:2])
    for cut in errors[2:4]:  # a JSON error message, then a raw body
        assert cut["message"].endswith(f"{HUGE[:MAX_DETAIL_CHARS]}... [cut: {len(HUGE)} chars in all]")
    assert errors[4]["message"].endswith(": ***") and "retry 1/1" in stderr
    assert len(stdout) < 10_000


def test_kb_answer_keeps_the_key_out_of_the_error_it_reports(tmp_path, gateway):
    store = open_store(tmp_path / "kb")
    ingest_text(store, "# Port\n\n## Tonnage\n\nHarbour tonnage rose to 4.2 million tonnes in 2024.\n",
                "Port notes", "text/markdown")
    store.close()
    gateway.responder = AnswerScript().then("span", error(401, f"Incorrect API key provided: {SHOUTED_KEY}"))
    with Daemon(tmp_path / "kb", env=gateway.env(), args=ARGS) as d:
        result = d.result("kb.answer", {"query": "harbour tonnage", "max_sections": 1})
        d.close()
    assert result["error"]["code"] == "llm_error" and result["error"]["data"]["status"] == 401
    assert result["error"]["message"].endswith("Incorrect API key provided: ***")
    stdout, stderr = output(d)
    assert not leaks_key(stdout) and not leaks_key(stderr)
