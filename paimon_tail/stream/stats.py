"""``FollowStats``: what a follow has done so far, for the status footer, ``--stats`` and the service's metrics.

Light on imports (no pyarrow, no pypaimon): the planning side and the reading side of a follow both update it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import List, Optional

from ..storage.retry import Outage, StorageHealth


@dataclass
class FollowStats:
    """What the status footer shows; updated as the follower runs."""

    started: float = field(default_factory=time.monotonic)
    snapshot_id: Optional[int] = None  # last snapshot whose rows were all handed out
    commit_time_ms: Optional[int] = None
    latest_id: Optional[int] = None
    latest_time_ms: Optional[int] = None
    start_id: Optional[int] = None  # first snapshot of this session, for the catch-up progress bar
    rows: int = 0
    bytes: int = 0
    snapshots: int = 0
    caught_up: bool = False
    waiting_for_first_snapshot: bool = False
    mechanism: str = ""
    gaps: List[tuple] = field(default_factory=list)
    schema_changes: List[tuple] = field(default_factory=list)
    notices: List[str] = field(default_factory=list)  # said as the follow reached them (overwrites skipped, ...)
    overwrites_skipped: int = 0
    overwrites_read: int = 0
    health: StorageHealth = field(default_factory=StorageHealth)

    @property
    def outage(self) -> Optional[Outage]:
        """Set while storage does not answer (retried, never fatal unless --storage-timeout)."""
        return self.health.outage

    def saw_latest(self, snapshot_id: int, time_ms: Optional[int]) -> None:
        """The table's latest snapshot is at least ``snapshot_id`` (committed at ``time_ms`` when known)."""
        if self.latest_id is None or snapshot_id > self.latest_id:
            self.latest_id = snapshot_id
            self.latest_time_ms = time_ms if time_ms is not None else self.latest_time_ms
        elif snapshot_id == self.latest_id and time_ms is not None:
            self.latest_time_ms = time_ms

    @property
    def lag_snapshots(self) -> int:
        if self.latest_id is None:
            return 0
        return max(0, self.latest_id - (self.snapshot_id or (self.start_id or 1) - 1))

    @property
    def lag_seconds(self) -> float:
        if self.caught_up or self.commit_time_ms is None or self.latest_time_ms is None:
            return 0.0
        return max(0.0, (self.latest_time_ms - self.commit_time_ms) / 1000.0)

    @property
    def rows_per_second(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.rows / elapsed if elapsed > 0 else 0.0


__all__ = ["FollowStats"]
