"""Shim: pypaimon's file-format metadata cache is off unless asked for, and when asked for its bound is real.

Patches
    ``pypaimon.read.reader.format_pyarrow_reader._file_format_metadata_cache_max_size`` and
    ``._estimate_file_format_cache_entry_size``

Why
    pypaimon keeps the PyArrow dataset (footer, schema, fragment) of every data file it opens in one process-wide
    LRU of up to 4,096 entries, bounded by ``file-format.metadata-cache.max-size`` (50 MiB by default) as it
    estimates an entry: the footer's serialized size, at least 8 KiB. What an entry really holds, measured as
    anonymous RSS after a few thousand reads by two threads (``tests/compat/test_metadata_cache.py``), is ~21 KiB for a
    Parquet file of 6 columns and ~106 KiB for one of 40: the estimate is 2.6x to 13x low, the 50 MiB never
    applies, and the cache grows to 85-420 MiB. paimon-tail reads each data file once (a follower each new file,
    the scanner none, an executor each local copy, a Spark task each split), so the cache buys nothing: a long
    ``follow`` or ``serve`` grew by 100-125 MB per process in its first hour (issue 23).

    So: a file IO whose options do not name ``file-format.metadata-cache.max-size`` reads with no cache (0: pypaimon's
    own "disabled"). One whose options name it (``-O file-format.metadata-cache.max-size=64mb``, a catalog option like
    any other: followers, the scanner, the executors' stores (which read the warehouse's files through the table's own
    file IO, ``compat/adapters/kv_files.py``) and Spark tasks all open their tables from the catalog options) gets the
    cache, and each entry counts at its measured cost (``measured_entry_size``) instead of the estimate, so the setting
    is what the cache holds, within the margin the test measures.

Delete when
    pypaimon's default no longer caches readers' metadata across reads, and its entry estimate covers what an
    entry holds (``test_metadata_cache.py::test_pypaimon_entry_estimate_is_low`` then fails: the estimate is
    no longer low).
"""
from __future__ import annotations

from pypaimon.common.options import Options
from pypaimon.common.options.config import CatalogOptions
from pypaimon.read.reader import format_pyarrow_reader as _reader

NAME = "metadata_cache"
OPTION = CatalogOptions.FILE_FORMAT_METADATA_CACHE_MAX_SIZE  # file-format.metadata-cache.max-size

# What an entry holds, measured (tests/compat/test_metadata_cache.py, pyarrow 19): Parquet ~2 KiB + ~15.4 bytes per byte
# of serialized footer (6 columns: 21 KiB for a 1.2 KB footer; 40 columns: 106 KiB for 6.9 KB); ORC, whose
# footer pyarrow does not expose, ~3 KiB + ~6 bytes per byte of Arrow schema. Counted with a margin.
_PARQUET_BASE, _PARQUET_PER_FOOTER_BYTE = 8 << 10, 20
_OTHER_BASE, _OTHER_PER_SCHEMA_BYTE = 8 << 10, 10

_ORIGINAL_MAX_SIZE = _reader._file_format_metadata_cache_max_size
_ORIGINAL_ESTIMATE = _reader._estimate_file_format_cache_entry_size


def configured_max_size(file_io) -> int:
    """The cache size ``file_io``'s options ask for, in bytes; 0 (no cache) when they do not name it."""
    properties = getattr(file_io, "properties", None)
    if not isinstance(properties, Options) or not properties.contains(OPTION):
        return 0
    return _ORIGINAL_MAX_SIZE(file_io)


def measured_entry_size(key, dataset, file_format: str):
    """An entry's cost as measured, never below pypaimon's own estimate (None: pypaimon does not cache it)."""
    estimate = _ORIGINAL_ESTIMATE(key, dataset, file_format)
    if estimate is None:
        return None
    try:
        if file_format == "parquet":
            footer = sum(int(f.metadata.serialized_size) for f in dataset.get_fragments() if f.metadata is not None)
            measured = _PARQUET_BASE + _PARQUET_PER_FOOTER_BYTE * footer
        else:
            measured = _OTHER_BASE + _OTHER_PER_SCHEMA_BYTE * int(dataset.schema.serialize().size)
    except Exception:  # noqa: BLE001 - an unmeasurable entry is not cached (pypaimon's rule for its estimate)
        return None
    return max(estimate, measured)


def install() -> None:
    _reader._file_format_metadata_cache_max_size = configured_max_size
    _reader._estimate_file_format_cache_entry_size = measured_entry_size


def uninstall() -> None:
    _reader._file_format_metadata_cache_max_size = _ORIGINAL_MAX_SIZE
    _reader._estimate_file_format_cache_entry_size = _ORIGINAL_ESTIMATE
