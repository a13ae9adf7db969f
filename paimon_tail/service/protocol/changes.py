"""The typed change records of the Join stream: Paimon's file metadata ↔ ``lookup.proto`` messages.

The coordinator's scanner reads manifests with pypaimon (``DataFileMeta``, ``DeletionFile``, partition rows) and
sends them as ``DataFile`` / ``DeletionFile`` / ``BucketFiles`` / ``BucketChange``; an executor turns them back
into pypaimon objects for its merge read. Keys and partitions travel as Paimon ``BinaryRow`` bytes (the bytes a
manifest holds), so every type round-trips exactly. Statistics are not sent: a merge read of a whole bucket does
not use them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from . import lookup_pb2 as pb

BucketKey = Tuple[Tuple, int]  # (partition values, bucket)


@dataclass
class BucketFiles:
    """The live files of one bucket (what a merge read of the bucket needs), as pypaimon objects."""

    files: List = field(default_factory=list)  # DataFileMeta with file_path (or external_path) set
    deletion_files: Optional[List] = None  # aligned with files, or None

    def apply(self, adds: Sequence, deletes: Sequence) -> "BucketFiles":
        gone = {f.file_name for f in deletes}
        files = [f for f in self.files if f.file_name not in gone]
        known = {f.file_name for f in files}
        files += [f for f in adds if f.file_name not in known]
        return BucketFiles(files, None)

    def same(self, other: "BucketFiles") -> bool:
        """The same data files with the same deletion vectors: the same rows."""
        return self._signature() == other._signature()

    def _signature(self):
        dvs = self.deletion_files or [None] * len(self.files)
        return frozenset((f.file_name, None if d is None else (d.dv_index_path, d.offset, d.length))
                         for f, d in zip(self.files, dvs))


@dataclass
class BucketChange:
    """One snapshot's change to one bucket: files added and deleted, or (deletion-vector tables) the whole list."""

    adds: List = field(default_factory=list)
    deletes: List = field(default_factory=list)
    replace: Optional[BucketFiles] = None


def table_mode(table) -> str:
    """How an executor keeps a table's buckets current (and so what the scanner sends it).

    * ``dedup``: deduplicate engine, no sequence field, deletes honoured → new level-0 files upsert the index;
    * ``merge``: other merge engines → re-merge a bucket when it changes (COMPACT snapshots keep content);
    * ``skip0``: batch reads ignore level-0 files (first-row) → re-merge on every change, compactions included;
    * ``dv``: deletion vectors → the scanner sends full splits (deletion files come from index manifests).
    """
    opts = table.options
    if opts.deletion_vectors_enabled():
        return "dv"
    if opts.batch_scan_skip_level0():
        return "skip0"
    engine = str(opts.merge_engine()).lower().replace("mergeengine.", "")
    if "dedup" in engine and not opts.sequence_field() and not opts.ignore_delete():
        return "dedup"
    return "merge"


class RowCodec:
    """Partition values and primary keys as Paimon ``BinaryRow`` bytes, for one table."""

    def __init__(self, table) -> None:
        by_name = {f.name: f for f in table.fields}
        self.partition_fields = [by_name[k] for k in table.partition_keys]
        self.key_fields = table.trimmed_primary_keys_fields

    def partition_bytes(self, values: Sequence) -> bytes:
        from pypaimon.table.row.generic_row import GenericRow, GenericRowSerializer

        return GenericRowSerializer.to_bytes(GenericRow(list(values), self.partition_fields))

    def partition(self, data: bytes) -> Tuple:
        from pypaimon.table.row.generic_row import GenericRowDeserializer

        return tuple(GenericRowDeserializer.from_bytes(data, self.partition_fields).values)

    # -- data files ---------------------------------------------------------------------------------------
    @staticmethod
    def data_file(meta) -> pb.DataFile:
        from pypaimon.table.row.generic_row import GenericRowSerializer

        out = pb.DataFile(
            name=meta.file_name, path=str(meta.external_path or meta.file_path or ""), size=meta.file_size,
            row_count=meta.row_count, min_key=GenericRowSerializer.to_bytes(meta.min_key),
            max_key=GenericRowSerializer.to_bytes(meta.max_key), min_sequence_number=meta.min_sequence_number,
            max_sequence_number=meta.max_sequence_number, schema_id=meta.schema_id, level=meta.level,
            creation_time_ms=meta.creation_time.get_millisecond() if meta.creation_time else 0,
            extra_files=list(meta.extra_files or ()), external=bool(meta.external_path),
            write_cols=list(meta.write_cols or ()),
        )
        if meta.delete_row_count is not None:
            out.delete_row_count = meta.delete_row_count
        if meta.file_source is not None:
            out.file_source = meta.file_source
        if meta.first_row_id is not None:
            out.first_row_id = meta.first_row_id
        return out

    def file_meta(self, msg: pb.DataFile):
        from pypaimon.data.timestamp import Timestamp
        from pypaimon.manifest.schema.data_file_meta import DataFileMeta
        from pypaimon.manifest.schema.simple_stats import SimpleStats
        from pypaimon.table.row.generic_row import GenericRowDeserializer

        return DataFileMeta(
            file_name=msg.name, file_size=msg.size, row_count=msg.row_count,
            min_key=GenericRowDeserializer.from_bytes(msg.min_key, self.key_fields),
            max_key=GenericRowDeserializer.from_bytes(msg.max_key, self.key_fields),
            key_stats=SimpleStats.empty_stats(), value_stats=SimpleStats.empty_stats(),
            min_sequence_number=msg.min_sequence_number, max_sequence_number=msg.max_sequence_number,
            schema_id=msg.schema_id, level=msg.level, extra_files=list(msg.extra_files),
            creation_time=Timestamp.from_epoch_millis(msg.creation_time_ms) if msg.creation_time_ms else None,
            delete_row_count=msg.delete_row_count if msg.HasField("delete_row_count") else None,
            file_source=msg.file_source if msg.HasField("file_source") else None,
            value_stats_cols=[], external_path=msg.path if msg.external else None,
            first_row_id=msg.first_row_id if msg.HasField("first_row_id") else None,
            write_cols=list(msg.write_cols) or None, file_path=None if msg.external else msg.path,
        )

    # -- deletion vectors ---------------------------------------------------------------------------------
    @staticmethod
    def deletion_file(dv) -> pb.DeletionFile:
        if dv is None:
            return pb.DeletionFile()
        out = pb.DeletionFile(path=dv.dv_index_path, offset=dv.offset, length=dv.length)
        if dv.cardinality is not None:
            out.cardinality = dv.cardinality
        return out

    @staticmethod
    def dv(msg: pb.DeletionFile):
        if not msg.path:
            return None
        from pypaimon.table.source.deletion_file import DeletionFile

        return DeletionFile(msg.path, msg.offset, msg.length,
                            msg.cardinality if msg.HasField("cardinality") else None)

    # -- buckets ------------------------------------------------------------------------------------------
    def bucket_files(self, key: BucketKey, files: BucketFiles) -> pb.BucketFiles:
        out = pb.BucketFiles(partition=self.partition_bytes(key[0]), bucket=key[1],
                             files=[self.data_file(m) for m in files.files])
        if files.deletion_files is not None:
            out.deletion_files.extend(self.deletion_file(d) for d in files.deletion_files)
        return out

    def files_of(self, msg: pb.BucketFiles) -> Tuple[BucketKey, BucketFiles]:
        files = [self.file_meta(f) for f in msg.files]
        dvs = [self.dv(d) for d in msg.deletion_files] if len(msg.deletion_files) else None
        return (self.partition(msg.partition), msg.bucket), BucketFiles(files, dvs)

    def bucket_change(self, key: BucketKey, change: BucketChange) -> pb.BucketChange:
        out = pb.BucketChange(partition=self.partition_bytes(key[0]), bucket=key[1],
                              adds=[self.data_file(m) for m in change.adds],
                              deletes=[self.data_file(m) for m in change.deletes])
        if change.replace is not None:
            out.replace.CopyFrom(self.bucket_files(key, change.replace))
        return out

    def change_of(self, msg: pb.BucketChange) -> Tuple[BucketKey, BucketChange]:
        key = (self.partition(msg.partition), msg.bucket)
        replace = self.files_of(msg.replace)[1] if msg.HasField("replace") else None
        return key, BucketChange([self.file_meta(f) for f in msg.adds], [self.file_meta(f) for f in msg.deletes],
                                 replace)

    def full(self, msg: pb.TableFull) -> Dict[BucketKey, BucketFiles]:
        return dict(self.files_of(b) for b in msg.buckets)

    def delta(self, msg: pb.TableDelta) -> Dict[BucketKey, BucketChange]:
        return dict(self.change_of(c) for c in msg.changes)


__all__ = ["BucketChange", "BucketFiles", "BucketKey", "RowCodec", "table_mode"]
