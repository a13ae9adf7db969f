"""Runs: the rows a bucket's key index points into, in frame files under the bucket's directory.

* ``FileRun``: one data file of the table, its rows in file order. Written the first time something needs its
  rows (a lookup, or the background loader), evictable under ``--max-disk`` and written again from the data file
  when needed (data files never change), dropped when the table no longer has the file.
* ``MergedRun``: a bucket's rows as a batch read merges them (merge engines whose rows cannot be read from one file:
  partial-update, aggregation, a sequence field). Written at once, pinned.

A run keeps the schema its rows were read with; ``take`` answers in any later schema of the table (columns matched
by field id: added columns come as nulls, renamed ones under their new name, widened ones cast).
"""
from __future__ import annotations

import itertools
import os
import threading
from typing import Callable, Iterable, List, Optional, Sequence

import numpy as np
import pyarrow as pa

from ...compat.kv_files import KIND, SEQUENCE, FileRef, KeyValueFiles
from .budget import DiskBudget, MemoryCache
from .frames import CHUNK_FRAMES, FrameFile, write_frames

_uids = itertools.count(1)
FRAMES_BEFORE_CHUNK = 8  # a batch needing more frames than this of one chunk decompresses (and caches) the chunk


class Target:
    """The schema an answer is in: the table's fields at the view's schema, and the columns asked for."""

    def __init__(self, schema_id: int, fields: Sequence, schema: pa.Schema, columns: Optional[Sequence[str]]) -> None:
        self.schema_id = schema_id
        self.fields = list(fields)
        self.columns = list(columns) if columns else list(schema.names)
        self.schema = pa.schema([schema.field(c) for c in self.columns])
        by_name = {f.name: f for f in self.fields}
        self.ids = [by_name[c].id for c in self.columns]


def positions_by_code(codes: np.ndarray):
    """(code, its positions) for each distinct code, codes ascending, positions in order: one stable sort."""
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    return [(int(codes[grp[0]]), grp) for grp in np.split(order, bounds)]


class Run:
    """Rows a key index points into (see the module docstring)."""

    def __init__(self, directory: str, cache: MemoryCache, disk: DiskBudget) -> None:
        self.uid = next(_uids)
        self.directory = directory
        self.cache = cache
        self.disk = disk
        self._frames: Optional[FrameFile] = None
        self._lock = threading.Lock()
        self._dropped = False

    @property
    def path(self) -> str:
        return os.path.join(self.directory, f"run-{self.uid}.frames")

    @property
    def built(self) -> bool:
        return self._frames is not None

    def frames(self) -> FrameFile:
        frames = self._frames
        if frames is None:
            frames = self._load()
        return frames

    def _load(self) -> FrameFile:  # pragma: no cover - FileRun's
        raise RuntimeError("run not written")

    # -- reading --------------------------------------------------------------------------------------------
    def _chunk(self, frames: FrameFile, c: int) -> pa.RecordBatch:
        key = (self.uid, c)
        batch = self.cache.get(key)
        if batch is None:
            batch = frames.chunk(c)
            self.cache.put(key, batch)
        return batch

    def _frame(self, frames: FrameFile, f: int) -> pa.RecordBatch:
        key = (self.uid, -1 - f)
        batch = self.cache.get(key)
        if batch is None:
            batch = frames.frame(f)
            self.cache.put(key, batch)
        return batch

    def cached_chunk(self, c: int) -> Optional[pa.RecordBatch]:
        return self.cache.get((self.uid, c))

    def take(self, rows: np.ndarray, target: Target) -> pa.Table:
        """The rows at ``rows`` (any order, that order kept) in ``target``'s schema."""
        frames = self.frames()
        self.disk.touch(self.uid)
        names = _source_names(frames, target)
        fidx = frames.frame_of(rows)
        chunks = fidx // CHUNK_FRAMES
        parts: List[pa.RecordBatch] = []
        order: List[np.ndarray] = []
        for c, grp in (positions_by_code(chunks) if len(rows) > 1 else [(int(chunks[0]), np.arange(len(rows)))]):
            batch = self.cached_chunk(c)
            wanted = np.unique(fidx[grp]) if batch is None else None
            if batch is None and len(wanted) > FRAMES_BEFORE_CHUNK:
                batch = self._chunk(frames, c)
            if batch is not None:
                start = frames.chunk_start(c)
                parts.append(batch.select(names).take(pa.array(rows[grp] - start)))
                order.append(grp)
                continue
            for f, sub in (positions_by_code(fidx[grp]) if len(wanted) > 1 else [(int(wanted[0]), np.arange(len(grp)))]):
                frame = self._frame(frames, f)
                at = grp[sub]
                parts.append(frame.select(names).take(pa.array(rows[at] - int(frames.row_starts[f]))))
                order.append(at)
        if len(parts) == 1:
            table = pa.Table.from_batches(parts)
            if len(order[0]) > 1 and np.any(np.diff(order[0]) < 0):
                inverse = np.empty(len(rows), np.int64)
                inverse[order[0]] = np.arange(len(rows))
                table = table.take(pa.array(inverse))
        else:
            table = pa.Table.from_batches(parts).combine_chunks()
            flat = np.concatenate(order)
            inverse = np.empty(len(rows), np.int64)
            inverse[flat] = np.arange(len(rows))
            table = table.take(pa.array(inverse))
        return _evolved(frames, table, target)

    def row(self, r: int, target: Target) -> pa.RecordBatch:
        """One row as a record batch (a slice of the cached chunk or frame that holds it)."""
        frames = self.frames()
        f = int(frames.frame_of(np.asarray([r]))[0])
        batch = self.cached_chunk(f // CHUNK_FRAMES)
        if batch is not None:
            one = batch.slice(r - frames.chunk_start(f // CHUNK_FRAMES), 1)
        else:
            one = self._frame(frames, f).slice(r - int(frames.row_starts[f]), 1)
        one = one.select(_source_names(frames, target))
        if frames.schema_id == target.schema_id:
            return one
        return _evolved(frames, pa.Table.from_batches([one]), target).to_batches()[0]

    def keys(self, names: Sequence[str]) -> pa.Table:
        """Every row's ``names`` columns (whole frames are decompressed: used when an index is rebuilt)."""
        frames = self.frames()
        parts = [frames.frame(i).select(list(names)) for i in range(frames.num_frames)]
        return pa.Table.from_batches(parts, pa.schema([frames.schema.field(n) for n in names]))

    def warm(self) -> int:
        """Decompress chunks into the memory cache while it has room; returns the bytes added."""
        frames = self._frames
        if frames is None:
            return 0
        added = 0
        for c in range(frames.num_chunks):
            if self.cached_chunk(c) is not None:
                continue
            estimate = int(frames.raw_sizes[c * CHUNK_FRAMES:(c + 1) * CHUNK_FRAMES].sum())
            if not self.cache.has_room(estimate):
                break
            batch = frames.chunk(c)
            self.cache.put((self.uid, c), batch, only_if_room=True)
            added += batch.nbytes
        return added

    # -- life ------------------------------------------------------------------------------------------------
    def disk_bytes(self) -> int:
        frames = self._frames
        return frames.disk_bytes if frames is not None else 0

    def drop(self) -> None:
        """Delete the frame file (lookups reading it keep their mapping until they are done)."""
        with self._lock:
            self._dropped = True
            self._forget()

    def _forget(self) -> None:
        self._frames = None
        self.cache.forget(self.uid)
        self.disk.remove(self.uid)
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


def _source_names(frames: FrameFile, target: Target) -> List[str]:
    if frames.schema_id == target.schema_id:
        return target.columns
    by_id = {f.id: f.name for f in frames.fields}
    return [by_id[i] for i in target.ids if i in by_id]


def _evolved(frames: FrameFile, table: pa.Table, target: Target) -> pa.Table:
    """Rows read with an older schema of the table, in ``target``'s (matched by field id)."""
    if frames.schema_id == target.schema_id:
        return table
    by_id = {f.id: f.name for f in frames.fields}
    arrays = []
    for i, field in zip(target.ids, target.schema):
        name = by_id.get(i)
        if name is None:
            arrays.append(pa.nulls(table.num_rows, field.type))
        else:
            col = table.column(name)
            arrays.append(col.cast(field.type) if col.type != field.type else col)
    return pa.Table.from_arrays(arrays, schema=target.schema)


def _row_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f for f in schema if f.name not in (SEQUENCE, KIND)])


def _rows_only(batches: Iterable[pa.RecordBatch], schema: pa.Schema) -> Iterable[pa.RecordBatch]:
    for batch in batches:
        if SEQUENCE in batch.schema.names or KIND in batch.schema.names:
            batch = batch.select(schema.names)
        if batch.schema != schema:
            batch = pa.Table.from_batches([batch]).cast(schema).combine_chunks().to_batches()[0]
        yield batch


class FileRun(Run):
    """One data file's rows (all of them, in file order: a deletion vector acts on the index, not here)."""

    def __init__(self, directory: str, cache: MemoryCache, disk: DiskBudget, source: Callable[[], KeyValueFiles],
                 ref: FileRef, read: Callable[[Callable[[], FrameFile]], FrameFile]) -> None:
        super().__init__(directory, cache, disk)
        self.ref = ref
        self.source = source  # the table's reader of the moment (files are read in the table's latest schema)
        self._read = read  # runs the write under the storage retry policy
        self.writes = 0

    @property
    def file_name(self) -> str:
        return self.ref.meta.file_name

    def _load(self) -> FrameFile:
        with self._lock:
            if self._frames is not None:
                return self._frames
            if self._dropped:
                raise FileNotFoundError(f"{self.file_name} is no longer part of the table")
            files = self.source()
            schema = _row_schema(files.schema(files.value_names))
            sid, fields = files.table.table_schema.id, files.table.fields
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
            frames = self._read(lambda: write_frames(self.path, schema, _rows_only(files.batches(self.ref), schema),
                                                     sid, fields))
            self._frames = frames
            self.writes += 1
        self.disk.add(self.uid, frames.disk_bytes, self.evict)
        return frames

    def evict(self) -> None:
        with self._lock:
            if self._frames is not None and not self._dropped:
                self._forget()


class MergedRun(Run):
    """A bucket's merged rows, written from ``batches`` at once (pinned)."""

    def __init__(self, directory: str, cache: MemoryCache, disk: DiskBudget, schema_id: int, fields: Sequence,
                 schema: pa.Schema, batches: Iterable[pa.RecordBatch]) -> None:
        super().__init__(directory, cache, disk)
        os.makedirs(directory, mode=0o700, exist_ok=True)
        self._frames = write_frames(self.path, schema, _rows_only(batches, schema), schema_id, fields)
        disk.add(self.uid, self._frames.disk_bytes, None)


__all__ = ["FileRun", "MergedRun", "Run", "Target", "positions_by_code"]
