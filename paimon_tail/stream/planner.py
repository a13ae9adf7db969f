"""Snapshot → splits, by pypaimon's ``AsyncStreamingTableScan``.

We drive the scan's planning pieces (initial full plan, delta / changelog follow-up plans, lookahead over
snapshots, diff catch-up) from our own loop, because the loop is where paimon-tail differs: start positions,
notification instead of sleeping, per-snapshot replay by default, bucket sharding of the initial plan, gap
detection and consumer positions written only after output is flushed. The private methods used are listed in
``_PYPAIMON_SCAN_METHODS`` and checked by a test, so a pypaimon upgrade that renames one fails loudly.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

from pypaimon.read.plan import Plan
from pypaimon.read.streaming_table_scan import AsyncStreamingTableScan
from pypaimon.snapshot.snapshot import Snapshot

_PYPAIMON_SCAN_METHODS = (
    "_create_initial_plan",
    "_create_follow_up_plan",
    "_create_catch_up_plan",
)


class SnapshotPlanner:
    """Thread-safe enough for one planning thread at a time; every method blocks on I/O (call it off the loop)."""

    def __init__(
        self,
        scan: AsyncStreamingTableScan,
        bucket_filter: Optional[Callable[[int], bool]] = None,
        lookahead: int = 10,
    ) -> None:
        self.scan = scan
        self.table = scan.table
        self.snapshots = scan._snapshot_manager
        self.bucket_filter = bucket_filter
        self.lookahead = lookahead

    def _shard(self, plan: Plan, snapshot_id: int) -> Plan:
        splits = plan.splits()
        if self.bucket_filter is not None:
            splits = [s for s in splits if self.bucket_filter(s.bucket)]
        return Plan(list(splits), snapshot_id=snapshot_id)

    def should_scan(self, snapshot: Snapshot) -> bool:
        return self.scan.follow_up_scanner.should_scan(snapshot)

    def full_plan(self, snapshot: Snapshot) -> Plan:
        """Every row of the table at ``snapshot`` (merged for primary-key tables)."""
        return self._shard(self.scan._create_initial_plan(snapshot), snapshot.id)

    def delta_plan(self, snapshot: Snapshot) -> Plan:
        """The changes ``snapshot`` committed: its delta files, or its changelog files with a changelog producer."""
        return self._shard(self.scan._create_follow_up_plan(snapshot), snapshot.id)

    def diff_plan(self, start_id: int, end: Snapshot) -> Plan:
        """Files added from ``start_id`` to ``end`` in one plan: fast, but it folds the history in between."""
        return self._shard(self.scan._create_catch_up_plan(start_id, end), end.id)

    def snapshot(self, snapshot_id: int) -> Optional[Snapshot]:
        return self.snapshots.get_snapshot_by_id(snapshot_id)

    def latest(self) -> Optional[Snapshot]:
        return self.snapshots.get_latest_snapshot()

    def earliest_id(self) -> Optional[int]:
        try:
            earliest = self.snapshots.try_get_earliest_snapshot()
        except RuntimeError:
            return None
        return earliest.id if earliest is not None else None

    def lookahead_snapshots(self, start_id: int) -> Sequence[Snapshot]:
        """Consecutive snapshots from ``start_id`` that exist now, fetched in parallel (pypaimon's lookahead)."""
        ids = list(range(start_id, start_id + self.lookahead))
        found = self.snapshots.get_snapshots_batch(ids)
        out = []
        for sid in ids:
            snap = found.get(sid)
            if snap is None:
                break
            out.append(snap)
        return out
