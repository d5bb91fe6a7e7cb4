"""Models of the request and event envelopes. They document the wire (schemas/events.json); the hot path
builds the same shapes as plain dicts."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from jsonl_engine.errors import ERROR_CODES

RequestId = str | int

ErrorCode = Literal[ERROR_CODES]  # type: ignore[valid-type]


class Request(BaseModel):
    id: RequestId
    method: str
    params: dict[str, Any] | None = None


class ErrorBody(BaseModel):
    code: ErrorCode
    message: str
    data: dict[str, Any] | None = None


class ReadyData(BaseModel):
    protocol: int
    version: str


class ProgressData(BaseModel):
    model_config = ConfigDict(extra="allow")
    stage: str
    done: int | None = None
    total: int | None = None
    message: str | None = None


class DeltaData(BaseModel):
    text: str


class ReadyEvent(BaseModel):
    id: None = None
    event: Literal["ready"]
    data: ReadyData


class ProgressEvent(BaseModel):
    id: RequestId
    event: Literal["progress"]
    data: ProgressData


class DeltaEvent(BaseModel):
    id: RequestId
    event: Literal["delta"]
    data: DeltaData


class ResultEvent(BaseModel):
    id: RequestId
    event: Literal["result"]
    data: dict[str, Any] = Field(description="method-specific: see <method>.result.json")


class ErrorEvent(BaseModel):
    id: RequestId | None
    event: Literal["error"]
    error: ErrorBody


class DoneEvent(BaseModel):
    id: RequestId | None
    event: Literal["done"]
    status: Literal["ok", "error", "cancelled"]
    elapsed_ms: float


AnyEvent = Annotated[
    ReadyEvent | ProgressEvent | DeltaEvent | ResultEvent | ErrorEvent | DoneEvent,
    Field(discriminator="event"),
]
"""Every line the daemon writes to stdout is one of these."""
