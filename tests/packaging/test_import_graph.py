"""The import graph of trex, read from the source (every import statement, function-level ones
included, and every `importlib.import_module("literal")`), against the layering of docs/contracts.md:

* no module imports a later layer (LAYERS, lowest first);
* no import circle between modules (a strongly connected component of more than one module);
* codegen, tuning, cost models and bench reach fused ops only through the registry: no import of
  `trex.passes` from them.

Reading the source, not `sys.modules`, sees lazy imports too: a function-level import is still an
edge, which is how the circles this test guards against were hidden before.
"""
from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "trex"

# lowest first; a module may import its own layer and earlier ones
LAYERS: list[tuple[str, ...]] = [
    ("trex", "trex.resources"),
    ("trex.compiler",),
    ("trex.passes",),
    ("trex.cost_models",),
    ("trex.codegen_ascendc", "trex.codegen_triton"),
    ("trex.tuning",),
    ("trex.training",),
    ("bench",),
]
# The one sanctioned upward edge: the registry imports the pass packages by name so that they fill it
# (DESIGN.md: a lower layer reaches a later one through a registry the later one fills).
ALLOWED_UPWARD = {("trex.compiler.registry", "trex.passes")}
# reach fused ops only through trex.compiler.registry
NO_PASSES_IMPORT = ("trex.codegen_ascendc", "trex.codegen_triton", "trex.cost_models", "trex.tuning", "bench")


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_modules() -> dict[str, Path]:
    files = sorted(PACKAGE.rglob("*.py")) + sorted((ROOT / "bench").glob("*.py"))
    return {module_name(p): p for p in files}


def _resolve(name: str, modules: dict) -> str | None:
    """The trex/bench module an imported dotted name refers to (its longest known prefix)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def imports_of(name: str, path: Path, modules: dict) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_pkg = path.name == "__init__.py"
    package = name if is_pkg else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            # `from pkg import sub` names the submodule when there is one, else the package
            targets = [f"{mod}.{alias.name}" if f"{mod}.{alias.name}" in modules else mod for alias in node.names]
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            targets = [node.args[0].value]
        for t in targets:
            resolved = _resolve(t, modules)
            if resolved is not None and resolved != name:
                found.add(resolved)
    return found


def layer_of(name: str) -> int:
    best, rank = -1, None
    for i, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), i
    assert rank is not None, f"{name} is in no layer of LAYERS: add its package there"
    return rank


@pytest.fixture(scope="module")
def graph() -> nx.DiGraph:
    modules = source_modules()
    g = nx.DiGraph()
    for name, path in modules.items():
        g.add_node(name)
        for dep in imports_of(name, path, modules):
            g.add_edge(name, dep)
    return g


def _under(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_the_graph_is_read(graph):
    # a reader that finds nothing would pass every rule below
    assert graph.number_of_nodes() > 100 and graph.number_of_edges() > 200
    assert graph.has_edge("trex.compiler.backend", "trex.compiler.registry")


def upward_imports(graph) -> list[str]:
    return sorted(f"{a} (layer {layer_of(a)}) imports {b} (layer {layer_of(b)})"
                  for a, b in graph.edges if layer_of(b) > layer_of(a) and (a, b) not in ALLOWED_UPWARD)


def import_circles(graph) -> list[str]:
    return sorted(" <-> ".join(sorted(c)) for c in nx.strongly_connected_components(graph) if len(c) > 1)


def passes_imports(graph) -> list[str]:
    return sorted(f"{a} imports {b}" for a, b in graph.edges
                  if _under(a, NO_PASSES_IMPORT) and _under(b, ("trex.passes",)))


RULES = {"upward": upward_imports, "circle": import_circles, "passes": passes_imports}


def test_no_upward_import(graph):
    assert not upward_imports(graph), "imports of a later layer:\n" + "\n".join(upward_imports(graph))


def test_no_import_circle(graph):
    assert not import_circles(graph), "import circles:\n" + "\n".join(import_circles(graph))


def test_codegen_tuning_and_bench_reach_ops_through_the_registry(graph):
    bad = passes_imports(graph)
    assert not bad, "imports of trex.passes (use trex.compiler.registry):\n" + "\n".join(bad)


PLANTED = {
    "upward": [("trex.compiler.graph", "trex.training.train")],
    "circle": [("trex.training.config", "trex.training.data"), ("trex.training.data", "trex.training.config")],
    "passes": [("trex.tuning.harness", "trex.passes.rope")],
}


@pytest.mark.parametrize("rule", sorted(RULES))
def test_the_rules_catch_a_planted_violation(rule, graph):
    """Each rule the tests above apply finds a violation planted into the real graph (not vacuous),
    and the sanctioned registry edge is not one."""
    planted = graph.copy()
    planted.add_edges_from(PLANTED[rule])
    assert RULES[rule](planted) and not RULES[rule](graph)
    assert not upward_imports(nx.DiGraph(list(ALLOWED_UPWARD)))


def test_lazy_and_relative_imports_are_edges(tmp_path):
    """A function-level import, a relative import and importlib.import_module("x") are all read."""
    modules = {"trex.training.config": None, "trex.training.data": None, "trex.codegen_triton": None}
    src = tmp_path / "config.py"
    src.write_text("def f():\n    from .data import x\n    import importlib\n"
                   "    importlib.import_module('trex.codegen_triton')\n")
    assert imports_of("trex.training.config", src, modules) == {"trex.training.data", "trex.codegen_triton"}
