"""Follower → renderer: the loop behind ``paimon-tail follow``, importable for other programs.

The renderer is flushed after the last batch of every snapshot, before the follower is asked for more, so a
consumer position never runs ahead of what reached the output.
"""
from __future__ import annotations

import asyncio
import sys
from typing import Callable, Optional, TextIO

from .output.renderers import ArrowStreamRenderer, Renderer
from .stream.follower import Follower

# Batches at least this big are rendered in a thread: encoding 64k rows takes tens of milliseconds, which would
# stall the event loop (status line, reader hand-offs, other tasks of a program using the library). Smaller ones
# (a live tail's few rows) are rendered inline, where a thread hop would only add latency.
OFFLOAD_ROWS = 2048


async def tail(follower: Follower, renderer: Renderer, max_rows: Optional[int] = None,
               status: Optional[TextIO] = None, status_interval: float = 1.0,
               notice: Callable[[str], None] = lambda m: print(m, file=sys.stderr, flush=True)) -> int:
    """Write everything ``follower`` yields to ``renderer``; returns the number of rows written."""
    written = 0
    reported_gaps = reported_schemas = 0
    ticker = None
    if status is not None:
        from .output.live_table import status_line  # imports rich: ~80 ms, only when a status line is asked for

        async def tick() -> None:
            while True:
                await asyncio.sleep(status_interval)
                print(status_line(follower.stats), file=status, flush=True)

        ticker = asyncio.create_task(tick())
    start = getattr(renderer, "start", None)  # the live table shows its footer before the first row
    if start is not None:
        start()
    agen = follower.__aiter__()
    offload = getattr(renderer, "thread_safe", False)
    loop = asyncio.get_running_loop()
    executor = None
    try:
        async for item in agen:
            stats = follower.stats
            while reported_gaps < len(stats.gaps):
                first, nxt = stats.gaps[reported_gaps]
                notice(f"paimon-tail: snapshots {first}..{nxt - 1} expired before they were read; "
                       f"skipped to {nxt} (--on-gap skip)")
                reported_gaps += 1
            while reported_schemas < len(stats.schema_changes):
                sid, old, new = stats.schema_changes[reported_schemas]
                notice(f"paimon-tail: schema changed at snapshot {sid} (schema {old} -> {new}); "
                       f"columns now: {', '.join(item.batch.schema.names)}")
                reported_schemas += 1
            batch = item.batch
            if max_rows is not None and written + batch.num_rows >= max_rows:
                renderer.write(batch.slice(0, max_rows - written))
                written = max_rows
                renderer.flush()
                return written
            if offload and batch.num_rows >= OFFLOAD_ROWS:
                if executor is None:
                    from concurrent.futures import ThreadPoolExecutor

                    executor = ThreadPoolExecutor(1, thread_name_prefix="paimon-tail-render")
                await loop.run_in_executor(executor, renderer.write, batch)
            else:
                renderer.write(batch)
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
