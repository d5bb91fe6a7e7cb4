"""The one exception hierarchy. Each class carries its protocol error `code`.

Domain code raises these; foreign exceptions are translated at the edge with `raise ... from exc`.
The dispatcher maps anything else to `internal`.
"""

from __future__ import annotations

from typing import Any


class EngineError(Exception):
    code = "internal"

    def __init__(self, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data

    def __reduce__(self) -> tuple[Any, ...]:
        # Subclasses take extra constructor arguments; rebuild from state so errors raised in pool workers pickle.
        return _rebuild, (type(self), self.message, dict(self.__dict__))

    def to_wire(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data:
            body["data"] = self.data
        return body


def _rebuild(cls: type[EngineError], message: str, state: dict[str, Any]) -> EngineError:
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    error.__dict__.update(state)
    return error


class ParseError(EngineError):
    code = "parse_error"


class InvalidRequest(EngineError):
    code = "invalid_request"


class MethodNotFound(EngineError):
    code = "method_not_found"


class InvalidParams(EngineError):
    code = "invalid_params"

    def __init__(self, message: str, fields: list[str] | None = None, data: dict[str, Any] | None = None):
        payload = dict(data or {})
        if fields:
            payload["fields"] = fields
            payload.setdefault("field", fields[0])
        super().__init__(message, payload or None)


class PayloadTooLarge(EngineError):
    code = "payload_too_large"


class NotFound(EngineError):
    code = "not_found"


class UnsupportedMedia(EngineError):
    """A file the engine cannot ingest; `reason` is one of encrypted, corrupt, not_pdf, no_text, needs_ocr (a scanned
    PDF and no Tesseract to read it), unknown_type, not_regular (a FIFO, socket or device, never opened), too_large (a
    text file over the ingest's size cap, `ingest.files.MAX_TEXT_BYTES`, or a file whose extraction passed the worker
    memory cap, `worker_memory_mb`), crashed (the extractor's process died on this file, also when run alone)."""

    code = "unsupported_media"

    def __init__(self, message: str, reason: str, data: dict[str, Any] | None = None):
        super().__init__(message, {"reason": reason, **(data or {})})
        self.reason = reason


class KBUnavailable(EngineError):
    """The KB cannot be opened or used: its directory cannot be made or written, its file is not a usable SQLite
    database (damaged, truncated, unreadable, on a full disk), or the PostgreSQL server cannot be reached or used.
    `data` has the `path` (or `kb`), the `reason` when the store knows it, and the SQLite error name."""

    code = "kb_unavailable"


class LLMUnavailable(EngineError):
    code = "llm_unavailable"


class LLMError(EngineError):
    code = "llm_error"

    def __init__(self, message: str, status: int | None = None, retryable: bool = False,
                 data: dict[str, Any] | None = None):
        super().__init__(message, {"status": status, "retryable": retryable, **(data or {})})
        self.status = status
        self.retryable = retryable


class Timeout(EngineError):
    code = "timeout"


class Cancelled(EngineError):
    code = "cancelled"


class Overloaded(EngineError):
    code = "overloaded"


class ShuttingDown(EngineError):
    code = "shutting_down"


class Internal(EngineError):
    code = "internal"


ERROR_CODES: tuple[str, ...] = tuple(cls.code for cls in EngineError.__subclasses__())  # in declaration order
