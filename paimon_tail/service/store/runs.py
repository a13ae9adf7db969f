"""Runs: the rows a bucket's key index points into.

* ``FileRun``: one data file of the table, its rows in file order. The first lookup that needs one of its rows
  decodes the data file (straight from the warehouse) into the memory cache and is answered from there; its frame
  file (``frames.py``: compressed, on local disk) is written in the background, from the cache. Evictable under
  ``--max-disk`` and written again from the data file when needed (data files never change); dropped when the table
  no longer has the file.
* ``MergedRun``: a bucket's rows as a batch read merges them (merge engines whose rows cannot be read from one file:
  partial-update, aggregation, a sequence field). Written at once, pinned.

A bucket whose runs all have their frame files, and fit the memory cache together, gets a *sheet* (``sheet_of``):
its runs' rows decompressed into one record batch, one cache entry. A batch lookup then takes a bucket's rows in
one call instead of one per run (at 20M rows, 20 runs a bucket: 8 takes an answer instead of 160). A sheet is only
another way to hold rows in memory: evicted, dropped with any of its runs, or left out where rows were read in
another schema, the runs' chunks and frames answer as before.

Rows are addressed by position; a run's *layout* (rows per frame, 256 frames per chunk) is fixed when its rows are
first decoded, so a chunk in the memory cache and the same chunk of the frame file hold the same rows. A run keeps
the schema its rows were read with; ``take`` answers in any later schema of the table (``targets.py``).

Why one module (~430 lines): ``Run`` holds the chunk, frame and sheet machinery its two kinds share, ``FileRun`` and
``MergedRun`` differ only in where the rows come from, and ``sheet_of`` sets the runs' sheet references.
"""
from __future__ import annotations

import itertools
import os
import threading
from dataclasses import dataclass
from typing import Callable, Iterable, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa

from ...compat.adapters.kv_files import KIND, SEQUENCE, FileRef, KeyValueFiles
from .budget import DiskBudget, MemoryCache
from .frames import CHUNK_FRAMES, FrameFile, FrameWriter, frame_rows_for, write_frames
from .targets import Target, evolved, readers_of, source_names

_uids = itertools.count(1)
FRAMES_BEFORE_CHUNK = 8  # a batch needing more frames than this of one chunk decompresses (and caches) the chunk
SHEET = "sheet"  # a sheet's cache key is (its uid, SHEET)
SHEET_MAX_BYTES = 1 << 30  # a sheet's rows, decompressed (Arrow's 32-bit string offsets stay far from overflow)
SHEET_MIN_RUNS = 4  # runs outside a sheet before a bucket gets another (commits add one run a bucket each); its
# first sheet takes however many runs it has (one take instead of a gather per chunk even for one run)


class SheetRef(NamedTuple):
    """Where a run's rows are in a sheet."""

    uid: int  # the sheet's (its cache key is (uid, SHEET))
    start: int  # the run's first row in it
    schema_id: int  # the schema the rows were read in


@dataclass(frozen=True)
class Content:
    """What a run's rows are: how many, in which schema of the table, cut how."""

    num_rows: int
    frame_rows: int
    schema: pa.Schema
    schema_id: int
    fields: tuple

    @property
    def chunk_rows(self) -> int:
        return self.frame_rows * CHUNK_FRAMES


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
        self._content: Optional[Content] = None
        self._lock = threading.Lock()
        self._dropped = False
        self.sheet: Optional[SheetRef] = None

    @property
    def path(self) -> str:
        return os.path.join(self.directory, f"run-{self.uid}.frames")

    @property
    def built(self) -> bool:
        """Its frame file is on local disk (reading any of its rows never touches the warehouse)."""
        return self._frames is not None

    def write(self) -> None:
        """Write the frame file if it is not on disk (the background's job)."""

    def _decoded(self) -> List[pa.RecordBatch]:  # pragma: no cover - FileRun's
        raise RuntimeError("no rows")

    # -- reading --------------------------------------------------------------------------------------------
    def _ready(self) -> Content:
        content = self._content
        if content is None:
            self._decoded()
            content = self._content
        return content

    def _chunk(self, c: int, frames: Optional[FrameFile]) -> pa.RecordBatch:
        key = (self.uid, c)
        batch = self.cache.get(key)
        if batch is not None:
            return batch
        if frames is not None:
            batch = frames.chunk(c)
            self.cache.put(key, batch)
            return batch
        return self._decoded()[c]

    def _frame(self, frames: FrameFile, f: int) -> pa.RecordBatch:
        key = (self.uid, -1 - f)
        batch = self.cache.get(key)
        if batch is None:
            batch = frames.frame(f)
            self.cache.put(key, batch)
        return batch

    def take(self, rows: np.ndarray, target: Target) -> pa.Table:
        """The rows at ``rows`` (any order, that order kept) in ``target``'s schema."""
        if len(rows) > 1 and np.any(rows[1:] < rows[:-1]):
            order = np.argsort(rows, kind="stable")
            table = pa.Table.from_batches(self.gather(rows[order], target))
            inverse = np.empty(len(rows), np.int64)
            inverse[order] = np.arange(len(rows))
            return table.take(pa.array(inverse))
        return pa.Table.from_batches(self.gather(rows, target))

    def gather(self, rows: np.ndarray, target: Target) -> List[pa.RecordBatch]:
        """The rows at ``rows`` (ascending), in ``target``'s schema, as batches in that order."""
        content = self._ready()
        sheet = self.sheet_rows(target.schema_id) if content.schema_id == target.schema_id else None
        if sheet is not None:
            return [sheet[0].select(target.columns).take(pa.array(rows + sheet[1]))]
        frames = self._frames
        self.disk.touch(self.uid)
        names = source_names(content, target)
        evolve = content.schema_id != target.schema_id
        chunk_rows = content.chunk_rows
        first, last = int(rows[0]) // chunk_rows, int(rows[-1]) // chunk_rows
        if first == last:
            bounds = [(first, 0, len(rows))]
        else:
            cuts = np.searchsorted(rows, np.arange(first + 1, last + 1) * chunk_rows)
            edges = [0, *cuts.tolist(), len(rows)]
            bounds = [(first + i, a, b) for i, (a, b) in enumerate(zip(edges[:-1], edges[1:])) if b > a]
        out: List[pa.RecordBatch] = []
        for c, a, b in bounds:
            part = rows[a:b]
            batch = self.cache.get((self.uid, c))
            if batch is None and frames is not None:
                fidx = part // content.frame_rows
                if fidx[-1] - fidx[0] < FRAMES_BEFORE_CHUNK or len(np.unique(fidx)) <= FRAMES_BEFORE_CHUNK:
                    # a few frames: no need for the whole chunk
                    fcuts = np.flatnonzero(np.diff(fidx)) + 1
                    for sub in np.split(part, fcuts):
                        f = int(sub[0]) // content.frame_rows
                        frame = self._frame(frames, f).select(names)
                        out.append(frame.take(pa.array(sub - f * content.frame_rows)))
                    continue
            if batch is None:
                batch = self._chunk(c, frames)
            out.append(batch.select(names).take(pa.array(part - c * chunk_rows)))
        if evolve:
            return evolved(content, pa.Table.from_batches(out), target).to_batches()
        return out

    def sheet_rows(self, schema_id: Optional[int] = None) -> Optional[Tuple[pa.RecordBatch, int]]:
        """(the sheet holding this run's rows, where they start in it), while the memory cache keeps the sheet and,
        given ``schema_id``, the rows there were read in that schema."""
        ref = self.sheet
        if ref is None or (schema_id is not None and ref.schema_id != schema_id):
            return None
        batch = self.cache.get((ref.uid, SHEET))
        if batch is None:
            self.sheet = None  # evicted: chunks and frames answer (the background may build another)
            return None
        return batch, ref.start

    def _holding(self, r: int, content: Content) -> Tuple[pa.RecordBatch, int]:
        """(the batch that holds row ``r`` — its sheet, the cached chunk, else its frame —, the row's index in it)."""
        sheet = self.sheet_rows(content.schema_id)
        if sheet is not None:
            return sheet[0], sheet[1] + r
        c = r // content.chunk_rows
        batch = self.cache.get((self.uid, c))
        if batch is not None:
            return batch, r - c * content.chunk_rows
        frames = self._frames
        if frames is not None:
            f = r // content.frame_rows
            return self._frame(frames, f), r - f * content.frame_rows
        return self._chunk(c, None), r - c * content.chunk_rows

    def row(self, r: int, target: Target) -> pa.RecordBatch:
        """One row as a record batch (a slice of the cached chunk or frame that holds it)."""
        content = self._ready()
        batch, i = self._holding(r, content)
        one = batch.slice(i, 1).select(source_names(content, target))
        if content.schema_id == target.schema_id:
            return one
        return evolved(content, pa.Table.from_batches([one]), target).to_batches()[0]

    def values(self, r: int, target: Target) -> list:
        """One row's values in ``target``'s columns, as ``to_pylist`` gives them: read straight from the batch that
        holds the row (its column arrays kept with it), no one-row batch built — a one-key answer's path."""
        content = self._ready()
        if content.schema_id != target.schema_id:
            return list(self.row(r, target).to_pylist()[0].values())
        batch, i = self._holding(r, content)
        readers, positions = readers_of(batch, target.names)
        return [readers[p](i) for p in positions]

    def warm(self) -> int:
        """Decompress chunks into the memory cache while it has room; returns the bytes added."""
        frames, content = self._frames, self._content
        if frames is None or content is None or self.sheet_rows() is not None:
            return 0
        added = 0
        for c in range(frames.num_chunks):
            if self.cache.get((self.uid, c)) is not None:
                continue
            estimate = int(frames.raw_sizes[c * CHUNK_FRAMES:(c + 1) * CHUNK_FRAMES].sum())
            if not self.cache.has_room(estimate):
                break
            batch = frames.chunk(c)
            self.cache.put((self.uid, c), batch, only_if_room=True)
            added += batch.nbytes
        return added

    # -- life ------------------------------------------------------------------------------------------------
    def rows_bytes(self) -> int:
        """Its rows' size decompressed (0 until its frame file is written)."""
        frames = self._frames
        return int(frames.raw_sizes.sum()) if frames is not None else 0

    def disk_bytes(self) -> int:
        frames = self._frames
        return frames.disk_bytes if frames is not None else 0

    def drop(self) -> None:
        """Delete the frame file (lookups reading it keep their mapping until they are done)."""
        with self._lock:
            self._dropped = True
            self._frames = None
            self.cache.forget(self.uid)
            if self.sheet is not None:  # the sheet's other runs go back to their chunks
                self.cache.forget(self.sheet.uid)
                self.sheet = None
            self.disk.remove(self.uid)
            _unlink(self.path)


def sheet_of(runs: Sequence[Run], cache: MemoryCache) -> int:
    """Put the rows of ``runs`` (a bucket's) into ``cache`` as one sheet when every one has its frame file, they
    were read in one schema, and the cache has room for them once their own chunks are out; returns the bytes put
    (0: not done, their chunks stay as they are)."""
    todo = [r for r in runs if r.sheet_rows() is None]
    if not todo or (len(todo) < SHEET_MIN_RUNS and len(todo) < len(runs)):  # a bucket's first sheet: any runs
        return 0
    frames = [r._frames for r in todo]
    contents = [r._content for r in todo]
    if any(f is None for f in frames) or any(c is None for c in contents) or \
            len({c.schema_id for c in contents}) != 1:
        return 0
    size = sum(r.rows_bytes() for r in todo)
    cached = [[cache.peek((r.uid, c)) for c in range(f.num_chunks)] for r, f in zip(todo, frames)]
    held = sum(b.nbytes for chunks in cached for b in chunks if b is not None)
    if size > SHEET_MAX_BYTES or not cache.has_room(size - held):
        return 0
    parts = [b if b is not None else f.chunk(c) for chunks, f in zip(cached, frames) for c, b in enumerate(chunks)]
    table = pa.Table.from_batches(parts, contents[0].schema).combine_chunks()
    batch = table.to_batches()[0] if table.num_rows else None
    if batch is None or batch.num_rows != sum(c.num_rows for c in contents):  # one batch, every row
        return 0
    del cached, parts, table
    uid = next(_uids)
    for r in todo:
        cache.forget(r.uid)
    if not cache.put((uid, SHEET), batch, only_if_room=True):
        return 0
    start = 0
    for r, c in zip(todo, contents):
        r.sheet = SheetRef(uid, start, c.schema_id)
        start += c.num_rows
    if any(r._dropped for r in todo):  # dropped meanwhile: its sheet goes with it
        cache.forget(uid)
        for r in todo:
            r.sheet = None
        return 0
    return batch.nbytes


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _row_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f for f in schema if f.name not in (SEQUENCE, KIND)])


def _conformed(table: pa.Table, schema: pa.Schema) -> pa.Table:
    table = table.select(schema.names)
    return table.cast(schema) if table.schema != schema else table


def _chunks_of(table: pa.Table, content: Content) -> List[pa.RecordBatch]:
    out = []
    for start in range(0, max(1, table.num_rows), content.chunk_rows):
        part = table.slice(start, content.chunk_rows).combine_chunks().to_batches()
        out.append(part[0] if part else pa.record_batch([pa.array([], f.type) for f in table.schema],
                                                        schema=table.schema))
    return out


class FileRun(Run):
    """One data file's rows (all of them, in file order: a deletion vector acts on the index, not here)."""

    def __init__(self, directory: str, cache: MemoryCache, disk: DiskBudget, source: Callable[[], KeyValueFiles],
                 ref: FileRef, read: Callable[[Callable], object],
                 decoded: Optional[Callable[["Run"], None]] = None) -> None:
        super().__init__(directory, cache, disk)
        self.ref = ref
        self._on_decoded = decoded  # told after a lookup read the data file (its frame file is wanted)
        self.source = source  # the table's reader of the moment (files are read in the table's latest schema)
        self._read = read  # runs storage reads under the retry policy
        self.writes = 0  # frame files written (more than one: evicted and needed again)
        self.decodes = 0  # data file reads

    @property
    def file_name(self) -> str:
        return self.ref.meta.file_name

    def _decoded(self) -> List[pa.RecordBatch]:
        """Read the data file: every chunk into the memory cache (and returned, whatever the cache keeps); the
        frame file is then wanted (a lookup needed these rows)."""
        chunks = self._decode()
        if self._frames is None and self._on_decoded is not None:
            self._on_decoded(self)
        return chunks

    def _decode(self) -> List[pa.RecordBatch]:
        with self._lock:
            if self._dropped:
                raise FileNotFoundError(f"{self.file_name} is no longer part of the table")
            files = self.source()
            schema = _row_schema(files.schema(files.value_names))
            table = _conformed(self._read(lambda: files.read(self.ref)), schema)
            self.decodes += 1
            if self._content is None or self._content.schema_id != files.table.table_schema.id:
                if self._content is not None:  # read again in a newer schema: the old chunks go
                    self.cache.forget(self.uid)
                    self.sheet = None
                self._content = Content(table.num_rows, frame_rows_for(table), schema, files.table.table_schema.id,
                                        tuple(files.table.fields))
            chunks = _chunks_of(table, self._content)
            for c, batch in enumerate(chunks):
                self.cache.put((self.uid, c), batch)
            return chunks

    def write(self) -> None:
        if self._frames is not None:
            return
        content = self._content
        chunks = None
        if content is not None:
            n_chunks = (content.num_rows + content.chunk_rows - 1) // content.chunk_rows
            cached = [self.cache.get((self.uid, c)) for c in range(max(1, n_chunks))]
            if all(b is not None for b in cached):
                chunks = cached
        if chunks is None:
            chunks = self._decode()
            content = self._content
        with self._lock:
            if self._frames is not None or self._dropped:
                return
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
            frames = write_frames(self.path, content.schema, chunks, content.schema_id, content.fields,
                                  content.frame_rows)
            self._frames = frames
            self.writes += 1
        self.disk.add(self.uid, frames.disk_bytes, self.evict)

    def evict(self) -> None:
        """Delete the frame file (over ``--max-disk``); chunks in memory stay until the cache lets them go."""
        with self._lock:
            if self._frames is not None and not self._dropped:
                self._frames = None
                _unlink(self.path)


class MergedRun(Run):
    """A bucket's merged rows, written from ``batches`` as they come (pinned)."""

    def __init__(self, directory: str, cache: MemoryCache, disk: DiskBudget, schema_id: int, fields: Sequence,
                 schema: pa.Schema, batches: Iterable[pa.RecordBatch]) -> None:
        super().__init__(directory, cache, disk)
        os.makedirs(directory, mode=0o700, exist_ok=True)
        writer = FrameWriter(self.path, schema, schema_id, fields)
        try:
            for batch in batches:
                if batch.num_rows:
                    writer.write(_conformed(pa.Table.from_batches([batch]), schema).combine_chunks().to_batches()[0])
            self._frames = writer.finish()
        except BaseException:
            writer.abort()
            raise
        self._content = Content(self._frames.num_rows, writer.frame_rows or 1, schema, schema_id, tuple(fields))
        disk.add(self.uid, self._frames.disk_bytes, None)


__all__ = ["Content", "FileRun", "MergedRun", "Run", "SheetRef", "positions_by_code", "sheet_of"]
