"""Synchronous, in-process ingest (tests, benches, tools): the daemon's flow (`pipeline.IngestJob`) with each
step run inline on the calling thread, one file after another, PDFs parsed whole, nothing reported but the
outcomes. Same order as the daemon: reject what cannot be ingested (`pipeline.check_file`), hash, skip content
already in, parse, then write in one transaction (`outcome.write_parsed`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from jsonl_engine.ingest.outcome import IngestOutcome
from jsonl_engine.ingest.pipeline import IngestJob

if TYPE_CHECKING:
    from jsonl_engine.store import Store


async def _inline(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


def _run(store: Store, start: Callable[[IngestJob], Any], status: str, meta: dict | None,
         tidy: bool) -> list[IngestOutcome]:
    outcomes: list[IngestOutcome] = []
    job = IngestJob(store=store, run_in_process=_inline, progress=lambda *_: None, on_outcome=outcomes.append,
                    cancelled=lambda: False, workers=1, status=status, meta=meta, in_thread=_inline,
                    single_task_pages=None, files_at_once=1, tidy=tidy)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(start(job))
    else:  # called from a coroutine: the job gets a loop of its own
        with ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, start(job)).result()
    return outcomes


def ingest_file(store: Store, path: str, status: str = "approved", meta: dict | None = None) -> IngestOutcome:
    """One file (the search indexes are not tidied: `ingest_paths` does it once for many)."""
    return _run(store, lambda job: job.run_paths([path]), status, meta, tidy=False)[0]


def ingest_text(store: Store, text: str, title: str, media_type: str = "text/plain",
                status: str = "approved", meta: dict | None = None) -> IngestOutcome:
    """Inline text, `title` naming it (the title given is the user's)."""
    return _run(store, lambda job: job.run_text(text, title, media_type), status, meta, tidy=False)[0]


def ingest_paths(store: Store, paths: Iterable[str], status: str = "approved",
                 meta: dict | None = None) -> list[IngestOutcome]:
    """Files and directories, one outcome per file, in order (`meta`: the user's card values for each)."""
    return _run(store, lambda job: job.run_paths([str(p) for p in paths]), status, meta, tidy=True)
