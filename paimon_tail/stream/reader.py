"""Splits → Arrow record batches, read in threads so the event loop never blocks on I/O or decoding.

``open(splits, table_read)`` starts reading at once and returns a ``SplitStream``: up to ``workers`` splits are read
at a time; their batches come out in split order through small bounded queues, so memory holds at most
``workers × queue_size`` batches per open stream whatever the backlog (backpressure all the way down to the file
reads). The follower opens the next snapshot's stream while the current one is still being written (read-ahead),
so decoding snapshot N+1 overlaps writing snapshot N. Closing a stream early stops its threads.
"""
from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import AsyncIterator, Iterator, List, Optional, Sequence, Tuple

import pyarrow as pa

from ..concurrency import drain
from ..storage.diagnosis import diagnose
from ..storage.files import broken_file
from ..storage.retry import StorageRetry

_DONE = object()


class _Stopped(Exception):
    pass


def split_batches(table_read, splits: Sequence, rows: Optional[int] = None) -> Iterator[pa.RecordBatch]:
    """Blocking iterator of the non-empty batches of ``splits`` (also used by the service's bucket mirror); with
    ``rows``, smaller batches are put together up to that many rows (pypaimon's Rust reader hands out 1,024 rows at a
    time whatever ``read.batch-size`` says: 20,000 batches for a 20M-row table, each a hand-off and a write)."""
    reader = None
    try:
        reader = table_read.to_arrow_batch_reader(list(splits))
        batches = (batch for batch in reader if batch.num_rows)
        yield from (batches if not rows else coalesced(batches, rows))
    except Exception as e:
        if diagnose(e) is None:  # not storage (retry.py waits that out): a file of the splits may be broken
            named = broken_file(table_read.table.file_io, splits, e)
            if named is not None and named is not e:
                raise named from e
        raise
    finally:
        close = getattr(reader, "close", None)
        if close is not None:
            close()


def coalesced(batches: Iterator[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    """``batches`` with runs of small ones concatenated into batches of at least ``rows`` rows (the last may be
    smaller; a batch that is big enough alone passes untouched). Order and content are kept."""
    pending: List[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        if not pending and batch.num_rows >= rows:
            yield batch
            continue
        if pending and not batch.schema.equals(pending[0].schema):
            yield _concat(pending)
            pending, count = [], 0
        pending.append(batch)
        count += batch.num_rows
        if count >= rows:
            yield _concat(pending)
            pending, count = [], 0
    if pending:
        yield _concat(pending)


def _concat(batches: List[pa.RecordBatch]) -> pa.RecordBatch:
    return batches[0] if len(batches) == 1 else pa.concat_batches(batches)


class SplitReader:
    """The read threads of a whole follow session; each ``open`` names the ``TableRead`` its splits are read with
    (a follow's snapshots are read with the reads of their own schema)."""

    def __init__(self, workers: int = 2, queue_size: int = 4,
                 retry: Optional[StorageRetry] = None, batch_rows: Optional[int] = None) -> None:
        self.batch_rows = batch_rows  # smaller batches of a split are put together up to this many rows
        self.workers = max(1, workers)
        self.queue_size = max(1, queue_size)
        self.retry = retry or StorageRetry()
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="paimon-tail-read")

    def close(self) -> None:
        # Queued producers still run (and return at once when their stream is closed): cancelling them could
        # leave an open stream waiting for a split that is never read.
        self._pool.shutdown(wait=False)

    def read_split_batches(self, split, table_read,
                           stop: Optional[threading.Event] = None) -> Iterator[pa.RecordBatch]:
        """The split's batches through ``table_read``; when storage fails part-way, it is read again from the start
        once storage answers, and the rows already handed out are skipped (a split reads back in the same order),
        so an outage neither loses nor repeats a row."""
        delivered = attempt = 0
        while True:
            skip = delivered
            try:
                for batch in split_batches(table_read, [split], self.batch_rows):
                    if skip:
                        if batch.num_rows <= skip:
                            skip -= batch.num_rows
                            continue
                        batch, skip = batch.slice(skip), 0
                    attempt = 0
                    self.retry.succeeded()
                    yield batch
                    delivered += batch.num_rows
                return
            except Exception as e:
                self.retry.failed(e, attempt, stop)
                attempt += 1

    def open(self, splits: Sequence, table_read) -> "SplitStream":
        """Start reading ``splits`` through ``table_read`` now (call from the event loop); iterate the result for
        ``(split, batch)``."""
        return SplitStream(self, list(splits), asyncio.get_running_loop(), table_read)


class SplitStream:
    """The batches of one list of splits, in split order; producers run in the reader's pool.

    Producers are submitted in split order and at most ``workers`` ahead of the consumer. ``submitted_all``
    tells the follower when it may open the next stream without a deadlock: every producer of this stream is
    then ahead of the next stream's in the pool's FIFO queue.
    """

    def __init__(self, reader: SplitReader, splits: List, loop: asyncio.AbstractEventLoop, table_read) -> None:
        self.reader, self.splits, self.loop, self.table_read = reader, splits, loop, table_read
        self.stop = threading.Event()
        self.queues = [asyncio.Queue(maxsize=reader.queue_size) for _ in splits]
        self.submitted = 0
        self._submit_up_to(reader.workers)

    @property
    def submitted_all(self) -> bool:
        return self.submitted >= len(self.splits)

    def _submit_up_to(self, n: int) -> None:
        while self.submitted < min(len(self.splits), n):
            self.reader._pool.submit(self._produce, self.submitted)
            self.submitted += 1

    def _put(self, q: asyncio.Queue, item) -> None:
        if self.stop.is_set():
            raise _Stopped()
        fut = asyncio.run_coroutine_threadsafe(q.put(item), self.loop)
        while True:
            try:
                fut.result(timeout=0.2)
                return
            except TimeoutError:
                if self.stop.is_set():
                    fut.cancel()
                    raise _Stopped() from None

    def _produce(self, index: int) -> None:
        q = self.queues[index]
        try:
            if self.stop.is_set():
                return
            for batch in self.reader.read_split_batches(self.splits[index], self.table_read, self.stop):
                if self.stop.is_set():
                    return
                self._put(q, batch)
            self._put(q, _DONE)
        except _Stopped:
            return
        except BaseException as e:  # delivered to the consumer, raised there
            if not self.stop.is_set():
                try:
                    self._put(q, e)
                except (_Stopped, RuntimeError):
                    pass

    async def __aiter__(self) -> AsyncIterator[Tuple[object, pa.RecordBatch]]:
        try:
            for i, split in enumerate(self.splits):
                self._submit_up_to(i + self.reader.workers)
                async for batch in drain(self.queues[i], _DONE):
                    yield split, batch
        finally:
            self.close()

    def close(self) -> None:
        self.stop.set()
        for q in self.queues:  # unblock producers waiting on a full queue
            while not q.empty():
                q.get_nowait()
