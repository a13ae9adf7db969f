"""The one bounded, ordered "N in flight" pipeline (sync and async) and the one event-loop runner."""
from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from paimon_tail.concurrency import in_order, in_order_async, run_loop


def test_in_order_keeps_order_and_bounds_what_is_started():
    started, finished = [], []
    with ThreadPoolExecutor(4) as pool:
        def start(i):
            started.append(i)
            assert len(started) - len(finished) <= 3  # in_flight 2: two ahead of the one being finished
            return pool.submit(lambda: (time.sleep(0.02 * (5 - i % 5)), i * i)[1])

        def finish(f):
            finished.append(1)
            return f.result()

        assert list(in_order(range(12), start, finish, 2)) == [i * i for i in range(12)]


def test_in_order_reads_items_only_as_results_are_taken():
    read = []

    def items():
        for i in range(100):
            read.append(i)
            yield i

    it = in_order(items(), lambda i: i, lambda i: i, 3)
    assert next(it) == 0 and len(read) == 4
    it.close()
    assert len(read) == 4


def test_in_order_async_order_errors_and_close():
    async def main():
        running = 0
        peak = 0

        async def work(i):
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0.01 * (4 - i % 4))
            running -= 1
            if i == 7:
                raise ValueError("seven")
            return -i

        got = []
        with pytest.raises(ValueError, match="seven"):
            async for r in in_order_async(range(10), work, 3):
                got.append(r)
        assert got == [0, -1, -2, -3, -4, -5, -6]  # what came before the error, in order
        assert peak <= 5  # bounded: the 3 queued, the one awaited, the one waiting for room

        async def source():
            for i in range(3):
                yield i
            raise OSError("source broke")

        got = []
        with pytest.raises(OSError, match="source broke"):
            async for r in in_order_async(source(), work, 2):
                got.append(r)
        assert got == [0, -1, -2]

        cancelled = []

        async def slow(i):
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                cancelled.append(i)
                raise

        agen = in_order_async(range(10), slow, 2)
        task = asyncio.ensure_future(agen.__anext__())
        await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await agen.aclose()
        await asyncio.sleep(0.01)
        assert cancelled  # what was still running is cancelled, nothing is left behind

    run_loop(main())


def test_run_loop_returns_the_result_on_a_fresh_loop():
    async def main():
        return threading.current_thread().name, type(asyncio.get_running_loop()).__module__

    name, module = run_loop(main())
    assert name == threading.current_thread().name and module.startswith(("uvloop", "asyncio"))
