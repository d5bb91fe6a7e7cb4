"""A test KB of named PDFs, ingested in-process."""

from __future__ import annotations

from pathlib import Path


def ingest_named(store, folder: Path, names):
    """`store` with the PDFs `folder`/<name>.pdf ingested (in-process, each must succeed); `store.doc_ids` maps each
    name (the file stem) to its document id."""
    from jsonl_engine.ingest.sync import ingest_paths

    outcomes = ingest_paths(store, [str(folder / f"{name}.pdf") for name in names])
    failed = [o for o in outcomes if o.error]
    assert not failed, failed
    store.doc_ids = {Path(o.path).stem: o.document_id for o in outcomes}  # type: ignore[attr-defined]
    return store
