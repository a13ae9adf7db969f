"""The ``--from`` / ``--until`` grammar and its meaning, which is Paimon's ``scan.mode`` meaning.

=================  ===========================================  ===============================
``--from``         Paimon scan.mode                             first output
=================  ===========================================  ===============================
latest-full        latest-full (Paimon's streaming default)     full table at latest, then deltas
latest             latest                                       deltas after the latest snapshot
earliest           from-snapshot(-full) at the earliest         every snapshot still kept
snapshot:N         from-snapshot, scan.snapshot-id=N            deltas from snapshot N (inclusive)
snapshot-full:N    from-snapshot-full, scan.snapshot-id=N       full table at N, then deltas after N
timestamp:T        from-timestamp, scan.timestamp-millis=T      deltas of snapshots committed at or after T
-1h, -15m, -30s    from-timestamp, now minus the duration       as timestamp
=================  ===========================================  ===============================

``earliest`` replays each kept snapshot's delta when snapshot 1 is still there (nothing expired, so the deltas
are the whole history); otherwise it reads the earliest snapshot in full and follows from there, because the
deltas alone would miss every row committed before the expired snapshots.
"""
from __future__ import annotations

import datetime as _dt
import re
import time
from dataclasses import dataclass
from typing import Optional

from ..storage.snapshots import SnapshotFiles
from ..errors import SnapshotExpired, UsageError

_DURATION = re.compile(r"^-(\d+(?:\.\d+)?)(ms|s|m|h|d)$")
_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


@dataclass(frozen=True)
class StartPosition:
    kind: str  # latest-full | latest | earliest | snapshot | snapshot-full | timestamp
    snapshot_id: Optional[int] = None
    timestamp_ms: Optional[int] = None

    def __str__(self) -> str:
        if self.kind in ("snapshot", "snapshot-full"):
            return f"{self.kind}:{self.snapshot_id}"
        if self.kind == "timestamp":
            return f"timestamp:{self.timestamp_ms}"
        return self.kind


@dataclass(frozen=True)
class EndPosition:
    """Stop after this snapshot (inclusive), or after the last snapshot committed at or before this time."""

    snapshot_id: Optional[int] = None
    timestamp_ms: Optional[int] = None


@dataclass(frozen=True)
class ResolvedStart:
    """Where reading begins: optionally a full read of ``full_snapshot_id``, then deltas from ``next_snapshot_id``."""

    next_snapshot_id: int
    full_snapshot_id: Optional[int] = None


_YEARS_1_TO_9999_MS = (-62135596800000, 253402300799999)  # what a timestamp can be: datetime's range, as ms


def parse_timestamp(text: str) -> int:
    """ISO-8601 (naive means local time, like Paimon's scan.timestamp) or epoch milliseconds → epoch ms."""
    text = text.strip()
    if re.fullmatch(r"\d{10,}", text):
        return _in_range(int(text), text)
    m = _DURATION.match(text)
    if m:
        return _in_range(int(time.time() * 1000 - float(m.group(1)) * _UNITS_MS[m.group(2)]), text)
    try:
        parsed = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"bad timestamp {text!r}", hint="use ISO-8601 like 2026-11-01T12:00:00, epoch milliseconds, or -15m"
        ) from None
    try:
        if parsed.tzinfo is None:
            parsed = parsed.astimezone()  # local time zone, as Paimon does
        return _in_range(int(parsed.timestamp() * 1000), text)
    except (OverflowError, OSError, ValueError):  # the first or last days of year 1 or 9999 in another zone
        raise UsageError(f"bad timestamp {text!r}: out of range (years 1 to 9999)") from None


def _in_range(ms: int, text: str) -> int:
    low, high = _YEARS_1_TO_9999_MS
    if not low <= ms <= high:
        raise UsageError(f"bad timestamp {text!r}: out of range (years 1 to 9999)")
    return ms


def _snapshot_number(text: str, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"bad {what} {text!r}: snapshot ids are positive integers") from None
    if value < 1:
        raise UsageError(f"bad {what} {text!r}: snapshot ids start at 1")
    return value


def parse_start(text: str) -> StartPosition:
    text = (text or "").strip()
    if text in ("latest-full", "latest", "earliest"):
        return StartPosition(text)
    if _DURATION.match(text):
        return StartPosition("timestamp", timestamp_ms=parse_timestamp(text))
    kind, sep, value = text.partition(":")
    if sep and kind in ("snapshot", "snapshot-full"):
        return StartPosition(kind, snapshot_id=_snapshot_number(value, "--from snapshot"))
    if sep and kind == "timestamp":
        return StartPosition("timestamp", timestamp_ms=parse_timestamp(value))
    raise UsageError(
        f"bad start position {text!r}",
        hint="use latest-full, latest, earliest, snapshot:N, snapshot-full:N, timestamp:T or -1h",
    )


def parse_end(text: str) -> EndPosition:
    kind, sep, value = (text or "").strip().partition(":")
    if sep and kind == "snapshot":
        return EndPosition(snapshot_id=_snapshot_number(value, "--until snapshot"))
    if sep and kind == "timestamp":
        return EndPosition(timestamp_ms=parse_timestamp(value))
    if _DURATION.match(text.strip()):
        return EndPosition(timestamp_ms=parse_timestamp(text))
    raise UsageError(f"bad end position {text!r}", hint="use snapshot:N or timestamp:T")


def resolve_start(position: StartPosition, files: SnapshotFiles) -> Optional[ResolvedStart]:
    """Turn a start position into snapshot ids. None means: the table has no snapshot yet, wait for one.

    Positions on an empty table: everything starts at snapshot 1 (``snapshot:N`` starts at N), so nothing
    committed after we start is missed.
    """
    latest = files.latest()
    earliest = files.earliest_id() if latest is not None else None
    if position.kind in ("snapshot", "snapshot-full"):
        n = position.snapshot_id
        if latest is None:
            return ResolvedStart(next_snapshot_id=n)
        if n > latest.id + 1:
            raise SnapshotExpired(f"snapshot {n} does not exist yet (latest is {latest.id})")
        if earliest is not None and n < earliest:
            raise SnapshotExpired(
                f"snapshot {n} has expired (earliest kept is {earliest})", hint="use --from earliest"
            )
        if position.kind == "snapshot-full":
            if n > latest.id:
                raise SnapshotExpired(f"snapshot {n} does not exist yet (latest is {latest.id})")
            return ResolvedStart(next_snapshot_id=n + 1, full_snapshot_id=n)
        return ResolvedStart(next_snapshot_id=n)
    if latest is None:
        return None
    if position.kind == "latest-full":
        return ResolvedStart(next_snapshot_id=latest.id + 1, full_snapshot_id=latest.id)
    if position.kind == "latest":
        return ResolvedStart(next_snapshot_id=latest.id + 1)
    if position.kind == "earliest":
        if earliest is None or earliest <= 1:
            return ResolvedStart(next_snapshot_id=1)
        return ResolvedStart(next_snapshot_id=earliest + 1, full_snapshot_id=earliest)
    if position.kind == "timestamp":
        # Paimon's from-timestamp (SnapshotManager.earlierThanTimeMills): snapshots committed at or after T.
        before = files.at_or_before(position.timestamp_ms - 1, earliest, latest)
        if before is None:
            # Everything kept is newer than T: read all kept deltas (as Paimon does), or the full earliest
            # snapshot when older ones expired and T may lie among them.
            if earliest is None or earliest <= 1:
                return ResolvedStart(next_snapshot_id=1)
            return ResolvedStart(next_snapshot_id=earliest + 1, full_snapshot_id=earliest)
        return ResolvedStart(next_snapshot_id=before.id + 1)
    raise UsageError(f"unknown start position {position}")

