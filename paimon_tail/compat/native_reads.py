"""pypaimon's Rust reader (``read.native.enabled``, from the pypaimon-rust package) for merge reads of local tables.

Why
    pypaimon merges a primary-key bucket row by row in Python (``SortMergeReaderWithMinHeap``): about 300k rows/s.
    Its optional Rust reader does the same merge 6-10x faster and answers the same rows (merge engines, sequence
    fields and deletes included: ``tests/service/test_store.py`` compares the two), falling back to the Python
    reader by itself for what it does not support. pypaimon leaves it off by default; we turn it on per table
    copy where we merge whole buckets, for tables on a local file system (object stores keep pypaimon's own
    clients and retry policy, ``docs/object-stores.md``).

Delete when
    pypaimon enables its native reader by default.
"""
from __future__ import annotations

import functools

OPTION = "read.native.enabled"


@functools.lru_cache(maxsize=1)
def available() -> bool:
    try:
        import pypaimon_rust  # noqa: F401
    except Exception:
        return False
    return True


def with_native_reads(table):
    """``table``, reading through pypaimon's Rust reader when it is installed and the table is on local disk."""
    from ..atomic_file import local_path

    if not available() or local_path(str(table.table_path)) is None:
        return table
    if str(table.options.options.to_map().get(OPTION, "")).lower() in ("true", "false"):
        return table  # the user decided
    return table.copy({OPTION: "true"})


__all__ = ["available", "with_native_reads"]
