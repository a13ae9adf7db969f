"""Splits → Arrow record batches, read in threads so the event loop never blocks on I/O or decoding.

Up to ``workers`` splits are read at once; their batches come out in split order through small bounded queues,
so memory holds at most ``workers × queue_size`` batches whatever the backlog (backpressure all the way down to
the file reads). Closing the iterator early stops the threads.
"""
from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import AsyncIterator, Sequence, Tuple

import pyarrow as pa

_DONE = object()


class _Stopped(Exception):
    pass


class SplitReader:
    """Reads splits with one ``TableRead``; one instance serves a whole follow session."""

    def __init__(self, table_read, workers: int = 2, queue_size: int = 4) -> None:
        self.table_read = table_read
        self.workers = max(1, workers)
        self.queue_size = max(1, queue_size)
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="paimon-tail-read")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def read_split_batches(self, split):
        """Blocking iterator of one split's non-empty batches (used directly by the Spark source and service)."""
        reader = self.table_read.to_arrow_batch_reader([split])
        try:
            for batch in reader:
                if batch.num_rows:
                    yield batch
        finally:
            close = getattr(reader, "close", None)
            if close is not None:
                close()

    async def read(self, splits: Sequence) -> AsyncIterator[Tuple[object, pa.RecordBatch]]:
        """Yield ``(split, batch)`` in split order."""
        if not splits:
            return
        loop = asyncio.get_running_loop()
        stop = threading.Event()
        queues = [asyncio.Queue(maxsize=self.queue_size) for _ in splits]
        futures = []

        def put(q: asyncio.Queue, item) -> None:
            fut = asyncio.run_coroutine_threadsafe(q.put(item), loop)
            while True:
                if stop.is_set():
                    fut.cancel()
                    raise _Stopped()
                try:
                    fut.result(timeout=0.2)
                    return
                except TimeoutError:
                    continue

        def produce(index: int) -> None:
            q = queues[index]
            try:
                for batch in self.read_split_batches(splits[index]):
                    if stop.is_set():
                        return
                    put(q, batch)
                put(q, _DONE)
            except _Stopped:
                return
            except BaseException as e:  # delivered to the consumer, raised there
                if not stop.is_set():
                    try:
                        put(q, e)
                    except _Stopped:
                        pass

        try:
            for i, split in enumerate(splits):
                while len(futures) < min(len(splits), i + self.workers):
                    futures.append(self._pool.submit(produce, len(futures)))
                q = queues[i]
                while True:
                    item = await q.get()
                    if item is _DONE:
                        break
                    if isinstance(item, BaseException):
                        raise item
                    yield split, item
        finally:
            stop.set()
            for q in queues:  # unblock producers waiting on a full queue
                while not q.empty():
                    q.get_nowait()
