"""The LLM configuration and gateway through a real daemon subprocess (test-only method `test.llm`)."""

from tests.support.daemon import Daemon
from tests.support.gateway import API_KEY, MODEL, Reply, error, stream_chunks, text_reply

PLUGIN = ["--plugin", "tests.support.llm_methods"]


def test_no_llm_configured_is_llm_unavailable(tmp_path):
    with Daemon(tmp_path / "kb", args=PLUGIN) as d:
        assert d.result("capabilities")["readers"] == []
        err = d.error("test.llm", {"prompt": "hi"})
        assert err["code"] == "llm_unavailable" and "JSONL_ENGINE_LLM_BASE_URL" in err["message"]


def test_llm_without_a_model_is_llm_unavailable_before_any_call(tmp_path, gateway):
    no_model = {k: v for k, v in gateway.env().items() if k != "JSONL_ENGINE_LLM_MODEL"}
    with Daemon(tmp_path / "kb", env=no_model, args=PLUGIN) as d:
        assert d.result("capabilities")["readers"] == ["default"]
        err = d.error("test.llm", {"prompt": "hi"})
        assert err["code"] == "llm_unavailable" and "JSONL_ENGINE_LLM_MODEL" in err["message"]
    assert gateway.requests == [] and gateway.unexpected == 0  # the daemon knew the URL but never called it


def test_env_configured_reader_streams_deltas_and_never_leaks_the_key(tmp_path, gateway):
    config = tmp_path / "engine.toml"
    config.write_text(f'[readers.careful]\nbase_url = "{gateway.url}"\nmodel = "careful-model"\n', encoding="utf-8")
    gateway.push(text_reply("Net sales rose."), text_reply("ok"))
    with Daemon(tmp_path / "kb", env=gateway.env(), args=[*PLUGIN, "--config", str(config)]) as d:
        assert d.result("capabilities")["readers"] == ["careful", "default"]
        events = d.request("test.llm", {"prompt": "sales?"})
        assert "".join(e["data"]["text"] for e in events if e["event"] == "delta") == "Net sales rose."
        result = next(e["data"] for e in events if e["event"] == "result")
        assert (result["text"], result["reader"], result["model"]) == ("Net sales rose.", "default", MODEL)
        assert result["usage"]["calls"] == 1
        careful = d.result("test.llm", {"prompt": "x", "reader": "careful", "stream": False})
        assert careful["model"] == "careful-model"
        assert d.error("test.llm", {"prompt": "x", "reader": "nope"})["data"]["field"] == "reader"
        d.close()
        seen = b"".join(d.stderr_chunks).decode() + str(d.lines)
    assert API_KEY not in seen
    assert gateway.requests[0].headers["authorization"] == f"Bearer {API_KEY}"
    assert gateway.requests[1].body["model"] == "careful-model"


def test_upstream_failure_is_llm_error_on_the_wire(tmp_path, gateway):
    gateway.push(error(503), error(503), error(503), error(503))
    with Daemon(tmp_path / "kb", env=gateway.env(JSONL_ENGINE_LLM_MAX_RETRIES="3"), args=PLUGIN) as d:
        err = d.error("test.llm", {"prompt": "x"})
    assert err["code"] == "llm_error"
    assert err["data"]["status"] == 503 and err["data"]["retryable"] is True
    assert len(gateway.requests) == 4


def test_cancel_mid_stream_closes_the_upstream_request(tmp_path, gateway):
    gateway.push(Reply(sse=stream_chunks(["first ", "never"]), delays=[0, 0, 60]))
    with Daemon(tmp_path / "kb", env=gateway.env(), args=PLUGIN) as d:
        rid = d.start("test.llm", {"prompt": "x"})
        assert d.wait_event(rid, "delta")["data"]["text"] == "first "
        assert d.result("cancel", {"target": rid}) == {"cancelled": True}
        events = d.wait_done(rid)
        assert events[-1]["status"] == "cancelled"
        assert gateway.disconnected.wait(10)
