"""Snapshot → splits, by pypaimon's ``AsyncStreamingTableScan``.

We drive the scan's planning pieces (initial full plan, delta / changelog follow-up plans, its snapshot manager's
parallel lookahead) from our own loop, because the loop is where paimon-tail differs: start positions,
notification instead of sleeping, per-snapshot replay by default, bucket sharding of the initial plan, gap
detection and consumer positions written only after output is flushed; the diff catch-up is ours (``diff.py``).
The scan's private parts it drives are reached through ``compat/adapters/streaming_scan.py`` (checked by a test, so a
pypaimon upgrade that renames one fails loudly).

Which snapshots have changes to read is Paimon's rule (``should_scan``): APPEND snapshots (or, with a changelog
producer, those with changelog); OVERWRITE snapshots only with ``streaming-read-overwrite`` (``overwrite.py``: the
rows they removed as ``-D``, those they added as ``+I``), else they are skipped and ``skipped_overwrite`` says
what was skipped; COMPACT snapshots never (their rows were there already).
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

from pypaimon.read.plan import Plan
from pypaimon.read.streaming_table_scan import AsyncStreamingTableScan
from pypaimon.snapshot.snapshot import Snapshot

from ..compat.adapters import streaming_scan
from ..errors import UsageError
from ..storage.snapshots import SnapshotFiles
from .overwrite import OVERWRITE, READ_OPTION, OverwriteSummary, overwrite_entries, read_overwrite_option, \
    replace_splits, summarize


class SnapshotPlanner:
    """Thread-safe enough for one planning thread at a time; every method blocks on I/O (call it off the loop)."""

    def __init__(
        self,
        scan: AsyncStreamingTableScan,
        bucket_filter: Optional[Callable[[int], bool]] = None,
        files: Optional[SnapshotFiles] = None,
        read_overwrite: Optional[bool] = None,
    ) -> None:
        self.scan = scan
        self.table = scan.table
        self.snapshots = streaming_scan.snapshot_manager(scan)
        # Kept across schema changes (the follower passes the old planner's): it remembers the latest snapshot.
        self.files = files or SnapshotFiles(self.snapshots)
        self.bucket_filter = bucket_filter
        # streaming-read-overwrite: given (-O, a Spark read option), else the table's own option
        self.read_overwrite = read_overwrite_option(self.table, read_overwrite)
        if self.read_overwrite and self.table.is_primary_key_table and self._changelog_level_filter() is not None:
            raise UsageError(
                f"{READ_OPTION}=true does not go with changelog-producer {self._producer()}: the overwrite's "
                "changes would come twice (once more from the changelog of the compaction after it), and Paimon "
                "refuses it too")

    def _shard(self, plan: Plan, snapshot_id: int) -> Plan:
        splits = plan.splits()
        if self.bucket_filter is not None:
            splits = [s for s in splits if self.bucket_filter(s.bucket)]
        return Plan(list(splits), snapshot_id=snapshot_id)

    def should_scan(self, snapshot: Snapshot) -> bool:
        """Does ``snapshot`` have changes a streaming read delivers (Paimon's follow-up scanners)?"""
        if snapshot.commit_kind == OVERWRITE:
            return self.read_overwrite
        return self.scan.follow_up_scanner.should_scan(snapshot)

    def skipped_overwrite(self, snapshot: Snapshot) -> Optional[OverwriteSummary]:
        """What an OVERWRITE snapshot that ``should_scan`` skips replaced (None for any other snapshot)."""
        if snapshot.commit_kind != OVERWRITE or self.read_overwrite:
            return None
        removed, added = overwrite_entries(self.table, snapshot, streaming_scan.manifest_lists(self.scan))
        return summarize(self.table, snapshot, removed, added)

    def full_plan(self, snapshot: Snapshot, created_after_ms: Optional[int] = None) -> Plan:
        """Every row of the table at ``snapshot`` (merged for primary-key tables); with ``created_after_ms``, of
        the data files created at or after that time only (Paimon's ``from-file-creation-time``)."""
        if created_after_ms is not None:
            plan = streaming_scan.filtered_plan(
                self.scan, snapshot, lambda entry: created_ms(entry.file) >= created_after_ms)
            return self._shard(plan, snapshot.id)
        return self._shard(streaming_scan.initial_plan(self.scan, snapshot), snapshot.id)

    def start_plan(self, snapshot: Snapshot, created_after_ms: Optional[int] = None) -> Plan:
        """The initial read of a stream that then follows the deltas/changelog after ``snapshot``.

        ``full_plan``, except with a changelog producer that works on compaction (``lookup``,
        ``full-compaction``): then the *compacted* content only, as in Paimon Java's streaming scan
        (``DataTableStreamScan.tryFirstPlan``): level > 0 files for ``lookup``, the top level for
        ``full-compaction``. The newer level-0 rows reach the follower later, as changelog of the compaction
        that picks them up; reading them here too would deliver them twice (and a ``-U`` for a value the reader
        never saw)."""
        level_filter = self._changelog_level_filter()
        if level_filter is None or created_after_ms is not None:
            return self.full_plan(snapshot, created_after_ms)
        return self._shard(streaming_scan.level_plan(self.scan, snapshot, level_filter), snapshot.id)

    def _producer(self) -> str:
        return str(getattr(self.table.options.changelog_producer(), "value",
                           self.table.options.changelog_producer())).lower()

    def full_compaction_commits(self) -> Optional[int]:
        """``full-compaction.delta-commits`` with the full-compaction changelog producer (what ``compacted-full``
        looks for), else None."""
        if not self.table.is_primary_key_table or self._producer() != "full-compaction":
            return None
        value = self.table.options.options.to_map().get("full-compaction.delta-commits")
        return max(1, int(value)) if value else 1

    def _changelog_level_filter(self) -> Optional[Callable[[int], bool]]:
        if not self.table.is_primary_key_table:
            return None
        producer = self._producer()
        if producer == "lookup":
            return lambda level: level > 0
        if producer == "full-compaction":
            top = num_levels(self.table) - 1
            return lambda level: level == top
        return None

    def delta_plan(self, snapshot: Snapshot) -> Plan:
        """The changes ``snapshot`` committed: its delta files, or its changelog files with a changelog producer;
        an OVERWRITE's as ``ReplaceSplit``s (``overwrite.py``)."""
        if snapshot.commit_kind == OVERWRITE:
            return self.overwrite_plan(snapshot)
        return self._shard(streaming_scan.follow_up_plan(self.scan, snapshot), snapshot.id)

    def overwrite_plan(self, snapshot: Snapshot) -> Plan:
        """An OVERWRITE snapshot's net change, one ``ReplaceSplit`` per bucket it touched: the files it removed,
        planned over the snapshot before it (or its base manifests when that one expired), and those it added."""
        lists = streaming_scan.manifest_lists(self.scan)
        removed, added = overwrite_entries(self.table, snapshot, lists)
        gone = {e.file.file_name for e in removed}
        new = {e.file.file_name for e in added}
        before = []
        if gone:
            prev = self.snapshot(snapshot.id - 1) if snapshot.id > 1 else None
            manifests = lists.read_all(prev) if prev is not None else lists.read_base(snapshot)
            before = streaming_scan.filtered_plan(self.scan, prev or snapshot, lambda e: e.file.file_name in gone,
                                                  manifests=manifests).splits()
        after = streaming_scan.filtered_plan(self.scan, snapshot, lambda e: e.file.file_name in new).splits() \
            if new else []
        return self._shard(Plan(replace_splits(before, after), snapshot_id=snapshot.id), snapshot.id)

    def diff_plan(self, start_id: int, end: Snapshot) -> Plan:
        """The changes from ``start_id`` to ``end`` (inclusive) in one plan: fast, but it folds the history.

        * from scratch (``start_id`` 1: nothing before): ``start_plan(end)``, the table at ``end``;
        * append tables: the files the APPEND snapshots in the range added, in one plan (files that COMPACT
          snapshots rewrote are skipped: their rows were already there — pypaimon's set-difference catch-up
          would deliver them again);
        * primary-key tables: per bucket whose files changed, the merged rows at ``start_id - 1`` and at ``end``
          compared by key (``BucketDiff`` splits, read by ``diff.DiffRead``): ``-D`` for keys that are gone,
          the row at ``end`` for keys that are new or changed — what Paimon Java's ``incremental-between`` diff
          read gives. (pypaimon's catch-up plan reads the added files with the append split generator: raw,
          unmerged rows, deletes as rows, and compaction outputs re-delivering old rows.)
        """
        before = self.snapshot(start_id - 1) if start_id > 1 else None
        if before is None:
            return self.start_plan(end)
        if not self.table.is_primary_key_table:
            splits = []
            for sid in range(start_id, end.id + 1):
                snap = end if sid == end.id else self.snapshot(sid)
                if snap is not None and self.should_scan(snap):
                    splits += self.delta_plan(snap).splits()
            return Plan(splits, snapshot_id=end.id)
        from .diff import bucket_diffs

        return Plan(bucket_diffs(self.start_plan(before).splits(), self.start_plan(end).splits()),
                    snapshot_id=end.id)

    def query_auth(self):
        """The REST catalog's row filter and column masks for this scan's reads (None: none): what the plans made
        here are wrapped with."""
        return streaming_scan.query_auth(self.scan)

    def snapshot(self, snapshot_id: int) -> Optional[Snapshot]:
        return self.files.read(snapshot_id)

    def latest(self) -> Optional[Snapshot]:
        return self.files.latest()

    def earliest_id(self) -> Optional[int]:
        return self.files.earliest_id()

    def snapshots_from(self, start_id: int, window: int = 1) -> Sequence[Snapshot]:
        """Consecutive snapshots from ``start_id`` that exist now (at most ``window``, read in parallel)."""
        return self.files.read_from(start_id, window)


def created_ms(meta) -> int:
    """A data file's creation time in epoch ms, as Paimon's ``DataFileMeta.creationTimeEpochMillis`` (the local
    time written, in the local zone); pypaimon's own drops the milliseconds. 0 when unknown."""
    local = meta.creation_time_as_datetime()
    return int(local.timestamp() * 1000) if local is not None else 0


def num_levels(table) -> int:
    """Paimon's ``CoreOptions.numLevels``: ``num-levels``, else ``num-sorted-run.compaction-trigger`` + 1."""
    opts = table.options.options.to_map()
    if opts.get("num-levels") is not None:
        return int(opts["num-levels"])
    return int(opts.get("num-sorted-run.compaction-trigger") or 5) + 1
