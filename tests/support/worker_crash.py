"""Test-only plugin (`--plugin tests.support.worker_crash`): pool workers die like pdfium crashing on a hostile file.

Importing this module swaps `pdf.parse_small_pdf` (the daemon's first pool task for every PDF) for
`parse_or_crash`. The pool pickles that function by reference, so each worker imports this module too and runs
it: a PDF whose name contains "crashme" kills its worker with SIGSEGV, any other PDF is parsed as usual.
`test.kill_worker` SIGKILLs an idle worker of the daemon's pool.
"""

from __future__ import annotations

import asyncio
import os
import signal

from jsonl_engine.context import RequestContext
from jsonl_engine.ingest import pdf
from jsonl_engine.ingest.model import ParsedDocument, PdfInfo
from jsonl_engine.models import Params, Result
from jsonl_engine.registry import method

CRASH_MARK = "crashme"
_parse_small_pdf = pdf.parse_small_pdf


def parse_or_crash(path: str, max_pages: int | None, *rest: object) -> ParsedDocument | PdfInfo:
    if CRASH_MARK in os.path.basename(path):
        os.kill(os.getpid(), signal.SIGSEGV)
    return _parse_small_pdf(path, max_pages, *rest)


pdf.parse_small_pdf = parse_or_crash


class KillParams(Params):
    pass


class KillResult(Result):
    pid: int


@method("test.kill_worker", params=KillParams, result=KillResult)
async def kill_worker(params: KillParams, ctx: RequestContext) -> KillResult:
    """SIGKILL one worker of the pool between requests, and return once the pool knows it is broken."""
    pool = ctx.app.pool()
    pid = await ctx.run_in_process(os.getpid)  # a worker's pid (starting the workers if need be)
    os.kill(pid, signal.SIGKILL)
    for _ in range(1000):  # a hang guard: the pool's manager thread notices within milliseconds
        if getattr(pool, "_broken", False):
            break
        await asyncio.sleep(0.01)
    return KillResult(pid=pid)
