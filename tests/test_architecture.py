"""docs/architecture.md, checked: layers, no harness in the library, no cycles, no importlib, core-only imports."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "llama_index_sac"
HARNESS = ("apps",)
LAYERS = [
    ("_util", "_warn", "_callable_identity", "_json_io", "constants"),
    ("spans", "tables", "sentences"),
    ("embeddings", "vector_stores", "node_parser"),
    ("summarizers",),
    ("documents", "augmentation", "evaluation"),
    ("ingestion", "retrievers"),
    ("settings",),
    HARNESS,
]
CORE = {"llama_index", "numpy", "nupunkt", "nltk", "pydantic", "pydantic_core", "tqdm", "httpx", "llama_index_sac",
        "Stemmer", "tenacity"}  # PyStemmer
MAX_LINES = 450


def modules() -> dict[str, Path]:
    return {".".join(p.relative_to(PACKAGE).with_suffix("").parts): p for p in sorted(PACKAGE.rglob("*.py"))}


def top(name: str) -> str:
    """The first component under the package: 'node_parser.base' -> 'node_parser', '__init__' -> '__init__'."""
    return name.split(".")[0]


def layer(name: str) -> int:
    for index, group in enumerate(LAYERS):
        if top(name) in group:
            return index
    raise AssertionError(f"module {name} is in no layer of docs/architecture.md")


def imports(path: Path) -> list[tuple[str, bool, int]]:
    """(imported module, at module level?, line) for every import of the file, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(("llama_index_sac", *path.relative_to(PACKAGE).parent.parts))
    found: list[tuple[str, bool, int]] = []

    def visit(node: ast.AST, module_level: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = module_level and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                inner = False  # only for type checkers: not a runtime import
            if isinstance(child, ast.Import):
                found.extend((alias.name, module_level, child.lineno) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parts = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join([*parts, base]) if base else ".".join(parts)
                found.append((base, module_level, child.lineno))
                if base == "llama_index_sac" or base.startswith("llama_index_sac."):
                    found.extend((f"{base}.{a.name}", module_level, child.lineno) for a in child.names)
            visit(child, inner)

    visit(tree, True)
    return found


def own(imported: str) -> str | None:
    """The package module an import names ('llama_index_sac.spans' -> 'spans'), or None for a third party."""
    if imported == "llama_index_sac" or not imported.startswith("llama_index_sac."):
        return None
    name = imported[len("llama_index_sac."):]
    known = modules()
    while name and name not in known and f"{name}.__init__" not in known:
        name = name.rpartition(".")[0]  # 'summarizers.base.SummaryResult' -> 'summarizers.base'
    return name or None


@pytest.mark.parametrize("name", sorted(modules()))
def test_layers_and_harness_rule(name: str) -> None:
    path = modules()[name]
    mine = len(LAYERS) - 2 if name == "__init__" else layer(name)
    for imported, module_level, line in imports(path):
        target = own(imported)
        if target is None or top(target) == top(name):
            continue
        theirs = layer(target)
        if name == "__init__" and top(target) in HARNESS:
            assert not module_level, f"__init__.py:{line} imports the harness ({imported}) at import time"
            continue
        assert theirs <= mine, f"{name}.py:{line} imports {imported} (layer {theirs} above its layer {mine})"


@pytest.mark.parametrize("name", sorted(n for n in modules() if top(n) not in HARNESS and n != "__init__"))
def test_library_imports_only_core_dependencies_at_module_level(name: str) -> None:
    for imported, module_level, line in imports(modules()[name]):
        root = imported.split(".")[0]
        if module_level and root and root not in sys.stdlib_module_names:
            assert root in CORE, f"{name}.py:{line} imports {imported} at module level (not a core dependency)"
            if root == "llama_index":
                assert imported.startswith("llama_index.core"), f"{name}.py:{line}: {imported} is an extra"


@pytest.mark.parametrize("name", sorted(n for n in modules() if n.startswith("apps.ingest.")))
def test_the_ingest_tool_imports_nothing_from_the_benchmark(name: str) -> None:
    """The two applications are built from library objects: the ingest tool never reaches into the benchmark."""
    for imported, _, line in imports(modules()[name]):
        target = own(imported) or ""
        assert not (target == "apps.benchmark" or target.startswith("apps.benchmark.")), (
            f"{name}.py:{line} imports {imported}: build from llama_index_sac (e.g. llama_index_sac.settings)")


def test_no_import_cycles_between_modules() -> None:
    graph: dict[str, set[str]] = {name: set() for name in modules()}
    for name, path in modules().items():
        for imported, _, _ in imports(path):
            target = own(imported)
            if target is not None and target != name:
                graph[name].add(target if target in graph else f"{target}.__init__")
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if nxt.endswith("__init__") or node.endswith("__init__"):
                continue  # a package's __init__ re-exports its modules: not a dependency cycle
            assert state.get(nxt) != 1, f"import cycle: {' -> '.join([*trail, node, nxt])}"
            if nxt not in state:
                visit(nxt, [*trail, node])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [])


@pytest.mark.parametrize("name", sorted(modules()))
def test_no_importlib_for_own_modules_and_size(name: str) -> None:
    text = modules()[name].read_text(encoding="utf-8")
    assert "import_module(\"llama_index_sac" not in text and "import_module('llama_index_sac" not in text, name
    lines = text.count("\n")
    assert lines <= MAX_LINES, f"{name}.py has {lines} lines (at most {MAX_LINES}: split it by concept)"


def test_import_llama_index_sac_pulls_no_harness_and_no_heavy_dependency() -> None:
    import subprocess

    code = ("import sys, llama_index_sac; bad = [m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'typer', 'matplotlib', 'sklearn', 'transformers', 'openai') or m.startswith("
            "'llama_index_sac.apps')]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
