"""Shim: trailing blanks of ``CHAR(n)`` columns read from ORC files.

Patches
    ``pypaimon.read.reader.format_pyarrow_reader.FormatPyArrowReader._post_process_batch``
    (wrapped: the original runs first, then top-level CHAR columns of ORC batches
    are right-trimmed).

Why
    The ORC writer stores ``CHAR(n)`` values blank-padded to ``n``.  ORC's Java
    reader (used by Paimon Java) strips the padding again, so Paimon Java reads
    back the value that was written (``'c1'``); pyarrow's ORC reader (liborc)
    does not, so pypaimon 2.1 returns ``'c1  '`` for the same cell -- and the
    same table in Parquet gives ``'c1'``.  Rows read from an ORC table then no
    longer equal rows of the same table read by Java/Spark/Flink, and key or
    filter comparisons on CHAR columns disagree.  Trailing blanks are not
    significant in CHAR, so trimming them restores Java's result.
    Only top-level CHAR columns are handled (CHAR nested inside ROW/ARRAY/MAP is
    not).

Delete when
    pypaimon's ORC read path right-trims CHAR columns itself (a fix in
    ``FormatPyArrowReader`` for ORC CHAR fields), i.e. when
    ``tests/compat/test_java_tables.py::test_shim_orc_char_padding_is_needed``
    starts failing because the unpatched reader already returns trimmed values.
"""

from __future__ import annotations

import functools

import pyarrow as pa
import pyarrow.compute as pc

from pypaimon.read.reader.format_pyarrow_reader import FormatPyArrowReader

NAME = "orc_char_padding"
_ORIGINAL = FormatPyArrowReader.__dict__["_post_process_batch"]


def _char_columns(reader) -> frozenset:
    cached = getattr(reader, "_paimon_tail_char_columns", None)
    if cached is None:
        cached = frozenset(
            f.name for f in (reader.read_fields or ())
            if isinstance(getattr(f.type, "type", None), str)
            and f.type.type.upper().startswith("CHAR(")
        )
        reader._paimon_tail_char_columns = cached
    return cached


@functools.wraps(_ORIGINAL)
def _post_process_batch(self, batch):
    batch = _ORIGINAL(self, batch)
    if self._file_format != "orc" or batch is None:
        return batch
    chars = _char_columns(self)
    if not chars:
        return batch
    columns = list(batch.columns)
    changed = False
    for i, name in enumerate(batch.schema.names):
        col = columns[i]
        if name in chars and (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
            columns[i] = pc.utf8_rtrim(col, characters=" ")
            changed = True
    if not changed:
        return batch
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def install() -> None:
    FormatPyArrowReader._post_process_batch = _post_process_batch


def uninstall() -> None:
    FormatPyArrowReader._post_process_batch = _ORIGINAL
