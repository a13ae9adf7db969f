"""Micro-batch planning for the streaming source, on the driver. No PySpark import here.

Offsets are snapshot positions, ``{"snapshot": S, "index": I, "full": F}``: the next split to read is split
``I`` of snapshot ``S``'s full plan (``F``) or delta plan. Whole snapshots are the usual step; the split index
only matters when a read limit (``read.stream.maxRowsPerTrigger`` ...) cuts a big snapshot into several
micro-batches. Planning is ``SnapshotPlanner``'s (the follower's), start positions are ``resolve_start``'s
(``follow --from``'s), and the consumer file is ``ConsumerStore``'s, so a Spark query with ``consumer-id`` and
``paimon-tail follow --consumer-id`` share one position format and one expiration guard.

Spark runs this in a Python process of its own, started for each query. Opening a table through pypaimon there
imports pypaimon's whole read path (1-2 s before the first micro-batch, Spark's parquet stream has nothing like
it). So on a local warehouse, when nothing needs the splits on the driver (no limit but snapshots per trigger, no
minimum rows per trigger, no consumer), offsets come from the snapshot files alone (``compat/adapters/local_snapshots.py``) and each task
plans the snapshots it reads (``runtime.SnapshotTask``, in the executors' Python workers, which import pypaimon
once and are reused). Otherwise the driver plans the splits, as before.
"""
from __future__ import annotations

import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from ..errors import SnapshotExpired, SnapshotGap, UsageError
from ..stream.positions import resolve_start
from .source_options import SourceOptions
from .runtime import (
    ReadSpec, SnapshotTask, SplitTask, get_table, pack, serialize_split, split_bytes, split_files, split_order,
    split_weight,
)

_log = logging.getLogger("paimon_tail.spark")


@dataclass(frozen=True, order=True)
class Position:
    snapshot: int
    full: bool = False
    index: int = 0

    @classmethod
    def of(cls, offset: dict) -> "Position":
        return cls(int(offset["snapshot"]), bool(offset.get("full", False)), int(offset.get("index", 0)))

    def to_offset(self) -> dict:
        return {"snapshot": self.snapshot, "index": self.index, "full": self.full}

    def next_snapshot(self) -> "Position":
        return Position(self.snapshot + 1)


@dataclass(frozen=True)
class SplitInfo:
    data: bytes
    rows: int
    files: int
    bytes: int
    weight: int


@dataclass(frozen=True)
class Limits:
    rows: Optional[int] = None
    files: Optional[int] = None
    bytes: Optional[int] = None
    snapshots: Optional[int] = None

    @property
    def unlimited(self) -> bool:
        return not (self.rows or self.files or self.bytes or self.snapshots)


class StreamPlanner:
    """Offsets → tasks for one streaming query (lives in Spark's long-running driver-side Python process)."""

    def __init__(self, options: SourceOptions, spec: ReadSpec, cache_size: int = 256, parallelism: int = 1) -> None:
        self.options = options
        self.parallelism = parallelism
        self.spec = spec
        self.target: Optional[int] = None  # availableNow: the latest snapshot when the query started
        self._units: "OrderedDict[Tuple[int, bool], List[SplitInfo]]" = OrderedDict()
        self._cache_size = cache_size
        self._consumer_written: Optional[int] = None
        self._last_trigger: Optional[float] = None  # read.stream.maxTriggerDelayMs counts from here
        self.table = None
        self.planner = None  # pypaimon's planning, opened when the driver needs splits (``_planning``)
        # splits are planned by the tasks that read them unless a limit, a minimum or a consumer needs them here
        # (a number of snapshots per trigger needs none: it counts whole snapshots)
        self.deferred = not (options.max_rows or options.max_files or options.max_bytes or options.min_rows
                             or options.consumer_id)
        meta = _local_table(options) if self.deferred else None
        if meta is not None:
            from ..compat.adapters.local_snapshots import LocalSnapshotManager
            from ..storage.snapshots import SnapshotFiles

            self.schema_id = meta.schema_id
            self.files = SnapshotFiles(LocalSnapshotManager(meta.path, meta.branch))
        else:
            self.deferred = False
            self._planning()
            self.files = self.planner.files

    def _planning(self):
        """pypaimon's table and ``SnapshotPlanner`` (imports pypaimon's read path: only when splits are needed)."""
        if self.planner is None:
            from ..stream.planner import SnapshotPlanner

            self.table = get_table(self.options.catalog, self.options.table, fresh=True)
            self.schema_id = self.table.table_schema.id
            files = getattr(self, "files", None)
            self.planner = SnapshotPlanner(self.spec.builder(self.table).new_streaming_scan(), files=files,
                                           read_overwrite=self.spec.read_overwrite)
        return self.planner

    # -- positions ---------------------------------------------------------------------------------------
    def initial_offset(self) -> dict:
        o = self.options
        if o.consumer_id:
            position = self._consumers().get(o.consumer_id)
            if position is not None:
                earliest = self.files.earliest_id()
                if earliest is not None and position < earliest:
                    raise SnapshotExpired(
                        f"consumer {o.consumer_id} is at snapshot {position}, which has expired "
                        f"(earliest kept is {earliest})",
                        hint=f"reset it with: paimon-tail consumers {o.table} --reset {o.consumer_id} --to {earliest}",
                    )
                return Position(position).to_offset()
        resolved = resolve_start(o.start, self.files)
        if resolved is None:  # empty table: everything from snapshot 1 on is new
            return Position(1).to_offset()
        if resolved.created_after_ms is not None:
            raise UsageError(f"the Spark source cannot start from {o.start}: its offsets are whole snapshots",
                             hint="follow reads it (paimon-tail follow --from ...)")
        if resolved.full_snapshot is not None and self.files.read(resolved.full_snapshot_id) is None:
            raise SnapshotExpired(f"the snapshot of {o.start} ({resolved.full_snapshot_id}) has expired: the Spark "
                                  "source reads a tag's snapshot while it is kept",
                                  hint="follow reads the tag itself (paimon-tail follow --from tag:NAME)")
        if resolved.full_snapshot_id is not None:
            return Position(resolved.full_snapshot_id, full=True).to_offset()
        return Position(resolved.next_snapshot_id).to_offset()

    def prepare_available_now(self) -> None:
        latest = self.files.latest()
        self.target = latest.id if latest is not None else 0

    def bound(self) -> Optional[int]:
        if self.target is not None:
            return self.target
        latest = self.files.latest()
        return latest.id if latest is not None else None

    def latest_offset(self, start: dict, limits: Limits) -> dict:
        end = self._latest_offset(start, limits)
        return start if self._hold(start, end) else end

    def _hold(self, start: dict, end: dict) -> bool:
        """paimon-spark's read.stream.minRowsPerTrigger + maxTriggerDelayMs: no micro-batch with fewer rows than
        the minimum, unless the delay since the last one has passed (never under availableNow)."""
        o = self.options
        if not o.min_rows or self.target is not None:
            return False
        now = time.monotonic()
        if self._last_trigger is None:
            self._last_trigger = now  # the query's start counts as a trigger
        if offsets_equal(start, end):
            return False
        if (now - self._last_trigger) * 1000 < o.max_delay_ms and \
                sum(info.rows for info in self.plan(start, end)) < o.min_rows:
            return True
        self._last_trigger = now
        return False

    def _latest_offset(self, start: dict, limits: Limits) -> dict:
        pos = Position.of(start)
        # Spark asks for new data only after the previous micro-batch (ending at ``start``) is committed to its
        # commit log, but commits offsets to the source only once a later batch has data: write the consumer
        # position here too, so it does not lag a batch behind (and is written after an availableNow run).
        self._write_consumer(pos.snapshot)
        bound = self.bound()
        if bound is None or pos.snapshot > bound:
            return pos.to_offset()
        if limits.unlimited:
            self._check_gap(pos.snapshot)
            return Position(bound + 1).to_offset()
        if self.deferred and not (limits.rows or limits.files or limits.bytes):
            # snapshots only: whole snapshots from ``pos`` (a full read counts as one), no split needed here
            self._check_gap(pos.snapshot)
            return Position(min(pos.snapshot + limits.snapshots, bound + 1)).to_offset()
        rows = files = nbytes = snapshots = 0
        taken = False
        cur = pos
        while cur.snapshot <= bound:
            infos = self.unit(cur)
            if infos is None:
                break
            for i in range(cur.index, len(infos)):
                info = infos[i]
                if taken and (
                    (limits.rows and rows + info.rows > limits.rows)
                    or (limits.files and files + info.files > limits.files)
                    or (limits.bytes and nbytes + info.bytes > limits.bytes)
                ):
                    return Position(cur.snapshot, cur.full, i).to_offset()
                rows, files, nbytes, taken = rows + info.rows, files + info.files, nbytes + info.bytes, True
            snapshots += 1
            cur = cur.next_snapshot()
            if limits.snapshots and snapshots >= limits.snapshots:
                break
        return cur.to_offset()

    def latest_available(self) -> Optional[dict]:
        latest = self.files.latest()
        return Position(latest.id + 1).to_offset() if latest is not None else None

    # -- planning ----------------------------------------------------------------------------------------
    def _check_gap(self, snapshot_id: int) -> None:
        earliest = self.files.earliest_id()
        if earliest is not None and snapshot_id < earliest:
            raise SnapshotGap(snapshot_id, earliest)

    def _refresh_schema(self, schema_id: int) -> None:
        from ..stream.planner import SnapshotPlanner

        if schema_id <= self.schema_id:
            return
        self.table = get_table(self.options.catalog, self.options.table, schema_id, fresh=True)
        self.schema_id = self.table.table_schema.id
        self.planner = SnapshotPlanner(self.spec.builder(self.table).new_streaming_scan(), files=self.files,
                                       read_overwrite=self.spec.read_overwrite)

    def unit(self, pos: Position) -> Optional[List[SplitInfo]]:
        """The splits of one snapshot's full or delta plan, in a stable order; None if it does not exist yet."""
        key = (pos.snapshot, pos.full)
        infos = self._units.get(key)
        if infos is not None:
            self._units.move_to_end(key)
            return infos
        snap = self.files.read(pos.snapshot)
        if snap is None:
            self._check_gap(pos.snapshot)
            return None
        self._planning()
        self._refresh_schema(snap.schema_id)
        if pos.full:
            splits = list(self.planner.start_plan(snap).splits())
        elif self.planner.should_scan(snap):
            splits = list(self.planner.delta_plan(snap).splits())
        else:
            splits = []
            summary = self.planner.skipped_overwrite(snap)
            if summary is not None:  # what follow says on stderr, in the driver's log
                _log.warning("%s: %s", self.options.table, summary.skipped().replace(
                    "-O streaming-read-overwrite=true", 'option("streaming-read-overwrite", "true")'))
        splits.sort(key=split_order)
        cost = self.options.open_file_cost
        infos = [
            SplitInfo(serialize_split(s), int(s.row_count), split_files(s), split_bytes(s), split_weight(s, cost))
            for s in splits
        ]
        self._units[key] = infos
        while len(self._units) > self._cache_size:
            self._units.popitem(last=False)
        return infos

    def plan(self, start: dict, end: dict) -> List[SplitInfo]:
        cur, stop = Position.of(start), Position.of(end)
        out: List[SplitInfo] = []
        while cur != stop and cur.snapshot <= stop.snapshot:
            infos = self.unit(cur)
            if infos is None:
                raise SnapshotExpired(f"snapshot {cur.snapshot} of this micro-batch cannot be found")
            last = stop.index if (stop.snapshot, stop.full) == (cur.snapshot, cur.full) else len(infos)
            out.extend(infos[cur.index:last])
            if last < len(infos):
                break
            cur = cur.next_snapshot()
        return out

    def tasks(self, start: dict, end: dict) -> list:
        first, stop = Position.of(start), Position.of(end)
        if self.deferred and first.index == 0 and stop.index == 0:
            return self._snapshot_tasks(first, stop)
        infos = self.plan(start, end)
        groups = pack([i.weight for i in infos], self.options.target_split_size, self.parallelism,
                      self.options.open_file_cost)
        return [
            SplitTask(self.options.catalog, self.options.table, self.schema_id, self.spec, [infos[i].data for i in g])
            for g in groups
        ]

    def _snapshot_tasks(self, first: Position, stop: Position) -> List[SnapshotTask]:
        """Whole snapshots from ``first`` up to ``stop``, planned by the tasks that read them: snapshots dealt
        round-robin over the parallelism, or, when there are fewer snapshots than tasks (a full read), each
        snapshot's splits dealt over several tasks."""
        ids = list(range(first.snapshot, stop.snapshot)) if stop.snapshot > first.snapshot else []
        if first.full and ids[:1] == [first.snapshot]:
            full, ids = [first.snapshot], ids[1:]
        else:
            full = []
        schema_id = self.schema_id
        for sid in full + ids:  # the tasks open the table at the newest schema of their snapshots
            snap = self.files.read(sid)
            if snap is None:
                self._check_gap(sid)
                raise SnapshotExpired(f"snapshot {sid} of this micro-batch cannot be found")
            schema_id = max(schema_id, snap.schema_id)
            if sid in ids and snap.commit_kind == "OVERWRITE" and not self.spec.read_overwrite:
                _log.warning("%s: snapshot %s is an OVERWRITE; skipped, as Paimon's streaming read skips "
                             "overwrites unless the table says otherwise (read it as -D/+I changes with "
                             'option("streaming-read-overwrite", "true"))', self.options.table, sid)
        n = max(1, self.parallelism)
        o, spec = self.options, self.spec
        tasks = [SnapshotTask(o.catalog, o.table, schema_id, spec, (sid,), True, i, n) for sid in full for i in range(n)]
        if len(ids) >= n:
            tasks += [SnapshotTask(o.catalog, o.table, schema_id, spec, tuple(ids[i::n])) for i in range(n)]
        else:
            shards = -(-n // len(ids)) if ids else 0
            tasks += [SnapshotTask(o.catalog, o.table, schema_id, spec, (sid,), False, i, shards)
                      for sid in ids for i in range(shards)]
        return tasks

    def commit(self, end: dict) -> None:
        pos = Position.of(end)
        for key in [k for k in self._units if k[0] < pos.snapshot]:
            del self._units[key]
        self._write_consumer(pos.snapshot)

    def _consumers(self):
        from ..stream.consumer import ConsumerStore

        self._planning()
        return ConsumerStore(self.table)

    def _write_consumer(self, next_snapshot: int) -> None:
        if self.options.consumer_id and next_snapshot != self._consumer_written:
            self._consumers().set(self.options.consumer_id, next_snapshot)
            self._consumer_written = next_snapshot

    def consumer_position(self) -> Optional[int]:
        if not self.options.consumer_id:
            return None
        return self._consumers().get(self.options.consumer_id)


def _local_table(options: SourceOptions):
    """The table's latest schema, read from a local warehouse without pypaimon (None: open it through pypaimon)."""
    from ..table_meta import read_local

    return read_local(options.table, dict(options.catalog))


def limits_from(options: SourceOptions) -> Limits:
    return Limits(options.max_rows, options.max_files, options.max_bytes, options.max_snapshots)


def offsets_equal(a: Dict, b: Dict) -> bool:
    return Position.of(a) == Position.of(b)
