"""Snapshot files, read the way an object store charges for them.

pypaimon's ``SnapshotManager`` asks ``exists()`` before it reads, and on S3 pyarrow answers ``exists()`` of a missing
key with a HEAD *and* a LIST (the key might be a "directory"); ``get_latest_snapshot`` adds the ``snapshot/``
directory, the LATEST hint and its neighbours: about ten requests. Here a snapshot is simply read: a missing one
costs the one request that fails, a present one a GET (``s3.S3Client``; HEAD + GET through pyarrow). The latest
snapshot is found forward from the last one seen (one request for the next id), and the hints are read only when
nothing is known yet. On a local disk the same calls are a failed ``open()`` and a read.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, List, Optional

from pypaimon.common.json_util import JSON
from pypaimon.snapshot.snapshot import Snapshot

from .files import reading
from .s3 import read_text


class SnapshotFiles:
    """Reads ``<table>/snapshot/*`` for one table; thread-safe; every method blocks on I/O."""

    def __init__(self, manager, max_window: int = 32) -> None:
        self.manager = manager
        self.file_io = manager.file_io
        self.max_window = max_window
        self._pool: Optional[ThreadPoolExecutor] = None
        self._lock = threading.Lock()
        self._latest: Optional[Snapshot] = None  # the newest snapshot seen: where the next search starts

    # -- single files -------------------------------------------------------------------------------------
    def read(self, snapshot_id: int) -> Optional[Snapshot]:
        """Snapshot ``snapshot_id``, or None if it does not exist (not committed yet, or expired)."""
        path = self.manager.get_snapshot_path(snapshot_id)
        with reading("snapshot", path):  # empty, cut short, not JSON: named (storage/files.py)
            text = self._read_text(path)
            if text is None:
                return None
            snapshot = JSON.from_json(text, Snapshot)
        self._saw(snapshot)
        return snapshot

    def hint(self, name: str) -> Optional[int]:
        """The ``EARLIEST`` or ``LATEST`` hint file's snapshot id (writers keep them; they may lag). An unreadable
        hint (empty, not a number, not text) is no hint, as Paimon reads one: the snapshot files decide."""
        try:
            text = self._read_text(f"{self.manager.snapshot_dir}/{name}")
            return int(text.strip()) if text and text.strip() else None
        except (ValueError, IsADirectoryError):  # UnicodeDecodeError is a ValueError
            return None

    def _read_text(self, path: str) -> Optional[str]:
        return read_text(self.file_io, path)

    def _exists(self, path: str) -> bool:
        """One HEAD on an object store: opening a file asks for its size, reading it would be a second request."""
        try:
            self.file_io.new_input_stream(path).close()
            return True
        except FileNotFoundError:
            return False

    def _saw(self, snapshot: Snapshot) -> None:
        with self._lock:
            if self._latest is None or snapshot.id > self._latest.id:
                self._latest = snapshot

    @property
    def latest_seen(self) -> Optional[Snapshot]:
        """The newest snapshot read so far (no I/O)."""
        return self._latest

    @property
    def known_latest_id(self) -> Optional[int]:
        """The newest snapshot id seen so far (no I/O)."""
        latest = self._latest
        return latest.id if latest is not None else None

    # -- runs of snapshots --------------------------------------------------------------------------------
    def read_from(self, start_id: int, window: int = 1) -> List[Snapshot]:
        """The consecutive snapshots from ``start_id`` that exist now, at most ``window``, read in parallel."""
        window = max(1, min(window, self.max_window))
        if window == 1:
            first = self.read(start_id)
            return [first] if first is not None else []
        found = list(self._executor().map(self.read, range(start_id, start_id + window)))
        out = []
        for snapshot in found:
            if snapshot is None:
                break
            out.append(snapshot)
        return out

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.max_window, thread_name_prefix="paimon-tail-snapshots")
            return self._pool

    # -- ends of the table --------------------------------------------------------------------------------
    def latest(self) -> Optional[Snapshot]:
        """The newest snapshot now (None for an empty table): one HEAD when nothing was committed since the last
        call; the LATEST hint (checked forward, as it may lag) the first time."""
        with self._lock:
            known = self._latest
        if known is None:
            hint = self.hint("LATEST")
            known = self.read(hint) if hint is not None else None
            if known is None:
                known = self.manager.get_latest_snapshot()  # no usable hint: pypaimon lists the directory
                if known is None:
                    return None
                self._saw(known)
        window = 1
        while True:
            newer = self.read_from(known.id + 1, window)
            if not newer:
                return known
            known = newer[-1]
            window = min(self.max_window, window * 2)

    def earliest_id(self) -> Optional[int]:
        """The oldest snapshot still kept (None for an empty table): the EARLIEST hint when it is right (one or
        two requests), else one listing of the snapshot directory."""
        hint = self.hint("EARLIEST")
        first = hint if hint is not None else 1
        if self._exists(self.manager.get_snapshot_path(first)):
            return first
        ids = self._listed_ids()
        return min(ids) if ids else None

    def at_or_before(self, timestamp_ms: int, earliest: Optional[int], latest: Optional[Snapshot]
                     ) -> Optional[Snapshot]:
        """The newest snapshot committed at or before ``timestamp_ms`` (binary search over the kept ones), as
        Paimon's ``SnapshotManager.earlierOrEqualTimeMills``."""
        if latest is None or earliest is None:
            return None
        lo, hi, found = earliest, latest.id, None
        while lo <= hi:
            mid = (lo + hi) // 2
            snapshot = latest if mid == latest.id else self.read(mid)
            if snapshot is None:  # expired meanwhile: search above it
                lo = mid + 1
                continue
            if snapshot.time_millis <= timestamp_ms:
                found, lo = snapshot, mid + 1
            else:
                hi = mid - 1
        return found

    def pick_latest(self, wanted: Callable[[Snapshot], bool], earliest: int, latest: Snapshot) -> Optional[Snapshot]:
        """The newest kept snapshot ``wanted`` accepts, searched back from ``latest`` (a window of snapshots read
        in parallel at a time), as Paimon's ``SnapshotManager.pickOrLatest`` without its fallback."""
        if wanted(latest):
            return latest
        hi = latest.id - 1
        while hi >= earliest:
            lo = max(earliest, hi - self.max_window + 1)
            found = list(self._executor().map(self.read, range(lo, hi + 1)))
            for snapshot in reversed(found):
                if snapshot is not None and wanted(snapshot):
                    return snapshot
            hi = lo - 1
        return None

    # -- tags ---------------------------------------------------------------------------------------------
    @property
    def branch_root(self) -> str:
        """The directory of the branch these snapshots belong to (the table's for ``main``)."""
        return self.manager.snapshot_dir.rsplit("/", 1)[0]

    def tag(self, name: str) -> Optional[Snapshot]:
        """Tag ``name`` as the snapshot it keeps (``<branch>/tag/tag-NAME``: a snapshot file with the tag's create
        time), or None. A tag outlives its snapshot's expiration: its manifests and data files are kept."""
        text = self._read_text(f"{self.branch_root}/tag/tag-{name}")
        if text is None:
            return None
        from pypaimon.tag.tag import Tag

        return JSON.from_json(text, Tag).trim_to_snapshot()

    def tag_names(self) -> List[str]:
        """The table's (branch's) tags, sorted."""
        names = []
        try:
            listed = self.file_io.list_status(f"{self.branch_root}/tag") or ()
        except FileNotFoundError:
            listed = ()
        for info in listed:
            name = info.path.rstrip("/").rsplit("/", 1)[-1]
            if name.startswith("tag-"):
                names.append(name[len("tag-"):])
        return sorted(names)

    def _listed_ids(self) -> List[int]:
        ids = []
        for info in self.file_io.list_status(self.manager.snapshot_dir) or ():
            name = info.path.rstrip("/").rsplit("/", 1)[-1]
            if name.startswith("snapshot-") and name[len("snapshot-"):].isdigit():
                ids.append(int(name[len("snapshot-"):]))
        return ids

    def table_exists(self, schema_id: int) -> bool:
        """Whether the table's (branch's) schema file is still there (a dropped table loses its whole directory)."""
        return self._exists(f"{self.branch_root}/schema/schema-{schema_id}")

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None


__all__ = ["SnapshotFiles"]
