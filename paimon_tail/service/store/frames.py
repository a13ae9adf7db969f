"""Rows on local disk, compressed, readable a few hundred rows at a time: the store's file format.

A *frame file* is a run of Arrow record batches ("frames", ~256 rows or ~64 KiB each), each serialised as an Arrow
IPC message and compressed as one zstd frame, back to back; the offsets live in memory (24 bytes per frame).
One row costs one frame's decompression (~50 µs); a *chunk* (up to 256 consecutive frames, ~64k rows) is what the
memory cache keeps decompressed for batch lookups. Whole-frame compression keeps the files about the size of the
table's own Parquet (Arrow IPC's own per-buffer zstd costs 5x more per read: one codec context per buffer).
"""
from __future__ import annotations

import os
from typing import Iterable, List, Optional, Sequence

import numpy as np
import pyarrow as pa

FRAME_BYTES = 64 << 10  # target uncompressed size of a frame
MIN_FRAME_ROWS, MAX_FRAME_ROWS = 16, 256
CHUNK_FRAMES = 256
ZSTD_LEVEL = 1

_codec: Optional[pa.Codec] = None


def codec() -> pa.Codec:
    global _codec
    if _codec is None:
        _codec = pa.Codec("zstd", ZSTD_LEVEL)
    return _codec


def frame_rows_for(rows) -> int:
    """Rows per frame for rows like these (a table or a batch): ~``FRAME_BYTES`` uncompressed."""
    per_row = max(1, rows.nbytes // max(1, rows.num_rows))
    return int(min(MAX_FRAME_ROWS, max(MIN_FRAME_ROWS, FRAME_BYTES // per_row)))


class FrameFile:
    """One frame file (immutable once written). ``row_starts[i]`` is the first row of frame ``i``."""

    def __init__(self, path: str, schema: pa.Schema, offsets: np.ndarray, row_starts: np.ndarray,
                 raw_sizes: np.ndarray, schema_id: int = 0, fields: Sequence = ()) -> None:
        self.path = path
        self.schema = schema
        self.schema_id = schema_id  # the table's schema the rows were read with, and its fields (field ids)
        self.fields = list(fields)
        self.offsets = offsets
        self.row_starts = row_starts
        self.raw_sizes = raw_sizes
        self._file = pa.memory_map(path, "r")  # stays readable after the file is unlinked

    @property
    def num_rows(self) -> int:
        return int(self.row_starts[-1])

    @property
    def num_frames(self) -> int:
        return len(self.raw_sizes)

    @property
    def num_chunks(self) -> int:
        return (self.num_frames + CHUNK_FRAMES - 1) // CHUNK_FRAMES

    @property
    def disk_bytes(self) -> int:
        return int(self.offsets[-1])

    def frame(self, i: int) -> pa.RecordBatch:
        start, end = int(self.offsets[i]), int(self.offsets[i + 1])
        raw = codec().decompress(self._file.read_at(end - start, start), decompressed_size=int(self.raw_sizes[i]),
                                 asbytes=False)
        return pa.ipc.read_record_batch(raw, self.schema)

    def chunk(self, c: int) -> pa.RecordBatch:
        """Frames ``c * CHUNK_FRAMES ...`` as one contiguous batch (rows ``chunk_start(c)`` on)."""
        lo = c * CHUNK_FRAMES
        hi = min(self.num_frames, lo + CHUNK_FRAMES)
        frames = [self.frame(i) for i in range(lo, hi)]
        if len(frames) == 1:
            return frames[0]
        return pa.Table.from_batches(frames, self.schema).combine_chunks().to_batches()[0]

    def chunk_start(self, c: int) -> int:
        return int(self.row_starts[c * CHUNK_FRAMES])

    def close(self) -> None:
        self._file.close()


class FrameWriter:
    """Writes batches of one schema as frames; ``finish`` returns the readable file."""

    def __init__(self, path: str, schema: pa.Schema, schema_id: int = 0, fields: Sequence = (),
                 frame_rows: int = 0) -> None:
        self.path = path
        self.schema = schema
        self.schema_id = schema_id
        self.fields = list(fields)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        self._out = os.fdopen(fd, "wb")
        self._offsets: List[int] = [0]
        self._rows: List[int] = [0]
        self._raw: List[int] = []
        self._pending: List[pa.RecordBatch] = []
        self._pending_rows = 0
        self._frame_rows = frame_rows  # 0: from the first batch (every frame but the last has this many rows)

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        if self._frame_rows == 0:
            self._frame_rows = frame_rows_for(batch)
        size = self._frame_rows
        if self._pending:  # complete the frame begun by the previous batch
            need = size - self._pending_rows
            self._pending.append(batch.slice(0, need))
            self._pending_rows += min(need, batch.num_rows)
            batch = batch.slice(need)
            if self._pending_rows < size:
                return
            self._emit(pa.Table.from_batches(self._pending, self.schema).combine_chunks().to_batches()[0])
            self._pending, self._pending_rows = [], 0
        while batch.num_rows >= size:  # (IPC writes a slice's own bytes: no copy needed before)
            self._emit(batch.slice(0, size))
            batch = batch.slice(size)
        if batch.num_rows:
            self._pending, self._pending_rows = [batch], batch.num_rows

    def _emit(self, batch: pa.RecordBatch) -> None:
        raw = batch.serialize()
        packed = codec().compress(raw, asbytes=False)
        self._out.write(packed)
        self._offsets.append(self._offsets[-1] + packed.size)
        self._rows.append(self._rows[-1] + batch.num_rows)
        self._raw.append(raw.size)

    @property
    def frame_rows(self) -> int:
        return self._frame_rows

    def finish(self) -> FrameFile:
        if self._pending:
            self._emit(pa.Table.from_batches(self._pending, self.schema).combine_chunks().to_batches()[0])
            self._pending, self._pending_rows = [], 0
        self._out.close()
        return FrameFile(self.path, self.schema, np.asarray(self._offsets, np.int64),
                         np.asarray(self._rows, np.int64), np.asarray(self._raw, np.int64), self.schema_id,
                         self.fields)

    def abort(self) -> None:
        self._out.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


def write_frames(path: str, schema: pa.Schema, batches: Iterable[pa.RecordBatch], schema_id: int = 0,
                 fields: Sequence = (), frame_rows: int = 0) -> FrameFile:
    writer = FrameWriter(path, schema, schema_id, fields, frame_rows)
    try:
        for batch in batches:
            writer.write(batch)
        return writer.finish()
    except BaseException:
        writer.abort()
        raise


__all__ = ["CHUNK_FRAMES", "FrameFile", "FrameWriter", "codec", "frame_rows_for", "write_frames"]
