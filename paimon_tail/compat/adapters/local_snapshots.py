"""pypaimon's ``SnapshotManager`` over a local table directory, without pypaimon's catalog or ``LocalFileIO``.

Why
    Opening a table through pypaimon imports its whole read path first (``pypaimon.catalog`` imports the table, the
    reader, pandas, ``pyarrow.dataset`` and polars: 0.6-0.8 s), and ``pypaimon.filesystem.local_file_io`` imports
    ``requests`` through its URI reader (0.1 s). ``follow -e`` with nothing to read needs neither: the table's latest
    schema (``paimon_tail.table_meta.read_local``) and its snapshot files. pypaimon's ``SnapshotManager`` and
    ``Snapshot`` modules import neither (17 ms after pyarrow), so ``stream/quick.py`` runs the follower's own start
    resolution (``SnapshotFiles``, ``resolve_start``) over them with this read-only ``FileIO``: the same answers, the
    same files read. Only ``SnapshotManager.__init__`` is not run: it imports ``pypaimon.branch`` to name the branch
    directory, and that package imports the catalog (0.4 s); ``LocalSnapshotManager`` sets the same attributes, the
    branch directory named as ``BranchManager.branch_path`` names it (tests/stream/test_quick_exit.py compares them with
    pypaimon's, for the main branch and another).

Delete when
    ``from pypaimon import CatalogFactory`` and ``catalog.get_table`` no longer import the read path, and
    ``LocalFileIO`` no longer imports ``requests`` (then ``quick.py`` can open the table through pypaimon; the
    start-up test in tests/stream/test_quick_exit.py stays green through pypaimon).
"""
from __future__ import annotations

import os

import pyarrow.fs as pafs
from pypaimon.common.file_io import FileIO
from pypaimon.snapshot.snapshot_manager import SnapshotManager


class ReadOnlyLocalFileIO(FileIO):
    """The reads ``SnapshotManager`` and ``SnapshotFiles`` make, on the local file system; writes are refused."""

    def __init__(self) -> None:
        self.filesystem = pafs.LocalFileSystem()

    def new_input_stream(self, path: str):
        return self.filesystem.open_input_stream(path)  # FileNotFoundError for a missing file

    def get_file_status(self, path: str):
        info = self.filesystem.get_file_info(path)
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(path)
        return info

    def list_status(self, path: str):
        return self.filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True))

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def to_filesystem_path(self, path: str) -> str:
        return path

    def _refuse(self, *args, **kwargs):
        raise PermissionError("read-only file IO (paimon_tail.compat.adapters.local_snapshots)")

    new_output_stream = delete = mkdirs = rename = _refuse


class LocalSnapshotManager(SnapshotManager):
    """pypaimon's ``SnapshotManager`` of a branch (``main`` by default) of the table in local directory
    ``table_dir``: every method is pypaimon's; the constructor sets what pypaimon's sets, without importing
    ``pypaimon.branch``."""

    def __init__(self, table_dir: str, branch: str = "main") -> None:  # noqa: no super().__init__: see above
        self.file_io = ReadOnlyLocalFileIO()
        self.table_path = table_dir.rstrip("/")
        self.branch = branch or "main"
        self.snapshot_loader = None
        # BranchManager.branch_path: the table itself for main, <table>/branch/branch-NAME for another
        root = self.table_path if self.branch == "main" else f"{self.table_path}/branch/branch-{self.branch}"
        self.snapshot_dir = f"{root}/snapshot"
        self.latest_file = f"{self.snapshot_dir}/LATEST"


__all__ = ["LocalSnapshotManager", "ReadOnlyLocalFileIO"]
