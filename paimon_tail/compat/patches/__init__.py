"""The one install point of every monkeypatch paimon-tail makes; nothing else calls a patch's ``install()``.

Two moments, because the patches change different things:

* :func:`install`, before pypaimon opens a catalog or a table (``CatalogConfig.open`` and ``open_table`` in
  ``catalog.py``, and ``table_info.list_tables`` for a catalog it is handed): the patches of pypaimon's read
  path. Importing them loads that read path, which a command that never reads a file must not pay for, so
  nothing is installed at import. Idempotent and thread-safe; :func:`installed` lists them, :func:`uninstall`
  restores pypaimon (tests prove a patch matters).
* :func:`install_long_running`, at the start of a process that runs for days (``serve``, its executors,
  ``executor --join``, ``follow``: ``cli.common.run`` and the executors' entry points): ``path_interning``,
  which changes pathlib rather than pypaimon, so ``import paimon_tail`` or opening a table never does it (a
  library does not change the standard library in its host's process).

Each patch is one module that patches the smallest function it can and documents what it patches, why, and
which upstream fix lets it be deleted (``docs/compatibility.md`` lists them).
"""
from __future__ import annotations

import threading
from types import ModuleType
from typing import List, Tuple

_lock = threading.Lock()
_installed: List[str] = []


def _read_path() -> Tuple[ModuleType, ...]:
    """The patches of pypaimon's read path, in the order they are installed (imported here, not at the top:
    each imports the part of pypaimon it patches)."""
    from . import (file_errors, known_size_reads, metadata_cache, orc_char_padding, prefetched_reads, s3_client,
                   schema_reads, streaming_split_order, value_stats_cols)

    return (value_stats_cols, orc_char_padding, s3_client, known_size_reads, prefetched_reads, schema_reads,
            streaming_split_order, metadata_cache, file_errors)


def install() -> List[str]:
    """Install every patch of pypaimon's read path (once). Returns their names."""
    with _lock:
        if not _installed:
            for patch in _read_path():
                patch.install()
                _installed.append(patch.NAME)
        return list(_installed)


def installed() -> List[str]:
    """Names of the read path's patches installed so far (empty before :func:`install`)."""
    return list(_installed)


def uninstall() -> None:
    """Restore pypaimon's original functions (used by tests to prove a patch matters)."""
    with _lock:
        for patch in reversed(_read_path()):
            patch.uninstall()
        _installed.clear()


def install_long_running() -> None:
    """The patches of a process that runs for days: pathlib without interning (``path_interning``). Idempotent."""
    from . import path_interning

    path_interning.install()


__all__ = ["install", "install_long_running", "installed", "uninstall"]
