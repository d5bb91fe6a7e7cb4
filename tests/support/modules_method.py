"""A test-only method, loaded with `--plugin tests.support.modules_method`: the modules the daemon has imported."""

from __future__ import annotations

import sys

from jsonl_engine.context import RequestContext
from jsonl_engine.models import Params, Result
from jsonl_engine.registry import method


class ModulesParams(Params):
    pass


class ModulesResult(Result):
    modules: list[str]


@method("test.modules", params=ModulesParams, result=ModulesResult, inline=True)
def modules(params: ModulesParams, ctx: RequestContext) -> ModulesResult:
    """Every module in sys.modules."""
    return ModulesResult(modules=sorted(sys.modules))
