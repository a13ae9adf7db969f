"""Snapshot expiration as Paimon's: the snapshots, and the files that only they needed.

pypaimon 2.1 has no expiration, and deleting snapshot files alone leaves every data file and manifest they
referenced on disk forever (the demo's warehouse grew by 774 MB an hour: issue 23). This is Paimon Java's
``ExpireSnapshotsImpl.expireUntil`` with ``SnapshotDeletion`` (changelog not decoupled, no time retention), rule
for rule. Expiring ``[begin, end)``, where ``end`` is the oldest snapshot kept:

* ``end`` = the newest ``retain`` snapshots' first, or a consumer's next snapshot if older (``--consumer-id``
  readers, Flink, Spark: Paimon's own consumer files): nothing a consumer still has to read goes.
* data files: those a snapshot in ``(begin, end]`` DELETEs (and does not ADD again: a file moved up a level) were
  live only in the snapshots before it; each goes with its extra files, unless the newest tag before that
  snapshot holds it. Changelog files: those the snapshots in ``[begin, end)`` ADD to their changelog.
* manifests, manifest lists, index manifests, index files and statistics of the snapshots in ``[begin, end)``:
  each unless ``end`` or a tag still references it. (A manifest that a newer snapshot references, ``end``
  references too: manifests are only carried forward.)

The order is safe for readers and for a crash in between: the EARLIEST hint moves first (no new reader starts at
an expiring snapshot), files go next, the snapshot files last. A later call starts from the oldest snapshot file
still there, so whatever a crash left is removed then.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Set

log = logging.getLogger(__name__)

_SNAPSHOT = re.compile(r"^snapshot-(\d+)$")
_ADD, _DELETE = 0, 1


@dataclass
class Expired:
    """What one expiration removed (counts of files asked to be deleted)."""

    snapshots: int = 0
    data_files: int = 0
    changelog_files: int = 0
    manifests: int = 0  # manifests, manifest lists, index manifests
    index_files: int = 0
    earliest: Optional[int] = None  # the oldest snapshot kept

    def __bool__(self) -> bool:
        return self.snapshots > 0


def expire_snapshots(table, retain: int) -> Expired:
    """Expire all but the newest ``retain`` snapshots of ``table`` (and never one a consumer has still to read),
    with the files only they needed."""
    from .stream.consumer import ConsumerStore

    if retain < 1:
        raise ValueError("retain must be at least 1")
    snapshots = table.snapshot_manager()
    latest = snapshots.get_latest_snapshot()
    ids = _snapshot_ids(table.file_io, snapshots.snapshot_dir)
    if latest is None or not ids:
        return Expired()
    begin = min(ids)
    end = latest.id - retain + 1
    pinned = ConsumerStore(table).all().values()
    if pinned:
        end = min(end, min(pinned))
    if end <= begin:
        return Expired(earliest=begin)
    return _Expiration(table, snapshots).run(begin, end)


def _snapshot_ids(file_io, snapshot_dir: str) -> List[int]:
    ids = []
    for status in file_io.list_status(snapshot_dir):
        name = getattr(status, "base_name", None) or str(getattr(status, "path", "")).rsplit("/", 1)[-1]
        m = _SNAPSHOT.match(name)
        if m:
            ids.append(int(m.group(1)))
    return ids


class _Expiration:
    def __init__(self, table, snapshots) -> None:
        from pypaimon.manifest.index_manifest_file import IndexManifestFile
        from pypaimon.manifest.manifest_file_manager import ManifestFileManager
        from pypaimon.manifest.manifest_list_manager import ManifestListManager

        self.table = table
        self.file_io = table.file_io
        self.snapshots = snapshots
        self.lists = ManifestListManager(table)
        self.manifests = ManifestFileManager(table)
        self.index = IndexManifestFile(table)
        self.manifest_dir = self.lists.manifest_path
        self.result = Expired()
        self._tag_files: Dict[int, Set[tuple]] = {}

    def run(self, begin: int, end: int) -> Expired:
        from .atomic_file import write_text_atomic

        kept = self._snapshot(end)
        if kept is None:  # (another expiration got there first)
            return Expired(earliest=begin)
        write_text_atomic(self.file_io, f"{self.snapshots.snapshot_dir}/EARLIEST", str(end))
        tags = self._tagged_snapshots()
        for sid in range(begin + 1, end + 1):
            snapshot = self._snapshot(sid)
            if snapshot is not None:
                self._delete_data_files(snapshot, [t for t in tags if t.id < sid][-1:])
        for sid in range(begin, end):
            snapshot = self._snapshot(sid)
            if snapshot is not None and snapshot.changelog_manifest_list:
                self._delete_changelog_files(snapshot)
        keep = self._referenced_by([kept, *tags])
        for sid in range(begin, end):
            snapshot = self._snapshot(sid)
            if snapshot is not None:
                self._delete_metadata(snapshot, keep)
        for sid in range(begin, end):
            self.file_io.delete_quietly(self.snapshots.get_snapshot_path(sid))
            self.result.snapshots += 1
        self.result.earliest = end
        log.debug("expired snapshots %d..%d of %s: %s", begin, end - 1, self.table.table_path, self.result)
        return self.result

    # -- reading ------------------------------------------------------------------------------------------
    def _snapshot(self, sid: int):
        return self.snapshots.get_snapshot_by_id(sid)

    def _tagged_snapshots(self) -> list:
        """Every tag's snapshot, oldest first (a tag file holds its snapshot)."""
        manager = self.table.tag_manager()
        try:
            names = manager.list_tags() if self.file_io.exists(manager.tag_directory()) else []
        except FileNotFoundError:
            names = []
        tags = [tag for tag in (manager.get(name) for name in names) if tag is not None]
        return sorted((tag.trim_to_snapshot() for tag in tags), key=lambda s: s.id)

    def _list(self, name: Optional[str], size: Optional[int] = None) -> list:
        """A manifest list's manifests; none when it is gone already (an earlier expiration that crashed)."""
        if not name:
            return []
        try:
            return self.lists.read(name, size)
        except FileNotFoundError:
            return []

    def _entries(self, manifests: Iterable) -> list:
        out = []
        for meta in manifests:
            try:
                out.extend(self.manifests.read(meta.file_name, drop_stats=True, file_size=meta.file_size))
            except FileNotFoundError:
                pass
        return out

    def _live_files(self, snapshot) -> Set[tuple]:
        """(partition, bucket, file name) of every data file ``snapshot`` holds."""
        live: Dict[tuple, int] = {}
        for entry in self._entries(self._list(snapshot.base_manifest_list, snapshot.base_manifest_list_size)
                                   + self._list(snapshot.delta_manifest_list, snapshot.delta_manifest_list_size)):
            key = (tuple(entry.partition.values), entry.bucket, entry.file.file_name)
            if entry.kind == _ADD:
                live[key] = 1
            else:
                live.pop(key, None)
        return set(live)

    def _referenced_by(self, snapshots: List) -> Set[str]:
        """Names of the manifest lists, manifests, index manifests, index files and statistics ``snapshots`` use."""
        names: Set[str] = set()
        for snapshot in snapshots:
            for name, size in ((snapshot.base_manifest_list, snapshot.base_manifest_list_size),
                               (snapshot.delta_manifest_list, snapshot.delta_manifest_list_size)):
                names.add(name)
                names.update(m.file_name for m in self._list(name, size))
            if snapshot.index_manifest:
                names.add(snapshot.index_manifest)
                names.update(e.index_file.file_name for e in self.index.read(snapshot.index_manifest))
            if snapshot.statistics:
                names.add(snapshot.statistics)
        return names

    # -- deleting -----------------------------------------------------------------------------------------
    def _data_paths(self, entry) -> List[str]:
        """A data file's path and its extra files' (file index), where the table keeps them."""
        from pypaimon.utils.file_store_path_factory import canonical_data_file_path

        path = canonical_data_file_path(self.table, tuple(entry.partition.values), entry.bucket,
                                        entry.file.file_name)
        return entry.file.collect_files(path.rsplit("/", 1)[0])

    def _delete_data_files(self, snapshot, previous_tag: List) -> None:
        """SnapshotDeletion.cleanUnusedDataFiles: the files ``snapshot``'s delta deletes (and does not add back)."""
        doomed: Dict[tuple, object] = {}
        delta = self._list(snapshot.delta_manifest_list, snapshot.delta_manifest_list_size)
        for entry in self._entries(delta):
            key = (tuple(entry.partition.values), entry.bucket, entry.file.file_name)
            if entry.kind == _ADD:
                doomed.pop(key, None)
            else:
                doomed[key] = entry
        tagged: Set[tuple] = set()
        if previous_tag and doomed:
            tag = previous_tag[0]
            if tag.id not in self._tag_files:
                self._tag_files = {tag.id: self._live_files(tag)}  # (expiring in order: one tag at a time)
            tagged = self._tag_files[tag.id]
        for key, entry in doomed.items():
            if key not in tagged:
                for path in self._data_paths(entry):
                    self.file_io.delete_quietly(path)
                self.result.data_files += 1

    def _delete_changelog_files(self, snapshot) -> None:
        """SnapshotDeletion.deleteAddedDataFiles of the changelog manifest list."""
        changelog = self._list(snapshot.changelog_manifest_list, snapshot.changelog_manifest_list_size)
        for entry in self._entries(changelog):
            if entry.kind == _ADD:
                for path in self._data_paths(entry):
                    self.file_io.delete_quietly(path)
                self.result.changelog_files += 1

    def _delete_manifest(self, name: str, keep: Set[str]) -> None:
        if name and name not in keep:
            self.file_io.delete_quietly(f"{self.manifest_dir}/{name}")
            keep.add(name)  # (asked once, whichever snapshot names it again)
            self.result.manifests += 1

    def _delete_metadata(self, snapshot, keep: Set[str]) -> None:
        """FileDeletionBase.cleanUnusedManifests: what ``snapshot`` references and no kept snapshot or tag does."""
        for name, size in ((snapshot.base_manifest_list, snapshot.base_manifest_list_size),
                           (snapshot.delta_manifest_list, snapshot.delta_manifest_list_size)):
            for meta in self._list(name, size):
                self._delete_manifest(meta.file_name, keep)
        self._delete_manifest(snapshot.base_manifest_list, keep)
        self._delete_manifest(snapshot.delta_manifest_list, keep)
        if snapshot.changelog_manifest_list:
            for meta in self._list(snapshot.changelog_manifest_list, snapshot.changelog_manifest_list_size):
                self._delete_manifest(meta.file_name, keep)
            self._delete_manifest(snapshot.changelog_manifest_list, keep)
        if snapshot.index_manifest and snapshot.index_manifest not in keep:
            factory = self.table.path_factory()
            for entry in self.index.read(snapshot.index_manifest):
                name = entry.index_file.file_name
                if name not in keep:
                    self.file_io.delete_quietly(
                        factory.bucket_index_path(tuple(entry.partition.values), entry.bucket, entry.index_file))
                    keep.add(name)
                    self.result.index_files += 1
            self._delete_manifest(snapshot.index_manifest, keep)
        if snapshot.statistics and snapshot.statistics not in keep:
            self.file_io.delete_quietly(f"{self.table.table_path.rstrip('/')}/statistics/{snapshot.statistics}")
            keep.add(snapshot.statistics)


__all__ = ["Expired", "expire_snapshots"]
