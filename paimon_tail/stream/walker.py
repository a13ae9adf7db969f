"""Snapshot by snapshot: the walking half of the streaming core, under the follower and the query service's scanner.

Discovery costs one request per poll on an object store: the next snapshot is read directly (``SnapshotFiles``:
a missing one is the one HEAD that fails), never listed. A run of found snapshots doubles the read window (up to
16 in flight) so a backlog is fetched in parallel; a miss resets it to one. The checks that do not have to run
on every poll — has the next snapshot expired under us (a gap), was the table dropped — run on the first miss
after activity and then every ``check_interval`` seconds while idle (10 s on object stores, where each check
costs two or three requests; on every miss locally, where it costs nothing). Between polls the change notifier waits
(inotify on local warehouses, adaptive polling elsewhere). Every storage call goes through the walker's
``StorageRetry``, so an outage is waited out and reported (``retry.health``), not fatal:

    walker = SnapshotWalker(planner)
    async for snapshot in walker.walk(start_id):
        ...

``wake()`` interrupts an idle wait (e.g. when the consumer has work of its own).
"""
from __future__ import annotations

import asyncio
import time
from typing import AsyncIterator, List, Optional

from ..atomic_file import local_path
from ..errors import SnapshotGap, SnapshotMissing
from ..storage.retry import StorageRetry
from .notify import ChangeNotifier, notifier_for
from .planner import SnapshotPlanner

REMOTE_CHECK_INTERVAL = 10.0


class SnapshotWalker:
    """Create it inside the running event loop (it owns an ``asyncio.Event``)."""

    def __init__(self, planner: SnapshotPlanner, poll_interval: Optional[float] = None,
                 retry: Optional[StorageRetry] = None, check_interval: Optional[float] = None) -> None:
        self.planner = planner
        self.poll_interval = poll_interval
        self.retry = retry or StorageRetry()
        if check_interval is None:
            check_interval = 0.0 if local_path(planner.snapshots.snapshot_dir) is not None else REMOTE_CHECK_INTERVAL
        self.check_interval = check_interval
        self._notifier: Optional[ChangeNotifier] = None
        self._wake = asyncio.Event()
        self._window = 1
        self._checked_at: Optional[float] = None  # last gap/drop check; None: due at the next miss
        self.latest_id: Optional[int] = None

    def wake(self) -> None:
        self._wake.set()

    async def wait(self) -> None:
        """Until the table may have changed, ``wake()`` is called, or the notifier's re-check interval passes."""
        if self._notifier is None or self._notifier.upgradeable():
            if self._notifier is not None:
                self._notifier.close()
            self._notifier = notifier_for(self.planner.snapshots.snapshot_dir, self.poll_interval)
        if self._wake.is_set():
            self._wake.clear()
            return
        waiter = asyncio.ensure_future(self._wake.wait())
        changed = asyncio.ensure_future(self._notifier.wait())
        try:
            await asyncio.wait({waiter, changed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for f in (waiter, changed):
                if not f.done():
                    f.cancel()
            self._wake.clear()

    async def poll(self, next_id: int) -> List:
        """Consecutive snapshots from ``next_id`` that exist now ([] if none); raises ``SnapshotGap``."""
        files = self.planner.files
        window = self._window
        known = files.known_latest_id
        if known is not None and known >= next_id:  # a backlog we know of: fetch it in parallel at once
            window = max(window, min(files.max_window, known - next_id + 1))
        snaps = await self.retry.call(self.planner.snapshots_from, next_id, window)
        if snaps:
            self._window = min(files.max_window, window * 2) if len(snaps) == window else 1
            self._checked_at = None
            if self._notifier is not None:
                self._notifier.activity()
            self.latest_id = max(self.latest_id or 0, snaps[-1].id)
            return list(snaps)
        self._window = 1
        now = time.monotonic()
        if self._checked_at is None or now - self._checked_at >= self.check_interval:
            self._checked_at = now
            await self._check(next_id)
        return []

    async def _check(self, next_id: int) -> None:
        """``next_id`` is not there: caught up (the usual case), expired under us, deleted from the middle of the
        history (the next one is there: commits come in order, expiration takes the oldest), or the table is gone."""
        earliest = await self.retry.call(self.planner.earliest_id)
        if earliest is not None and earliest > next_id:
            raise SnapshotGap(next_id, earliest)
        files = self.planner.files
        if earliest is not None and await self.retry.call(files.read, next_id + 1) is not None \
                and await self.retry.call(files.read, next_id) is None:  # (read again: it may have come meanwhile)
            raise SnapshotMissing(next_id, next_id + 1, files.manager.get_snapshot_path(next_id))
        table = self.planner.table
        if earliest is None and not await self.retry.call(self.planner.files.table_exists, table.table_schema.id):
            from ..catalog import reload_table

            await self.retry.call(reload_table, table)  # TableChanged when the table was dropped

    async def walk(self, next_id: int) -> AsyncIterator:
        while True:
            snaps = await self.poll(next_id)
            if not snaps:
                await self.wait()
                continue
            for snap in snaps:
                yield snap
                next_id = snap.id + 1

    @property
    def mechanism(self) -> str:
        return self._notifier.mechanism if self._notifier is not None else ""

    def close(self) -> None:
        if self._notifier is not None:
            self._notifier.close()
            self._notifier = None


__all__ = ["SnapshotWalker"]
