"""``follow -n N``: the last N rows, then the follow, as ``tail -n N -f`` prints a file's last lines and then what
is appended.

The rows are those of the follow's backlog: what it reads up to the snapshot that was the latest when it started
(each table's, when several are followed), or, for a follow with an end (``-e``, ``--until``), everything it
reads (``tail -n N`` of a growing file: the last N lines when it reads them). ``LastRows`` keeps the newest N
of them (in Arrow, the rest dropped as they come) and hands them out once the follow has caught up (or ended),
then everything after. Without ``--from``, the
follow starts where the newest commits hold N rows (``start_for_last``: their snapshots' delta record counts)
rather than reading the whole table to keep 20 rows of it.
"""
from __future__ import annotations

import asyncio
import collections
import dataclasses
from typing import AsyncIterator, Dict, Sequence

from .follower import FollowBatch, Follower

WALK_BATCH = 32  # snapshot files read at once while walking back
MAX_WALK = 100_000  # snapshots walked back at most (a table of empty commits): the follow starts there


def start_for(table, n: int) -> tuple:
    """(the ``--from`` position whose deltas up to the latest snapshot hold at least ``n`` rows, its commit time in
    epoch ms or None): ``snapshot:S``, ``earliest`` when the kept snapshots hold fewer, ``latest`` for ``n`` = 0,
    ``latest-full`` for a table without snapshots (all its rows are then new). Counts the delta records of APPEND
    snapshots only (the ones a follow reads rows from), so a filter or bucket selection may leave fewer."""
    manager = table.snapshot_manager()
    latest = manager.get_latest_snapshot()
    if latest is None:
        return "latest-full", None
    if n == 0:
        return "latest", latest.time_millis
    earliest = manager.try_get_earliest_snapshot()
    low = max(earliest.id if earliest is not None else 1, latest.id - MAX_WALK)
    rows, sid = 0, latest.id
    found = {latest.id: latest}
    while sid >= low:
        if sid not in found:
            found.update(manager.get_snapshots_batch(list(range(sid, max(low, sid - WALK_BATCH + 1) - 1, -1))))
        snap = found.get(sid)
        if snap is None:  # expired while we walked: start from what is kept
            break
        if str(snap.commit_kind) == "APPEND":
            rows += snap.delta_record_count or 0
        if rows >= n:
            return f"snapshot:{sid}", snap.time_millis
        sid -= 1
    if sid >= low or low == (earliest.id if earliest is not None else 1):
        return "earliest", None  # the kept snapshots hold fewer (or expired while we walked): all of them
    return f"snapshot:{low}", found[low].time_millis if low in found else None


def start_for_tables(tables: Sequence, n: int) -> str:
    """``start_for`` over several tables (a multi-table follow has one ``--from``): the earliest of their start
    times, so that every table's newest ``n`` rows are read."""
    starts = [start_for(table, n) for table in tables]
    if len(starts) == 1:
        return starts[0][0]
    if any(position in ("earliest", "latest-full") for position, _ in starts):
        return "earliest"
    times = [t for _, t in starts if t is not None]
    return f"timestamp:{min(times)}" if times else "latest"


class LastRows:
    """The items of ``follower`` (a ``Follower`` or a ``MultiFollower``): the last ``n`` rows of its backlog once it
    has caught up, then everything. ``poll``: how often, while waiting for the next item, it looks whether the
    follower has read its backlog (an idle table sends no item to say so)."""

    def __init__(self, follower, n: int, poll: float = 0.1) -> None:
        self.follower = follower
        self.n = n
        self.poll = poll

    def _followers(self) -> Dict[str, Follower]:
        many = getattr(self.follower, "followers", None)
        return dict(many) if many is not None else {self.follower.ref.full_name: self.follower}

    def _ends(self) -> Dict[str, int]:
        """Each table's latest snapshot now: the end of its backlog (0: none yet)."""
        ends = {}
        for name, follower in self._followers().items():
            latest = follower.table.snapshot_manager().get_latest_snapshot()
            ends[name] = latest.id if latest is not None else 0
        return ends

    def _read_backlog(self, ends: Dict[str, int]) -> bool:
        """Every table has handed out its backlog's last snapshot (an empty one, or one without rows, counts)."""
        followers = self._followers()
        return all((followers[name].stats.snapshot_id or 0) >= end for name, end in ends.items() if name in followers)

    async def __aiter__(self) -> AsyncIterator[FollowBatch]:
        options = self.follower.options
        if options.exit_at_end or options.until is not None:  # the whole follow is the backlog
            ends = {name: 1 << 62 for name in self._followers()}
        else:
            ends = await asyncio.to_thread(self._ends)
        kept: collections.deque = collections.deque()
        rows = 0
        live = self.n is None
        agen = self.follower.__aiter__()
        step = None
        try:
            while True:
                if live:
                    try:
                        yield await agen.__anext__()
                    except StopAsyncIteration:
                        return
                    continue
                step = asyncio.ensure_future(agen.__anext__())
                while not step.done():
                    await asyncio.wait({step}, timeout=self.poll)
                    if not step.done() and not live and self._read_backlog(ends):
                        for item in _newest(kept, rows, self.n):
                            yield item
                        kept.clear()
                        live = True
                try:
                    item = step.result()
                except StopAsyncIteration:  # the follow ended (-e, --until) within its backlog
                    for last in _newest(kept, rows, self.n):
                        yield last
                    return
                if live:
                    yield item
                    continue
                name = item.table.full_name if item.table is not None else ""
                if item.snapshot_id > ends.get(name, 0):  # past the backlog: the newest rows of it, then this
                    for last in _newest(kept, rows, self.n):
                        yield last
                    kept.clear()
                    live = True
                    yield item
                    continue
                kept.append(item)
                rows += item.batch.num_rows
                while kept and rows - kept[0].batch.num_rows >= self.n:  # the oldest is no longer needed
                    rows -= kept.popleft().batch.num_rows
        finally:
            if step is not None and not step.done():
                step.cancel()
                await asyncio.gather(step, return_exceptions=True)
            await agen.aclose()


def _newest(kept, rows: int, n: int):
    """The items holding the newest ``n`` of ``rows`` rows, the first cut to what is needed of it."""
    if n == 0 or not kept:
        return []
    items = list(kept)
    extra = rows - n
    if extra > 0:
        first = items[0]
        items[0] = dataclasses.replace(first, batch=first.batch.slice(extra))
    return [item for item in items if item.batch.num_rows]


__all__ = ["LastRows", "start_for", "start_for_tables"]
