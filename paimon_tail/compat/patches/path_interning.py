"""Shim: the paths of the files pypaimon touches are not interned, so CPython's interned-string table keeps its size.

Patches
    ``sys`` as pathlib sees it (``pathlib.sys``; ``pathlib._local.sys`` on Python 3.13+): the same module, but its
    ``intern`` gives back the string it is given.

Why
    pypaimon's local file IO (``LocalFileIO._to_file``) makes a ``pathlib.Path`` of every path it opens, tests or
    lists, and pathlib interns each component of a path it parses (a speed-up for comparing parts). An interned
    string dies with its last reference, but each one that comes and goes leaves a dummy slot in CPython's table of
    interned strings: a data file's name is new every time, and a directory's name is too once no live path holds
    it. An executor under the soak (``python -m benchmarks soak``) added 500-2,000 entries a minute, so its table
    (55k live strings in 2^17 slots, 1.9 MB) filled with dummies and was rebuilt at twice the size (3.8 MB) some 15
    minutes into its life: a step of +1.9 MB in the middle of a run, most of what was left of issue 23's slope.
    Without the interning, nothing is added: the table keeps the size it had after start.

    The processes that run for days install it at their start (``serve``, its executors, ``executor --join``,
    ``follow``: ``cli.common.run`` and the executors' entry points). ``import paimon_tail`` does not: a library does
    not change pathlib in its host's process.

Delete when
    pypaimon's local file IO works on path strings (``os.path``) instead of a ``Path`` per file, or pathlib stops
    interning path components (``tests/compat/test_path_interning.py`` says which).
"""
from __future__ import annotations

import pathlib
import sys
import threading
import types
from typing import List

NAME = "path_interning"


class _SysWithoutIntern(types.ModuleType):
    """``sys`` for pathlib: everything as ``sys`` has it but ``intern``."""

    def __getattr__(self, name: str):
        return getattr(sys, name)

    @staticmethod
    def intern(string: str) -> str:
        return string


_lock = threading.Lock()
_patched: List[types.ModuleType] = []


def _pathlib_modules() -> List[types.ModuleType]:
    """The modules whose own ``sys`` pathlib's parsing calls (``pathlib`` itself, or ``pathlib._local`` on 3.13+)."""
    out = [pathlib]
    local = sys.modules.get("pathlib._local")
    if local is not None:
        out.append(local)
    return [m for m in out if getattr(m, "sys", None) is sys]


def install() -> None:
    with _lock:
        if _patched:
            return
        for module in _pathlib_modules():
            module.sys = _SysWithoutIntern("sys")
            _patched.append(module)


def uninstall() -> None:
    with _lock:
        for module in _patched:
            module.sys = sys
        _patched.clear()


def installed() -> bool:
    return bool(_patched)


__all__ = ["NAME", "install", "installed", "uninstall"]
