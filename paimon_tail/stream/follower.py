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
import itertools
import time
from dataclasses import dataclass, field
from typing import AsyncIterator, Callable, Iterator, List, Optional, Sequence

import pyarrow as pa

from ..errors import PaimonTailError, SnapshotExpired, SnapshotGap, TableChanged, UsageError
from ..catalog import TableRef, table_name
from .consumer import ConsumerStore
from .filters import parse_where
from .diff import DiffRead
from .planner import SnapshotPlanner
from .options import FollowOptions, _iso, meta_fields, output_schema
from .positions import ResolvedStart, resolve_start
from .reader import SplitReader
from .walker import SnapshotWalker
from ..storage.errors import endpoint_of
from ..atomic_file import local_path
from ..storage.prefetch import Prefetcher
from ..storage.retry import Outage, StorageHealth, StorageRetry

PREFETCH_PLANS = 32
META_COLUMNS = ("_snapshot_id", "_commit_time", "_bucket", "_partition")


def _check_buckets(table, options: FollowOptions, keep: Optional[Callable[[int], bool]]) -> None:
    """--buckets / --shard that select no bucket of the table would print nothing, forever: refuse them."""
    if keep is None:
        return
    from pypaimon.table.bucket_mode import BucketMode

    mode = table.bucket_mode()
    if mode == BucketMode.HASH_FIXED:
        count, what = int(table.options.bucket()), f"{int(table.options.bucket())} buckets"
    elif mode == BucketMode.BUCKET_UNAWARE:
        count, what = 1, "no fixed buckets (bucket = -1): every file is in bucket 0"
    else:  # dynamic / postponed buckets: the set is not known up front
        return
    name = table_name(table)
    beyond = sorted(b for b in options.buckets or () if b >= count)
    if beyond:
        raise UsageError(f"bucket {', '.join(map(str, beyond))} of --buckets does not exist: {name} has {what}")
    if not any(keep(b) for b in range(count)):
        chosen = f"--shard {options.shard[0]}/{options.shard[1]}" if options.shard else "--buckets"
        if options.shard and options.buckets is not None:
            chosen += f" with --buckets {','.join(map(str, options.buckets))}"
        raise UsageError(f"{chosen} selects no bucket: {name} has {what}")


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
    health: StorageHealth = field(default_factory=StorageHealth)

    @property
    def outage(self) -> Optional[Outage]:
        """Set while storage does not answer (retried, never fatal unless --storage-timeout)."""
        return self.health.outage

    def saw_latest(self, snapshot_id: int, time_ms: Optional[int]) -> None:
        """The table's latest snapshot is at least ``snapshot_id`` (committed at ``time_ms`` when known)."""
        if self.latest_id is None or snapshot_id > self.latest_id:
            self.latest_id = snapshot_id
            self.latest_time_ms = time_ms if time_ms is not None else self.latest_time_ms
        elif snapshot_id == self.latest_id and time_ms is not None:
            self.latest_time_ms = time_ms

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
        self.retry = StorageRetry(endpoint_of(table.file_io), self.options.effective_storage_timeout(),
                                  self.stats.health)
        self.planner: Optional[SnapshotPlanner] = None
        # On an object store, data files are fetched ahead of decoding (storage/prefetch.py); --no-prefetch
        # (plan only after the previous snapshot is written) reads as on a local disk.
        self.remote = local_path(table.table_path) is None
        self.prefetcher = Prefetcher(table.file_io) if self.remote and self.options.prefetch else None
        self.consumers = ConsumerStore(table) if self.options.consumer_id else None
        if self.consumers:
            ConsumerStore.validate_id(self.options.consumer_id)
        _check_buckets(table, self.options, self._bucket_filter())
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
        predicate = parse_where(o.where, table.fields) if o.where else None
        if o.select:
            unknown = [c for c in o.select if c not in names]
            if unknown:
                raise UsageError(
                    f"unknown column{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} in --select",
                    hint=f"columns are {', '.join(names)}",
                )
        builder = self._builder(table, predicate)
        self.table = table
        self.schema_id = table.table_schema.id
        # DiffRead: --catch-up diff on primary-key tables plans BucketDiff splits (stream/diff.py)
        self.read = DiffRead(builder.new_read(), table, predicate, o.row_kind)
        self._predicate = predicate
        self._full_read = None  # made when a full read comes (it loads pypaimon-rust)
        files = self.planner.files if self.planner is not None else None  # it knows the latest snapshot
        self.planner = SnapshotPlanner(builder.new_streaming_scan(), bucket_filter=self._bucket_filter(), files=files)
        self.reader = SplitReader(self.read, workers=o.read_workers, retry=self.retry, batch_rows=o.batch_size)

    def _builder(self, table, predicate):
        """A stream read builder for ``table`` with the follow's filter, projection, row kinds and buckets."""
        o = self.options
        builder = table.new_stream_read_builder()
        if predicate is not None:
            builder.with_filter(predicate)
        if o.select:
            builder.with_projection(list(o.select))
        if o.row_kind:
            builder.with_include_row_kind(True)
        bucket_filter = self._bucket_filter()
        if bucket_filter is not None:
            builder.with_bucket_filter(bucket_filter)
        return builder

    @property
    def full_read(self):
        """The read of a table's content: pypaimon's Rust reader on local tables, where a primary-key table's
        buckets are merged 6-10x faster than by pypaimon's Python merge. Deltas and diffs keep the Python reader:
        the Rust one fails on some deltas of evolved schemas and gives merged rows +I where Python gives the last
        record's kind (docs/compatibility.md; a full read's rows are all +I anyway)."""
        if self._full_read is None:
            from ..compat.native_reads import with_native_reads

            native = with_native_reads(self.table)
            self._full_read = self._builder(native, self._predicate).new_read() if native is not self.table \
                else self.read
        return self._full_read

    def _table_read(self, planned: "_Planned"):
        """The read for a planned snapshot: the table's full content through the full read, changes through
        pypaimon's Python reader."""
        return self.full_read if planned.kind == "full" else self.read

    def output_schema(self) -> pa.Schema:
        return output_schema(self.read.read_type, self.options)

    # -- planning -----------------------------------------------------------------------------------------
    def _walker_for_loop(self) -> SnapshotWalker:
        if self._walker is None:
            self._walker = SnapshotWalker(self.planner, self.options.poll_interval, self.retry)
        self._walker.planner = self.planner  # rebuilt when the schema evolves
        return self._walker

    async def _wait(self) -> None:
        walker = self._walker_for_loop()
        await walker.wait()
        self.stats.mechanism = walker.mechanism

    async def _resolve(self) -> ResolvedStart:
        o = self.options
        if self.consumers:
            await self.retry.call(self.consumers.check_writable)
            position = await self.retry.call(self.consumers.get, o.consumer_id)
            if position is not None:
                earliest = await self.retry.call(self.planner.earliest_id)
                if earliest is not None and position < earliest:
                    raise SnapshotExpired(
                        f"consumer {o.consumer_id} is at snapshot {position}, which has expired "
                        f"(earliest kept is {earliest})",
                        hint=f"reset it with: paimon-tail consumers {table_name(self.table)} --reset "
                        f"{o.consumer_id} --to {earliest}",
                    )
                return ResolvedStart(next_snapshot_id=position)
        resolved = await self.retry.call(resolve_start, o.start, self.planner.files)
        if resolved is not None:
            await self.retry.call(self._check_start_before_end, resolved)
            return resolved
        # An empty table: wait for its first snapshot (one request a poll; the walker's checks notice a table
        # dropped meanwhile); everything from snapshot 1 on is new.
        self.stats.waiting_for_first_snapshot = True
        if not o.exit_at_end:
            walker = self._walker_for_loop()
            while not await walker.poll(1):
                await self._wait()
            self.stats.waiting_for_first_snapshot = False
        return ResolvedStart(next_snapshot_id=1)

    def _check_start_before_end(self, resolved: ResolvedStart) -> None:
        """``--until`` before the first snapshot ``--from`` resolves to would print nothing (or, for a full read,
        rows from after the end): refuse it."""
        until = self.options.until
        if until is None:
            return
        first = resolved.full_snapshot_id or resolved.next_snapshot_id
        if until.snapshot_id is not None and first > until.snapshot_id:
            raise UsageError(f"--until snapshot:{until.snapshot_id} is before snapshot {first}, the first that "
                             f"--from {self.options.start} reads: nothing to read")
        if until.timestamp_ms is not None:
            snap = self.planner.snapshot(first)
            if snap is not None and snap.time_millis > until.timestamp_ms:
                raise UsageError(f"--until {_iso(until.timestamp_ms)} is before snapshot {first} (committed "
                                 f"{_iso(snap.time_millis)}), the first that --from {self.options.start} reads: "
                                 "nothing to read")

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

    async def _check_schema(self, snapshot) -> None:
        if snapshot.schema_id == self.schema_id:
            return
        from ..catalog import reload_table

        old = self.schema_id
        table = await self.retry.call(reload_table, self.table)
        if table.table_schema.id < snapshot.schema_id:
            raise TableChanged(f"schema {snapshot.schema_id} of snapshot {snapshot.id} cannot be loaded")
        self.reader.close()
        self._setup(table)
        self.stats.schema_changes.append((snapshot.id, old, self.schema_id))

    def _prefetch(self, planned: List["_Planned"]) -> None:
        """On an object store: start fetching the data files of planned snapshots (within the byte budget)."""
        if self.prefetcher is not None:
            for item in planned:
                self.prefetcher.fetch(item.snapshot_id, _data_files(item.splits))

    async def _emit(self, out: asyncio.Queue, planned: "_Planned") -> None:
        """Hand a planned snapshot to the reader. Without prefetch, planning waits until it has been written."""
        self._prefetch([planned])
        await out.put(planned)
        if not self.options.prefetch:
            await out.join()

    async def _plans(self, out: asyncio.Queue) -> None:
        o = self.options
        try:
            resolved = await self._resolve()
            self._note_latest()
            self.stats.start_id = resolved.full_snapshot_id or resolved.next_snapshot_id
            if resolved.full_snapshot_id is not None:
                snap = await self.retry.call(self.planner.snapshot, resolved.full_snapshot_id)
                if snap is None:
                    raise SnapshotExpired(f"snapshot {resolved.full_snapshot_id} has expired", hint="use --from earliest")
                await self._check_schema(snap)
                plan = await self.retry.call(self.planner.start_plan, snap)
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
                    if walker.latest_id is not None:
                        self.stats.saw_latest(walker.latest_id, None)
                    self.stats.caught_up = out.empty()
                    await self._wait()
                    continue
                self.stats.caught_up = False
                self.stats.saw_latest(snaps[-1].id, snaps[-1].time_millis)
                self._note_latest()
                within = list(itertools.takewhile(lambda snap: not self._past_end(snap), snaps))
                for group in self._schema_runs(within) if o.prefetch else [[snap] for snap in within]:
                    await self._check_schema(group[0])
                    # The snapshots of a run share a schema: their plans are read concurrently (manifest lists
                    # and manifests are round trips on an object store), and handed out in order. Without
                    # prefetch, one at a time: a snapshot is planned only after the previous one is written.
                    plans = await asyncio.gather(*(self._delta_splits(snap) for snap in group))
                    planned = [_Planned(snap.id, snap.time_millis, "delta", splits, snap.id + 1)
                               for snap, splits in zip(group, plans)]
                    self._prefetch(planned)  # all of them now: handing them out waits for the reader
                    for item in planned:
                        await self._emit(out, item)
                        next_id = item.snapshot_id + 1
                stop = len(within) < len(snaps)
                if stop:
                    break
            await out.put(_END)
        except BaseException as e:  # handed to the consumer, which raises it
            if isinstance(e, asyncio.CancelledError):
                raise
            await out.put(e)

    @staticmethod
    def _schema_runs(snaps: Sequence) -> List[list]:
        """Consecutive snapshots grouped by schema id (a schema change starts a new group)."""
        runs: List[list] = []
        for snap in snaps:
            if runs and runs[-1][-1].schema_id == snap.schema_id:
                runs[-1].append(snap)
            else:
                runs.append([snap])
        return runs

    async def _delta_splits(self, snap) -> list:
        if not self.planner.should_scan(snap):
            return []
        return self._splits(await self.retry.call(self.planner.delta_plan, snap))

    async def _diff_catch_up(self, next_id: int, out: asyncio.Queue) -> int:
        latest = await self.retry.call(self.planner.latest)
        if latest is None or latest.id < next_id:
            return next_id
        end = latest
        if self.options.until is not None and self.options.until.snapshot_id is not None:
            end = await self.retry.call(self.planner.snapshot, min(latest.id, self.options.until.snapshot_id))
        plan = await self.retry.call(self.planner.diff_plan, next_id, end)
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
        return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(list(batch.schema) + meta_fields()))

    async def _commit(self, next_snapshot_id: int) -> None:
        if self.consumers:
            await self.retry.call(self.consumers.set, self.options.consumer_id, next_snapshot_id)

    def _note_latest(self) -> None:
        """The newest snapshot ``SnapshotFiles`` has read (resolving the start reads the table's latest; reading
        ahead reads more) is the status's latest: no I/O."""
        seen = self.planner.files.latest_seen
        if seen is not None:
            self.stats.saw_latest(seen.id, seen.time_millis)

    async def _track_latest(self, interval: float = 1.0) -> None:
        """While catching up, a fresh look at the table's latest snapshot every ``interval``, in a thread (one
        request when nothing was committed since the last look): the walker only sees its read-ahead horizon.
        Idle followers skip it (the walker knows)."""
        while True:
            await asyncio.sleep(interval)  # not at once: resolving the start position has just read it
            if not self.stats.caught_up:
                try:
                    await asyncio.to_thread(self.planner.files.latest)
                except Exception:  # the status is best effort; planning reports (and retries) real failures
                    continue
                self._note_latest()

    async def __aiter__(self) -> AsyncIterator[FollowBatch]:
        # Planning runs ahead of reading by one snapshot; on an object store by several, so the prefetcher has
        # data files to fetch while earlier snapshots decode (its byte budget bounds the memory).
        plans: asyncio.Queue = asyncio.Queue(maxsize=PREFETCH_PLANS if self.prefetcher is not None else 1)
        task = asyncio.create_task(self._plans(plans))
        tracker = asyncio.create_task(self._track_latest())
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
                stream = current = stream or self.reader.open(planned.splits, self._table_read(planned))
                async for split, batch in stream:
                    if ahead is None and self.options.prefetch and stream.submitted_all and not plans.empty():
                        # Read-ahead: the next snapshot decodes in the reader's threads while this one is written.
                        nxt = plans.get_nowait()
                        ahead = (nxt, self.reader.open(nxt.splits, self._table_read(nxt))
                                 if isinstance(nxt, _Planned) else None)
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
                if self.prefetcher is not None:
                    self.prefetcher.release(planned.snapshot_id)
                # The caller asked for more: everything of this snapshot is written.
                await self._commit(planned.next_snapshot_id)
                plans.task_done()
        finally:
            if current is not None:
                current.close()
            if ahead is not None and ahead[1] is not None:
                ahead[1].close()
            for t in (task, tracker):
                t.cancel()
                try:
                    await t
                except (asyncio.CancelledError, Exception):
                    pass
            self.close()

    def close(self) -> None:
        self.reader.close()
        if self.prefetcher is not None:
            self.prefetcher.close()
            self.prefetcher = None
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


def _data_files(splits) -> list:
    """(path, size) of the data files a plan reads (diff splits read through their own plans: none)."""
    out = []
    for split in splits:
        for meta in getattr(split, "files", None) or ():
            out.append((meta.physical_path(), meta.file_size or 0))
    return out


def _as_inserts(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A full read is the table's content, so every row is an insert (as in Paimon's Flink source), whatever
    kind the merge left on the newest version of the row."""
    kinds = pa.array(["+I"] * batch.num_rows, pa.string())
    return pa.RecordBatch.from_arrays([kinds, *batch.columns[1:]], schema=batch.schema)


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
