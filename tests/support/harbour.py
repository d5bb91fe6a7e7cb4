"""A small Markdown KB for the LLM e2e tests: two sections a span reader can quote."""

from __future__ import annotations

from pathlib import Path

from jsonl_engine.ingest.sync import ingest_text
from jsonl_engine.store import open_store

NOTES = """# Harbour Freight Ltd notes 2024

## Tonnage

Harbour tonnage handled rose to 4.2 million tonnes in 2024, a record for the port of Tilbury.

## Staff

The harbour employed 812 people at the end of 2024, up from 790.
"""
TITLE = "Harbour Freight notes"


def harbour_kb(path: Path) -> Path:
    """A KB at `path` holding NOTES, written in process (no daemon)."""
    store = open_store(path)
    assert ingest_text(store, NOTES, TITLE, "text/markdown").error is None
    store.close()
    return path
