"""The in-process ingest (`ingest.sync`) and the daemon's (`ingest.pipeline.IngestJob`) give the same outcome for
the same file: one type check before any read, one error-to-outcome path."""

from __future__ import annotations

import asyncio
from concurrent.futures.process import BrokenProcessPool

import pytest

from jsonl_engine.errors import UnsupportedMedia
from jsonl_engine.ingest import MEDIA_TYPES, files, outcome, parse_file, sync
from jsonl_engine.ingest.outcome import IngestOutcome
from jsonl_engine.ingest.pipeline import IngestJob
from jsonl_engine.store import Store, open_store


def daemon_ingest(store: Store, paths: list[str]) -> list[IngestOutcome]:
    outcomes: list[IngestOutcome] = []

    async def run_in_process(fn, *args):
        return fn(*args)

    job = IngestJob(store=store, run_in_process=run_in_process, progress=lambda *a: None,
                    on_outcome=outcomes.append, cancelled=lambda: False)
    asyncio.run(job.run_paths(paths))
    return outcomes


FLOWS = {"sync": sync.ingest_paths, "daemon": daemon_ingest}


@pytest.fixture(params=sorted(FLOWS))
def ingest(request):
    return FLOWS[request.param]


@pytest.fixture
def store(kb_location):
    s = open_store(kb_location)
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


@pytest.mark.parametrize("raised, error", [
    (PermissionError(13, "Permission denied"), {"code": "not_found", "message": "cannot read {path}: Permission denied"}),
    (RuntimeError("boom"), {"code": "internal",
                            "message": "internal error while ingesting guide.md: RuntimeError('boom')"}),
    (BrokenProcessPool("A child process terminated abruptly"),
     {"code": "unsupported_media", "reason": "crashed", "message": "the extractor crashed on guide.md"}),
], ids=["unreadable", "bug", "worker_died"])
def test_a_failing_file_becomes_its_outcome(ingest, store, tmp_path, monkeypatch, raised, error):
    path = tmp_path / "guide.md"
    path.write_text("# Guide\n")

    def fail(_file):
        raise raised

    monkeypatch.setattr(outcome, "file_digest", fail)
    (out,) = ingest(store, [str(path)])
    assert out.error == {**error, "message": error["message"].format(path=path)}


def test_a_skipped_duplicate_names_the_path_asked_for(ingest, store, tmp_path):
    first, second = tmp_path / "first.md", tmp_path / "second.md"
    for path in (first, second):
        path.write_text("# Same\n\nSame words.\n")
    (stored,) = ingest(store, [str(first)])
    (skipped,) = ingest(store, [str(second)])
    assert skipped.skipped and skipped.document_id == stored.document_id
    assert skipped.path == str(second) and skipped.reason == f"same content already ingested from {first}"


def test_text_over_the_size_cap_is_refused_unread(ingest, store, tmp_path, monkeypatch):
    monkeypatch.setattr(files, "MAX_TEXT_BYTES", 1000)
    big, fits = tmp_path / "big.md", tmp_path / "fits.md"
    big.write_text("# Big\n" + "x" * 1994)
    fits.write_text("# Fits\n" + "x" * 993)
    digest = outcome.file_digest

    def digest_but_big(fh):
        assert fh.name != str(big), "big.md was read"
        return digest(fh)

    monkeypatch.setattr(outcome, "file_digest", digest_but_big)
    out = ingest(store, [str(big), str(fits)])
    assert out[0].error == {"code": "unsupported_media", "reason": "too_large",
                            "message": "big.md is too large for a text document: 2000 bytes (limit 1000)"}
    assert out[1].error is None and out[1].title == "Fits"
    with pytest.raises(UnsupportedMedia) as info:  # parsed without the check: read no further than the cap
        parse_file(str(big))
    assert info.value.reason == "too_large"
