"""``compat/`` by kind, checked: every monkeypatch lives in ``compat/patches/`` and is installed from its one install
point; ``compat/adapters/`` call pypaimon's private API and patch nothing; each module says why and when it can be
deleted; the docs name the modules that exist.

A rule is a function over source text, so each is also shown to fail on a deliberate violation.
"""
from __future__ import annotations

import ast
import pathlib
import re
import sys
from typing import Dict, List

import pytest

from paimon_tail.compat import patches
from tests import REPO

PACKAGE = REPO / "paimon_tail"
COMPAT = PACKAGE / "compat"
DOCS = [*sorted((PACKAGE.parent / "docs").glob("*.md")), PACKAGE.parent / "README.md"]
INSTALL_POINT = "paimon_tail.compat.patches"


def _modules(kind: str) -> Dict[str, pathlib.Path]:
    return {p.stem: p for p in sorted((COMPAT / kind).glob("*.py")) if p.name != "__init__.py"}


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(source: str, module: str, is_package: bool) -> List[str]:
    """The modules ``source`` (of ``module``) imports, relative imports resolved, ``from X import y`` as ``X.y``."""
    package = module if is_package else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            out += [f"{base}.{a.name}" for a in node.names]
    return out


def patch_imports_outside_the_install_point(sources: Dict[str, str], patch_names) -> List[str]:
    """``module -> patch`` for every module but the install point that imports a patch module itself."""
    found = []
    for module, source in sources.items():
        if module == INSTALL_POINT:
            continue
        is_package = (PACKAGE.parent.joinpath(*module.split(".")) / "__init__.py").is_file()
        for name in _imported(source, module, is_package):
            if any(name == f"{INSTALL_POINT}.{patch}" or name.startswith(f"{INSTALL_POINT}.{patch}.")
                   for patch in patch_names):
                found.append(f"{module} -> {name}")
    return found


def patching_statements(source: str) -> List[str]:
    """Assignments to an attribute of something imported from pypaimon, and ``setattr`` calls: what an adapter
    must not do."""
    tree = ast.parse(source)
    from_pypaimon = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pypaimon"):
            from_pypaimon.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Import):
            from_pypaimon.update(a.asname or a.name.split(".")[0] for a in node.names if a.name.startswith("pypaimon"))
    found = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            root = target
            while isinstance(root, ast.Attribute):
                root = root.value
            if target is not root and isinstance(root, ast.Name) and root.id in from_pypaimon:
                found.append(f"line {node.lineno}: assigns {ast.unparse(target)}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
            found.append(f"line {node.lineno}: setattr")
    return found


def _package_sources() -> Dict[str, str]:
    return {_module_name(p): p.read_text() for p in sorted(PACKAGE.rglob("*.py"))}


# --------------------------------------------------------------------------------------------------- patches
def test_the_two_kinds_and_nothing_else_in_compat():
    assert sorted(p.name for p in COMPAT.iterdir() if not p.name.startswith("__pycache__")) == [
        "__init__.py", "adapters", "patches"]
    assert len(_modules("patches")) >= 10 and len(_modules("adapters")) >= 9


def test_every_patch_is_installed_from_the_install_point():
    """``install()`` installs every patch of the read path and ``install_long_running()`` the rest: each patch
    module is one of them, and reports itself installed (its patched function in place)."""
    import importlib

    names = patches.install()
    was = importlib.import_module(f"{INSTALL_POINT}.path_interning").installed()
    patches.install_long_running()
    try:
        for stem in _modules("patches"):
            module = importlib.import_module(f"{INSTALL_POINT}.{stem}")
            assert callable(module.install) and callable(module.uninstall), stem
            assert module.NAME == stem
            long_running = getattr(module, "installed", None)
            assert stem in names or (long_running is not None and long_running()), f"{stem} is never installed"
        assert set(names) <= set(_modules("patches"))
    finally:
        if not was:
            importlib.import_module(f"{INSTALL_POINT}.path_interning").uninstall()


def test_only_the_install_point_imports_a_patch():
    assert patch_imports_outside_the_install_point(_package_sources(), _modules("patches")) == []


def test_a_patch_imported_elsewhere_is_found():
    """The rule above fails on a deliberate violation: a module importing a patch to install it on its own."""
    sources = {
        "paimon_tail.cli.common": "def run():\n    from ..compat.patches import path_interning\n    path_interning.install()\n",
        "paimon_tail.catalog": "from .compat.patches.file_errors import install\n",
        "paimon_tail.stream.multi": "from ..compat import patches\npatches.install()\n",  # the install point: fine
    }
    assert patch_imports_outside_the_install_point(sources, ["path_interning", "file_errors"]) == [
        "paimon_tail.cli.common -> paimon_tail.compat.patches.path_interning",
        "paimon_tail.catalog -> paimon_tail.compat.patches.file_errors.install"]


# -------------------------------------------------------------------------------------------------- adapters
@pytest.mark.parametrize("stem", sorted(_modules("adapters")))
def test_an_adapter_patches_nothing(stem):
    source = _modules("adapters")[stem].read_text()
    tree = ast.parse(source)
    assert not [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in ("install", "uninstall")]
    assert patching_statements(source) == []


def test_a_patching_adapter_is_found():
    source = ("from pypaimon.read import table_read\nimport pypaimon.write.file_store_commit as fsc\n"
              "table_read.TableRead.to_arrow = None\nfsc.FileStoreCommit.x += 1\nsetattr(object, 'y', 1)\n"
              "lists = object()\nlists.read_all = None\n")  # an instance's attribute, for one commit: not a patch
    assert patching_statements(source) == ["line 3: assigns table_read.TableRead.to_arrow",
                                           "line 4: assigns fsc.FileStoreCommit.x", "line 5: setattr"]


# ------------------------------------------------------------------------------------------ docstrings, docs
@pytest.mark.parametrize("kind,stem", [(k, s) for k in ("patches", "adapters") for s in sorted(_modules(k))])
def test_each_says_what_why_and_when_to_delete_it(kind, stem):
    doc = ast.get_docstring(ast.parse(_modules(kind)[stem].read_text())) or ""
    sections = ["Patches", "Why", "Delete when"] if kind == "patches" else ["Why", "Delete when"]
    for section in sections:
        assert re.search(rf"^{section}\b", doc, re.M), f"compat/{kind}/{stem}.py: no {section!r} section"


def test_compatibility_md_lists_every_patch_and_adapter():
    text = (PACKAGE.parent / "docs" / "compatibility.md").read_text()
    for stem in [*_modules("patches"), *_modules("adapters")]:
        assert f"`{stem}`" in text, f"docs/compatibility.md does not list {stem}"


_COMPAT_PATH = re.compile(r"(?<![\w/])(?:paimon_tail/)?compat/(?:[a-z0-9_]+/)*[a-z0-9_]+(?:\.py)?")  # not tests/compat/
_COMPAT_NAME = re.compile(r"paimon_tail\.compat(?:\.[a-z0-9_]+)*")


def _exists(reference: str) -> bool:
    """A module (path or dotted name), or a name one of them defines (``paimon_tail.compat.patches.install``)."""
    import importlib

    if "/" in reference:
        target = PACKAGE / reference.removeprefix("paimon_tail/").removesuffix(".py")
        return target.with_suffix(".py").is_file() or target.is_dir()
    parts = reference.split(".")
    for i in range(len(parts), 1, -1):
        target = PACKAGE.parent.joinpath(*parts[:i])
        if target.with_suffix(".py").is_file() or target.is_dir():
            rest = parts[i:]
            return not rest or len(rest) == 1 and hasattr(importlib.import_module(".".join(parts[:i])), rest[0])
    return False


def stale_references(texts: Dict[str, str]) -> List[str]:
    """``where: reference`` for every ``compat/...`` path or ``paimon_tail.compat...`` name that names nothing."""
    out = []
    for where, text in texts.items():
        for match in [*_COMPAT_PATH.finditer(text), *_COMPAT_NAME.finditer(text)]:
            reference = match.group(0).rstrip(".")
            if not _exists(reference):
                out.append(f"{where}: {reference}")
    return out


def test_docs_and_docstrings_name_compat_modules_that_exist():
    texts = {str(p.relative_to(PACKAGE.parent)): p.read_text() for p in DOCS}
    texts.update({str(p.relative_to(PACKAGE.parent)): p.read_text() for p in sorted(PACKAGE.rglob("*.py"))})
    texts.update({str(p.relative_to(PACKAGE.parent)): p.read_text()
                  for p in sorted((PACKAGE.parent / "tests").rglob("*.py")) if p.name != pathlib.Path(__file__).name})
    assert stale_references(texts) == []


def test_a_stale_reference_is_found():
    assert stale_references({"doc": "see `compat/kv_files.py` and `paimon_tail.compat.install()`; "
                                    "`compat/adapters/kv_files.py` and `tests/compat/test_x.py` are fine"}) == [
        "doc: compat/kv_files.py", "doc: paimon_tail.compat.install"]


def test_table_meta_is_outside_compat_and_light():
    """``TableMeta`` is a core type (``paimon_tail/table_meta.py``), importable without pyarrow or pypaimon."""
    import subprocess

    assert not (COMPAT / "table_meta.py").exists()
    code = ("import sys; from paimon_tail.table_meta import TableMeta, read_local, table_meta; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyarrow', 'pypaimon', 'numpy')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
