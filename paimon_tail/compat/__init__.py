"""Compatibility shims: pypaimon 2.1 reading tables written by older Paimon, and its S3 client settings.

Call :func:`install` once before opening tables (``paimon_tail.catalog`` does).
It is idempotent and thread-safe; :func:`installed` lists what is active.

Each shim lives in its own module, patches the smallest pypaimon function it
can, documents what it patches, why, and which upstream fix lets it be deleted,
and has a test that fails without it (the tests marked ``java`` against real tables
written by Paimon Java 0.9; those marked ``s3`` against a real S3 server for the storage ones).
``docs/compatibility.md`` lists them.
"""

from __future__ import annotations

import importlib
import threading
from typing import List

# imported by install(): each patches pypaimon's read path, which a command that never reads files must not load
_SHIMS = ("value_stats_cols", "orc_char_padding", "s3_client", "known_size_reads", "prefetched_reads",
          "schema_reads", "streaming_split_order", "metadata_cache", "file_errors")

_lock = threading.Lock()
_installed: List[str] = []


def install() -> List[str]:
    """Install every shim (once). Returns the names of the installed shims."""
    with _lock:
        if not _installed:
            for name in _SHIMS:
                shim = importlib.import_module(f".{name}", __name__)
                shim.install()
                _installed.append(shim.NAME)
        return list(_installed)


def installed() -> List[str]:
    """Names of the shims installed so far (empty before :func:`install`)."""
    return list(_installed)


def uninstall() -> None:
    """Restore the original pypaimon functions (used by tests to prove a shim matters)."""
    with _lock:
        for name in reversed(_SHIMS):
            importlib.import_module(f".{name}", __name__).uninstall()
        _installed.clear()


__all__ = ["install", "installed", "uninstall"]
