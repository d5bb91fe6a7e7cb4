"""The embedded SQLite KB: one file in the KB directory."""

from jsonl_engine.store.db import Store

__all__ = ["Store"]
