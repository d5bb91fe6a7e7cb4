"""jsonl_engine.client against the real daemon: results, streams, errors, cancel, threads and tasks, exit."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from jsonl_engine.client import AsyncClient, Client, DaemonExited, RequestError
from tests.support.daemon import ROOT, TEST_PLUGIN

DOC = ("# Quillon Ferries 2030 Report\n\n## Fleet\n\nQuillon Ferries ran 9 ferries in 2030.\n\n"
       "## Fuel\n\nFuel costs at Quillon were $12.5 million in 2030.\n")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JSONL_ENGINE_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _client(tmp_path, **kw) -> Client:
    return Client(tmp_path / "kb", args=["--plugin", TEST_PLUGIN], env=_env(), cwd=ROOT,
                  stderr=subprocess.PIPE, timeout=60, **kw)


def test_call_stream_errors_and_clean_exit(tmp_path) -> None:
    with _client(tmp_path) as kb:
        assert kb.ready and kb.ready["data"]["protocol"] == 1
        ingest = kb.stream("kb.ingest", {"text": DOC, "title": "Quillon", "media_type": "text/markdown"})
        events = ingest.events()
        assert [e["event"] for e in events if e["event"] != "progress"] == ["result"]
        assert ingest.done and ingest.done["status"] == "ok"
        doc = next(e["data"] for e in events if e["event"] == "result")
        out = kb.call("kb.synthesize", {"query": "How many ferries did Quillon run?"})
        assert out["claims"][0]["text"] == "Quillon Ferries ran 9 ferries in 2030."
        assert out["claims"][0]["document_id"] == doc["document_id"]
        assert kb.results("kb.documents")[0]["documents"][0]["title"] == "Quillon"

        with pytest.raises(RequestError) as err:
            kb.call("kb.context", {"query": "x", "limit": 0})
        assert err.value.code == "invalid_params" and err.value.data["field"] == "limit"
        assert "limit" in err.value.message
        with pytest.raises(RequestError) as err:
            kb.call("kb.read", {"document_id": "0123456789abcdef", "page": 1})
        assert err.value.code == "not_found"
        with pytest.raises(RequestError) as err:
            kb.call("no.such.method")
        assert err.value.code == "method_not_found"
        ticks = [e for e in kb.stream("test.sleep", {"seconds": 0.05, "ticks": 3}) if e["event"] == "progress"]
        assert [t["data"]["done"] for t in ticks] == [1, 2, 3]
    assert kb.returncode == 0 and not kb.unrouted


def test_cancel_and_many_requests_from_threads(tmp_path) -> None:
    with _client(tmp_path) as kb:
        kb.call("kb.ingest", {"text": DOC, "title": "Quillon", "media_type": "text/markdown"})
        slow = kb.stream("test.sleep", {"seconds": 60})
        assert kb.cancel(slow.id) is True
        with pytest.raises(RequestError) as err:
            slow.events()
        assert err.value.code == "cancelled" and slow.done["status"] == "cancelled"

        queries = [("ferries 2030", "Fleet"), ("fuel costs", "Fuel")] * 12
        with ThreadPoolExecutor(8) as pool:
            tops = list(pool.map(lambda q: kb.call("kb.context", {"query": q[0], "limit": 1})["items"][0]["title"],
                                 queries))
        assert tops == [title for _, title in queries]

        # leaving a stream early cancels its request
        stream = kb.stream("test.sleep", {"seconds": 60, "ticks": 600})
        for event in stream:
            assert event["event"] == "progress"
            break
        assert kb.call("cancel", {"target": stream.id}) == {"cancelled": False}  # already ended by the break


def test_daemon_exit_raises_daemon_exited(tmp_path) -> None:
    with pytest.raises(DaemonExited):
        Client(command=[sys.executable, "-c", "import sys; sys.exit(3)"], ready_timeout=30)
    kb = _client(tmp_path)
    slow = kb.stream("test.sleep", {"seconds": 60})
    kb.proc.kill()
    with pytest.raises(DaemonExited) as err:
        slow.events()
    assert err.value.code == "daemon_exited"
    with pytest.raises(DaemonExited):
        kb.call("capabilities")
    kb.close()


def test_async_client_tasks_cancel_and_errors(tmp_path) -> None:
    async def main() -> None:
        async with AsyncClient(tmp_path / "kb", args=["--plugin", TEST_PLUGIN], env=_env(), cwd=ROOT,
                               stderr=subprocess.DEVNULL, timeout=60) as kb:
            await kb.call("kb.ingest", {"text": DOC, "title": "Quillon", "media_type": "text/markdown"})
            queries = [("ferries 2030", "Fleet"), ("fuel costs", "Fuel")] * 10
            outs = await asyncio.gather(*(kb.call("kb.context", {"query": q, "limit": 1}) for q, _ in queries))
            assert [o["items"][0]["title"] for o in outs] == [t for _, t in queries]

            slow = await kb.stream("test.sleep", {"seconds": 60})
            assert await kb.cancel(slow.id) is True
            with pytest.raises(RequestError) as err:
                await slow.events()
            assert err.value.code == "cancelled"
            with pytest.raises(RequestError) as err:
                await kb.call("kb.synthesize", {"query": "x", "depth": 0})
            assert err.value.code == "invalid_params" and err.value.data["field"] == "depth"
            events = [e async for e in await kb.stream("test.sleep", {"seconds": 0.03, "ticks": 3})]
            assert [e["data"].get("done") for e in events] == [1, 2, 3, None]
            assert events[-1] == {"id": events[-1]["id"], "event": "result", "data": {"value": "slept"}}
        assert kb.returncode == 0

    asyncio.run(main())
