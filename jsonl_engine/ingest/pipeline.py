"""The daemon's ingest: files parsed in the process pool (large PDFs in page batches, so one filing uses every
core and reports progress per batch), each document written in its own transaction from a thread.

Results come out in input order; several files are in flight at once so the pool and the writer overlap.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jsonl_engine.errors import Cancelled, EngineError
from jsonl_engine.ingest import PDF, media_type_for, parse_file, parse_text
from jsonl_engine.ingest import outcome as policy
from jsonl_engine.ingest.model import ParsedDocument
from jsonl_engine.ingest.outcome import IngestOutcome
from jsonl_engine.ingest.sync import check_and_hash, expand_paths, failed

if TYPE_CHECKING:
    from jsonl_engine.config import OcrSettings
    from jsonl_engine.context import CancelFlag
    from jsonl_engine.store import Store

log = logging.getLogger(__name__)

BATCH_PAGES = 64
SINGLE_TASK_PAGES = 96

RunInProcess = Callable[..., Awaitable[Any]]
Progress = Callable[[str, int | None, int | None, str | None], None]


def page_batches(count: int, size: int, alone: list[int]) -> list[tuple[int, int]]:
    """[start, stop) ranges (0-based) over `count` pages, of at most `size` pages, each page of `alone` (1-based)
    in a range by itself."""
    cuts = set(range(0, count, size)) | {count}
    for number in alone:
        cuts |= {number - 1, number}
    ordered = sorted(cuts)
    return list(zip(ordered, ordered[1:], strict=False))


@dataclass
class IngestJob:
    store: Store
    run_in_process: RunInProcess
    progress: Progress
    on_outcome: Callable[[IngestOutcome], None]  # each file's outcome, in input order
    cancel: CancelFlag
    workers: int = 2
    status: str = "approved"
    meta: dict | None = None  # the user's card values, for every document of the job
    ocr: OcrSettings | None = None  # how scanned PDF pages are read (None: the defaults)
    written: int = 0  # documents this job wrote

    def check(self) -> None:
        if self.cancel.is_set():
            raise Cancelled("ingest cancelled")

    async def run_paths(self, paths: list[str]) -> int:
        entries = await asyncio.to_thread(lambda: list(expand_paths(paths)))
        total = len(entries)
        # Files parse and write concurrently (bounded, so the pool always has queued work but memory stays
        # small: a finished file holds only its outcome); outcomes are reported in input order.
        active = asyncio.Semaphore(self.workers + 2)
        tasks = {i: asyncio.create_task(self._bounded(active, path))
                 for i, (path, early) in enumerate(entries) if early is None}
        try:
            for index, (path, early) in enumerate(entries):
                outcome = early if early is not None else await tasks.pop(index)
                self.check()
                self._report(outcome)
                self.progress("document", index + 1, total, path)
        finally:
            for task in tasks.values():
                task.cancel()
            if tasks:
                await asyncio.gather(*tasks.values(), return_exceptions=True)
        await self._tidy()
        return total

    async def _bounded(self, active: asyncio.Semaphore, path: str) -> IngestOutcome:
        async with active:
            return await self._file(path)

    async def run_text(self, text: str, title: str, media_type: str) -> None:
        sha256, document_id = policy.content_id(text.encode("utf-8"))
        try:
            skip, _older = await asyncio.to_thread(self._precheck, sha256, None)
            if skip is None:
                parsed = await self.run_in_process(parse_text, text, title, media_type)
                self.check()
                skip = await asyncio.to_thread(self._write, parsed, document_id, sha256, None, {"title": title})
            outcome = skip
        except Cancelled:
            raise
        except EngineError as exc:
            outcome = policy.error_outcome(None, exc)
        self._report(outcome)
        self.progress("document", 1, 1, title)
        await self._tidy()

    def _report(self, outcome: IngestOutcome) -> None:
        if outcome.error is None and not outcome.skipped:
            self.written += 1
        self.on_outcome(outcome)

    async def _tidy(self) -> None:
        """Once documents were written, the search indexes are brought into their fastest form (the documents are
        committed already: a failure here is logged, not the ingest's)."""
        if not self.written:
            return
        self.progress("index", None, None, f"tidying the search index after {self.written} document(s)")
        try:
            await asyncio.to_thread(self.store.tidy_indexes)
        except EngineError as exc:
            log.warning("search index not tidied: %s", exc.message)

    async def _file(self, path: str) -> IngestOutcome:
        try:
            sha256, document_id = await asyncio.to_thread(check_and_hash, path)
            skip, _older = await asyncio.to_thread(self._precheck, sha256, path)
            if skip is not None:
                return skip
            self.check()
            parsed = await self._parse(path)
            self.check()
            self.progress("write", None, None, f"{Path(path).name}: {len(parsed.pages)} pages, "
                                               f"{len(parsed.sections)} sections")
            return await asyncio.to_thread(self._write, parsed, document_id, sha256, path)
        except Cancelled:
            raise
        except Exception as exc:  # that document fails (a worker that crashed on it too), the batch goes on
            return failed(path, exc)

    async def _parse(self, path: str) -> ParsedDocument:
        if media_type_for(path) != PDF:
            return await self.run_in_process(parse_file, path)
        from jsonl_engine.ingest import pdf

        name = Path(path).name
        first = await self.run_in_process(pdf.parse_small_pdf, path, SINGLE_TASK_PAGES, self.ocr)
        if isinstance(first, ParsedDocument):
            count = len(first.pages)
            self.progress("extract", count, count, f"{name}: {count}/{count} pages")
            return first
        info = first
        count = info.page_count
        scanned = f", {len(info.scanned)} to read by OCR" if info.scanned else ""
        self.progress("extract", 0, count, f"{name}: {count} pages{scanned}")
        # Each batch reopens the document (and reloads its fonts): batches stay large, one per core or more;
        # a page to read by OCR (seconds each) is a batch of its own.
        batches = page_batches(count, max(BATCH_PAGES, -(-count // (2 * self.workers))), info.scanned)
        done = 0
        futures = [asyncio.ensure_future(self.run_in_process(pdf.extract_batch, path, a, b, self.ocr))
                   for a, b in batches]
        try:
            for future in asyncio.as_completed(futures):
                extracted, _blob = await future
                done += extracted
                self.check()
                self.progress("extract", done, count, f"{name}: {done}/{count} pages")
        finally:
            for future in futures:
                future.cancel()
        blobs = [future.result()[1] for future in futures]
        return await self.run_in_process(pdf.build_from_batches, path, info, blobs, self.ocr)

    def _precheck(self, sha256: str, path: str | None) -> tuple[IngestOutcome | None, list[str]]:
        return policy.precheck(self.store, sha256, path)

    def _write(self, parsed: ParsedDocument, document_id: str, sha256: str, path: str | None,
               meta: dict | None = None) -> IngestOutcome:
        """Write with the job's card values (`meta` first: an inline text's title is the user's)."""
        self.check()
        return policy.write_parsed(self.store, parsed, document_id=document_id, sha256=sha256, path=path,
                                 status=self.status, cancel=self.cancel, meta={**(meta or {}), **(self.meta or {})})
