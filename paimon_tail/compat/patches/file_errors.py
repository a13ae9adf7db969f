"""Shim: pypaimon's readers of a table's files name the file they could not read.

Patches
    ``SnapshotManager.get_snapshot_by_id`` and ``._get_latest_snapshot_from_filesystem``,
    ``ManifestListManager.read``, ``ManifestFileManager.read``, ``IndexManifestFile.read`` and
    ``DeletionVector.read``

Why
    A snapshot, manifest list, manifest, index manifest or deletion file that is empty, cut short or overwritten
    (a disk, a copy, a sync tool) fails deep in pypaimon with the parser's words and no file: ``JSONDecodeError:
    Expecting value: line 1 column 1``, ``ValueError: cannot read header - is it an avro file?``, ``RuntimeError:
    Invalid magic number``. Each patched reader now raises ``UnreadableFile`` (``storage/files.py``): "cannot read
    manifest <path>: it is not an Avro file", and a missing file ``MissingFile`` (still a ``FileNotFoundError``).
    And an index manifest that a snapshot names but that is gone was read as "no index" (pypaimon returns no
    entries when it does not exist): a deletion-vector table's deleted rows came back, silently; it is refused as
    missing, as Paimon Java does.

Delete when
    pypaimon's readers name the file in their errors, and ``IndexManifestFile.read`` fails on a missing file.
"""
from __future__ import annotations

import functools

from pypaimon.deletionvectors.deletion_vector import DeletionVector
from pypaimon.manifest.index_manifest_file import IndexManifestFile
from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.manifest_list_manager import ManifestListManager
from pypaimon.snapshot.snapshot_manager import SnapshotManager

from ...storage.files import FILE_FAULTS, reading, unreadable

NAME = "file_errors"
_ORIGINAL = {
    (SnapshotManager, "get_snapshot_by_id"): SnapshotManager.__dict__["get_snapshot_by_id"],
    (SnapshotManager, "_get_latest_snapshot_from_filesystem"):
        SnapshotManager.__dict__["_get_latest_snapshot_from_filesystem"],
    (ManifestListManager, "read"): ManifestListManager.__dict__["read"],
    (ManifestFileManager, "read"): ManifestFileManager.__dict__["read"],
    (IndexManifestFile, "read"): IndexManifestFile.__dict__["read"],
    (DeletionVector, "read"): DeletionVector.__dict__["read"],
}


def _original(cls, name):
    return _ORIGINAL[(cls, name)]


def get_snapshot_by_id(self, snapshot_id, *args, **kwargs):
    with reading("snapshot", self.get_snapshot_path(snapshot_id)):
        return _original(SnapshotManager, "get_snapshot_by_id")(self, snapshot_id, *args, **kwargs)


def _get_latest_snapshot_from_filesystem(self):
    try:
        return _original(SnapshotManager, "_get_latest_snapshot_from_filesystem")(self)
    except FILE_FAULTS as e:
        if isinstance(e, FileNotFoundError):
            raise
        path = _latest_listed(self)  # the one pypaimon read: the newest listed (or the hint, which names it)
        if path is None:  # a hint that names snapshots none of which is there
            raise unreadable("snapshot directory", self.snapshot_dir, e) from e
        raise unreadable("snapshot", path, e) from e


def _latest_listed(manager):
    try:
        latest = manager._max_snapshot_id_from_listing()
    except Exception:  # noqa: BLE001 - no name to give: the original error stands
        return None
    return manager.get_snapshot_path(latest) if latest is not None else None


def manifest_list_read(self, manifest_list_name, *args, **kwargs):
    with reading("manifest list", f"{self.manifest_path}/{manifest_list_name}"):
        return _original(ManifestListManager, "read")(self, manifest_list_name, *args, **kwargs)


def manifest_read(self, manifest_file_name, *args, **kwargs):
    with reading("manifest", f"{self.manifest_path}/{manifest_file_name}"):
        return _original(ManifestFileManager, "read")(self, manifest_file_name, *args, **kwargs)


def index_manifest_read(self, index_manifest_name, *args, **kwargs):
    path = f"{self.manifest_path}/{index_manifest_name}"
    with reading("index manifest", path):
        if not self.file_io.exists(path):  # named by a snapshot: gone is not "no deletion vectors"
            raise FileNotFoundError(path)
        return _original(IndexManifestFile, "read")(self, index_manifest_name, *args, **kwargs)


@functools.wraps(_ORIGINAL[(DeletionVector, "read")].__func__)
def deletion_vector_read(file_io, deletion_file):
    with reading("deletion file", deletion_file.dv_index_path):
        return _ORIGINAL[(DeletionVector, "read")].__func__(file_io, deletion_file)


_PATCHES = {
    (SnapshotManager, "get_snapshot_by_id"): get_snapshot_by_id,
    (SnapshotManager, "_get_latest_snapshot_from_filesystem"): _get_latest_snapshot_from_filesystem,
    (ManifestListManager, "read"): manifest_list_read,
    (ManifestFileManager, "read"): manifest_read,
    (IndexManifestFile, "read"): index_manifest_read,
    (DeletionVector, "read"): staticmethod(deletion_vector_read),
}


def install() -> None:
    for (cls, name), patch in _PATCHES.items():
        setattr(cls, name, patch)


def uninstall() -> None:
    for (cls, name), original in _ORIGINAL.items():
        setattr(cls, name, original)
