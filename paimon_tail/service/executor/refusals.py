"""Why an executor does not answer a call, or some of its keys: a ``Refused`` call (its ``Why`` is one gRPC status,
``servicer.STATUS``) or, per bucket or channel, a ``Problem`` named in the answer (``FailedKeys``; a version 1
client gets the call refused instead). Read from one call's ``Reading``; no gRPC here."""
from __future__ import annotations

import enum
from typing import Optional

from ..keys.routing import partition_path
from ..protocol.changes import BucketKey
from .views import Reading


class Why(enum.Enum):
    """Why a call (or a bucket's keys) cannot be answered; each is one gRPC status (``servicer.STATUS``)."""

    INVALID = "invalid"  # the request makes no sense (INVALID_ARGUMENT)
    NOT_FOUND = "not found"  # the table is not served here (NOT_FOUND)
    UNAVAILABLE = "unavailable"  # starting, or still loading (UNAVAILABLE)
    MOVED = "moved"  # the bucket belongs to another executor (FAILED_PRECONDITION)
    DATA_LOSS = "data loss"  # the bucket's files cannot be read (DATA_LOSS)
    NOT_YET = "not yet"  # the snapshot asked for did not come within the caller's deadline (DEADLINE_EXCEEDED)


class Refused(Exception):
    """The whole call is refused (version 1 clients, and requests that make no sense). ``counted``: in the
    executor's ``requests_refused``."""

    def __init__(self, why: Why, message: str, counted: bool = True) -> None:
        super().__init__(message)
        self.why = why
        self.counted = counted


class Problem:
    __slots__ = ("reason", "retry", "code")

    def __init__(self, reason: str, retry: bool, code: Why) -> None:
        self.reason, self.retry, self.code = reason, retry, code


def bucket_problem(r: Reading, key: BucketKey) -> Optional[Problem]:
    """Why this executor cannot answer for a (partition, bucket) now, or None."""
    error = r.view.broken.get(key)
    if error is not None:
        return Problem(f"{bucket_name(r, key)} of {r.name} cannot be served: {error}", False, Why.DATA_LOSS)
    channel = r.keys.routing.channel_of(key[0], key[1], r.channels)
    return channel_problem(r, channel, f"partition {key[0]} bucket {key[1]} of {r.name}")


def channel_problem(r: Reading, channel: int, where: str = "") -> Optional[Problem]:
    """Why this executor does not answer for a channel now (it loads it, or another executor has it), or None;
    ``where``: what was asked for, for the reason (default: the channel)."""
    if channel in r.view.served:
        return None
    where = where or f"channel {channel} of {r.name}"
    if channel in r.owned:
        return Problem(f"executor {r.index} is still loading {where}", True, Why.UNAVAILABLE)
    owner = r.owners[channel] if channel < len(r.owners) else -1
    return Problem(f"{where} belongs to executor {owner}, not {r.index}", True, Why.MOVED)


def broken_problem(r: Reading, partition: tuple) -> Optional[Problem]:
    """On a slotted table, a key not found may be in a bucket of its partition (of any, on a cross-partition
    table) that cannot be served: why, or None."""
    broken = r.view.broken_in(partition, r.keys.cross_partition)
    if broken is None:
        return None
    key, error = broken
    return Problem(f"{bucket_name(r, key)} of {r.name} cannot be served: {error}", False, Why.DATA_LOSS)


def bucket_name(r: Reading, key: BucketKey) -> str:
    """``partition dt=2026-11-01 bucket 3`` (``bucket 3`` in an unpartitioned table), for reasons."""
    pkeys = r.keys.routing.partition_keys
    return f"partition {partition_path(pkeys, key[0])} bucket {key[1]}" if pkeys else f"bucket {key[1]}"


__all__ = ["Problem", "Refused", "Why", "broken_problem", "bucket_name", "bucket_problem", "channel_problem"]
