"""The in-process ingest (`ingest.sync`) and the daemon's (`ingest.pipeline.IngestJob`) give the same outcome for
the same file: one type check before any read, one error-to-outcome path."""

from __future__ import annotations

import asyncio

import pytest

from jsonl_engine.context import CancelFlag
from jsonl_engine.ingest import MEDIA_TYPES, outcome, sync
from jsonl_engine.ingest.outcome import IngestOutcome
from jsonl_engine.ingest.pipeline import IngestJob
from jsonl_engine.store import Store, open_store


def daemon_ingest(store: Store, paths: list[str]) -> list[IngestOutcome]:
    outcomes: list[IngestOutcome] = []

    async def run_in_process(fn, *args):
        return fn(*args)

    job = IngestJob(store=store, run_in_process=run_in_process, progress=lambda *a: None, emit=outcomes.append,
                    cancel=CancelFlag())
    asyncio.run(job.run_paths(paths))
    return outcomes


FLOWS = {"sync": sync.ingest_paths, "daemon": daemon_ingest}


@pytest.fixture(params=sorted(FLOWS))
def ingest(request):
    return FLOWS[request.param]


@pytest.fixture
def store(tmp_path):
    s = open_store(tmp_path / "kb")
    yield s
    s.close()


def test_unknown_type_is_refused_before_the_file_is_read(ingest, store, tmp_path, monkeypatch):
    path = tmp_path / "data.csv"
    path.write_text("a,b\n")
    monkeypatch.setattr(outcome, "file_digest", lambda p: pytest.fail(f"hashed {p}"))
    (out,) = ingest(store, [str(path)])
    assert out.error == {"code": "unsupported_media", "reason": "unknown_type",
                         "message": "data.csv: unsupported file type (supported: .markdown, .md, .pdf, .text, .txt)"}
    assert all(suffix in out.error["message"] for suffix in MEDIA_TYPES)


def test_every_listed_suffix_is_ingested(ingest, store, tmp_path):
    (tmp_path / "notes.text").write_text("plain words\n")
    (out,) = ingest(store, [str(tmp_path / "notes.text")])
    assert out.error is None and out.media_type == "text/plain"


@pytest.mark.parametrize("raised, code, message", [
    (PermissionError(13, "Permission denied"), "not_found", "cannot read {path}: Permission denied"),
    (RuntimeError("boom"), "internal", "internal error while ingesting guide.md: RuntimeError('boom')"),
], ids=["unreadable", "crash"])
def test_a_failing_file_becomes_its_outcome(ingest, store, tmp_path, monkeypatch, raised, code, message):
    path = tmp_path / "guide.md"
    path.write_text("# Guide\n")

    def fail(_path):
        raise raised

    monkeypatch.setattr(outcome, "file_digest", fail)
    (out,) = ingest(store, [str(path)])
    assert out.error == {"code": code, "message": message.format(path=path)}
