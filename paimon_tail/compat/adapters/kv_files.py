"""One data file of a primary-key table read as Arrow, with its system columns: what the query service's store is
built from, file by file.

Uses (pypaimon private API)
    ``pypaimon.read.split_read.MergeFileSplitRead.file_reader_supplier`` and ``_get_final_read_data_fields``, and
    ``pypaimon.deletionvectors.DeletionVector.read``.

Why
    pypaimon's public reads merge a bucket's files (``TableRead``) or concatenate them without sequence numbers
    (streaming reads). The store indexes each data file on its own, as Paimon Java's lookup files do
    (``LookupLevels``): it needs one file's rows in file order with ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``, and
    the positions a deletion vector removes. pypaimon's per-file reader does exactly that (every file format,
    schema evolution by field id, partition columns filled in), one Arrow batch at a time; only its entry point is
    private. Tests compare what it reads with pypaimon's own merge read (``tests/service/store/test_store.py``).

Delete when
    pypaimon exposes a public per-file key-value reader (a ``KeyValueFileReaderFactory`` equivalent).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa

from ...storage.files import reading

SEQUENCE = "_SEQUENCE_NUMBER"
KIND = "_VALUE_KIND"
#: _VALUE_KIND values that take a key away (Paimon's RowKind: -U = 1, -D = 3)
RETRACT_KINDS = (1, 3)
BATCH_ROWS = 1 << 16


@dataclass(frozen=True)
class FileRef:
    """A data file of one bucket, as the read needs it."""

    meta: object  # pypaimon DataFileMeta (file_path or external_path set)
    partition: Tuple
    bucket: int


class KeyValueFiles:
    """Reads the data files of one table (schema fixed at construction: files of older schemas come evolved)."""

    def __init__(self, table) -> None:
        from pypaimon.read.split_read import MergeFileSplitRead

        # a whole file's keys in a few batches (pypaimon's default, 1024 rows, costs ~40% more per file)
        table = table.copy({"read.batch-size": str(BATCH_ROWS)})
        self.table = table
        by_name = {f.name: f for f in table.fields}
        self._partition_fields = [by_name[k] for k in table.partition_keys]
        self._read_cls = MergeFileSplitRead
        self.key_names: List[str] = [f.name for f in table.trimmed_primary_keys_fields]
        self.value_names: List[str] = [f.name for f in table.fields]

    def _split_read(self, ref: FileRef, fields: Sequence[str]):
        from pypaimon.read.split import DataSplit
        from pypaimon.table.row.generic_row import GenericRow

        split = DataSplit([ref.meta], GenericRow(list(ref.partition), self._partition_fields), ref.bucket)
        read = self._read_cls(self.table, None, self.table.fields, split, False)
        wanted = set(fields)
        names = [n for n in read._get_final_read_data_fields() if n in wanted or n in (SEQUENCE, KIND)]
        return read, names

    def batches(self, ref: FileRef, columns: Optional[Sequence[str]] = None) -> Iterator[pa.RecordBatch]:
        """The file's rows in file order: ``columns`` (default: every column of the table) plus
        ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``; the key columns appear once, under their own names."""
        columns = list(columns) if columns is not None else self.value_names
        read, names = self._split_read(ref, columns)
        with reading("data file", str(ref.meta.external_path or ref.meta.file_path)):
            reader = read.file_reader_supplier(ref.meta, True, names, False)
        keep = [*columns, SEQUENCE, KIND]
        try:
            while True:
                with reading("data file", str(ref.meta.external_path or ref.meta.file_path)):
                    batch = reader.read_arrow_batch()
                if batch is None:
                    break
                if batch.num_rows:
                    yield _named(batch, columns, self.key_names).select(keep)
        finally:
            reader.close()

    def keys(self, ref: FileRef) -> pa.Table:
        """The key columns (under their own names), ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND`` of every row.

        Key columns never change type or name (Paimon does not allow it) and every key-value file stores them as
        ``_KEY_<name>``, so Parquet and ORC files are read by pyarrow directly, about 5x faster than through
        pypaimon's reader (which maps each file's schema to the table's); other formats go through pypaimon."""
        path = str(ref.meta.external_path or ref.meta.file_path)
        fmt = path.rsplit(".", 1)[-1].lower()
        if fmt not in ("parquet", "orc"):
            return self.read(ref, self.key_names)
        file_io = self.table.file_io
        wanted = [f"_KEY_{k}" for k in self.key_names] + [SEQUENCE, KIND]
        fs_path = file_io.to_filesystem_path(path)
        with reading("data file", path), file_io.filesystem.open_input_file(fs_path) as source:
            if fmt == "parquet":
                import pyarrow.parquet as pq

                table = pq.read_table(source, columns=wanted, use_threads=False)
            else:
                import pyarrow.orc as orc

                table = orc.ORCFile(source).read(columns=wanted)
        return table.rename_columns([*self.key_names, SEQUENCE, KIND])

    def read(self, ref: FileRef, columns: Optional[Sequence[str]] = None) -> pa.Table:
        batches = list(self.batches(ref, columns))
        if not batches:
            cols = list(columns) if columns is not None else self.value_names
            schema = self.schema(cols)
            return schema.empty_table()
        return pa.Table.from_batches(batches)

    def schema(self, columns: Sequence[str]) -> pa.Schema:
        from pypaimon.schema.data_types import PyarrowFieldParser

        full = PyarrowFieldParser.from_paimon_schema(self.table.fields)
        return pa.schema([full.field(c) for c in columns] + [pa.field(SEQUENCE, pa.int64(), False),
                                                               pa.field(KIND, pa.int8(), False)])

    def deleted_positions(self, deletion_file) -> np.ndarray:
        """The row positions a deletion vector removes, sorted (empty for no deletion vector)."""
        if deletion_file is None:
            return np.empty(0, np.int64)
        from pypaimon.deletionvectors.deletion_vector import DeletionVector

        bitmap = DeletionVector.read(self.table.file_io, deletion_file).bit_map()
        # pypaimon's RoaringBitmap wraps pyroaring's: its public face is iteration (ascending) and len
        return np.fromiter(iter(bitmap), dtype=np.int64, count=len(bitmap))


def _named(batch: pa.RecordBatch, columns: Sequence[str], key_names: Sequence[str]) -> pa.RecordBatch:
    """pypaimon names a key column read for a merge ``_KEY_<name>`` and may also return the plain one: keep one
    column per name."""
    names = batch.schema.names
    if all(c in names for c in columns):
        return batch
    arrays, fields = [], []
    seen = set()
    for i, name in enumerate(names):
        plain = name[len("_KEY_"):] if name.startswith("_KEY_") and name[len("_KEY_"):] in key_names else name
        if plain in seen:
            continue
        seen.add(plain)
        arrays.append(batch.column(i))
        fields.append(batch.schema.field(i).with_name(plain))
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))


__all__ = ["FileRef", "KIND", "KeyValueFiles", "RETRACT_KINDS", "SEQUENCE"]
