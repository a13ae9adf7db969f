"""The planning half of a follow: which snapshots to read, in which order, planned into splits.

``Schedule`` resolves the start position (a consumer's saved position, ``--from``, or an empty table's first
snapshot), plans the initial full read, the ``--catch-up diff`` backlog, then each new snapshot as it comes
(``SnapshotWalker``: lookahead, notification while idle, gaps), until ``--until`` or, with ``exit_at_end``, the
latest snapshot. Each planned snapshot is handed out as a ``Planned`` carrying the ``SchemaReads`` of its own
schema: a schema change sets up new reads for the snapshots after it, and never touches what reading still uses.

It runs as a task one snapshot ahead of the reading side (``follower.Follower``); with prefetch on an object store,
up to ``PREFETCH_PLANS`` ahead, their data files fetched meanwhile (``storage/prefetch.py``). Without prefetch a
snapshot is planned only after the previous one was written.
"""
from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

from ..catalog import table_name
from ..errors import PaimonTailError, SnapshotExpired, SnapshotGap, TableChanged, UsageError
from ..storage.prefetch import Prefetcher
from ..storage.retry import StorageRetry
from ..storage.snapshots import SnapshotFiles
from .consumer import ConsumerStore
from . import query_auth
from .options import FollowOptions, _iso
from .planner import SnapshotPlanner
from .positions import ResolvedStart, resolve_end, resolve_start
from .reads import SchemaReads
from .stats import FollowStats
from .walker import SnapshotWalker

PREFETCH_PLANS = 32
UNTIL_CLOCK_SKEW_MS = 1000  # how far a writer's clock may be behind ours for --until timestamp:T

#: handed out after the last planned snapshot
END = object()


@dataclass
class Planned:
    """One snapshot (or, with ``--catch-up diff``, a backlog of them) planned into splits, with its reads."""

    snapshot_id: int
    commit_time_ms: int
    kind: str  # full | delta | diff
    splits: list
    next_snapshot_id: int  # the consumer position once this is written
    reads: SchemaReads  # set up for the schema these splits were planned with
    notices: List[str] = field(default_factory=list)  # said when it is reached (e.g. an overwrite skipped)
    commit_kind: str = "APPEND"

    @property
    def table_read(self):
        return self.reads.for_kind(self.kind)


# -- strategies ---------------------------------------------------------------------------------------------------
class CatchUp:
    """``--catch-up replay``: the backlog snapshot by snapshot, like new snapshots (nothing to do up front)."""

    async def plan(self, schedule: "Schedule", next_id: int) -> int:
        return next_id


class DiffCatchUp(CatchUp):
    """``--catch-up diff``: the backlog up to the latest snapshot (or ``--until``) in one plan (folds history)."""

    async def plan(self, schedule: "Schedule", next_id: int) -> int:
        planner, retry, until = schedule.planner, schedule.retry, schedule.until
        if planner.table.is_primary_key_table:  # rows are paired by key: a masked key cannot be
            query_auth.check_diff(planner.table, await retry.call(planner.query_auth))
        latest = await retry.call(planner.latest)
        if latest is None or latest.id < next_id:
            return next_id
        end = latest
        if until is not None and until.snapshot_id is not None:
            end = await retry.call(planner.snapshot, min(latest.id, until.snapshot_id))
        plan = await retry.call(planner.diff_plan, next_id, end)
        planned = schedule.planned(end, "diff", plan.splits())
        if not planner.table.is_primary_key_table:  # a primary-key diff compares states: overwrites are in it
            planned.notices = await retry.call(_skipped_overwrites, planner, next_id, end)
        await schedule.emit(planned)
        return end.id + 1


def _skipped_overwrites(planner: SnapshotPlanner, first: int, end) -> List[str]:
    """The lines of the OVERWRITE snapshots a diff of snapshots ``first`` to ``end`` skips."""
    notices = []
    for sid in range(first, end.id + 1):
        snap = end if sid == end.id else planner.snapshot(sid)
        summary = planner.skipped_overwrite(snap) if snap is not None else None
        if summary is not None:
            notices.append(summary.skipped())
    return notices


class GapPolicy:
    """``--on-gap error``: snapshots expired before they were read end the follow (``SnapshotGap``)."""

    def resume_at(self, gap: SnapshotGap, stats: FollowStats) -> int:
        raise gap


class SkipGaps(GapPolicy):
    """``--on-gap skip``: note the gap (the status shows it) and go on from the earliest snapshot kept."""

    def resume_at(self, gap: SnapshotGap, stats: FollowStats) -> int:
        stats.gaps.append((gap.first_missing, gap.next_available))
        return gap.next_available


CATCH_UPS = {"replay": CatchUp(), "diff": DiffCatchUp()}
GAP_POLICIES = {"error": GapPolicy(), "skip": SkipGaps()}


# -- the schedule -------------------------------------------------------------------------------------------------
class Schedule:
    """Plans a table's snapshots for one follow, starting with ``reads`` (the table's current schema);
    ``start()`` inside the event loop, then ``take()`` items."""

    def __init__(self, reads: SchemaReads, options: FollowOptions, retry: StorageRetry, stats: FollowStats,
                 consumers: Optional[ConsumerStore] = None, prefetcher: Optional[Prefetcher] = None) -> None:
        self.options = options
        self.retry = retry
        self.stats = stats
        self.consumers = consumers
        self.prefetcher = prefetcher
        self.reads = reads  # the newest schema's; each Planned keeps its own
        self.planner = SnapshotPlanner(reads.new_scan(), bucket_filter=reads.keep, read_overwrite=options.read_overwrite)
        self.until = options.until  # --until tag:NAME becomes its snapshot once the table is read (_plan)
        self.catch_up = CATCH_UPS[options.catch_up]
        self.gaps = GAP_POLICIES[options.on_gap]
        self._walker: Optional[SnapshotWalker] = None
        self._queue: Optional[asyncio.Queue] = None
        self._tasks: List[asyncio.Task] = []

    @property
    def files(self) -> SnapshotFiles:
        """The table's snapshot files (one for the whole follow: it remembers the latest snapshot)."""
        return self.planner.files

    # -- the hand-over to the reading side ------------------------------------------------------------------
    def start(self) -> None:
        """Start planning (and, while catching up, tracking the table's latest snapshot) in the running loop.
        Planning runs ahead of reading by one snapshot; on an object store by several, so the prefetcher has
        data files to fetch while earlier snapshots decode (its byte budget bounds the memory)."""
        self._queue = asyncio.Queue(maxsize=PREFETCH_PLANS if self.prefetcher is not None else 1)
        self._tasks = [asyncio.create_task(self._run()), asyncio.create_task(self._track_latest())]

    async def take(self):
        """The next ``Planned``, ``END``, or the exception that ended planning (raise it)."""
        return await self._queue.get()

    def ready(self) -> bool:
        """Is an item planned and waiting (``take_nowait`` will not block)?"""
        return not self._queue.empty()

    def take_nowait(self):
        return self._queue.get_nowait()

    def release(self, planned: Planned) -> None:
        """``planned`` is read: its prefetched files can go."""
        if self.prefetcher is not None:
            self.prefetcher.release(planned.snapshot_id)

    def done(self) -> None:
        """The item taken last is written (its consumer position saved): without prefetch, planning goes on."""
        self._queue.task_done()

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        self._tasks = []

    def close(self) -> None:
        if self.prefetcher is not None:
            self.prefetcher.close()
            self.prefetcher = None
        if self._walker is not None:
            self._walker.close()
            self._walker = None

    # -- planning -------------------------------------------------------------------------------------------
    def planned(self, snapshot, kind: str, splits, notices: Sequence[str] = ()) -> Planned:
        return Planned(snapshot.id, snapshot.time_millis, kind, list(splits), snapshot.id + 1, self.reads,
                       list(notices), snapshot.commit_kind)

    def _prefetch(self, planned: Sequence[Planned]) -> None:
        """On an object store: start fetching the data files of planned snapshots (within the byte budget)."""
        if self.prefetcher is not None:
            for item in planned:
                self.prefetcher.fetch(item.snapshot_id, _data_files(item.splits))

    async def emit(self, planned: Planned) -> None:
        """Hand a planned snapshot to the reader. Without prefetch, planning waits until it has been written."""
        self._prefetch([planned])
        await self._queue.put(planned)
        if not self.options.prefetch:
            await self._queue.join()

    async def _run(self) -> None:
        out = self._queue
        try:
            await self._plan()
            await out.put(END)
        except BaseException as e:  # handed to the reading side, which raises it
            if isinstance(e, asyncio.CancelledError):
                raise
            await out.put(e)

    async def _plan(self) -> None:
        o = self.options
        self.until = await self.retry.call(resolve_end, o.until, self.planner.files)
        resolved = await self._resolve()
        self._note_latest()
        self.stats.start_id = resolved.full_snapshot_id or resolved.next_snapshot_id
        if resolved.full_snapshot_id is not None:
            snap = resolved.full_snapshot  # a tag's: read even when its snapshot has expired
            if snap is None:
                snap = await self.retry.call(self.planner.snapshot, resolved.full_snapshot_id)
            if snap is None:
                raise SnapshotExpired(f"snapshot {resolved.full_snapshot_id} has expired", hint="use --from earliest")
            await self._check_schema(snap)
            plan = await self.retry.call(self.planner.start_plan, snap, resolved.created_after_ms)
            await self.emit(self.planned(snap, "full", plan.splits()))
        next_id = await self.catch_up.plan(self, resolved.next_snapshot_id)
        walker = self._walker_for_loop()
        while not self._end_reached(next_id):
            try:
                snaps = await walker.poll(next_id)
            except SnapshotGap as gap:
                next_id = self.gaps.resume_at(gap, self.stats)
                continue
            if not snaps:
                if o.exit_at_end or self._time_end_passed():
                    return
                if walker.latest_id is not None:
                    self.stats.saw_latest(walker.latest_id, None)
                self.stats.caught_up = self._queue.empty()
                await self._wait()
                continue
            self.stats.caught_up = False
            self.stats.saw_latest(snaps[-1].id, snaps[-1].time_millis)
            self._note_latest()
            within = list(itertools.takewhile(lambda snap: not self._past_end(snap), snaps))
            for group in _schema_runs(within) if o.prefetch else [[snap] for snap in within]:
                await self._check_schema(group[0])
                # The snapshots of a run share a schema: their plans are read concurrently (manifest lists and
                # manifests are round trips on an object store), and handed out in order. Without prefetch, one
                # at a time: a snapshot is planned only after the previous one is written.
                plans = await asyncio.gather(*(self._delta_splits(snap) for snap in group))
                planned = [self.planned(snap, "delta", splits, notices) for snap, (splits, notices) in zip(group, plans)]
                self._prefetch(planned)  # all of them now: handing them out waits for the reader
                for item in planned:
                    await self.emit(item)
                    next_id = item.snapshot_id + 1
            if len(within) < len(snaps):
                return

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
                        hint=f"reset it with: paimon-tail consumers {table_name(self.reads.table)} --reset "
                        f"{o.consumer_id} --to {earliest}",
                    )
                latest = await self.retry.call(self.planner.files.latest)
                if latest is not None and position > latest.id + 1:  # a rollback, or a file written by hand
                    raise PaimonTailError(
                        f"consumer {o.consumer_id} is at snapshot {position}, beyond the next one to be committed "
                        f"(latest is {latest.id}): it would wait for snapshots that may never come",
                        hint=f"reset it with: paimon-tail consumers {table_name(self.reads.table)} --reset "
                        f"{o.consumer_id} --to {latest.id + 1}",
                    )
                return ResolvedStart(next_snapshot_id=position)
        resolved = await self.retry.call(resolve_start, o.start, self.planner.files,
                                         self.planner.full_compaction_commits())
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
        until = self.until
        if until is None:
            return
        first = resolved.full_snapshot_id or resolved.next_snapshot_id
        if until.snapshot_id is not None and first > until.snapshot_id:
            end = f"tag:{until.tag} (snapshot {until.snapshot_id})" if until.tag else f"snapshot:{until.snapshot_id}"
            raise UsageError(f"--until {end} is before snapshot {first}, the first that "
                             f"--from {self.options.start} reads: nothing to read")
        if until.timestamp_ms is not None:
            snap = self.planner.snapshot(first)
            if snap is not None and snap.time_millis > until.timestamp_ms:
                raise UsageError(f"--until {_iso(until.timestamp_ms)} is before snapshot {first} (committed "
                                 f"{_iso(snap.time_millis)}), the first that --from {self.options.start} reads: "
                                 "nothing to read")

    def _past_end(self, snapshot) -> bool:
        until = self.until
        if until is None:
            return False
        if until.snapshot_id is not None and snapshot.id > until.snapshot_id:
            return True
        return until.timestamp_ms is not None and snapshot.time_millis > until.timestamp_ms

    def _time_end_passed(self) -> bool:
        """Caught up, and ``--until timestamp:T`` is behind the clock (by more than writers' clocks may be behind
        ours): every snapshot still to come is committed after T, so the follow is done (it used to wait for one
        more commit, for ever on an idle table)."""
        until = self.options.until
        return until is not None and until.timestamp_ms is not None and \
            time.time() * 1000 > until.timestamp_ms + UNTIL_CLOCK_SKEW_MS

    def _end_reached(self, next_id: int) -> bool:
        until = self.until
        return until is not None and until.snapshot_id is not None and next_id > until.snapshot_id

    async def _check_schema(self, snapshot) -> None:
        """A snapshot of a newer schema: reads set up for it from here on (planned items keep theirs)."""
        if snapshot.schema_id == self.reads.schema_id:
            return
        from ..catalog import reload_table

        old = self.reads.schema_id
        table = await self.retry.call(reload_table, self.reads.table)
        if table.table_schema.id < snapshot.schema_id:
            raise TableChanged(f"schema {snapshot.schema_id} of snapshot {snapshot.id} cannot be loaded")
        self.reads = SchemaReads(table, self.options, self.reads.keep)
        # the new planner keeps the old one's snapshot files: they know the latest snapshot
        self.planner = SnapshotPlanner(self.reads.new_scan(), bucket_filter=self.reads.keep, files=self.planner.files,
                                       read_overwrite=self.options.read_overwrite)
        self.stats.schema_changes.append((snapshot.id, old, self.reads.schema_id))

    async def _delta_splits(self, snap) -> Tuple[list, List[str]]:
        """The splits of a snapshot's changes, and what to say when it is reached (an overwrite skipped)."""
        if not self.planner.should_scan(snap):
            summary = await self.retry.call(self.planner.skipped_overwrite, snap)
            return [], [summary.skipped()] if summary is not None else []
        return list((await self.retry.call(self.planner.delta_plan, snap)).splits()), []

    # -- the table's latest snapshot, for the status ----------------------------------------------------------
    def _note_latest(self) -> None:
        """The newest snapshot ``SnapshotFiles`` has read (resolving the start reads the table's latest; reading
        ahead reads more) is the status's latest: no I/O."""
        seen = self.files.latest_seen
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
                    await asyncio.to_thread(self.files.latest)
                except Exception:  # the status is best effort; planning reports (and retries) real failures
                    continue
                self._note_latest()


def _schema_runs(snaps: Sequence) -> List[list]:
    """Consecutive snapshots grouped by schema id (a schema change starts a new group)."""
    runs: List[list] = []
    for snap in snaps:
        if runs and runs[-1][-1].schema_id == snap.schema_id:
            runs[-1].append(snap)
        else:
            runs.append([snap])
    return runs


def _data_files(splits) -> list:
    """(path, size) of the data files a plan reads (diff splits read through their own plans: none)."""
    out = []
    for split in splits:
        for meta in getattr(split, "files", None) or ():
            out.append((meta.physical_path(), meta.file_size or 0))
    return out


__all__ = ["END", "PREFETCH_PLANS", "Planned", "Schedule"]
