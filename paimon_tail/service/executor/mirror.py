"""Executors keep local copies of their buckets' files and read them with pypaimon.

Files are copied through the table's own ``file_io`` (so S3/OSS/HDFS warehouses work) into
``<local-dir>/<db>.<table>/<partition path>/bucket-<n>/<file>`` (directories 0700, files 0600), together
with the table's ``schema/`` files and deletion-vector index files. A "local table" — the same schema over a
``LocalFileIO`` rooted at that directory — then reads the copies with pypaimon's own readers, so merge engines,
sequence fields and deletion vectors behave exactly as pypaimon's batch read does.
"""
from __future__ import annotations

import copy
import os
import threading
import uuid
from typing import Iterator, Sequence, Tuple

import pyarrow as pa

from ...storage.retry import StorageRetry
from ...stream.reader import split_batches
from ..protocol.changes import BucketFiles

_RETRY = StorageRetry(timeout=None)


def partition_path(partition_keys: Sequence[str], values: Sequence) -> str:
    parts = []
    for k, v in zip(partition_keys, values):
        text = "__DEFAULT_PARTITION__" if v is None or str(v).strip() == "" else str(v)
        parts.append(f"{k}={text}")
    return "/".join(parts)


def _copy_stream(file_io, remote: str, local: str) -> None:
    """Copy one file; a storage outage is waited out (the executor keeps answering from what it holds)."""
    _RETRY.call_sync(_copy_once, file_io, remote, local)


def _copy_once(file_io, remote: str, local: str) -> None:
    os.makedirs(os.path.dirname(local), mode=0o700, exist_ok=True)
    tmp = f"{local}.{uuid.uuid4().hex[:8]}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as out, file_io.new_input_stream(remote) as src:
            while True:
                chunk = src.read(4 << 20)
                if not chunk:
                    break
                out.write(chunk)
        os.replace(tmp, local)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


class LocalMirror:
    """Local copies of one table's files for one executor."""

    def __init__(self, table, root: str) -> None:
        self.root = root
        os.makedirs(root, mode=0o700, exist_ok=True)
        self._lock = threading.Lock()
        self._schema_ids: set = set()
        self.bytes_copied = 0
        self.files_copied = 0
        self.use(table)

    def use(self, table) -> None:
        """Read with ``table``'s schema from now on (a writer evolved it: files of older schemas are read evolved)."""
        from pypaimon.filesystem.local_file_io import LocalFileIO
        from pypaimon.table.file_store_table import FileStoreTable

        self.table = table
        self.sync_schemas()
        self.local_table = FileStoreTable(LocalFileIO(), table.identifier, self.root, table.table_schema)

    # -- schemas ------------------------------------------------------------------------------------------
    def sync_schemas(self) -> None:
        src = f"{self.table.table_path}/schema"
        dst = os.path.join(self.root, "schema")
        os.makedirs(dst, mode=0o700, exist_ok=True)
        for status in self.table.file_io.list_status(src):
            name = os.path.basename(getattr(status, "path", "") or getattr(status, "base_name", ""))
            if not name.startswith("schema-"):
                continue
            local = os.path.join(dst, name)
            if not os.path.exists(local):
                _copy_stream(self.table.file_io, f"{src}/{name}", local)
            try:
                self._schema_ids.add(int(name[len("schema-"):]))
            except ValueError:
                pass

    def _ensure_schema(self, schema_id: int) -> None:
        if schema_id not in self._schema_ids:
            self.sync_schemas()

    # -- data files ---------------------------------------------------------------------------------------
    def remote_path(self, meta, partition: Tuple, bucket: int) -> str:
        if meta.external_path:
            return meta.physical_path()
        if meta.file_path:
            return meta.physical_path()
        from pypaimon.utils.file_store_path_factory import canonical_data_file_path

        return canonical_data_file_path(self.table, tuple(partition), bucket, meta.file_name)

    def local_path(self, partition: Tuple, bucket: int, name: str) -> str:
        ppath = partition_path(self.table.partition_keys, partition)
        return os.path.join(self.root, ppath, f"bucket-{bucket}", name) if ppath else \
            os.path.join(self.root, f"bucket-{bucket}", name)

    def localize(self, partition: Tuple, bucket: int, files: BucketFiles) -> BucketFiles:
        """Copy what is missing locally; return metas pointing at the local copies."""
        out, dvs = [], []
        for i, meta in enumerate(files.files):
            self._ensure_schema(meta.schema_id)
            local = self.local_path(partition, bucket, meta.file_name)
            if not os.path.exists(local):
                _copy_stream(self.table.file_io, self.remote_path(meta, partition, bucket), local)
                self.files_copied += 1
                self.bytes_copied += int(getattr(meta, "file_size", 0) or 0)
            m = copy.copy(meta)
            m.file_path = local
            m.external_path = None
            out.append(m)
            if files.deletion_files is not None:
                dvs.append(self._localize_dv(files.deletion_files[i]))
        return BucketFiles(out, dvs if files.deletion_files is not None else None)

    def _localize_dv(self, dv):
        if dv is None:
            return None
        remote = dv.dv_index_path
        local = os.path.join(self.root, "index", os.path.basename(remote))
        if not os.path.exists(local):
            _copy_stream(self.table.file_io, remote, local)
        d = copy.copy(dv)
        d.dv_index_path = local
        return d

    def release(self, partition: Tuple, bucket: int, files: Sequence) -> None:
        """Delete local copies of files the table no longer uses."""
        for meta in files:
            try:
                os.unlink(self.local_path(partition, bucket, meta.file_name))
            except FileNotFoundError:
                pass

    # -- reading ------------------------------------------------------------------------------------------
    def merged_batches(self, partition: Tuple, bucket: int, files: BucketFiles,
                       skip_level0: bool = False) -> Iterator[pa.RecordBatch]:
        """The bucket's rows merged as pypaimon's batch read merges them."""
        from pypaimon.read.split import DataSplit
        from pypaimon.table.row.generic_row import GenericRow

        local = self.localize(partition, bucket, files)
        metas, dvs = local.files, local.deletion_files
        if skip_level0:
            keep = [i for i, m in enumerate(metas) if m.level > 0]
            metas = [metas[i] for i in keep]
            dvs = [dvs[i] for i in keep] if dvs is not None else None
        if not metas:
            return
        # One file without delete rows (and no deletion vector) holds each key once, already merged by the writer:
        # read it as it is (pypaimon's planner does the same; ~15x faster than the merge read).
        raw = len(metas) == 1 and metas[0].delete_row_count == 0 and not (dvs and any(dvs))
        split = DataSplit(metas, GenericRow(list(partition), self._partition_fields()), bucket,
                          raw_convertible=raw, data_deletion_files=dvs)
        yield from split_batches(self.local_table.new_read_builder().new_read(), [split])

    def change_batches(self, partition: Tuple, bucket: int, adds: Sequence) -> Iterator[pa.RecordBatch]:
        """Physical rows (with ``_row_kind``) of new files, in sequence order (oldest file first)."""
        from pypaimon.read.split import DataSplit
        from pypaimon.table.row.generic_row import GenericRow

        local = self.localize(partition, bucket, BucketFiles(list(adds)))
        metas = sorted(local.files, key=lambda m: (m.max_sequence_number, m.min_sequence_number))
        if not metas:
            return
        split = DataSplit(metas, GenericRow(list(partition), self._partition_fields()), bucket,
                          is_streaming=True)
        yield from split_batches(self.local_table.new_stream_read_builder().with_include_row_kind(True).new_read(),
                                 [split])

    def _partition_fields(self):
        by_name = {f.name: f for f in self.table.fields}
        return [by_name[k] for k in self.table.partition_keys]

    def output_schema(self) -> pa.Schema:
        from pypaimon.schema.data_types import PyarrowFieldParser

        return PyarrowFieldParser.from_paimon_schema(self.table.fields)
