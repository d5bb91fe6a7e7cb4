"""Synchronous, in-process ingest (tests, benches, tools), and the pieces it shares with the daemon's pipeline:
expanding the requested paths into files, and turning a file's failure into its outcome.

Same order as the daemon's flow (`pipeline.IngestJob._file`): reject an unknown type, hash, skip content already
in, parse, then write in one transaction (`outcome.write_parsed`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from jsonl_engine.errors import Cancelled, EngineError, Internal, NotFound
from jsonl_engine.ingest import SUPPORTED, media_type_for, outcome, parse_file, parse_text, require_media_type
from jsonl_engine.ingest.outcome import IngestOutcome

if TYPE_CHECKING:
    from jsonl_engine.store import Store

log = logging.getLogger(__name__)

SKIP_DIRS = {"__pycache__", "node_modules"}


def expand_paths(paths: Iterable[str]) -> Iterator[tuple[str, IngestOutcome | None]]:
    """Each entry as (absolute path, None) per supported file (directories recursively, sorted), or
    (entry, outcome) when the entry itself is an error or yields nothing."""
    for entry in paths:
        path = Path(os.path.expanduser(entry))
        if not path.exists():
            yield entry, IngestOutcome(path=entry, error={"code": "not_found", "message": f"no such file: {entry}"})
        elif path.is_dir():
            found = False
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
                for name in sorted(files):
                    if not name.startswith(".") and media_type_for(name):
                        found = True
                        yield str((Path(root) / name).resolve()), None
            if not found:
                yield entry, IngestOutcome(path=str(path.resolve()), skipped=True,
                                           reason=f"no supported files ({SUPPORTED}) in directory")
        else:
            yield str(path.resolve()), None


def failed(path: str, exc: Exception) -> IngestOutcome:
    """A file's outcome when its ingest raised `exc` (callers re-raise Cancelled first): an EngineError as
    itself, an unreadable file as not_found, anything else (a crashed worker) as internal, logged."""
    if isinstance(exc, OSError):
        exc = NotFound(f"cannot read {path}: {exc.strerror or exc}")
    elif not isinstance(exc, EngineError):
        log.error("ingest of %s failed", path, exc_info=exc)
        exc = Internal(f"internal error while ingesting {Path(path).name}: {exc!r}")
    return outcome.error_outcome(path, exc)


def ingest_file(store: Store, path: str, status: str = "approved") -> IngestOutcome:
    try:
        require_media_type(path)
        sha256, document_id = outcome.file_digest(path)
        skip, _older = outcome.precheck(store, sha256, path)
        if skip is not None:
            return skip
        parsed = parse_file(path)
        return outcome.write_parsed(store, parsed, document_id=document_id, sha256=sha256, path=path, status=status)
    except Cancelled:
        raise
    except Exception as exc:
        return failed(path, exc)


def ingest_text(store: Store, text: str, title: str, media_type: str = "text/plain",
                status: str = "approved") -> IngestOutcome:
    sha256, document_id = outcome.content_id(text.encode("utf-8"))
    try:
        skip, _older = outcome.precheck(store, sha256, None)
        if skip is not None:
            return skip
        parsed = parse_text(text, title, media_type)
        return outcome.write_parsed(store, parsed, document_id=document_id, sha256=sha256, path=None, status=status)
    except Cancelled:
        raise
    except EngineError as exc:
        return outcome.error_outcome(None, exc)


def ingest_paths(store: Store, paths: Iterable[str], status: str = "approved") -> list[IngestOutcome]:
    """Files and directories, one outcome per file, in order."""
    outcomes: list[IngestOutcome] = []
    for path, early in expand_paths([str(p) for p in paths]):
        outcomes.append(early if early is not None else ingest_file(store, path, status))
    return outcomes
