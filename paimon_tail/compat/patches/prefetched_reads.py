"""Shim: pypaimon's Parquet reader takes a data file's bytes from memory when paimon-tail fetched them ahead.

Patches
    ``pypaimon.read.reader.format_pyarrow_reader._file_format_dataset``

Why
    On an object store a follower keeps many data files in flight ahead of decoding
    (``paimon_tail.storage.prefetch``). pypaimon opens every file through ``file_io.filesystem`` by path and has
    no way to be handed bytes; this wrapper builds the file's dataset over the prefetched buffer when there is one
    (the same ``FileSystemDataset`` of one Parquet fragment pypaimon builds, so projection, filters and row-group
    splits behave the same) and calls pypaimon's function otherwise. Nothing is prefetched on a local disk, so
    there every read is pypaimon's own.

Delete when
    pypaimon reads data files with I/O concurrency of its own (or accepts an input file per data file).
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.dataset as ds
from pypaimon.read.reader import format_pyarrow_reader

from ...storage import prefetch

NAME = "prefetched_reads"
_ORIGINAL = format_pyarrow_reader._file_format_dataset


def _file_format_dataset(file_io, file_format, file_path, cache_max_size, file_size=None):
    if file_format == "parquet":
        buf = prefetch.lookup(file_io, file_path)
        if buf is not None:
            fmt = ds.ParquetFileFormat()
            fragment = fmt.make_fragment(pa.BufferReader(buf))
            return ds.FileSystemDataset([fragment], fragment.physical_schema, fmt)
    return _ORIGINAL(file_io, file_format, file_path, cache_max_size, file_size)


def install() -> None:
    format_pyarrow_reader._file_format_dataset = _file_format_dataset


def uninstall() -> None:
    format_pyarrow_reader._file_format_dataset = _ORIGINAL
