"""``FollowOptions``: what a follow is asked to do, checked before any table is opened.

Its own module, light on imports (no pyarrow, no pypaimon), so that a command can parse and check its options, and
answer ``follow -e`` with nothing to read (``quick.py``), without loading the read path.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional, Sequence, Union

from ..errors import UsageError
from .positions import EndPosition, StartPosition, parse_end, parse_start

DEFAULT_SCRIPT_STORAGE_TIMEOUT = 60.0


@dataclass
class FollowOptions:
    start: Union[StartPosition, str] = "latest-full"
    until: Union[EndPosition, str, None] = None
    exit_at_end: bool = False
    select: Optional[Sequence[str]] = None
    where: Union[str, Sequence[str], None] = None  # several: all must hold (AND)
    row_kind: bool = False
    meta: bool = False
    consumer_id: Optional[str] = None
    buckets: Optional[Sequence[int]] = None
    shard: Optional[tuple] = None  # (index, count)
    prefetch: bool = True
    catch_up: str = "replay"  # replay: snapshot by snapshot | diff: one plan for the backlog (folds history)
    on_gap: str = "error"  # error | skip
    read_workers: int = 2
    poll_interval: Optional[float] = None  # idle polling cadence (s); None: 0.25 on object stores, 0.5 locally
    storage_timeout: Optional[float] = None  # None: 60 s with exit_at_end, else wait out any outage; 0: forever
    batch_size: Optional[int] = 65536
    # Paimon's streaming-read-overwrite: OVERWRITE snapshots read as -D/+I (True) or skipped with a notice (False);
    # None: the table's own option (default false, as in Paimon)
    read_overwrite: Optional[bool] = None

    def normalized(self) -> "FollowOptions":
        start = self.start if isinstance(self.start, StartPosition) else parse_start(self.start)
        until = self.until
        if isinstance(until, str):
            until = parse_end(until)
        if self.catch_up not in ("replay", "diff"):
            raise UsageError(f"bad catch-up mode {self.catch_up!r}: use replay or diff")
        if self.on_gap not in ("error", "skip"):
            raise UsageError(f"bad --on-gap {self.on_gap!r}: use error or skip")
        if self.poll_interval is not None and self.poll_interval <= 0:
            raise UsageError(f"bad poll interval {self.poll_interval}: use seconds > 0")
        if self.storage_timeout is not None and self.storage_timeout < 0:
            raise UsageError(f"bad storage timeout {self.storage_timeout}: use seconds >= 0 (0: wait forever)")
        if self.shard is not None:
            index, count = self.shard
            if count < 1 or not 0 <= index < count:
                raise UsageError(f"bad shard {index}/{count}: use I/N with 0 <= I < N")
        _check_range(start, until)
        return dataclasses.replace(self, start=start, until=until)

    def effective_storage_timeout(self) -> Optional[float]:
        """Scripts (``exit_at_end``) give up on an unreachable store after a minute; live follows wait."""
        if self.storage_timeout is None:
            return DEFAULT_SCRIPT_STORAGE_TIMEOUT if self.exit_at_end else None
        return self.storage_timeout or None


def output_schema(fields: Sequence, options: FollowOptions):
    """The Arrow schema a follow writes: ``fields`` (pypaimon ``DataField``s, projected), ``_row_kind`` first with
    row kinds, the meta columns last with ``meta``."""
    import pyarrow as pa
    from pypaimon.schema.data_types import PyarrowFieldParser

    columns = list(PyarrowFieldParser.from_paimon_schema(list(fields)))
    if options.row_kind:
        columns.insert(0, pa.field("_row_kind", pa.string()))
    if options.meta:
        columns += meta_fields()
    return pa.schema(columns)


def meta_fields() -> list:
    """``--meta``: the snapshot, its commit time, the bucket and the partition of each row."""
    import pyarrow as pa

    return [
        pa.field("_snapshot_id", pa.int64()),
        pa.field("_commit_time", pa.timestamp("ms", tz="UTC")),
        pa.field("_bucket", pa.int32()),
        pa.field("_partition", pa.string()),
    ]


def _check_range(start: StartPosition, until: Optional[EndPosition]) -> None:
    """An end before the start would print nothing and exit 0: refuse it when the positions say so alone."""
    if until is None:
        return
    if until.snapshot_id is not None and start.snapshot_id is not None and until.snapshot_id < start.snapshot_id:
        raise UsageError(f"--until snapshot:{until.snapshot_id} is before --from {start}: nothing to read")
    if until.timestamp_ms is not None and start.timestamp_ms is not None and until.timestamp_ms < start.timestamp_ms:
        raise UsageError(f"--until {_iso(until.timestamp_ms)} is before --from {_iso(start.timestamp_ms)}: "
                         "nothing to read")


def _iso(ms: int) -> str:
    import datetime as _dt

    return _dt.datetime.fromtimestamp(ms / 1000).isoformat(timespec="milliseconds")


__all__ = ["DEFAULT_SCRIPT_STORAGE_TIMEOUT", "FollowOptions", "meta_fields", "output_schema"]
