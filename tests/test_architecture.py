"""The house's shape, checked: no import circles, no import running back up the layers, no copied code.

What issue 22 asked for, kept true by the suite instead of by review. The layers, lowest first, are those of
docs/architecture.md; within a package modules may import each other freely, but never in a circle (imports inside
functions count: a circle broken only by a lazy import is still a circle in the design).
"""
from __future__ import annotations

import ast
import collections
from pathlib import Path
from typing import Dict, List, Set

ROOT = Path(__file__).resolve().parent.parent / "paimon_tail"
GENERATED = {"service/protocol/lookup_pb2.py", "service/protocol/lookup_pb2_grpc.py",
             "service/protocol/lookup_pb2.pyi"}

# Lowest first. A part may import parts of its own layer's number or lower, never higher.
LAYERS: Dict[str, int] = {
    "errors": 0, "log_format": 0, "concurrency": 0,
    "storage": 1, "atomic_file": 1,
    "compat": 2,
    "catalog": 3, "catalogs": 3,
    "stream": 4, "output": 4, "expire": 4, "table_info": 4,
    "tail": 5, "demo": 5, "demo_daemon": 5, "demo_view": 5, "service": 5, "follow_metrics": 5,
    "arrow_join": 6,
    "spark": 7,
    "cli": 8, "__main__": 8,
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> Dict[str, Path]:
    modules = {_module_name(p): p for p in ROOT.rglob("*.py")}
    assert len(modules) > 50, f"paimon_tail's modules not found under {ROOT}"
    return modules


def _imports(modules: Dict[str, Path]) -> Dict[str, Set[str]]:
    """module → the paimon_tail modules it imports anywhere in its body (not under ``if TYPE_CHECKING``)."""
    graph: Dict[str, Set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: Set[str] = set()

        class Visitor(ast.NodeVisitor):
            def visit_If(self, node: ast.If) -> None:
                if not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                    self.generic_visit(node)

            def visit_Import(self, node: ast.Import) -> None:
                found.update(a.name for a in node.names)

            def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                for alias in node.names:
                    sub = f"{module}.{alias.name}"
                    found.add(sub if sub in modules else module)

        Visitor().visit(ast.parse(path.read_text()))
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _circles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circles():
    graph = _imports(_modules())
    # the package's own __init__ is its public face: it re-exports lazily from every part, and parts read its
    # __version__; neither is a dependency between parts
    graph = {m: {t for t in targets if t != "paimon_tail"} for m, targets in graph.items() if m != "paimon_tail"}
    assert _circles(graph) == []


def test_every_part_has_a_layer():
    parts = {_part(m) for m in _modules()} - {""}
    assert parts <= set(LAYERS), f"add these parts to LAYERS (and docs/architecture.md): {parts - set(LAYERS)}"


def test_no_import_runs_up_the_layers():
    upward = []
    for module, targets in _imports(_modules()).items():
        source = _part(module)
        if not source:
            continue
        for target in targets:
            destination = _part(target)
            if destination and LAYERS[destination] > LAYERS[source]:
                upward.append(f"{module} -> {target}")
    assert upward == []


def _windows(lines: List[str], size: int):
    for i in range(len(lines) - size + 1):
        yield i, tuple(text for _, text in lines[i:i + size])


def test_no_copied_code():
    """No run of six or more identical lines (blank lines and comments aside) in two places outside generated code;
    runs of lines that say nothing by themselves (closing brackets, ``else:``, a docstring's quotes) do not count."""
    size = 6
    seen: Dict[tuple, str] = {}
    copies = collections.defaultdict(set)
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative in GENERATED:
            continue
        lines = [(n, line.strip()) for n, line in enumerate(path.read_text().splitlines(), 1)
                 if line.strip() and not line.strip().startswith("#")]
        for i, window in _windows(lines, size):
            if sum(len(text) > 12 for text in window) < size - 1:
                continue
            where = f"{relative}:{lines[i][0]}"
            if window in seen and seen[window].split(":")[0] != relative or (
                    window in seen and int(seen[window].split(":")[1]) + size <= lines[i][0]):
                copies[seen[window]].add(where)
            else:
                seen.setdefault(window, where)
    assert dict(copies) == {}
