"""The layering the code must keep, checked on every import (top level, function-local, TYPE_CHECKING):

- every module sits in a layer of LAYERS and imports only modules of its own layer or of the layers below it;
- the client (`jsonl_engine/client.py`) imports nothing of the engine but the wire models;
- no import cycles; SQL only under `store/`; the environment read only in `config.py` (every setting is a field of
  `Settings`); no `import_module` on a built string (the composition root imports the plugins the user names).

`test_each_rule_fails_on_a_planted_violation` copies the tree, plants one violation per rule and shows each check
reports it.
"""

from __future__ import annotations

import ast
import functools
import re
import shutil
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "jsonl_engine"
SQL = re.compile(r"import sqlite3|sqlite3\.|SELECT |INSERT |UPDATE |DELETE |MATCH|bm25\(")  # the library, or SQL

# Top to bottom. A module imports from its own layer or a lower one; the modules of one layer may import each
# other (the cycle check still applies).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("jsonl_engine.__main__", "jsonl_engine.cli", "jsonl_engine.cli_oneshot", "jsonl_engine.mcp_server",
     "jsonl_engine.schemagen"),                                     # entry points
    ("jsonl_engine.client",),                                       # the Python client (wire models only)
    ("jsonl_engine.wire",),                                         # framing, envelope, the server loop
    ("jsonl_engine.app",),                                          # the composition root
    ("jsonl_engine.methods",),                                      # thin handlers
    ("jsonl_engine.registry", "jsonl_engine.context"),              # the method record, a request's context
    ("jsonl_engine.models",),                                       # the wire contract
    ("jsonl_engine.answer",),                                       # domain, top to bottom
    ("jsonl_engine.retrieval",),
    ("jsonl_engine.ingest",),
    ("jsonl_engine.identity",),
    ("jsonl_engine.store",),
    ("jsonl_engine.llm",),                                          # shared by every layer
    ("jsonl_engine.config",),
    ("jsonl_engine.text", "jsonl_engine.vocabulary"),               # the tokenizer; the search vocabulary
    ("jsonl_engine.errors",),
    ("jsonl_engine",),                                              # the package itself (version): this module only
)
ROOT = "jsonl_engine"
CLIENT = "jsonl_engine.client"
CLIENT_MAY_IMPORT = ("jsonl_engine.models",)
ENVIRONMENT_READER = "jsonl_engine.config"
PLUGIN_LOADER = "jsonl_engine.app"


def modules(package: Path = PACKAGE) -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in package.rglob("*.py"):
        parts = list(path.with_suffix("").relative_to(package.parent).parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


@functools.cache
def _walked(text: str) -> tuple[ast.AST, ...]:
    """Every node of a module's syntax tree, parsed once per text (the planted copies share all files but one)."""
    return tuple(ast.walk(ast.parse(text)))


def _nodes(path: Path) -> tuple[ast.AST, ...]:
    return _walked(path.read_text(encoding="utf-8"))


def _is_import_module(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
        "import_module", "__import__")


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> modules it imports anywhere (top level, function-local, TYPE_CHECKING, import_module("...")).
    Importing a submodule is an edge to the submodule only (its parent package initialises first, not in a cycle)."""
    mods = modules(package)
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, (path, is_pkg) in mods.items():
        pkg = name if is_pkg else name.rsplit(".", 1)[0]
        for node in _nodes(path):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = pkg.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            elif _is_import_module(node) and node.args and isinstance(node.args[0], ast.Constant):
                targets = [str(node.args[0].value)]
            for target in targets:
                while target and target not in mods:
                    target = target.rsplit(".", 1)[0] if "." in target else ""
                if target and target != name:
                    graph[name].add(target)
    return graph


def layer_of(module: str) -> int | None:
    """The index in LAYERS of the longest prefix naming `module` (None: in no layer)."""
    best: tuple[int, int] | None = None
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            within = module == prefix or (prefix != ROOT and module.startswith(prefix + "."))
            if within and (best is None or len(prefix) > best[0]):
                best = (len(prefix), index)
    return None if best is None else best[1]


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


def unplaced(package: Path = PACKAGE) -> list[str]:
    return sorted(m for m in modules(package) if layer_of(m) is None)


def upward_imports(package: Path = PACKAGE) -> list[tuple[str, str]]:
    """(module, target) where the target's layer is above the module's."""
    graph = import_graph(package)
    return sorted((m, t) for m, targets in graph.items() for t in targets
                  if None not in (layer_of(m), layer_of(t)) and layer_of(t) < layer_of(m))


def client_imports(package: Path = PACKAGE) -> list[str]:
    """What the client imports of the engine besides the wire models."""
    return sorted(t for t in import_graph(package).get(CLIENT, set())
                  if not any(t == ok or t.startswith(ok + ".") for ok in CLIENT_MAY_IMPORT))


def sql_outside_store(package: Path = PACKAGE) -> list[str]:
    return [f"{path.relative_to(package.parent)}:{n}: {line.strip()}"
            for path in sorted(package.rglob("*.py")) if "store" not in path.relative_to(package).parts[:1]
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1) if SQL.search(line)]


def _reads_engine_variable(node: ast.AST) -> bool:
    """`os.environ.get("JSONL_ENGINE_X")`, `os.getenv(...)`, `os.environ["JSONL_ENGINE_X"]`, `env.get(...)`."""
    if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
            "get", "getenv", "pop", "setdefault"):
        key = node.args[0] if node.args else None
    elif isinstance(node, ast.Subscript):
        key = node.slice
    else:
        return False
    return isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value.startswith("JSONL_ENGINE_")


def environment_reads(package: Path = PACKAGE) -> list[str]:
    """Engine variables read outside config.py (every setting goes through `Settings`)."""
    return sorted(f"{name}:{node.lineno}" for name, (path, _) in modules(package).items() if name != ENVIRONMENT_READER
                  for node in _nodes(path) if _reads_engine_variable(node))


def built_imports(package: Path = PACKAGE) -> list[str]:
    """import_module on anything but a literal, outside the composition root's plugin loader."""
    return sorted(f"{name}:{node.lineno}" for name, (path, _) in modules(package).items() if name != PLUGIN_LOADER
                  for node in _nodes(path)
                  if _is_import_module(node) and not (node.args and isinstance(node.args[0], ast.Constant)))


CHECKS = {
    "layers": upward_imports,
    "placed": unplaced,
    "client": client_imports,
    "cycles": lambda package=PACKAGE: cycles(import_graph(package)),
    "sql": sql_outside_store,
    "environment": environment_reads,
    "import_module": built_imports,
}


@pytest.mark.parametrize("rule", sorted(CHECKS))
def test_the_tree_keeps_each_rule(rule: str) -> None:
    assert CHECKS[rule]() == []


def test_the_cycle_check_sees_function_local_imports(tmp_path) -> None:
    assert cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]


# One violation per rule, planted in a copy of the tree: (file, text appended). Imports are function-local, so the
# checks are shown to see those too.
PLANTS = {
    "layers": ("errors.py", "\n\ndef _planted():\n    from jsonl_engine import config\n"),
    "placed": ("planted/__init__.py", "X = 1\n"),
    "client": ("client.py", "\n\ndef _planted():\n    from jsonl_engine.store import open_store\n"),
    "cycles": ("identity/titles.py", "\n\ndef _planted():\n    from jsonl_engine.ingest import outcome\n"),
    "sql": ("retrieval/rank.py", '\n_PLANTED = "SELECT 1"\n'),
    "environment": ("ingest/ocr.py", '\n\ndef _planted():\n    return os.environ.get("JSONL_ENGINE_PLANTED")\n'),
    "import_module": ("ingest/parsers.py", "\n\ndef _planted(name):\n    import importlib\n\n"
                                           '    return importlib.import_module(f"jsonl_engine.ingest.{name}")\n'),
}


def test_each_rule_fails_on_a_planted_violation(tmp_path) -> None:
    assert sorted(PLANTS) == sorted(CHECKS)
    for rule, (rel, text) in PLANTS.items():
        copy = tmp_path / rule / "jsonl_engine"
        shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
        target = copy / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a", encoding="utf-8") as fh:
            fh.write(text)
        for other, check in CHECKS.items():
            found = check(copy)
            if other == rule:
                assert found, f"{rule}: the planted violation in {rel} is not reported"
            elif (rule, other) != ("cycles", "layers"):  # the planted cycle also imports upwards
                assert found == [], (rule, other, found)


def where_a_change_goes(text: str, root: Path) -> list[str]:
    """The files and folders the "Where a change goes" table of ARCHITECTURE.md names (`store/port.py`, `rank.py`
    after `retrieval/weights.py` in one cell) that are not in the repository (`<name>`: a placeholder)."""
    table = text.split("## Where a change goes", 1)[1].split("\n## ", 1)[0]
    package = root / "jsonl_engine"
    missing = []
    for row in (line for line in table.splitlines() if line.startswith("| ") and "---" not in line):
        for cell in row.strip("|").split(" | ")[1:]:
            folder = package
            for name in re.findall(r"`([^`\s]+(?:\.py|\.md|/))`", cell):
                if "<" in name:
                    continue
                if "/" in name.rstrip("/"):
                    base = root if name.startswith(("tests/", "bench/", "schemas/")) else package
                    found = (base / name).resolve()
                    folder = found if name.endswith("/") else found.parent
                else:  # beside the last path named, else a top-level module or folder
                    found = next((c for c in (folder / name, package / name, root / name) if c.exists()), folder / name)
                if not found.exists() or not found.resolve().is_relative_to(root):
                    missing.append(name)
    return missing


def test_where_a_change_goes_names_files_that_exist(tmp_path) -> None:
    root = PACKAGE.parent
    text = (root / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert "../" not in text.split("```", 1)[0]  # the protocol is the repository's PROTOCOL.md
    assert where_a_change_goes(text, root) == []
    planted = text.replace("`ingest/outcome.py`", "`ingest/policy.py`").replace("`PROTOCOL.md`", "`../shared/PROTOCOL.md`")
    assert where_a_change_goes(planted, root) == ["ingest/policy.py", "../shared/PROTOCOL.md"]
