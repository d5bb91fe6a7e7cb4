"""Start-up loads only what the first requests need: `capabilities` answers without the store, the ingest, the
retrieval pipeline, the LLM client or pdfium (bench/protocol.py measures the time; this checks the imports)."""

from __future__ import annotations

from pathlib import Path

from tests.support.daemon import Daemon

NOT_AT_START = ("jsonl_engine.store.port", "jsonl_engine.store.types", "jsonl_engine.store.sqlite",
                "jsonl_engine.store.postgres", "jsonl_engine.ingest.model", "jsonl_engine.ingest.pipeline",
                "jsonl_engine.ingest.pdf", "jsonl_engine.identity", "jsonl_engine.retrieval.pipeline",
                "jsonl_engine.answer", "jsonl_engine.llm.gateway", "httpx", "pypdfium2", "apsw", "sqlite3", "tomllib")


def test_capabilities_answers_without_loading_what_a_request_would(tmp_path: Path) -> None:
    with Daemon(tmp_path / "kb", args=["--plugin", "tests.support.modules_method"]) as d:
        assert "kb.ingest" in {m["name"] for m in d.result("capabilities")["methods"]}
        loaded = d.result("test.modules")["modules"]
        assert [m for m in loaded if m.startswith(NOT_AT_START)] == []
        d.result("kb.documents")  # the first request that reads the KB opens it
        loaded = d.result("test.modules")["modules"]
    assert {"jsonl_engine.store.types", "jsonl_engine.store.sqlite", "jsonl_engine.identity"} <= set(loaded)
