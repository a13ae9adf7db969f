"""The one snapshot follower under ``follow``, the query service's scanner and the Spark source.

    async for item in follow(table, start="earliest", exit_at_end=True):
        sink.write(item.batch)

Two halves meet at a queue of planned snapshots. The schedule (``schedule.py``) walks the snapshots (start
position, lookahead, notification while idle, gaps, diff catch-up, schema changes, the end) and plans each one into
splits, handed out with the reads set up for its schema. The follower reads each planned snapshot's splits into
Arrow batches in threads (``SplitReader``), opening the next one while the current one is written, and tags the
batches. A consumer position is written when the caller asks for the next item after the last batch of a snapshot,
i.e. after it has written (and flushed) that snapshot's rows: at-least-once, never ahead of the output.
"""
from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass
from typing import AsyncIterator, Callable, Iterator, Optional

import pyarrow as pa

from ..atomic_file import local_path
from ..catalog import TableRef
from ..errors import PaimonTailError
from ..storage.diagnosis import endpoint_of
from ..storage.prefetch import Prefetcher
from ..storage.retry import StorageRetry
from .consumer import ConsumerStore
from .options import FollowOptions, meta_fields, output_schema
from .reads import SchemaReads, bucket_filter, check_buckets
from .reader import SplitReader
from .schedule import END, Planned, Schedule
from .stats import FollowStats

META_COLUMNS = ("_snapshot_id", "_commit_time", "_bucket", "_partition")


@dataclass
class FollowBatch:
    """Rows of one snapshot (part of it: a snapshot can span many batches)."""

    batch: pa.RecordBatch
    snapshot_id: int
    commit_time_ms: int
    kind: str  # full | delta | diff
    bucket: int
    partition: str
    last_in_snapshot: bool = False
    table: Optional[TableRef] = None  # which table (a multi-table follow interleaves several)


class Follower:
    """Async-iterable stream of ``FollowBatch`` for one table; also usable synchronously via ``iter_sync``."""

    def __init__(self, table, options: Optional[FollowOptions] = None, **kwargs) -> None:
        if options is None:
            options = FollowOptions(**kwargs)
        elif kwargs:
            options = dataclasses.replace(options, **kwargs)
        self.options = o = options.normalized()
        self.table = table
        self.ref = TableRef.of(table)
        self.stats = FollowStats()
        # called with each notice (an overwrite skipped, ...) when the follow reaches it, after everything before
        # it was handed out; they are kept in ``stats.notices`` too
        self.on_notice: Optional[Callable[[str], None]] = None
        self.retry = StorageRetry(endpoint_of(table.file_io), o.effective_storage_timeout(), self.stats.health)
        # On an object store, data files are fetched ahead of decoding (storage/prefetch.py); --no-prefetch
        # (plan only after the previous snapshot is written) reads as on a local disk.
        self.remote = local_path(table.table_path) is None
        prefetcher = Prefetcher(table.file_io) if self.remote and o.prefetch else None
        self.consumers = ConsumerStore(table) if o.consumer_id else None
        if self.consumers:
            ConsumerStore.validate_id(o.consumer_id)
        keep = bucket_filter(o)
        check_buckets(table, o, keep)
        self.schedule = Schedule(SchemaReads(table, o, keep), o, self.retry, self.stats, self.consumers, prefetcher)
        # one pool of read threads for the whole follow, whatever schema a snapshot was planned with
        self.reader = SplitReader(workers=o.read_workers, retry=self.retry, batch_rows=o.batch_size)

    def output_schema(self) -> pa.Schema:
        return output_schema(self.schedule.reads.read.read_type, self.options)

    # -- reading ------------------------------------------------------------------------------------------
    def _open(self, planned: Planned):
        return self.reader.open(planned.splits, planned.table_read)

    def _with_meta(self, batch: pa.RecordBatch, planned: Planned, split) -> pa.RecordBatch:
        n = batch.num_rows
        partition = planned.reads.partition_text(split)
        columns = [
            pa.array([planned.snapshot_id] * n, pa.int64()),
            pa.array([planned.commit_time_ms] * n, pa.timestamp("ms", tz="UTC")),
            pa.array([split.bucket] * n, pa.int32()),
            pa.array([partition] * n, pa.string()),
        ]
        arrays = list(batch.columns) + columns
        return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(list(batch.schema) + meta_fields()))

    def _count_overwrite(self, planned: Planned) -> None:
        if planned.kind == "diff":
            self.stats.overwrites_skipped += len(planned.notices)
        elif planned.commit_kind == "OVERWRITE" and planned.kind == "delta":
            if planned.notices:
                self.stats.overwrites_skipped += 1
            else:
                self.stats.overwrites_read += 1

    def _notice(self, message: str) -> None:
        self.stats.notices.append(message)
        if self.on_notice is not None:
            self.on_notice(message)

    async def _commit(self, next_snapshot_id: int) -> None:
        if self.consumers:
            await self.retry.call(self.consumers.set, self.options.consumer_id, next_snapshot_id)

    async def __aiter__(self) -> AsyncIterator[FollowBatch]:
        schedule = self.schedule
        schedule.start()
        ahead = None  # (item, stream) taken from the schedule early, its stream already reading
        current = None
        try:
            while True:
                if ahead is not None:
                    item, stream = ahead
                    ahead = None
                else:
                    item, stream = await schedule.take(), None
                if item is END:
                    return
                if isinstance(item, BaseException):
                    raise item
                planned: Planned = item
                self._count_overwrite(planned)
                for notice in planned.notices:
                    self._notice(notice)
                pending: Optional[FollowBatch] = None
                stream = current = stream or self._open(planned)
                async for split, batch in stream:
                    if ahead is None and self.options.prefetch and stream.submitted_all and schedule.ready():
                        # Read-ahead: the next snapshot decodes in the reader's threads while this one is written.
                        nxt = schedule.take_nowait()
                        ahead = (nxt, self._open(nxt) if isinstance(nxt, Planned) else None)
                    if planned.kind == "full" and self.options.row_kind:
                        batch = _as_inserts(batch)
                    if self.options.meta:
                        batch = self._with_meta(batch, planned, split)
                    if pending is not None:
                        yield pending
                    pending = FollowBatch(
                        batch, planned.snapshot_id, planned.commit_time_ms, planned.kind, split.bucket,
                        planned.reads.partition_text(split), table=self.ref,
                    )
                    self.stats.rows += batch.num_rows
                    self.stats.bytes += batch.nbytes
                if pending is not None:
                    pending.last_in_snapshot = True
                    self.stats.snapshot_id = planned.snapshot_id
                    self.stats.commit_time_ms = planned.commit_time_ms
                    yield pending
                else:
                    self.stats.snapshot_id = planned.snapshot_id
                    self.stats.commit_time_ms = planned.commit_time_ms
                self.stats.snapshots += 1
                schedule.release(planned)
                # The caller asked for more: everything of this snapshot is written.
                await self._commit(planned.next_snapshot_id)
                schedule.done()
        finally:
            if current is not None:
                current.close()
            if ahead is not None and ahead[1] is not None:
                ahead[1].close()
            await schedule.stop()
            self.close()

    def close(self) -> None:
        self.reader.close()
        self.schedule.close()

    def iter_sync(self) -> Iterator[FollowBatch]:
        """Blocking iteration for code that is not async (runs its own event loop)."""
        return iterate_sync(self)


def iterate_sync(source) -> Iterator[FollowBatch]:
    """Iterate an async-iterable follower from code that is not async, on an event loop of its own."""
    loop = asyncio.new_event_loop()
    agen = source.__aiter__()
    try:
        while True:
            try:
                yield loop.run_until_complete(agen.__anext__())
            except StopAsyncIteration:
                return
    finally:
        loop.run_until_complete(agen.aclose())
        loop.close()


def _as_inserts(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A full read is the table's content, so every row is an insert (as in Paimon's Flink source), whatever
    kind the merge left on the newest version of the row."""
    kinds = pa.array(["+I"] * batch.num_rows, pa.string())
    return pa.RecordBatch.from_arrays([kinds, *batch.columns[1:]], schema=batch.schema)


def follow(table, options: Optional[FollowOptions] = None, **kwargs) -> Follower:
    """Follow ``table`` (a pypaimon table): ``async for item in follow(t, start="earliest"): ...``."""
    return Follower(table, options, **kwargs)


__all__ = ["Follower", "FollowBatch", "FollowOptions", "FollowStats", "follow", "META_COLUMNS", "PaimonTailError"]
