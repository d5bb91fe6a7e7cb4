"""The catalog (catalog.json beside this module; `jsonl-engine schemas --write` generates it, `--check` fails on
drift): what the daemon offers, known before anything that provides it is imported. Each built-in method's row
(`Method.row`: name, summary, events, how it runs, its handler as `module:function`), and the names `capabilities`
lists from code tables (the retrieval strategies, the media types kb.ingest reads). The daemon starts from it: no
handler, model, parser table or retrieval package is imported before a request needs it."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonl_engine.registry import Method

PATH = Path(__file__).with_name("catalog.json")


@functools.cache
def read() -> dict[str, Any]:
    import orjson

    return orjson.loads(PATH.read_bytes())


def generate(methods: Iterable[Method]) -> dict[str, Any]:
    """The catalog of `methods` (the built-in handlers, imported) and of the code tables."""
    from jsonl_engine.ingest.parsers import PARSERS
    from jsonl_engine.retrieval.strategies import STRATEGIES

    return {"methods": [m.row() for m in methods], "strategies": sorted(STRATEGIES),
            "media_types": [p.media_type for p in PARSERS]}
