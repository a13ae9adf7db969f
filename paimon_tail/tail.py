"""Follower → renderer: the loop behind ``paimon-tail follow``, importable for other programs.

The renderer is flushed after the last batch of every snapshot, before the follower is asked for more, so a
consumer position never runs ahead of what reached the output.
"""
from __future__ import annotations

import asyncio
import dataclasses
import sys
from typing import Callable, Dict, List, Optional, TextIO, Union

from .output.renderers import ArrowStreamRenderer, Renderer
from .stream.follower import FollowBatch, Follower
from .stream.multi import MultiFollower

# Batches at least this big are rendered in a thread: encoding 64k rows takes tens of milliseconds, which would
# stall the event loop (status line, reader hand-offs, other tasks of a program using the library). Smaller ones
# (a live tail's few rows) are rendered inline, where a thread hop would only add latency.
OFFLOAD_ROWS = 2048


def _notices(follower: Union[Follower, MultiFollower], item: FollowBatch, reported: Dict[str, List[int]],
             notice: Callable[[str], None]) -> None:
    """Gaps skipped and schema changes of the item's table, once each (prefixed with the table when several)."""
    if isinstance(follower, MultiFollower):
        name = item.table.full_name
        stats, prefix = follower.stats.tables[name], f"{name}: "
    else:
        name, stats, prefix = "", follower.stats, ""
    done = reported.setdefault(name, [0, 0])
    while done[0] < len(stats.gaps):
        first, nxt = stats.gaps[done[0]]
        notice(f"paimon-tail: {prefix}snapshots {first}..{nxt - 1} expired before they were read; "
               f"skipped to {nxt} (--on-gap skip)")
        done[0] += 1
    while done[1] < len(stats.schema_changes):
        sid, old, new = stats.schema_changes[done[1]]
        notice(f"paimon-tail: {prefix}schema changed at snapshot {sid} (schema {old} -> {new}); "
               f"columns now: {', '.join(item.batch.schema.names)}")
        done[1] += 1


async def tail(follower: Union[Follower, MultiFollower], renderer: Renderer, max_rows: Optional[int] = None,
               status: Optional[TextIO] = None, status_interval: float = 1.0,
               notice: Callable[[str], None] = lambda m: print(m, file=sys.stderr, flush=True),
               last: Optional[int] = None) -> int:
    """Write everything ``follower`` (one table or several) yields to ``renderer``; returns the rows written.

    ``max_rows``: stop after that many rows (``-c``); ``last``: of the follower's backlog, only its last rows
    (``-n``, ``stream/last.py``)."""
    written = 0
    reported: Dict[str, List[int]] = {}
    to_stderr = notice

    def notice(message: str) -> None:  # above a view on the terminal (its footer kept whole), else on stderr
        if not renderer.notice(message):
            to_stderr(message)

    # said as the follow reaches them: an overwrite skipped comes after the rows of the snapshots before it
    follower.on_notice = lambda message: notice(f"paimon-tail: {message}")
    ticker = None
    if status is not None:
        from .output.status import StatusLine

        line = StatusLine(follower.stats)

        async def tick() -> None:
            while True:
                await asyncio.sleep(status_interval)
                print(line(), file=status, flush=True)

        ticker = asyncio.create_task(tick())
    start = getattr(renderer, "start", None)  # the live table shows its footer before the first row
    if start is not None:
        start()
    if last is not None:
        from .stream.last import LastRows

        agen = LastRows(follower, last).__aiter__()
    else:
        agen = follower.__aiter__()
    offload = getattr(renderer, "thread_safe", False)
    loop = asyncio.get_running_loop()
    executor = None
    try:
        async for item in agen:
            _notices(follower, item, reported, notice)
            batch = item.batch
            if max_rows is not None and written + batch.num_rows >= max_rows:
                whole = written + batch.num_rows == max_rows  # else rows of the snapshot are left unwritten
                renderer.write_item(dataclasses.replace(item, batch=batch.slice(0, max_rows - written),
                                                        last_in_snapshot=item.last_in_snapshot and whole))
                written = max_rows
                renderer.flush()
                return written
            if offload and batch.num_rows >= OFFLOAD_ROWS:
                if executor is None:
                    from concurrent.futures import ThreadPoolExecutor

                    executor = ThreadPoolExecutor(1, thread_name_prefix="paimon-tail-render")
                await loop.run_in_executor(executor, renderer.write_item, item)
            else:
                renderer.write_item(item)
            written += batch.num_rows
            if item.last_in_snapshot:
                renderer.flush()
        return written
    finally:
        await agen.aclose()
        if executor is not None:
            executor.shutdown(wait=True)
        if ticker is not None:
            ticker.cancel()
        if isinstance(renderer, ArrowStreamRenderer):
            renderer.begin(follower.output_schema())  # an empty result is still a valid (empty) stream
        renderer.close()
