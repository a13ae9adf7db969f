"""The ``--from`` / ``--until`` grammar and its meaning, which is Paimon's ``scan.mode`` meaning.

=======================  ===============================================  ====================================
``--from``               Paimon scan.mode                                 first output
=======================  ===============================================  ====================================
latest-full (or full)    latest-full (Paimon's streaming default)         full table at latest, then deltas
latest                   latest                                           deltas after the latest snapshot
earliest                 from-snapshot(-full) at the earliest             every snapshot still kept
snapshot:N               from-snapshot, scan.snapshot-id=N                deltas from snapshot N (inclusive)
snapshot-full:N          from-snapshot-full, scan.snapshot-id=N           full table at N, then deltas after N
timestamp:T              from-timestamp, scan.timestamp-millis=T          deltas of snapshots committed at or
                                                                          after T
-1h, -15m, -30s          from-timestamp, now minus the duration           as timestamp
compacted-full           compacted-full                                   full table at the latest COMPACT
                                                                          snapshot, then deltas after it
file-creation-time:T     from-file-creation-time,                         the latest snapshot's data files
                         scan.file-creation-time-millis=T                 created at or after T, then deltas
creation-timestamp:T     from-creation-timestamp,                         as timestamp:T while a snapshot after
                         scan.creation-time-millis=T                      T is kept, else file-creation-time:T
tag:NAME                 scan.tag-name=NAME (Paimon reads a tag in        full table at the tag, then deltas
                         batch only), then from-snapshot after it         of the snapshots after it
=======================  ===============================================  ====================================

``--until`` takes ``snapshot:N``, ``timestamp:T`` (or a duration) and ``tag:NAME`` (the tag's snapshot).

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


#: the kinds whose value is a time (``kind:T``), and those whose value is a name
TIMED = ("timestamp", "file-creation-time", "creation-timestamp")
FORMS = ("latest-full, latest, earliest, snapshot:N, snapshot-full:N, timestamp:T, -1h, compacted-full, "
         "file-creation-time:T, creation-timestamp:T or tag:NAME")


@dataclass(frozen=True)
class StartPosition:
    # latest-full | latest | earliest | snapshot | snapshot-full | timestamp | compacted-full | file-creation-time
    # | creation-timestamp | tag
    kind: str
    snapshot_id: Optional[int] = None
    timestamp_ms: Optional[int] = None
    tag: Optional[str] = None

    def __str__(self) -> str:
        if self.kind in ("snapshot", "snapshot-full"):
            return f"{self.kind}:{self.snapshot_id}"
        if self.kind in TIMED:
            return f"{self.kind}:{self.timestamp_ms}"
        if self.kind == "tag":
            return f"tag:{self.tag}"
        return self.kind


@dataclass(frozen=True)
class EndPosition:
    """Stop after this snapshot (inclusive), after the last snapshot committed at or before this time, or after
    the snapshot of this tag."""

    snapshot_id: Optional[int] = None
    timestamp_ms: Optional[int] = None
    tag: Optional[str] = None

    def __str__(self) -> str:
        if self.tag is not None:
            return f"tag:{self.tag}"
        if self.snapshot_id is not None:
            return f"snapshot:{self.snapshot_id}"
        return f"timestamp:{self.timestamp_ms}"


@dataclass(frozen=True)
class ResolvedStart:
    """Where reading begins: optionally a full read of ``full_snapshot_id``, then deltas from ``next_snapshot_id``.

    ``full_snapshot`` is the snapshot to read in full when it is not (or may no longer be) a snapshot file: a
    tag's. ``created_after_ms`` keeps, in the full read, only the data files created at or after that time
    (``file-creation-time``)."""

    next_snapshot_id: int
    full_snapshot_id: Optional[int] = None
    full_snapshot: Optional[object] = None
    created_after_ms: Optional[int] = None


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


def _tag_name(text: str, what: str) -> str:
    """A tag name as Paimon accepts it: not blank, no path separator, not a number (Paimon refuses numeric tag
    names: they would read as snapshot ids)."""
    name = text.strip()
    if not name or "/" in name or name.isdigit():
        raise UsageError(f"bad {what} {text!r}: a tag name is not blank, has no '/' and is not a number")
    return name


def parse_start(text: str) -> StartPosition:
    text = (text or "").strip()
    if text == "full":  # Paimon's deprecated name of latest-full
        return StartPosition("latest-full")
    if text in ("latest-full", "latest", "earliest", "compacted-full"):
        return StartPosition(text)
    if _DURATION.match(text):
        return StartPosition("timestamp", timestamp_ms=parse_timestamp(text))
    kind, sep, value = text.partition(":")
    if sep and kind in ("snapshot", "snapshot-full"):
        return StartPosition(kind, snapshot_id=_snapshot_number(value, "--from snapshot"))
    if sep and kind in TIMED:
        return StartPosition(kind, timestamp_ms=parse_timestamp(value))
    if sep and kind == "tag":
        return StartPosition("tag", tag=_tag_name(value, "--from tag"))
    raise UsageError(f"bad start position {text!r}", hint=f"use {FORMS}")


def parse_end(text: str) -> EndPosition:
    kind, sep, value = (text or "").strip().partition(":")
    if sep and kind == "snapshot":
        return EndPosition(snapshot_id=_snapshot_number(value, "--until snapshot"))
    if sep and kind == "timestamp":
        return EndPosition(timestamp_ms=parse_timestamp(value))
    if sep and kind == "tag":
        return EndPosition(tag=_tag_name(value, "--until tag"))
    if _DURATION.match(text.strip()):
        return EndPosition(timestamp_ms=parse_timestamp(text))
    raise UsageError(f"bad end position {text!r}", hint="use snapshot:N, timestamp:T or tag:NAME")


def resolve_start(position: StartPosition, files: SnapshotFiles,
                  full_compaction_commits: Optional[int] = None) -> Optional[ResolvedStart]:
    """Turn a start position into snapshot ids. None means: the table has no snapshot yet, wait for one.

    Positions on an empty table: everything starts at snapshot 1 (``snapshot:N`` starts at N), so nothing
    committed after we start is missed. ``full_compaction_commits``: the table's ``full-compaction.delta-commits``
    when its changelog producer is ``full-compaction`` (``compacted-full`` then looks for a full compaction, as
    Paimon's ``FullCompactedStartingScanner``).
    """
    if position.kind == "tag":
        tag = files.tag(position.tag)
        if tag is None:
            raise missing_tag(position.tag, files)
        return ResolvedStart(next_snapshot_id=tag.id + 1, full_snapshot_id=tag.id, full_snapshot=tag)
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
    if position.kind == "compacted-full":
        # Paimon's CompactedStartingScanner / FullCompactedStartingScanner: the latest COMPACT snapshot (a full
        # compaction's, with the full-compaction changelog producer), else the latest snapshot
        def compacted(snapshot) -> bool:
            if snapshot.commit_kind != "COMPACT":
                return False
            if full_compaction_commits is None:
                return True
            ident = int(snapshot.commit_identifier)
            return ident == _LONG_MAX or ident % full_compaction_commits == 0

        found = files.pick_latest(compacted, earliest or 1, latest)
        at = found if found is not None else latest
        return ResolvedStart(next_snapshot_id=at.id + 1, full_snapshot_id=at.id)
    if position.kind == "file-creation-time":
        # Paimon's FileCreationTimeStartingScanner: the latest snapshot's files created at or after T
        return ResolvedStart(next_snapshot_id=latest.id + 1, full_snapshot_id=latest.id,
                             created_after_ms=position.timestamp_ms)
    if position.kind in ("timestamp", "creation-timestamp"):
        # Paimon's from-timestamp (SnapshotManager.earlierThanTimeMills): snapshots committed at or after T.
        before = files.at_or_before(position.timestamp_ms - 1, earliest, latest)
        if before is None:
            # Everything kept is newer than T: read all kept deltas (as Paimon does), or the full earliest
            # snapshot when older ones expired and T may lie among them.
            if earliest is None or earliest <= 1:
                return ResolvedStart(next_snapshot_id=1)
            return ResolvedStart(next_snapshot_id=earliest + 1, full_snapshot_id=earliest)
        if position.kind == "creation-timestamp" and before.id == latest.id:
            # Paimon's from-creation-timestamp: no snapshot after T (yet): the files created at or after T
            return ResolvedStart(next_snapshot_id=latest.id + 1, full_snapshot_id=latest.id,
                                 created_after_ms=position.timestamp_ms)
        return ResolvedStart(next_snapshot_id=before.id + 1)
    raise UsageError(f"unknown start position {position}")


def resolve_end(position: Optional[EndPosition], files: SnapshotFiles) -> Optional[EndPosition]:
    """``--until tag:NAME`` as the snapshot of the tag; other ends as they are."""
    if position is None or position.tag is None:
        return position
    tag = files.tag(position.tag)
    if tag is None:
        raise missing_tag(position.tag, files)
    return EndPosition(snapshot_id=tag.id, tag=position.tag)


def missing_tag(name: str, files: SnapshotFiles) -> SnapshotExpired:
    """The error for a tag that is not there, naming the tags that are."""
    names = files.tag_names()
    hint = f"tags: {', '.join(names[:20])}{' ...' if len(names) > 20 else ''}" if names else "the table has no tag"
    return SnapshotExpired(f"tag {name} does not exist{_of_branch(files)}", hint=hint)


def _of_branch(files: SnapshotFiles) -> str:
    branch = getattr(files.manager, "branch", "main") or "main"
    return "" if branch == "main" else f" in branch {branch}"


_LONG_MAX = 2 ** 63 - 1
