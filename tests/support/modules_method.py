"""A test-only method, loaded with `--plugin tests.support.modules_method`: the modules the daemon has imported, and
how many objects the collector holds frozen (gc.get_freeze_count)."""

from __future__ import annotations

import gc
import sys

from jsonl_engine.context import RequestContext
from jsonl_engine.models import Params, Result
from jsonl_engine.registry import method


class ModulesParams(Params):
    pass


class ModulesResult(Result):
    modules: list[str]
    frozen: int


@method("test.modules", params=ModulesParams, result=ModulesResult, inline=True)
def modules(params: ModulesParams, ctx: RequestContext) -> ModulesResult:
    """Every module in sys.modules; the objects frozen."""
    return ModulesResult(modules=sorted(sys.modules), frozen=gc.get_freeze_count())
