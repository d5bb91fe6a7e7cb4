"""Synchronous, in-process ingest (tests, benches, tools), and the pieces it shares with the daemon's pipeline:
expanding the requested paths into files, and turning a file's failure into its outcome.

Same order as the daemon's flow (`pipeline.IngestJob._file`): reject what cannot be ingested (`files.check_file`:
not a regular file, an unknown type, text over the size cap), hash, skip content already in, parse, then write in
one transaction (`outcome.write_parsed`).
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterable, Iterator
from concurrent.futures import BrokenExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from jsonl_engine.errors import Cancelled, EngineError, Internal, UnsupportedMedia
from jsonl_engine.ingest import SUPPORTED, media_type_for, outcome, parse_file, parse_text
from jsonl_engine.ingest.files import check_file, open_regular, unreachable
from jsonl_engine.ingest.outcome import IngestOutcome

if TYPE_CHECKING:
    from jsonl_engine.store import Store

log = logging.getLogger(__name__)

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
            yield entry, outcome.error_outcome(entry, unreachable(entry, exc))
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


def check_and_hash(path: str) -> tuple[str, str]:
    """(sha256, document id) of a file the ingest accepts (`check_file`: nothing else is ever opened)."""
    check_file(path)
    with open_regular(path) as fh:
        return outcome.file_digest(fh)


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
    return outcome.error_outcome(path, exc)


def ingest_file(store: Store, path: str, status: str = "approved", meta: dict | None = None) -> IngestOutcome:
    try:
        sha256, document_id = check_and_hash(path)
        skip, _older = outcome.precheck(store, sha256, path)
        if skip is not None:
            return skip
        parsed = parse_file(path)
        return outcome.write_parsed(store, parsed, document_id=document_id, sha256=sha256, path=path, status=status,
                                    meta=meta)
    except Cancelled:
        raise
    except Exception as exc:
        return failed(path, exc)


def ingest_text(store: Store, text: str, title: str, media_type: str = "text/plain",
                status: str = "approved", meta: dict | None = None) -> IngestOutcome:
    sha256, document_id = outcome.content_id(text.encode("utf-8"))
    try:
        skip, _older = outcome.precheck(store, sha256, None)
        if skip is not None:
            return skip
        parsed = parse_text(text, title, media_type)
        return outcome.write_parsed(store, parsed, document_id=document_id, sha256=sha256, path=None, status=status,
                                    meta={"title": title, **(meta or {})})  # the title given is the user's
    except Cancelled:
        raise
    except EngineError as exc:
        return outcome.error_outcome(None, exc)


def ingest_paths(store: Store, paths: Iterable[str], status: str = "approved",
                 meta: dict | None = None) -> list[IngestOutcome]:
    """Files and directories, one outcome per file, in order (`meta`: the user's card values for each)."""
    outcomes: list[IngestOutcome] = []
    for path, early in expand_paths([str(p) for p in paths]):
        outcomes.append(early if early is not None else ingest_file(store, path, status, meta))
    if any(o.error is None and not o.skipped for o in outcomes):
        store.tidy_indexes()
    return outcomes
