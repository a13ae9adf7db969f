"""The snapshot file scanner: follows a table snapshot by snapshot and tells each executor its file changes.

It stands on the streaming core (``SnapshotPlanner`` + ``SnapshotWalker``: lookahead, inotify/polling, gap
detection). Per snapshot it reads the snapshot's *delta manifest entries* (ADD and DELETE, so COMPACT snapshots
that replace files are seen as such), groups them by (partition, bucket) and sends every executor one message
per snapshot — its buckets' changes, possibly none, so every executor knows which snapshot it serves. A bucket's
executor is the owner of its channel in the coordinator's current assignment (``registry.py``).

Messages (``lookup.proto``, on each executor's Join stream; ``protocol/changes.py`` encodes the file metadata):

* ``TableFull`` — every bucket the executor owns at one snapshot (when it joins, when it gained channels, after a
  snapshot gap);
* ``TableDelta`` — one snapshot's ``BucketChange``s of its buckets, with the snapshot's commit kind and schema id.

Deletion-vector tables get ``BucketChange.replace`` (the bucket's full split from a plan, with its deletion
files) because deletion vectors live in index manifests, not in the data-file entries.

Every bucket a batch read sees is sent, whatever the table's bucket mode: fixed, dynamic (buckets appear as they
fill), cross-partition, postpone (the compacted buckets, each partition with its own count). A fixed-bucket
table's bucket goes to the owner of its channel; any other table's buckets go to every executor, which indexes
the keys of its channels in each (keys are routed by slot: ``keys/routing.py``). Files still in
``bucket-postpone`` (bucket -2) are invisible to batch reads and so to lookups; the scanner only counts them
(``TableLayout``, shown by ``service status``).
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Set, Tuple

from ...atomic_file import local_path
from ...errors import SnapshotGap
from ...storage.diagnosis import endpoint_of
from ...storage.retry import StorageHealth, StorageRetry
from ...stream.planner import SnapshotPlanner
from ...stream.walker import SnapshotWalker
from ..keys.routing import TableRouting
from ..protocol import lookup_pb2 as pb
from ..protocol.changes import BucketChange, BucketFiles, BucketKey, RowCodec, table_mode
from .registry import Registry

log = logging.getLogger(__name__)

ADD, DELETE = 0, 1
# A service polls a little slower than a follower on object stores: it also renews its registration (a PUT every
# lease/3 s) and checks for gaps, and should stay under 5 requests/s per table when idle.
SERVICE_REMOTE_POLL_INTERVAL = 0.3


@dataclass(frozen=True)
class TableLayout:
    """What ``service status`` says of a table beside its executors, at the scanner's snapshot."""

    kind: str = ""  # TableRouting.kind: fixed, dynamic, cross-partition, postpone
    schema_id: int = 0
    buckets: int = 0  # (partition, bucket)s with files a batch read sees
    partitions: int = 0
    postponed_files: int = 0  # data files in bucket-postpone (postpone tables), not visible yet


def full_buckets(planner: SnapshotPlanner, snapshot, keep: Optional[Callable[[BucketKey], bool]] = None
                 ) -> Dict[BucketKey, BucketFiles]:
    """Every bucket's live files at ``snapshot`` (what a batch read of it reads), with deletion vectors."""
    plan = planner.full_plan(snapshot)
    out: Dict[BucketKey, BucketFiles] = {}
    for split in plan.splits():
        if split.bucket < 0:  # bucket-postpone: no batch read sees it
            continue
        key = (tuple(split.partition.values), split.bucket)
        if keep is not None and not keep(key):
            continue
        bf = out.setdefault(key, BucketFiles())
        files = list(split.files)
        dvs = split.data_deletion_files
        if dvs is not None or bf.deletion_files is not None:
            if bf.deletion_files is None:
                bf.deletion_files = [None] * len(bf.files)
            bf.deletion_files += list(dvs) if dvs is not None else [None] * len(files)
        bf.files += files
    return out


def delta_changes(table, snapshot) -> Dict[BucketKey, BucketChange]:
    """``snapshot``'s delta manifest entries (files added and deleted) by bucket."""
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager
    from pypaimon.utils.file_store_path_factory import canonical_data_file_path

    changes: Dict[BucketKey, BucketChange] = {}
    manifests = ManifestListManager(table).read_delta(snapshot)
    reader = ManifestFileManager(table)
    for manifest in manifests:
        for entry in reader.read(manifest.file_name, drop_stats=True):
            partition = tuple(entry.partition.values)
            meta = entry.file
            if not meta.external_path:
                meta.file_path = canonical_data_file_path(table, partition, entry.bucket, meta.file_name)
            change = changes.setdefault((partition, entry.bucket), BucketChange())
            (change.adds if entry.kind == ADD else change.deletes).append(meta)
    return changes


def postponed_files(table, snapshot) -> Set[str]:
    """The data files of ``snapshot`` in bucket-postpone (bucket -2): written, but not visible to batch reads until
    a compaction gives them a bucket."""
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    files: Set[str] = set()
    reader = ManifestFileManager(table)
    for manifest in ManifestListManager(table).read_all(snapshot):
        for entry in reader.read(manifest.file_name, drop_stats=True):
            if entry.bucket >= 0:
                continue
            if entry.kind == ADD:
                files.add(entry.file.file_name)
            else:
                files.discard(entry.file.file_name)
    return files


class TableScanner:
    def __init__(self, name: str, table, registry: Registry, health: Optional[StorageHealth] = None,
                 poll_interval: Optional[float] = None) -> None:
        self.name = name
        self.table = table
        self.routing = TableRouting.of(table)
        self.mode = table_mode(table)
        self.registry = registry
        self.codec = RowCodec(table)
        self.planner = SnapshotPlanner(table.new_stream_read_builder().new_streaming_scan())
        # A service waits out any storage outage (no timeout); the status shows it (``service status``).
        self.retry = StorageRetry(endpoint_of(table.file_io), timeout=None, health=health)
        if poll_interval is None and local_path(table.table_path) is None:
            poll_interval = SERVICE_REMOTE_POLL_INTERVAL
        self.walker = SnapshotWalker(self.planner, poll_interval, retry=self.retry)
        self.resync: Set[int] = set()  # executors to send a full state at the next opportunity
        self.snapshot = None  # last snapshot sent
        self.snapshots_sent = 0
        self.error: Optional[BaseException] = None
        self._files: Dict[BucketKey, int] = {}  # data files a batch read sees, per bucket (``layout``)
        self._postponed: Set[str] = set()  # data files in bucket-postpone

    # -- layout (service status) --------------------------------------------------------------------------
    def layout(self) -> TableLayout:
        snap = self.snapshot
        return TableLayout(self.routing.kind, snap.schema_id if snap is not None else 0, len(self._files),
                           len({k[0] for k in self._files}), len(self._postponed))

    def _laid_out(self, snapshot, buckets: Dict[BucketKey, BucketFiles]) -> None:
        """The layout of a full state (``buckets``: every bucket at ``snapshot``)."""
        self._files = {k: len(bf.files) for k, bf in buckets.items() if bf.files}
        if self.routing.kind == "postpone":
            self._postponed = postponed_files(self.table, snapshot)

    def _relaid(self, changes: Dict[BucketKey, BucketChange]) -> None:
        """A snapshot's changes to the layout; bucket-postpone's leave ``changes`` (executors never see them)."""
        for key in [k for k in changes if k[1] < 0]:
            change = changes.pop(key)
            self._postponed.update(m.file_name for m in change.adds)
            self._postponed.difference_update(m.file_name for m in change.deletes)
        for key, change in changes.items():
            count = self._files.get(key, 0) + len(change.adds) - len(change.deletes)
            if count > 0:
                self._files[key] = count
            else:
                self._files.pop(key, None)

    # -- assignment ---------------------------------------------------------------------------------------
    def holders(self, partition: Tuple, bucket: int) -> Tuple[int, ...]:
        """Its owner, and the executor loading it to become the owner (``Registry.warm``); every executor for a
        table whose keys are routed by slot (each indexes its channels' keys in every bucket)."""
        if self.routing.slotted:
            return tuple(self.registry.indices())
        return self.registry.holders(self.routing.channel_of(partition, bucket, self.registry.assignment.channels))

    def request_full(self, index: int) -> None:
        """Executor ``index`` joined or gained channels: send it everything it owns at the next opportunity."""
        self.resync.add(index)
        self.walker.wake()

    def _send(self, index: int, **work) -> None:
        self.registry.send(index, pb.ExecutorWork(**work))

    # -- planning (threads) -------------------------------------------------------------------------------
    def _full_buckets(self, snapshot, keep: Optional[Callable[[BucketKey], bool]] = None) -> Dict[BucketKey, BucketFiles]:
        return full_buckets(self.planner, snapshot, keep)

    def _delta_entries(self, snapshot) -> Dict[BucketKey, BucketChange]:
        return delta_changes(self.table, snapshot)

    # -- sending ------------------------------------------------------------------------------------------
    def _send_full(self, snapshot, targets: Set[int], buckets: Dict[BucketKey, BucketFiles]) -> None:
        """Each target's buckets (by the current assignment) at ``snapshot``; on the loop, so that the assignment
        the buckets are chosen by is the last one sent to each target before this message."""
        per: Dict[int, List] = {i: [] for i in targets}
        for key, files in buckets.items():
            for holder in self.holders(*key):
                if holder in per:
                    per[holder].append(self.codec.bucket_files(key, files))
        for i in targets:
            self._send(i, full=pb.TableFull(table=self.name, snapshot_id=snapshot.id,
                                            commit_time_ms=snapshot.time_millis, schema_id=snapshot.schema_id,
                                            buckets=per[i]))
            self.resync.discard(i)

    async def _process(self, snapshot) -> None:
        changes = await self.retry.call(self._delta_entries, snapshot)
        self._relaid(changes)
        targets = set(self.resync)
        full = None
        if targets or (self.mode == "dv" and changes):
            changed = set(changes)
            full = await self.retry.call(self._full_buckets, snapshot)
            if self.mode == "dv":
                for key in changed:
                    changes[key] = BucketChange(replace=full.get(key, BucketFiles()))
        if targets:
            self._send_full(snapshot, targets, full)
        per: Dict[int, List] = {i: [] for i in self.registry.indices() if i not in targets}
        for key, change in changes.items():
            encoded = None
            for holder in self.holders(*key):
                if holder in per:
                    encoded = encoded or self.codec.bucket_change(key, change)
                    per[holder].append(encoded)
        for i, ch in per.items():
            self._send(i, delta=pb.TableDelta(table=self.name, snapshot_id=snapshot.id,
                                              commit_time_ms=snapshot.time_millis, schema_id=snapshot.schema_id,
                                              commit_kind=str(snapshot.commit_kind), changes=ch))
        self.snapshot = snapshot
        self.snapshots_sent += 1

    async def run(self) -> None:
        try:
            await self._run()
        except asyncio.CancelledError:
            raise
        except BaseException as e:  # surfaced by the service (status, logs) — never silent
            self.error = e
            log.error("scanner for %s stopped: %s", self.name, e, exc_info=log.isEnabledFor(logging.DEBUG))
            raise
        finally:
            self.walker.close()

    async def _run(self) -> None:
        snapshot = await self.retry.call(self.planner.latest)
        while snapshot is None:
            # An empty table: executors serve "snapshot 0" (nothing) until the first commit.
            for i in list(self.resync):
                self._send(i, full=pb.TableFull(table=self.name))
                self.resync.discard(i)
            await self.walker.wait()
            snapshot = await self.retry.call(self.planner.snapshot, 1) or \
                await self.retry.call(self.planner.latest)
        first = snapshot
        buckets = await self.retry.call(self._full_buckets, first)
        await self.retry.call(self._laid_out, first, buckets)
        self.resync |= set(self.registry.indices())
        self._send_full(first, set(self.resync), buckets)
        self.snapshot = first
        next_id = first.id + 1
        while True:
            try:
                snaps = await self.walker.poll(next_id)
            except SnapshotGap as gap:
                log.warning("%s: %s; resending full state", self.name, gap)
                latest = await self.retry.call(self.planner.latest)
                buckets = await self.retry.call(self._full_buckets, latest)
                await self.retry.call(self._laid_out, latest, buckets)
                self._send_full(latest, set(self.registry.indices()), buckets)
                self.snapshot = latest
                next_id = latest.id + 1
                continue
            if not snaps:
                if self.resync and self.snapshot is not None:
                    buckets = await self.retry.call(self._full_buckets, self.snapshot)
                    self._send_full(self.snapshot, set(self.resync), buckets)
                    continue
                await self.walker.wait()
                continue
            for snap in snaps:
                await self._process(snap)
                next_id = snap.id + 1
