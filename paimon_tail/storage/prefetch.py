"""Data files fetched ahead into memory by an I/O pool, so decode threads never wait on an object store.

On a local disk a split's files are read as they are decoded. On S3, each Parquet file costs two round trips
(footer, then column chunks) before the first row decodes, and the follower decodes one or two splits at a time:
a catch-up becomes a chain of round trips. The follower hands every planned snapshot's data files to a
``Prefetcher`` as soon as the snapshot is planned (several snapshots ahead); an I/O pool of its own (many threads,
separate from the decode threads) fetches each file whole, with one GET where ``s3.S3Client`` can sign it.
pypaimon's Parquet reader then finds the bytes in memory (``compat/patches/prefetched_reads``). Memory is bounded by
``budget`` bytes: past it, fetching waits until the follower has written (``release``) earlier snapshots; a file
whose fetch has not started when the reader gets to it is read directly, as without a prefetcher.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Tuple

import pyarrow as pa

from .s3 import S3Client, split_path

DEFAULT_BUDGET = 256 << 20
DEFAULT_IO_THREADS = 16


@dataclass
class _Entry:
    group: int
    size: int
    future: Optional[Future] = None  # None: queued, not started


@dataclass
class _Group:
    paths: List[str] = field(default_factory=list)


class Prefetcher:
    """Whole-file prefetch for one FileIO; ``fetch(group, files)`` → ``lookup(path)`` → ``release(group)``."""

    def __init__(self, file_io, budget: int = DEFAULT_BUDGET, io_threads: int = DEFAULT_IO_THREADS) -> None:
        self.file_io = file_io
        self.budget = budget
        self._s3 = S3Client.for_file_io(file_io)
        self._pool = ThreadPoolExecutor(io_threads, thread_name_prefix="paimon-tail-io")
        self._lock = threading.Lock()
        self._entries: Dict[str, _Entry] = {}
        self._groups: "OrderedDict[int, _Group]" = OrderedDict()
        self._queued: List[str] = []
        self._held = 0  # bytes fetched or being fetched, not yet released
        self.fetched = 0  # files, for tests and --stats
        self.closed = False
        _REGISTRY.setdefault(id(file_io), []).append(self)

    def fetch(self, group: int, files: Iterable[Tuple[str, int]]) -> None:
        """Start fetching ``files`` (path, size) for ``group`` (a snapshot id); never blocks."""
        with self._lock:
            g = self._groups.setdefault(group, _Group())
            for path, size in files:
                if path in self._entries or size <= 0:
                    continue
                self._entries[path] = _Entry(group, size)
                g.paths.append(path)
                self._queued.append(path)
            self._start_queued()

    def _start_queued(self) -> None:
        while self._queued:
            entry = self._entries.get(self._queued[0])
            if entry is None:  # released or taken before it started
                self._queued.pop(0)
                continue
            if self._held and self._held + entry.size > self.budget:
                return
            path = self._queued.pop(0)
            self._held += entry.size
            entry.future = self._pool.submit(self._get, path)

    def _get(self, path: str) -> pa.Buffer:
        if self._s3 is not None:
            data = self._s3.get(*split_path(self.file_io, path))
            if data is None:
                raise FileNotFoundError(path)
            buf = pa.py_buffer(data)
        else:
            with self.file_io.new_input_stream(path) as f:
                buf = f.read_buffer() if hasattr(f, "read_buffer") else pa.py_buffer(f.read())
        self.fetched += 1
        return buf

    def lookup(self, path: str) -> Optional[pa.Buffer]:
        """The file's bytes if they were fetched (waiting for a fetch under way), else None: read it directly."""
        with self._lock:
            entry = self._entries.get(path)
            if entry is None:
                return None
            if entry.future is None:  # not started: the reader is faster than the budget allows, read directly
                del self._entries[path]
                return None
            future = entry.future
        try:
            return future.result()
        except Exception:
            return None  # the direct read reports (and retries) the error in the reader's terms

    def release(self, group: int) -> None:
        """The follower wrote ``group``: its files are not needed any more."""
        with self._lock:
            g = self._groups.pop(group, None)
            if g is None:
                return
            for path in g.paths:
                entry = self._entries.pop(path, None)
                if entry is not None and entry.future is not None:
                    self._held -= entry.size
            self._start_queued()

    def close(self) -> None:
        self.closed = True
        prefetchers = _REGISTRY.get(id(self.file_io), [])
        if self in prefetchers:
            prefetchers.remove(self)
        if not prefetchers:
            _REGISTRY.pop(id(self.file_io), None)
        with self._lock:
            self._entries.clear()
            self._groups.clear()
            self._queued.clear()
            self._held = 0
        self._pool.shutdown(wait=False, cancel_futures=True)


_REGISTRY: Dict[int, List[Prefetcher]] = {}  # id(file_io) → its prefetchers (one per follower)


def lookup(file_io, path: str) -> Optional[pa.Buffer]:
    """Prefetched bytes of ``path`` read through ``file_io``, if a prefetcher holds them."""
    for prefetcher in _REGISTRY.get(id(file_io), ()):
        buf = prefetcher.lookup(path)
        if buf is not None:
            return buf
    return None


__all__ = ["Prefetcher", "lookup"]
