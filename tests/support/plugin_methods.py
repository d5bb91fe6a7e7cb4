"""Test-only methods, loaded into a daemon with `--plugin tests.support.plugin_methods`."""

from __future__ import annotations

import asyncio
import os
import sys
import time

from pydantic import Field

from jsonl_engine.context import RequestContext
from jsonl_engine.errors import NotFound
from jsonl_engine.models import Params, Result
from jsonl_engine.registry import method


class SleepParams(Params):
    seconds: float = Field(ge=0)
    ticks: int = Field(0, ge=0)


class EchoResult(Result):
    value: str = ""


class NoisyParams(Params):
    text: str = "noise"


class BlockingParams(Params):
    seconds: float = Field(ge=0)


@method("test.sleep", params=SleepParams, result=EchoResult, events=("progress", "result"))
async def sleep(params: SleepParams, ctx: RequestContext) -> EchoResult:
    """Sleep on the loop, emitting `ticks` progress events."""
    for i in range(params.ticks):
        ctx.progress("tick", done=i + 1, total=params.ticks)
        await asyncio.sleep(params.seconds / max(1, params.ticks))
    if not params.ticks:
        await asyncio.sleep(params.seconds)
    return EchoResult(value="slept")


@method("test.block", params=BlockingParams, result=EchoResult)
def block(params: BlockingParams, ctx: RequestContext) -> EchoResult:
    """Busy a handler thread, checking for cancellation."""
    deadline = time.monotonic() + params.seconds
    while time.monotonic() < deadline:
        ctx.check_cancelled()
        time.sleep(0.01)
    return EchoResult(value="blocked")


@method("test.stuck", params=BlockingParams, result=EchoResult, events=("progress", "result"))
async def stuck(params: BlockingParams, ctx: RequestContext) -> EchoResult:
    """Hold a thread of the loop's executor (as ingest's file reads do) without ever checking for cancellation,
    like a read that never returns: the request can be cancelled, the thread cannot."""
    ctx.progress("stuck")  # tests wait for this: the request is in flight, its thread about to block
    await ctx.run_in_thread(time.sleep, params.seconds)
    return EchoResult(value="unstuck")


@method("test.noisy", params=NoisyParams, result=EchoResult)
def noisy(params: NoisyParams, ctx: RequestContext) -> EchoResult:
    """Write to stdout in every way a careless library might."""
    print(params.text)
    sys.stdout.write(params.text + "\n")
    sys.stdout.flush()
    os.write(1, (params.text + "\n").encode())
    os.system(f"echo {params.text!r}")  # a child process inheriting fd 1
    return EchoResult(value=params.text)


@method("test.echo", params=NoisyParams, result=EchoResult, events=("delta", "result"))
async def echo(params: NoisyParams, ctx: RequestContext) -> EchoResult:
    ctx.delta(params.text)
    return EchoResult(value=params.text)


@method("test.crash", params=NoisyParams, result=EchoResult)
def crash(params: NoisyParams, ctx: RequestContext) -> EchoResult:
    raise ZeroDivisionError("a bug")


@method("test.missing", params=NoisyParams, result=EchoResult)
def missing(params: NoisyParams, ctx: RequestContext) -> EchoResult:
    raise NotFound(f"no such thing: {params.text}")
