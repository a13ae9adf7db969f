"""Channels → executors: which executor serves which buckets, and how that changes when executors come and go.

A key's channel is Paimon's ``ChannelComputer.select(partition, bucket, channels)`` (``keys/routing.py``); the
service has a fixed number of channels (``serve --channels``, default ``max(16, --executors)``) and this module
spreads them over the executors that can serve: serve's own slots (always counted, even while one restarts:
its supervisor brings it back within seconds) and the executors that joined (counted while their Join call
lives). With no executor joined or lost, channel ``c`` belongs to slot ``c % N``, which for a channel count that
``N`` divides is Paimon's ``ChannelComputer`` over the N executors.

``rebalance`` moves as few channels as it can: every executor keeps its channels up to its fair share, and what
moves is taken from each giver at spread-out positions and dealt round-robin, so the channels of a table with few
buckets (consecutive channels) do not pile up on one executor.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Sequence

NONE = -1


@dataclass(frozen=True)
class Assignment:
    version: int
    owners: tuple  # owners[c] = executor index, NONE = unowned

    @property
    def channels(self) -> int:
        return len(self.owners)

    def channels_of(self, index: int) -> List[int]:
        return [c for c, owner in enumerate(self.owners) if owner == index]

    def by_executor(self) -> Dict[int, List[int]]:
        out: Dict[int, List[int]] = {}
        for c, owner in enumerate(self.owners):
            if owner != NONE:
                out.setdefault(owner, []).append(c)
        return out


def initial(channels: int, slots: int) -> Assignment:
    """Channel ``c`` to slot ``c % slots`` (unowned without slots: executors will join)."""
    if channels < 1:
        raise ValueError("at least one channel")
    return Assignment(1, tuple(c % slots if slots else NONE for c in range(channels)))


def rebalance(current: Assignment, executors: Sequence[int]) -> Assignment:
    """The assignment over ``executors`` (indices) that keeps the most of ``current``; the same object when
    nothing changes."""
    live = sorted(set(executors))
    n = current.channels
    if not live:
        owners = (NONE,) * n
        return current if owners == current.owners else Assignment(current.version + 1, owners)
    share = {e: n // len(live) + (1 if i < n % len(live) else 0) for i, e in enumerate(live)}
    held: Dict[int, List[int]] = {e: [] for e in live}
    pool: List[int] = []
    for c, owner in enumerate(current.owners):
        (held[owner] if owner in held else pool).append(c)
    for e in live:  # givers release their surplus at spread-out positions
        surplus = len(held[e]) - share[e]
        if surplus > 0:
            step = len(held[e]) / surplus
            picks = {int(i * step + step / 2) for i in range(surplus)}
            pool += [c for i, c in enumerate(held[e]) if i in picks]
            held[e] = [c for i, c in enumerate(held[e]) if i not in picks]
    pool.sort()
    takers = [e for e in live if len(held[e]) < share[e]]
    while pool:  # round-robin over those below their share
        for e in list(takers):
            if not pool:
                break
            held[e].append(pool.pop(0))
            if len(held[e]) >= share[e]:
                takers.remove(e)
    owners = [NONE] * n
    for e, cs in held.items():
        for c in cs:
            owners[c] = e
    owners_t = tuple(owners)
    return current if owners_t == current.owners else Assignment(current.version + 1, owners_t)


def default_channels(slots: int) -> int:
    return max(16, slots)


__all__ = ["Assignment", "NONE", "default_channels", "initial", "rebalance"]
