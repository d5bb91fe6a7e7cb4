"""The layering the code must keep: SQL only in the SQLite store, no module importing a layer above it, no import
cycles (function-local imports included)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "jsonl_engine"
SQL = re.compile(r"sqlite3|SELECT |INSERT |UPDATE |DELETE |MATCH|bm25\(")
# What each layer may not import (the store is the bottom of the domain; `errors` is shared by all).
FORBIDDEN = {
    "jsonl_engine.store": ("jsonl_engine.context", "jsonl_engine.ingest", "jsonl_engine.retrieval",
                           "jsonl_engine.answer", "jsonl_engine.llm", "jsonl_engine.methods", "jsonl_engine.wire",
                           "jsonl_engine.app", "jsonl_engine.registry", "jsonl_engine.models"),
}


def modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.with_suffix("").relative_to(PACKAGE.parent).parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


def import_graph() -> dict[str, set[str]]:
    """module -> modules it imports anywhere (top level, function-local, TYPE_CHECKING, import_module("...")).
    Importing a submodule is an edge to the submodule only (its parent package initialises first, not in a cycle)."""
    mods = modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, (path, is_pkg) in mods.items():
        package = name if is_pkg else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) \
                    == "import_module" and node.args and isinstance(node.args[0], ast.Constant):
                targets = [str(node.args[0].value)]
            for target in targets:
                while target and target not in mods:
                    target = target.rsplit(".", 1)[0] if "." in target else ""
                if target and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_sql_lives_only_in_the_store() -> None:
    hits = [f"{path.relative_to(PACKAGE.parent)}:{n}: {line.strip()}"
            for path in PACKAGE.rglob("*.py") if "store" not in path.relative_to(PACKAGE).parts[:1]
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1) if SQL.search(line)]
    assert hits == []


def test_no_module_imports_a_layer_above_it() -> None:
    graph = import_graph()
    bad = [(m, t) for m, targets in graph.items() for layer, banned in FORBIDDEN.items()
           if m == layer or m.startswith(layer + ".") for t in targets if t.startswith(banned)]
    assert bad == []


def test_the_cycle_check_sees_function_local_imports(tmp_path) -> None:
    assert cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []
