from __future__ import annotations

from typing import Annotated

from pydantic import Field

from jsonl_engine.models import Params, Result


class MethodInfo(Result):
    name: str
    summary: str
    events: list[str] = Field(description="event kinds the method may emit besides error and done")
    params_schema: str
    result_schema: str


class KBInfo(Result):
    backend: str = Field(description="the KB store in use: sqlite (a directory) or postgresql (a shared database)")
    location: str = Field(description="the KB directory, or the database URL without its password")


class CapabilitiesResult(Result):
    name: str
    version: str
    protocol: int
    methods: list[MethodInfo]
    events: list[str]
    error_codes: list[str]
    readers: list[str] = Field(description="names of configured LLM readers (never their keys)")
    strategies: list[str] = Field(description="retrieval strategies `kb.context` and `kb.answer` accept")
    media_types: list[str] = Field(description="what kb.ingest accepts")
    kb: KBInfo = Field(description="which store this daemon uses (never a password)")


class CancelParams(Params):
    target: str | Annotated[int, Field(ge=-(2**63), le=2**64 - 1)] = Field(
        description="id of the request to cancel (an integer id is within what the daemon reads: 64 bits)")


class CancelResult(Result):
    cancelled: bool


class ShutdownParams(Params):
    pass


class ShutdownResult(Result):
    ok: bool = True
    finished: int = Field(0, description="requests still in flight when shutdown arrived, now finished")


