"""The one snapshot follower under ``follow``, the query service's scanner and the Spark source.

    async for item in follow(table, start="earliest", exit_at_end=True):
        sink.write(item.batch)

A planning task walks snapshots (start position, lookahead, notification while idle, gap detection) and plans
each one into splits in a thread; with prefetch it runs one snapshot ahead of the reader. The reader turns
splits into Arrow batches in threads (``SplitReader``). A consumer position is written when the caller asks for
the next item after the last batch of a snapshot, i.e. after it has written (and flushed) that snapshot's rows:
at-least-once, never ahead of the output.
"""
from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass, field
from typing import AsyncIterator, Callable, Iterator, List, Optional, Sequence, Union

import pyarrow as pa

from ..errors import PaimonTailError, SnapshotExpired, SnapshotGap, TableChanged, UsageError
from ..catalog import TableRef, table_name
from .consumer import ConsumerStore
from .filters import parse_where
from .diff import DiffRead
from .planner import SnapshotPlanner
from .positions import EndPosition, ResolvedStart, StartPosition, parse_end, parse_start, resolve_start
from .reader import SplitReader
from .walker import SnapshotWalker

META_COLUMNS = ("_snapshot_id", "_commit_time", "_bucket", "_partition")


@dataclass
class FollowOptions:
    start: Union[StartPosition, str] = "latest-full"
    until: Union[EndPosition, str, None] = None
    exit_at_end: bool = False
    select: Optional[Sequence[str]] = None
    where: Optional[str] = None
    row_kind: bool = False
    meta: bool = False
    consumer_id: Optional[str] = None
    buckets: Optional[Sequence[int]] = None
    shard: Optional[tuple] = None  # (index, count)
    prefetch: bool = True
    catch_up: str = "replay"  # replay: snapshot by snapshot | diff: one plan for the backlog (folds history)
    on_gap: str = "error"  # error | skip
    read_workers: int = 2
    poll_max_interval: float = 0.5
    batch_size: Optional[int] = 65536

    def normalized(self) -> "FollowOptions":
        start = self.start if isinstance(self.start, StartPosition) else parse_start(self.start)
        until = self.until
        if isinstance(until, str):
            until = parse_end(until)
        if self.catch_up not in ("replay", "diff"):
            raise UsageError(f"bad catch-up mode {self.catch_up!r}: use replay or diff")
        if self.on_gap not in ("error", "skip"):
            raise UsageError(f"bad --on-gap {self.on_gap!r}: use error or skip")
        if self.shard is not None:
            index, count = self.shard
            if count < 1 or not 0 <= index < count:
                raise UsageError(f"bad shard {index}/{count}: use I/N with 0 <= I < N")
        return dataclasses.replace(self, start=start, until=until)


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


@dataclass
class FollowStats:
    """What the status footer shows; updated as the follower runs."""

    started: float = field(default_factory=time.monotonic)
    snapshot_id: Optional[int] = None  # last snapshot whose rows were all handed out
    commit_time_ms: Optional[int] = None
    latest_id: Optional[int] = None
    latest_time_ms: Optional[int] = None
    start_id: Optional[int] = None  # first snapshot of this session, for the catch-up progress bar
    rows: int = 0
    bytes: int = 0
    snapshots: int = 0
    caught_up: bool = False
    waiting_for_first_snapshot: bool = False
    mechanism: str = ""
    gaps: List[tuple] = field(default_factory=list)
    schema_changes: List[tuple] = field(default_factory=list)

    @property
    def lag_snapshots(self) -> int:
        if self.latest_id is None:
            return 0
        return max(0, self.latest_id - (self.snapshot_id or (self.start_id or 1) - 1))

    @property
    def lag_seconds(self) -> float:
        if self.caught_up or self.commit_time_ms is None or self.latest_time_ms is None:
            return 0.0
        return max(0.0, (self.latest_time_ms - self.commit_time_ms) / 1000.0)

    @property
    def rows_per_second(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.rows / elapsed if elapsed > 0 else 0.0


@dataclass
class _Planned:
    snapshot_id: int
    commit_time_ms: int
    kind: str
    splits: list
    next_snapshot_id: int  # the consumer position once this is written
    schema_id: int = 0


_END = object()


class Follower:
    """Async-iterable stream of ``FollowBatch`` for one table; also usable synchronously via ``iter_sync``."""

    def __init__(self, table, options: Optional[FollowOptions] = None, **kwargs) -> None:
        if options is None:
            options = FollowOptions(**kwargs)
        elif kwargs:
            options = dataclasses.replace(options, **kwargs)
        self.options = options.normalized()
        self.table = table
        self.ref = TableRef.of(table)
        self.stats = FollowStats()
        self.consumers = ConsumerStore(table) if self.options.consumer_id else None
        if self.consumers:
            ConsumerStore.validate_id(self.options.consumer_id)
        self._setup(table)
        self._walker: Optional[SnapshotWalker] = None

    # -- set-up -------------------------------------------------------------------------------------------
    def _bucket_filter(self) -> Optional[Callable[[int], bool]]:
        o = self.options
        chosen = set(o.buckets) if o.buckets is not None else None
        shard = o.shard
        if chosen is None and shard is None:
            return None

        def keep(bucket: int) -> bool:
            if chosen is not None and bucket not in chosen:
                return False
            return shard is None or bucket % shard[1] == shard[0]

        return keep

    def _setup(self, table) -> None:
        """Builders for one table schema (rebuilt when the schema evolves)."""
        o = self.options
        if o.batch_size:
            table = table.copy({"read.batch-size": str(o.batch_size)})
        names = [f.name for f in table.fields]
        builder = table.new_stream_read_builder()
        if o.where:
            predicate = parse_where(o.where, table.fields)
            if predicate is not None:
                builder.with_filter(predicate)
        if o.select:
            unknown = [c for c in o.select if c not in names]
            if unknown:
                raise UsageError(
                    f"unknown column{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} in --select",
                    hint=f"columns are {', '.join(names)}",
                )
            builder.with_projection(list(o.select))
        if o.row_kind:
            builder.with_include_row_kind(True)
        bucket_filter = self._bucket_filter()
        if bucket_filter is not None:
            builder.with_bucket_filter(bucket_filter)
        self.table = table
        self.schema_id = table.table_schema.id
        # DiffRead: --catch-up diff on primary-key tables plans BucketDiff splits (stream/diff.py)
        self.read = DiffRead(builder.new_read(), table, getattr(builder, "_predicate", None), o.row_kind)
        self.planner = SnapshotPlanner(builder.new_streaming_scan(), bucket_filter=bucket_filter)
        self.reader = SplitReader(self.read, workers=o.read_workers)

    def output_schema(self) -> pa.Schema:
        from pypaimon.schema.data_types import PyarrowFieldParser

        fields = list(PyarrowFieldParser.from_paimon_schema(self.read.read_type))
        if self.options.row_kind:
            fields.insert(0, pa.field("_row_kind", pa.string()))
        if self.options.meta:
            fields += _meta_fields()
        return pa.schema(fields)

    # -- planning -----------------------------------------------------------------------------------------
    def _walker_for_loop(self) -> SnapshotWalker:
        if self._walker is None:
            self._walker = SnapshotWalker(self.planner, self.options.poll_max_interval)
        self._walker.planner = self.planner  # rebuilt when the schema evolves
        return self._walker

    async def _wait(self) -> None:
        walker = self._walker_for_loop()
        await walker.wait()
        self.stats.mechanism = walker.mechanism
        await self._check_not_dropped()

    async def _resolve(self) -> ResolvedStart:
        o = self.options
        if self.consumers:
            position = await asyncio.to_thread(self.consumers.get, o.consumer_id)
            if position is not None:
                earliest = await asyncio.to_thread(self.planner.earliest_id)
                if earliest is not None and position < earliest:
                    raise SnapshotExpired(
                        f"consumer {o.consumer_id} is at snapshot {position}, which has expired "
                        f"(earliest kept is {earliest})",
                        hint=f"reset it with: paimon-tail consumers {table_name(self.table)} --reset "
                        f"{o.consumer_id} --to {earliest}",
                    )
                return ResolvedStart(next_snapshot_id=position)
        while True:
            resolved = await asyncio.to_thread(resolve_start, o.start, self.planner.snapshots)
            if resolved is not None:
                return resolved
            # An empty table: wait for its first snapshot; everything from snapshot 1 on is new.
            self.stats.waiting_for_first_snapshot = True
            if o.exit_at_end:
                return ResolvedStart(next_snapshot_id=1)
            await self._wait()
            if await asyncio.to_thread(self.planner.latest) is not None:
                self.stats.waiting_for_first_snapshot = False
                return ResolvedStart(next_snapshot_id=1)

    def _past_end(self, snapshot) -> bool:
        until = self.options.until
        if until is None:
            return False
        if until.snapshot_id is not None and snapshot.id > until.snapshot_id:
            return True
        return until.timestamp_ms is not None and snapshot.time_millis > until.timestamp_ms

    def _end_reached(self, next_id: int) -> bool:
        until = self.options.until
        return until is not None and until.snapshot_id is not None and next_id > until.snapshot_id

    def _splits(self, plan) -> list:
        return list(plan.splits())

    async def _check_not_dropped(self) -> None:
        """While idle: a missing snapshot directory may mean the table was dropped; then fail, never wait on."""
        if await asyncio.to_thread(self.table.file_io.exists, self.planner.snapshots.snapshot_dir):
            return
        from ..catalog import reload_table

        await asyncio.to_thread(reload_table, self.table)  # TableChanged when its schema is gone as well

    async def _check_schema(self, snapshot) -> None:
        if snapshot.schema_id == self.schema_id:
            return
        from ..catalog import reload_table

        old = self.schema_id
        table = await asyncio.to_thread(reload_table, self.table)
        if table.table_schema.id < snapshot.schema_id:
            raise TableChanged(f"schema {snapshot.schema_id} of snapshot {snapshot.id} cannot be loaded")
        self.reader.close()
        self._setup(table)
        self.stats.schema_changes.append((snapshot.id, old, self.schema_id))

    async def _emit(self, out: asyncio.Queue, planned: "_Planned") -> None:
        """Hand a planned snapshot to the reader. Without prefetch, planning waits until it has been written."""
        await out.put(planned)
        if not self.options.prefetch:
            await out.join()

    async def _plans(self, out: asyncio.Queue) -> None:
        o = self.options
        try:
            resolved = await self._resolve()
            self.stats.start_id = resolved.full_snapshot_id or resolved.next_snapshot_id
            if resolved.full_snapshot_id is not None:
                snap = await asyncio.to_thread(self.planner.snapshot, resolved.full_snapshot_id)
                if snap is None:
                    raise SnapshotExpired(f"snapshot {resolved.full_snapshot_id} has expired", hint="use --from earliest")
                await self._check_schema(snap)
                plan = await asyncio.to_thread(self.planner.start_plan, snap)
                await self._emit(out, _Planned(snap.id, snap.time_millis, "full", self._splits(plan), snap.id + 1))
            next_id = resolved.next_snapshot_id
            if o.catch_up == "diff":
                next_id = await self._diff_catch_up(next_id, out)
            walker = self._walker_for_loop()
            while True:
                if self._end_reached(next_id):
                    break
                try:
                    snaps = await walker.poll(next_id)
                except SnapshotGap as gap:
                    if o.on_gap != "skip":
                        raise
                    self.stats.gaps.append((gap.first_missing, gap.next_available))
                    next_id = gap.next_available
                    continue
                if not snaps:
                    if o.exit_at_end:
                        break
                    self.stats.latest_id = walker.latest_id
                    self.stats.caught_up = out.empty()
                    await self._wait()
                    continue
                self.stats.caught_up = False
                last = snaps[-1]
                if self.stats.latest_id is None or last.id >= self.stats.latest_id:
                    self.stats.latest_id, self.stats.latest_time_ms = last.id, last.time_millis
                stop = False
                for snap in snaps:
                    if self._past_end(snap):
                        stop = True
                        break
                    await self._check_schema(snap)
                    if self.planner.should_scan(snap):
                        plan = await asyncio.to_thread(self.planner.delta_plan, snap)
                        splits = self._splits(plan)
                    else:
                        splits = []
                    await self._emit(out, _Planned(snap.id, snap.time_millis, "delta", splits, snap.id + 1))
                    next_id = snap.id + 1
                if stop:
                    break
            await out.put(_END)
        except BaseException as e:  # handed to the consumer, which raises it
            if isinstance(e, asyncio.CancelledError):
                raise
            await out.put(e)

    async def _diff_catch_up(self, next_id: int, out: asyncio.Queue) -> int:
        latest = await asyncio.to_thread(self.planner.latest)
        if latest is None or latest.id < next_id:
            return next_id
        end = latest
        if self.options.until is not None and self.options.until.snapshot_id is not None:
            end = await asyncio.to_thread(self.planner.snapshot, min(latest.id, self.options.until.snapshot_id))
        plan = await asyncio.to_thread(self.planner.diff_plan, next_id, end)
        await self._emit(out, _Planned(end.id, end.time_millis, "diff", self._splits(plan), end.id + 1))
        return end.id + 1

    # -- reading ------------------------------------------------------------------------------------------
    def _with_meta(self, batch: pa.RecordBatch, planned: _Planned, split) -> pa.RecordBatch:
        n = batch.num_rows
        partition = _partition_text(split, self.table)
        columns = [
            pa.array([planned.snapshot_id] * n, pa.int64()),
            pa.array([planned.commit_time_ms] * n, pa.timestamp("ms", tz="UTC")),
            pa.array([split.bucket] * n, pa.int32()),
            pa.array([partition] * n, pa.string()),
        ]
        arrays = list(batch.columns) + columns
        return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(list(batch.schema) + _meta_fields()))

    async def _commit(self, next_snapshot_id: int) -> None:
        if self.consumers:
            await asyncio.to_thread(self.consumers.set, self.options.consumer_id, next_snapshot_id)

    async def __aiter__(self) -> AsyncIterator[FollowBatch]:
        plans: asyncio.Queue = asyncio.Queue(maxsize=1)
        task = asyncio.create_task(self._plans(plans))
        ahead = None  # (item, stream) taken from ``plans`` early, its stream already reading
        current = None
        try:
            while True:
                if ahead is not None:
                    item, stream = ahead
                    ahead = None
                else:
                    item, stream = await plans.get(), None
                if item is _END:
                    return
                if isinstance(item, BaseException):
                    raise item
                planned: _Planned = item
                pending: Optional[FollowBatch] = None
                stream = current = stream or self.reader.open(planned.splits)
                async for split, batch in stream:
                    if ahead is None and self.options.prefetch and stream.submitted_all and not plans.empty():
                        # Read-ahead: the next snapshot decodes in the reader's threads while this one is written.
                        nxt = plans.get_nowait()
                        ahead = (nxt, self.reader.open(nxt.splits) if isinstance(nxt, _Planned) else None)
                    if planned.kind == "full" and self.options.row_kind:
                        batch = _as_inserts(batch)
                    if self.options.meta:
                        batch = self._with_meta(batch, planned, split)
                    if pending is not None:
                        yield pending
                    pending = FollowBatch(
                        batch, planned.snapshot_id, planned.commit_time_ms, planned.kind, split.bucket,
                        _partition_text(split, self.table), table=self.ref,
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
                # The caller asked for more: everything of this snapshot is written.
                await self._commit(planned.next_snapshot_id)
                plans.task_done()
        finally:
            if current is not None:
                current.close()
            if ahead is not None and ahead[1] is not None:
                ahead[1].close()
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
            self.close()

    def close(self) -> None:
        self.reader.close()
        if self._walker is not None:
            self._walker.close()
            self._walker = None

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


def _meta_fields() -> list:
    return [
        pa.field("_snapshot_id", pa.int64()),
        pa.field("_commit_time", pa.timestamp("ms", tz="UTC")),
        pa.field("_bucket", pa.int32()),
        pa.field("_partition", pa.string()),
    ]


def _partition_text(split, table) -> str:
    keys = table.partition_keys
    if not keys:
        return ""
    row = split.partition
    values = getattr(row, "values", None)
    if values is None:
        return str(row)
    return "/".join(f"{k}={v}" for k, v in zip(keys, values))


def follow(table, options: Optional[FollowOptions] = None, **kwargs) -> Follower:
    """Follow ``table`` (a pypaimon table): ``async for item in follow(t, start="earliest"): ...``."""
    return Follower(table, options, **kwargs)


__all__ = ["Follower", "FollowBatch", "FollowOptions", "FollowStats", "follow", "META_COLUMNS", "PaimonTailError"]
