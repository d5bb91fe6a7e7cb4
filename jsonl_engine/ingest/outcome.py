"""Ingest policy: a document's id (its content hash), whether new content is skipped (these exact bytes are in)
or replaces older versions (same path), and the outcome reported for each entry.

`write_parsed` makes the decision again inside the write transaction, so two ingests of the same file racing
each other store it once.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from jsonl_engine.errors import Cancelled, EngineError
from jsonl_engine.identity import card as cards
from jsonl_engine.identity import statements, titles
from jsonl_engine.store import DocumentInfo, DuplicateContent, ParsedDocument, Store, Transaction

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from collections.abc import Callable


@dataclass(slots=True)
class IngestOutcome:
    """One entry's outcome: a stored (or skipped) document, or an error with its protocol code."""

    path: str | None
    document_id: str | None = None
    title: str | None = None
    media_type: str | None = None
    pages: int = 0
    sections: int = 0
    status: str | None = None
    skipped: bool = False
    reason: str | None = None
    warnings: list[str] = field(default_factory=list)
    error: dict[str, Any] | None = None
    ocr_pages: list[int] = field(default_factory=list)


def content_id(data: bytes) -> tuple[str, str]:
    """(sha256 hex, document id): the id is the first 16 hex chars of the content hash."""
    digest = hashlib.sha256(data).hexdigest()
    return digest, digest[:16]


def file_digest(file: str | BinaryIO) -> tuple[str, str]:
    """`content_id` of a file's bytes, read in blocks: `file` is a path, or a binary file open for reading (the
    ingest opens files itself, refusing anything but a regular file)."""
    if isinstance(file, str):
        with open(file, "rb") as fh:
            return file_digest(fh)
    digest = hashlib.file_digest(file, "sha256").hexdigest()
    return digest, digest[:16]


def precheck(reads: Store | Transaction, sha256: str, path: str | None) -> tuple[IngestOutcome | None, list[str]]:
    """(skip outcome if these exact bytes are already in, ids of older versions at the same path to replace).

    The skip outcome names `path`, the entry asked for now; its reason names the copy already in."""
    existing = reads.find_by_sha256(sha256)
    if existing is not None:
        reason = "already ingested (same content)"
        if existing.path and existing.path != path:
            reason = f"same content already ingested from {existing.path}"
        skip = outcome_for(existing, skipped=True, reason=reason)
        skip.path = path
        return skip, []
    older = [d.document_id for d in reads.find_by_path(path)] if path else []
    return None, older


class _Found:
    """The reads `precheck` makes, answered by the copy a concurrent writer stored."""

    def __init__(self, existing: DocumentInfo) -> None:
        self.existing = existing

    def find_by_sha256(self, sha256: str) -> DocumentInfo | None:
        return self.existing

    def find_by_path(self, path: str) -> list[DocumentInfo]:
        return []


def outcome_for(info: DocumentInfo, *, skipped: bool = False, reason: str | None = None) -> IngestOutcome:
    return IngestOutcome(path=info.path, document_id=info.document_id, title=info.title, media_type=info.media_type,
                         pages=info.pages, sections=info.sections, status=info.status, skipped=skipped,
                         reason=reason, warnings=list(info.warnings), ocr_pages=list(info.ocr_pages))


def error_outcome(path: str | None, exc: EngineError) -> IngestOutcome:
    error: dict[str, Any] = {"code": exc.code, "message": exc.message}
    if exc.data and "reason" in exc.data:
        error["reason"] = exc.data["reason"]
    return IngestOutcome(path=path, error=error)


def write_parsed(store: Store, parsed: ParsedDocument, *, document_id: str, sha256: str, path: str | None,
                 status: str, cancelled: Callable[[], bool] | None = None,
                 meta: dict | None = None) -> IngestOutcome:
    """One transaction: re-check for a concurrent duplicate, replace older versions at `path`, insert (with the
    document's card, derived here unless the parser made one, and the user's card values `meta`).
    A cancel seen after the insert, before the commit, rolls it all back."""
    if parsed.card is None:
        stem = Path(path).stem if path else None
        parsed.card = cards.derive(parsed.pages[: cards.QUARTER_PAGES], parsed.title, stem, parsed.headline)
    try:
        with store.transaction() as tx:
            skip, older = precheck(tx, sha256, path)
            if skip is not None:
                return skip
            info = tx.insert(parsed, document_id=document_id, sha256=sha256, path=path, status=status,
                             replace=older, meta=meta)
            if cancelled is not None and cancelled():
                raise Cancelled("ingest cancelled")
    except DuplicateContent as dup:  # another writer (a daemon on the same database) committed it first
        skip, _older = precheck(_Found(dup.existing), sha256, path)
        assert skip is not None
        return skip
    try:
        statements.save(store, info.document_id)  # its statement pages, judged once (queries read them)
    except EngineError as exc:  # the document is in: queries judge its pages until the next open fills them
        log.warning("statement pages of %s not stored: %s", info.document_id, exc.message)
    titles.retitle(store, {parsed.card.name or parsed.card.title})  # siblings of the same name: tell them apart
    info = store.document(info.document_id)
    reason = f"replaced previous version {', '.join(older)}" if older else None
    return outcome_for(info, reason=reason)
