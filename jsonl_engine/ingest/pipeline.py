"""The one ingest flow. In the daemon: files parsed in the process pool (large PDFs in page batches, so one
filing uses every core and reports progress per batch), each document written in its own transaction from a
thread; results come out in input order; several files are in flight at once so the pool and the writer overlap.
In process (`sync.py`: tests, benches, tools): the same steps, each run inline, one file after another.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
from collections.abc import Awaitable, Callable, Iterable, Iterator
from concurrent.futures import BrokenExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jsonl_engine.errors import Cancelled, EngineError, Internal, UnsupportedMedia
from jsonl_engine.ingest import PDF, SUPPORTED, media_type_for, parse_file, parse_text, require_media_type
from jsonl_engine.ingest import outcome as policy
from jsonl_engine.ingest.files import open_regular, require_regular, require_text_size, unreachable
from jsonl_engine.ingest.model import ParsedDocument
from jsonl_engine.ingest.outcome import IngestOutcome

if TYPE_CHECKING:
    from jsonl_engine.config import OcrSettings
    from jsonl_engine.store import Store

log = logging.getLogger(__name__)

BATCH_PAGES = 64
SINGLE_TASK_PAGES = 96

RunInProcess = Callable[..., Awaitable[Any]]  # (fn, *args) -> fn(*args), in a pool worker or inline
Progress = Callable[[str, int | None, int | None, str | None], None]


SKIP_DIRS = {"__pycache__", "node_modules"}


def expand_paths(paths: Iterable[str]) -> Iterator[tuple[str, IngestOutcome | None]]:
    """Each entry as (absolute path, None) per file to ingest (directories recursively, sorted), or
    (entry, outcome) when the entry itself is an error or yields nothing. Whether a file can be ingested is
    `check_file`'s to say, for a listed file and a file found in a directory alike."""
    for entry in paths:
        path = os.path.expanduser(entry)
        try:
            is_dir = stat.S_ISDIR(os.stat(path).st_mode)
        except (OSError, ValueError) as exc:
            yield entry, policy.error_outcome(entry, unreachable(entry, exc))
            continue
        if is_dir:
            yield from _walk(entry, path)
        else:
            yield os.path.realpath(path), None


def _walk(entry: str, path: str) -> Iterator[tuple[str, IngestOutcome | None]]:
    """The files of a directory with a supported name. Symbolic links to directories are not followed (a link to
    a parent would loop); a link that loops is listed as a file, and fails alone."""
    found = False
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
        for name in sorted(files):
            if not name.startswith(".") and media_type_for(name):
                found = True
                yield os.path.realpath(os.path.join(root, name)), None  # realpath never raises, not even on a loop
    if not found:
        yield entry, IngestOutcome(path=os.path.realpath(path), skipped=True,
                                   reason=f"no supported files ({SUPPORTED}) in directory")


def check_file(path: str) -> str:
    """The media type of a file the ingest accepts, from stat and its name alone (nothing is opened): raises
    OSError for a path that cannot be stat'ed, UnsupportedMedia (not_regular, unknown_type, too_large) otherwise."""
    st = os.stat(path)  # follows symlinks: a link to /dev/zero is a character device
    require_regular(path, st)
    media_type = require_media_type(path)
    if media_type != PDF:
        require_text_size(path, st.st_size)
    return media_type


def check_and_hash(path: str) -> tuple[str, str]:
    """(sha256, document id) of a file the ingest accepts (`check_file`: nothing else is ever opened)."""
    check_file(path)
    with open_regular(path) as fh:
        return policy.file_digest(fh)


def failed(path: str, exc: Exception) -> IngestOutcome:
    """A file's outcome when its ingest raised `exc` (callers re-raise Cancelled first): an EngineError as
    itself, a path that cannot be read as not_found, a pool worker that died on this file (`App.run_in_process`
    retried it alone) as unsupported_media/crashed, anything else as internal, logged."""
    if isinstance(exc, BrokenExecutor):
        log.error("the extractor crashed on %s", path)
        exc = UnsupportedMedia(f"the extractor crashed on {Path(path).name}", reason="crashed")
    elif isinstance(exc, OSError):
        exc = unreachable(path, exc)
    elif not isinstance(exc, EngineError):
        log.error("ingest of %s failed", path, exc_info=exc)
        exc = Internal(f"internal error while ingesting {Path(path).name}: {exc!r}")
    return policy.error_outcome(path, exc)


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
    cancelled: Callable[[], bool]  # true once the request is cancelled (read from any thread)
    workers: int = 2
    in_thread: RunInProcess = asyncio.to_thread  # blocking store and file work (inline in process)
    single_task_pages: int | None = SINGLE_TASK_PAGES  # a larger PDF is read in page batches (None: never)
    files_at_once: int | None = None  # files in flight (None: workers + 2)
    tidy: bool = True  # tidy the search indexes once documents were written
    status: str = "approved"
    meta: dict | None = None  # the user's card values, for every document of the job
    ocr: OcrSettings | None = None  # how scanned PDF pages are read (None: the defaults)
    written: int = 0  # documents this job wrote

    def check(self) -> None:
        if self.cancelled():
            raise Cancelled("ingest cancelled")

    async def run_paths(self, paths: list[str]) -> int:
        entries = await self.in_thread(lambda: list(expand_paths(paths)))
        total = len(entries)
        # Files parse and write concurrently (bounded, so the pool always has queued work but memory stays
        # small: a finished file holds only its outcome); outcomes are reported in input order.
        active = asyncio.Semaphore(self.files_at_once or self.workers + 2)
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
            skip, _older = await self.in_thread(self._precheck, sha256, None)
            if skip is None:
                parsed = await self.run_in_process(parse_text, text, title, media_type)
                self.check()
                skip = await self.in_thread(self._write, parsed, document_id, sha256, None, {"title": title})
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
        if not self.written or not self.tidy:
            return
        self.progress("index", None, None, f"tidying the search index after {self.written} document(s)")
        try:
            await self.in_thread(self.store.tidy_indexes)
        except EngineError as exc:
            log.warning("search index not tidied: %s", exc.message)

    async def _file(self, path: str) -> IngestOutcome:
        try:
            sha256, document_id = await self.in_thread(check_and_hash, path)
            skip, _older = await self.in_thread(self._precheck, sha256, path)
            if skip is not None:
                return skip
            self.check()
            parsed = await self._parse(path)
            self.check()
            self.progress("write", None, None, f"{Path(path).name}: {len(parsed.pages)} pages, "
                                               f"{len(parsed.sections)} sections")
            return await self.in_thread(self._write, parsed, document_id, sha256, path)
        except Cancelled:
            raise
        except Exception as exc:  # that document fails (a worker that crashed on it too), the batch goes on
            return failed(path, exc)

    async def _parse(self, path: str) -> ParsedDocument:
        if media_type_for(path) != PDF:
            return await self.run_in_process(parse_file, path)
        from jsonl_engine.ingest import pdf

        name = Path(path).name
        first = await self.run_in_process(pdf.parse_small_pdf, path, self.single_task_pages, self.ocr)
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
                                 status=self.status, cancelled=self.cancelled, meta={**(meta or {}), **(self.meta or {})})
