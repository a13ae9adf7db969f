"""The house's shape, checked: no import circles, no import running back up the layers, no copied code.

What issue 22 asked for, kept true by the suite instead of by review. The layers, lowest first, are those of
docs/architecture.md; within a package modules may import each other freely, but never in a circle (imports inside
functions count: a circle broken only by a lazy import is still a circle in the design).
"""
from __future__ import annotations

import ast
import collections
from pathlib import Path
from typing import Dict, List, Optional, Set

import pytest

ROOT = Path(__file__).resolve().parent.parent / "paimon_tail"
GENERATED = {"service/protocol/lookup_pb2.py", "service/protocol/lookup_pb2_grpc.py",
             "service/protocol/lookup_pb2.pyi"}

# Lowest first. A part may import parts of its own layer's number or lower, never higher.
LAYERS: Dict[str, int] = {
    "errors": 0, "log_format": 0, "concurrency": 0,
    "storage": 1, "atomic_file": 1, "table_meta": 1,
    "compat": 2,
    "catalog": 3, "catalogs": 3,
    "stream": 4, "output": 4, "expire": 4, "table_info": 4,
    "tail": 5, "demo": 5, "demo_daemon": 5, "demo_view": 5, "service": 5, "follow_metrics": 5,
    "arrow_join": 6,
    "spark": 7,
    "cli": 8, "__main__": 8,
}


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(root: Path = ROOT) -> Dict[str, Path]:
    modules = {_module_name(p, root): p for p in root.rglob("*.py")}
    assert root != ROOT or len(modules) > 50, f"paimon_tail's modules not found under {ROOT}"
    return modules


def _resolve(package: str, level: int, module: Optional[str]) -> str:
    if not level:
        return module or ""
    base = package.split(".")[: len(package.split(".")) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _lazy_faces(modules: Dict[str, Path]) -> Dict[str, Dict[str, str]]:
    """package → {name: module} for packages whose ``__init__`` hands names on lazily (``_LAZY`` and a module
    ``__getattr__``): importing such a name from the package depends on the module behind it."""
    faces: Dict[str, Dict[str, str]] = {}
    for name, path in modules.items():
        if path.name != "__init__.py":
            continue
        tree = ast.parse(path.read_text())
        if not any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body):
            continue
        for node in tree.body:
            if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in node.targets)
                    and isinstance(node.value, ast.Dict)):
                lazy = {}
                for key, value in zip(node.value.keys, node.value.values):
                    if isinstance(key, ast.Constant) and isinstance(value, ast.Constant):
                        target = value.value
                        level = len(target) - len(target.lstrip("."))
                        lazy[key.value] = _resolve(name, level, target.lstrip(".") or None)
                faces[name] = lazy
    return faces


def _imports(modules: Dict[str, Path], type_hints: bool = True) -> Dict[str, Set[str]]:
    """module → the paimon_tail modules it imports anywhere in its body, and through a lazy package face the module
    behind the name; ``type_hints`` counts those under ``if TYPE_CHECKING`` too (a circle closed by a type hint is
    still a circle in the design)."""
    faces = _lazy_faces(modules)
    graph: Dict[str, Set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: Set[str] = set()

        class Visitor(ast.NodeVisitor):
            def visit_If(self, node: ast.If) -> None:
                checking = (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING") or (
                    isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")
                if type_hints or not checking:
                    self.generic_visit(node)
                else:
                    for other in node.orelse:
                        self.visit(other)

            def visit_Import(self, node: ast.Import) -> None:
                found.update(a.name for a in node.names)

            def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
                module = _resolve(package, node.level, node.module)
                for alias in node.names:
                    sub = f"{module}.{alias.name}"
                    if sub in modules:
                        found.add(sub)
                    else:
                        found.add(module)
                        if alias.name in faces.get(module, {}):
                            found.add(faces[module][alias.name])

        Visitor().visit(ast.parse(path.read_text()))
        graph[name] = {m for m in found if m in modules and m != name}
    for face, lazy in faces.items():  # a face's own names: its module depends on them when they are asked for
        graph[face] |= {m for m in lazy.values() if m in modules and m != face}
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


# -- inside service/: the query service's own layers and rooms -------------------------------------------------
# Lowest first, as docs/architecture.md draws them. A sub-part imports its own number or lower, never higher.
SERVICE_LAYERS: Dict[str, int] = {"protocol": 0, "keys": 1, "metrics": 1, "store": 2, "client": 3, "executor": 3,
                                  "coordinator": 4}
# Sides that never import each other, whatever their layers: they meet only in protocol/. (The coordinator may use
# the client, a layer below it: it answers Lookup by asking the executors as any client does.)
APART = [("client", "executor"), ("executor", "coordinator")]
# An executor runs one way, from the process's entry down to one lookup's answer, never back: each step imports only
# the steps after it (modules not named here, like state.py and the metrics, sit beside the flow).
EXECUTOR_FLOW = [["entry"], ["runner"], ["join_loop"], ["session"], ["holding"], ["servicer"], ["lookups"],
                 ["typed_keys", "arrow_keys"], ["refusals"], ["views"]]


def _service_part(module: str) -> str:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "service" else ""


def _flow_step(module: str) -> Optional[int]:
    name = module.split(".")[3:4]
    return next((i for i, step in enumerate(EXECUTOR_FLOW) if name and name[0] in step), None)


def _service_violations(graph: Dict[str, Set[str]]) -> List[str]:
    found = []
    for module, targets in graph.items():
        source = _service_part(module)
        if not source:
            continue
        for target in sorted(targets):
            destination = _service_part(target)
            if not destination or destination == source:
                if destination == source == "executor":
                    here, there = _flow_step(module), _flow_step(target)
                    if here is not None and there is not None and there <= here and module != target:
                        found.append(f"{module} -> {target}: back up the executor's flow")
                continue
            if SERVICE_LAYERS[destination] > SERVICE_LAYERS[source]:
                found.append(f"{module} -> {target}: up the service's layers")
            elif (source, destination) in APART or (destination, source) in APART:
                found.append(f"{module} -> {target}: {source}/ and {destination}/ meet only in protocol/")
    return found


def test_every_service_part_has_a_layer():
    parts = {_service_part(m) for m in _modules()} - {""}
    assert parts <= set(SERVICE_LAYERS), f"add to SERVICE_LAYERS (and docs/architecture.md): {parts - set(SERVICE_LAYERS)}"


def test_nothing_runs_up_the_service_layers():
    assert _service_violations(_imports(_modules())) == []


@pytest.mark.parametrize("source, target, why", [
    ("paimon_tail.service.protocol.wire", "paimon_tail.service.keys.routing", "up the service's layers"),
    ("paimon_tail.service.client.route", "paimon_tail.service.executor.state",
     "client/ and executor/ meet only in protocol/"),
    ("paimon_tail.service.executor.state", "paimon_tail.service.coordinator.lease",
     "up the service's layers"),
    ("paimon_tail.service.coordinator.lease", "paimon_tail.service.executor.state",
     "coordinator/ and executor/ meet only in protocol/"),
    ("paimon_tail.service.executor.lookups", "paimon_tail.service.executor.servicer", "back up the executor's flow"),
    ("paimon_tail.service.executor.servicer", "paimon_tail.service.executor.runner", "back up the executor's flow"),
    ("paimon_tail.service.executor.views", "paimon_tail.service.executor.refusals", "back up the executor's flow"),
    ("paimon_tail.service.executor.typed_keys", "paimon_tail.service.executor.arrow_keys",
     "back up the executor's flow"),
    ("paimon_tail.service.client.route", "paimon_tail.service.coordinator.lease", "up the service's layers"),
])
def test_each_service_rule_fails_on_a_violation(source, target, why):
    """The rules are not vacuous: one deliberate import against each is reported, and only it."""
    graph = _imports(_modules())
    assert source in graph and target in graph, "a module of the example moved: name one that exists"
    assert target not in graph[source]
    broken = {m: set(t) for m, t in graph.items()}
    broken[source].add(target)
    before = _service_violations(graph)
    assert [v for v in _service_violations(broken) if v not in before] == [f"{source} -> {target}: {why}"]


def _tree(tmp_path: Path, files: Dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for name, text in {"__init__.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_a_circle_closed_by_a_type_hint_is_a_circle(tmp_path):
    root = _tree(tmp_path, {
        "a.py": "from . import b\n",
        "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import Thing\n",
    })
    assert _circles(_imports(_modules(root))) == [["pkg.a", "pkg.b"]]
    assert _circles(_imports(_modules(root), type_hints=False)) == []  # what the old check saw


def test_a_circle_through_a_lazy_package_face_is_a_circle(tmp_path):
    root = _tree(tmp_path, {
        "side/__init__.py": ("import importlib\n_LAZY = {'Client': '.client'}\n"
                             "def __getattr__(name):\n    return getattr(importlib.import_module(_LAZY[name], "
                             "__name__), name)\n"),
        "side/client.py": "from ..core import run\n",
        "core.py": "def run():\n    from .side import Client\n",
    })
    graph = _imports(_modules(root))
    assert "pkg.side.client" in graph["pkg.core"]
    assert any({"pkg.core", "pkg.side.client"} <= set(c) for c in _circles(graph))


LONG = 400


def test_long_modules_say_why():
    """A module over ~400 lines says in its docstring why it is one module ("Why one module: ...", or "(~N lines):")."""
    silent = []
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative in GENERATED:
            continue
        lines = len(path.read_text().splitlines())
        if lines > LONG + 20 and "Why one module" not in (ast.get_docstring(ast.parse(path.read_text())) or ""):
            silent.append(f"{relative} ({lines} lines)")
    assert silent == []


def test_no_two_modules_share_a_name():
    """One name, one module: a reader who greps for ``quick.py`` finds one. The commands in ``cli/`` are named after
    the command they define (``cli/demo.py`` is ``paimon-tail demo``), so they are not counted."""
    names = collections.defaultdict(list)
    for path in ROOT.rglob("*.py"):
        relative = path.relative_to(ROOT).as_posix()
        if path.name != "__init__.py" and relative not in GENERATED and not relative.startswith("cli/"):
            names[path.name].append(relative)
    assert {n: sorted(p) for n, p in names.items() if len(p) > 1} == {}
