"""What the terminal footer and ``--stats`` say about a follow: rows per second over the last seconds (not an
average since the start, which drifts down slowly after the writer stops), how long the table has had no commit
("idle: no commit for 40 s" rather than "live"), and ``--stats``'s line.

No rich, no pyarrow: ``--stats`` on a pipe imports this alone.
"""
from __future__ import annotations

import collections
import time
from typing import Any, Optional

RATE_WINDOW = 10.0  # seconds the rate is taken over
IDLE_AFTER = 10.0  # a table with no commit for this long is shown as idle, not live


class Pace:
    """One view's pace of one stats object (``FollowStats`` or ``MultiStats``): call ``rate()`` and ``idle()``
    each time the view is drawn."""

    def __init__(self, stats: Any) -> None:
        self.stats = stats
        started = getattr(stats, "started", None)
        self._samples: collections.deque = collections.deque()
        if started is not None:
            self._samples.append((started, 0))
        self._latest: Optional[int] = None
        self._latest_seen_at: Optional[float] = None  # monotonic time this session saw the latest change

    def rate(self, now: Optional[float] = None) -> float:
        """Rows per second over the last ``RATE_WINDOW`` seconds (since the start for a younger view)."""
        now = time.monotonic() if now is None else now
        rows = self.stats.rows
        samples = self._samples
        samples.append((now, rows))
        while len(samples) > 2 and now - samples[1][0] >= RATE_WINDOW:
            samples.popleft()
        t0, r0 = samples[0]
        return (rows - r0) / (now - t0) if now > t0 else 0.0

    def idle(self, now: Optional[float] = None, wall: Optional[float] = None) -> Optional[float]:
        """Seconds since the table's latest commit when that is ``IDLE_AFTER`` or more, else None.

        The commit time is the writer's clock; once this session has seen a new snapshot appear, the time since
        it saw that is an upper bound too, so a writer whose clock is behind ours does not look idle."""
        now = time.monotonic() if now is None else now
        wall = time.time() if wall is None else wall
        latest_id, latest_ms = _latest(self.stats)
        if latest_id is None:
            return None
        if self._latest is not None and latest_id != self._latest:
            self._latest_seen_at = now
        self._latest = latest_id
        ages = []
        if latest_ms is not None:
            ages.append(max(0.0, wall - latest_ms / 1000.0))
        if self._latest_seen_at is not None:
            ages.append(now - self._latest_seen_at)
        if not ages:
            return None
        age = min(ages)
        return age if age >= IDLE_AFTER else None


def _latest(stats: Any) -> tuple:
    """(latest snapshot id, its commit time in ms) of one table; of several, the newest commit of any."""
    tables = getattr(stats, "tables", None)
    if tables is None:
        return stats.latest_id, stats.latest_time_ms
    known = [(s.latest_time_ms or 0, s.latest_id) for s in tables.values() if s.latest_id is not None]
    if not known:
        return None, None
    total = sum(s.latest_id for s in tables.values() if s.latest_id is not None)  # changes when any table commits
    return total, max(ms for ms, _ in known) or None


def duration(seconds: float) -> str:
    """40 s, 3 min, 2 h 5 min, 3 d: as a person says it."""
    s = int(seconds)
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min"
    if s < 2 * 86400:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 86400} d"


def state(stats: Any, idle: Optional[float]) -> str:
    """live, idle: no commit for 40 s, or catching up."""
    if not stats.caught_up:
        return "catching up"
    if idle is not None:
        return f"idle: no commit for {duration(idle)}"
    return "live"


class StatusLine:
    """``--stats``: the footer as one plain line on stderr, every second."""

    def __init__(self, stats: Any) -> None:
        self.stats = stats
        self.pace = Pace(stats)

    def __call__(self) -> str:
        s = self.stats
        head = f"[paimon-tail {time.strftime('%H:%M:%S')}]"
        rate, idle = self.pace.rate(), self.pace.idle()
        if getattr(s, "tables", None) is not None:  # several tables
            outage = f" {s.outage.describe()} (retrying)" if s.outage is not None else ""
            return (f"{head} tables {len(s.tables)} ({s.tables_caught_up} live) lag {s.lag_snapshots} "
                    f"({s.lag_seconds:.1f}s) rows {s.rows} ({rate:.0f}/s){overwrites(s)} "
                    f"{outage.strip() if outage else state(s, idle)}")
        if s.snapshot_id is not None:
            position = f"snapshot {s.snapshot_id}"
        elif s.latest_id is None:
            return f"{head} waiting for the first snapshot of an empty table"
        else:
            position = f"snapshot - (waiting for {s.start_id or s.latest_id + 1})"
        if s.outage is not None:
            return f"{head} {position} rows {s.rows} {s.outage.describe()} (retrying)"
        return (f"{head} {position} latest {s.latest_id} lag {s.lag_snapshots} ({s.lag_seconds:.1f}s) "
                f"rows {s.rows} ({rate:.0f}/s){overwrites(s)} {state(s, idle)}")


def overwrites(stats: Any) -> str:
    """`` overwrites skipped 2`` / `` overwrites read 2`` once a follow has met OVERWRITE snapshots, else ''."""
    skipped, read = getattr(stats, "overwrites_skipped", 0), getattr(stats, "overwrites_read", 0)
    return (f" overwrites skipped {skipped}" if skipped else "") + (f" overwrites read {read}" if read else "")


__all__ = ["IDLE_AFTER", "Pace", "RATE_WINDOW", "StatusLine", "duration", "overwrites", "state"]
