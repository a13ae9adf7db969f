"""pypaimon's Rust reader (``read.native.enabled``, from the pypaimon-rust package) for merge reads of local tables.

Why
    pypaimon merges a primary-key bucket row by row in Python (``SortMergeReaderWithMinHeap``): about 300k rows/s. Its
    optional Rust reader does the same merge 6-10x faster and answers the same rows (merge engines, sequence fields and
    deletes included: ``tests/service/store/test_store.py`` and ``tests/compat/test_native_reads.py`` compare the two), falling back
    to the Python reader by itself for what it does not support. pypaimon leaves it off by default; we turn it on per
    table copy, for tables on a local file system given by an absolute path (the Rust side takes no relative paths: such
    a table keeps the Python reader), except tables with CHAR columns (the Rust reader returns ORC's blank padding,
    which ``compat/patches/orc_char_padding.py`` trims in the Python reader) and tables with REST query auth (pypaimon
    applies a catalog's row filter and column masks in its Python reader only). Object stores keep pypaimon's Python
    reader: there our storage layer (one retry policy, data files prefetched, requests counted,
    ``docs/object-stores.md``) sits under pypaimon's file IO, which the Rust reader does not use.

    pypaimon logs each fallback to the Python reader as a warning (a line on a ``follow``'s stderr per split);
    ``fallbacks`` counts them instead and the line is dropped unless logging is configured to show debug output.

Delete when
    pypaimon enables its native reader by default.
"""
from __future__ import annotations

import functools
import logging
import os
import threading

OPTION = "read.native.enabled"
_FALLBACK = "Native read failed, falling back to the Python reader"


@functools.lru_cache(maxsize=1)
def available() -> bool:
    try:
        import pypaimon_rust  # noqa: F401
    except Exception:
        return False
    return True


class _Fallbacks(logging.Filter):
    """Counts pypaimon's "falling back to the Python reader" warnings; shows them only at debug level."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0
        self.last_reason = ""
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if not message.startswith(_FALLBACK):
            return True
        with self._lock:
            self.count += 1
            self.last_reason = message[len(_FALLBACK):].lstrip(": ")
        return logging.getLogger().isEnabledFor(logging.DEBUG)


fallbacks = _Fallbacks()


@functools.lru_cache(maxsize=1)
def _watch_fallbacks() -> None:
    logging.getLogger("pypaimon.read.table_read").addFilter(fallbacks)


def with_native_reads(table):
    """``table``, reading through pypaimon's Rust reader when it is installed and the table is on local disk."""
    from ...atomic_file import local_path

    if not available():
        return table
    path = local_path(str(table.table_path))
    if path is None or not os.path.isabs(path):
        return table
    if str(table.options.options.to_map().get(OPTION, "")).lower() in ("true", "false"):
        return table  # the user decided
    if any(_is_char(f) for f in table.fields):
        return table  # ORC pads CHAR: our shim trims it in the Python reader (compat/patches/orc_char_padding.py)
    if getattr(table.options, "query_auth_enabled", False):
        return table  # REST query auth: pypaimon filters and masks in its Python reader only

    _watch_fallbacks()
    return table.copy({OPTION: "true"})


def _is_char(field) -> bool:
    name = getattr(field.type, "type", None)
    return isinstance(name, str) and name.upper().startswith("CHAR(")


def native(table) -> bool:
    """Whether ``table`` reads through the Rust reader (``with_native_reads`` turned it on, or the user did)."""
    return available() and str(table.options.options.to_map().get(OPTION, "")).lower() == "true"


__all__ = ["available", "fallbacks", "native", "with_native_reads"]
