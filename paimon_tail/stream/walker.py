"""Snapshot by snapshot: the walking half of the streaming core, under the follower and the query service's scanner.

``SnapshotPlanner`` lookahead (snapshots fetched in parallel), the change notifier (inotify on local warehouses,
adaptive polling elsewhere) and gap detection, without reading rows:

    walker = SnapshotWalker(planner)
    async for snapshot in walker.walk(start_id):
        ...

``wake()`` interrupts an idle wait (e.g. when the consumer has work of its own).
"""
from __future__ import annotations

import asyncio
from typing import AsyncIterator, List, Optional

from ..errors import SnapshotGap
from .notify import ChangeNotifier, notifier_for
from .planner import SnapshotPlanner


class SnapshotWalker:
    """Create it inside the running event loop (it owns an ``asyncio.Event``)."""

    def __init__(self, planner: SnapshotPlanner, poll_max_interval: float = 0.5) -> None:
        self.planner = planner
        self.poll_max_interval = poll_max_interval
        self._notifier: Optional[ChangeNotifier] = None
        self._wake = asyncio.Event()
        self.latest_id: Optional[int] = None

    def wake(self) -> None:
        self._wake.set()

    async def wait(self) -> None:
        """Until the table may have changed, ``wake()`` is called, or the notifier's re-check interval passes."""
        if self._notifier is None or self._notifier.upgradeable():
            if self._notifier is not None:
                self._notifier.close()
            self._notifier = notifier_for(self.planner.snapshots.snapshot_dir, self.poll_max_interval)
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
        while True:
            snaps = await asyncio.to_thread(self.planner.lookahead_snapshots, next_id)
            if snaps:
                if self._notifier is not None:
                    self._notifier.activity()
                self.latest_id = max(self.latest_id or 0, snaps[-1].id)
                return snaps
            latest = await asyncio.to_thread(self.planner.latest)
            if latest is None or latest.id < next_id:
                return []
            self.latest_id = latest.id
            earliest = await asyncio.to_thread(self.planner.earliest_id)
            if earliest is not None and earliest > next_id:
                raise SnapshotGap(next_id, earliest)
            await asyncio.sleep(0.001)  # a commit in flight: next_id is not visible yet, a later one is

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
