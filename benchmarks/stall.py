"""Event-loop responsiveness: the longest stall of the loop while a follower reads one large snapshot.

In-process, through the library API, on uvloop as the CLI runs: a ticker coroutine sleeps 1 ms in a loop and
records how late it wakes. The snapshot is the catch-up data set read as one full snapshot (``latest-full``).
Scenarios: the follower alone (a consumer counting rows), ``tail()`` rendering JSON lines to /dev/null (what
``follow`` runs), and the baseline: pypaimon's ``AsyncStreamingTableScan.stream()`` with ``TableRead.to_arrow``
as its docstring shows.
"""
from __future__ import annotations

import asyncio
import time

from .common import Row, Size, catchup_dataset, percentile


async def _with_ticker(work) -> dict:
    lates = []
    stop = False

    async def ticker() -> None:
        while not stop:
            t = time.perf_counter()
            await asyncio.sleep(0.001)
            lates.append(time.perf_counter() - t - 0.001)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.02)
    t0 = time.perf_counter()
    rows = await work()
    elapsed = time.perf_counter() - t0
    stop = True
    await task
    lates_ms = [x * 1000 for x in lates]
    return {"rows": rows, "seconds": elapsed, "max_stall_ms": max(lates_ms), "p99_stall_ms": percentile(lates_ms, 99),
            "ticks": len(lates_ms)}


def _run(coro_fn) -> dict:
    try:
        import uvloop

        return uvloop.run(_with_ticker(coro_fn))
    except ImportError:
        return asyncio.run(_with_ticker(coro_fn))


def run(size: Size, log) -> tuple:
    from pypaimon import CatalogFactory

    from paimon_tail.output.renderers import JsonLinesRenderer
    from paimon_tail.stream import Follower
    from paimon_tail.tail import tail

    ds = catchup_dataset(size, log)
    cat = CatalogFactory.create({"warehouse": ds.warehouse})

    async def follower_only():
        n = 0
        async for item in Follower(cat.get_table(ds.table), start="latest-full", exit_at_end=True):
            n += item.batch.num_rows
        return n

    async def tail_jsonl():
        with open("/dev/null", "wb") as devnull:
            return await tail(Follower(cat.get_table(ds.table), start="latest-full", exit_at_end=True),
                              JsonLinesRenderer(devnull))

    async def pypaimon_async():
        builder = cat.get_table(ds.table).new_stream_read_builder()
        scan, read = builder.new_streaming_scan(), builder.new_read()
        agen = scan.stream()
        plan = await agen.__anext__()  # the initial full plan: the whole table
        n = read.to_arrow(plan.splits()).num_rows
        await agen.aclose()
        return n

    results = {}
    for name, fn in (("follower", follower_only), ("tail jsonl", tail_jsonl), ("pypaimon async", pypaimon_async)):
        r = _run(fn)
        if r["rows"] != ds.rows:
            raise RuntimeError(f"{name}: {r['rows']} rows of {ds.rows}")
        results[name] = r
        log(f"  {name}: max stall {r['max_stall_ms']:.1f} ms  p99 {r['p99_stall_ms']:.2f} ms  "
            f"({r['rows']:,} rows in {r['seconds']:.2f}s)")
    base = results["pypaimon async"]["max_stall_ms"]
    rows = [
        Row("loop stall", "max, follower", results["follower"]["max_stall_ms"], base, "pypaimon stream()+to_arrow",
            "ms", False, "<= 20 ms", results["follower"]["max_stall_ms"] <= 20,
            note=f"one snapshot of {ds.rows:,} rows; ticker sleeps 1 ms"),
        Row("loop stall", "max, tail jsonl", results["tail jsonl"]["max_stall_ms"], base, "pypaimon stream()+to_arrow",
            "ms", False, "<= 20 ms", results["tail jsonl"]["max_stall_ms"] <= 20),
    ]
    return rows, results
