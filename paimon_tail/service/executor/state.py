"""One table on one executor: its bucket stores, the snapshot and schema they reflect, the channels it answers for.

Everything a lookup reads is one immutable ``View`` (``views.py``), replaced as a whole: a change message builds new stores off
the event loop (``prepare_full`` / ``prepare_delta``: buckets in parallel, in worker threads) and ``swap``
installs them together with their snapshot id, schema id and channels, so an answer always reflects exactly the
snapshot it reports. How a store is built and changed is ``service/store/``'s business: a commit costs the keys of
its new files, never a re-merge of a bucket.

What is not needed for a right answer happens in the background (``maintain``), never holding up a snapshot:
folding a bucket's index overlays into its base, writing the row files of data files no lookup has needed yet,
and filling the memory cache. A fold is installed only if the bucket's index has not been rebuilt meanwhile.

* A full state (``TableFull``) keeps the stores of buckets whose files did not change (a rebalance or a rejoin
  costs only the buckets that moved), and reuses the row files of the files a rebuilt bucket still has.
* A new schema id (a writer added or widened a column) costs nothing here: rows read with an older schema are
  answered in the new one (``store/targets.py``).
* An assignment that takes channels away drops them from the view at once, with their buckets' stores and local
  files; channels it adds are answered after the full state that loads them.

Why one module (~450 lines): the view's three writers — change messages (``prepare_*``, ``swap``), assignments and the
background — replace the same ``View`` under one rule (a fold or a router is installed only over the view it was
made for); apart, each would reach into the others' state.
"""
from __future__ import annotations

import asyncio
import collections
import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple

import pyarrow as pa

from ..keys.routing import KeySlice, TableRouting, partition_path
from ..protocol.changes import BucketChange, BucketFiles, BucketKey, RowCodec, table_mode
from ..protocol.wire import ipc_stream, schema_bytes
from ..store import BucketBuilder, BucketStore, DiskBudget, MemoryCache, Target
from ..store.router import Router
from ..store.runs import Run, sheet_of
from .views import AnswerSchema, Reading, TableKeys, View, key_kind

log = logging.getLogger(__name__)

LOADERS = 2  # data files whose rows the background writes at a time


def bucket_error(e: BaseException) -> str:
    from ...errors import PaimonTailError, safe_text

    text = str(e).strip().splitlines()
    if isinstance(e, PaimonTailError):  # ours say what they are: "cannot read data file PATH: it does not exist"
        return safe_text(text[0] if text else "")
    return f"{type(e).__name__}: {text[0] if text else ''}".strip()


@dataclass
class Stores:
    """What every table of one executor shares: the memory and disk budgets, the threads that build stores,
    and the storage retry policy (``call(fn)``)."""

    cache: MemoryCache
    disk: DiskBudget
    work: ThreadPoolExecutor  # per-bucket building (a message's buckets in parallel)
    background: ThreadPoolExecutor  # folds, row files, cache warming
    call: Callable[[Callable], object]


@dataclass
class Prepared:
    """New stores for a view, built in worker threads; what the old ones leave is deleted after the swap."""

    stores: Dict[BucketKey, BucketStore]
    files: Dict[BucketKey, BucketFiles]
    broken: Dict[BucketKey, str]
    garbage: Tuple[List[Run], List[str]] = ((), ())


class TableState:
    def __init__(self, name: str, table, root: str, stores: Stores) -> None:
        self.name = name
        self.root = root
        self.shared = stores
        self.routing = TableRouting.of(table)
        self.key_names = list(self.routing.primary_keys)
        self.partition_positions = [self.key_names.index(k) for k in self.routing.key_partition_keys]
        self.cross_partition = self.routing.kind == "cross-partition"
        self.slotted = self.routing.slotted
        self._answers: Dict[tuple, AnswerSchema] = {}
        self.builder = BucketBuilder(table, table_mode(table), stores.cache, stores.disk, stores.call)
        self._use(table)
        self.view = View(schema=self.schema, schema_id=self.table.table_schema.id, fields=tuple(self.table.fields))
        self.changed = asyncio.Condition()
        self.owned: FrozenSet[int] = frozenset()  # channels the latest assignment gives this executor
        self.channels = 1  # the service's channel count
        self._dirty = asyncio.Event()  # a new view: the background has work
        self._wanted: "collections.deque[Run]" = collections.deque()  # data files lookups read: write them first
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self.builder.on_decoded = self._want
        self.folds = 0
        self._warm: Tuple[Optional[View], bool, float] = (None, False, 0.0)  # (view, all rows on disk, checked at)
        self.settled: Optional[View] = None  # the last view the background finished with (``maintain``)

    def _use(self, table) -> None:
        from pypaimon.schema.data_types import PyarrowFieldParser

        self.table = table
        self.mode = table_mode(table)
        self.codec = RowCodec(table)
        self.schema = PyarrowFieldParser.from_paimon_schema(table.fields)
        key_schema = pa.schema([self.schema.field(k) for k in self.key_names])
        self.builder.use(table)
        hasher = self.builder.hasher
        key_types = [f.type for f in key_schema]
        self.keys = TableKeys(
            names=self.key_names, schema=key_schema, types=key_types, kinds=[key_kind(t) for t in key_types],
            partition_positions=self.partition_positions,
            # where an exact store's key (one integer column of the trimmed key) is among a request's key values
            exact_position=self.key_names.index(hasher.names[0]) if hasher.exact else -1,
            hasher=hasher, routing=self.routing, slotted=self.slotted, cross_partition=self.cross_partition)

    # -- what one lookup reads ------------------------------------------------------------------------------
    def reading(self, view: View, columns: Optional[Sequence[str]], index: int, owners: tuple) -> Reading:
        """What one lookup of ``view`` reads, taken once for the call (``views.Reading``)."""
        return Reading(self.name, index, view, self.keys, self._answer_schema(view, columns), self.warm(view),
                       self.channels, self.owned, owners)

    def _answer_schema(self, view: View, columns: Optional[Sequence[str]]) -> AnswerSchema:
        """The schema answers from ``view`` are in, and its two messages (cached per schema and projection)."""
        cache_key = (view.schema_id, tuple(columns) if columns else None)
        answer = self._answers.get(cache_key)
        if answer is None:
            out = view.schema if not columns else pa.schema([view.schema.field(c) for c in columns])
            answer = self._answers[cache_key] = AnswerSchema(
                Target(view.schema_id, view.fields, view.schema, columns), ipc_stream(out.empty_table()),
                schema_bytes(out))
        return answer

    async def until(self, snapshot_id: int, timeout: Optional[float]) -> bool:
        """Wait until this table serves ``snapshot_id`` (at most ``timeout`` seconds; None: no limit); False when
        the time ran out first."""
        async def serving():
            async with self.changed:
                await self.changed.wait_for(lambda: self.view.snapshot_id >= snapshot_id)

        try:
            await asyncio.wait_for(serving(), timeout)
        except asyncio.TimeoutError:
            return False
        return True

    def at_schema(self, schema_id: int) -> bool:
        """Read with schema ``schema_id`` from now on; True when that is a change."""
        if schema_id == self.table.table_schema.id:
            return False
        from pypaimon.schema.schema_manager import SchemaManager

        t = self.table
        schema = SchemaManager(t.file_io, t.table_path, branch=t.current_branch()).get_schema(schema_id)
        if schema is None:
            raise ValueError(f"schema {schema_id} of {self.name} not found")
        self._use(type(t)(t.file_io, t.identifier, t.table_path, schema, t.catalog_environment))
        return True

    def channel_of(self, key: BucketKey) -> int:
        return self.routing.channel_of(key[0], key[1], self.channels)

    def store_dir(self, key: BucketKey) -> str:
        return os.path.join(self.root, "stores", partition_path(self.routing.partition_keys, key[0]),
                            f"bucket-{key[1]}")

    # -- building (worker threads) ------------------------------------------------------------------------
    def _each(self, jobs: Dict[BucketKey, Callable[[], Optional[BucketStore]]]
              ) -> Dict[BucketKey, Tuple[Optional[BucketStore], Optional[BaseException]]]:
        """Run one job per bucket in the shared worker threads; a failure is the bucket's, not the message's."""
        def guarded(job):
            try:
                return job(), None
            except Exception as e:  # a missing or corrupt file: this bucket reports it, the others serve
                log.debug("bucket failed", exc_info=True)
                return None, e

        if len(jobs) <= 1:
            return {k: guarded(j) for k, j in jobs.items()}
        futures = {k: self.shared.work.submit(guarded, j) for k, j in jobs.items()}
        return {k: f.result() for k, f in futures.items()}

    def key_slice(self) -> Optional[KeySlice]:
        """The keys this executor's stores of a slotted table index: those of the channels it owns (None: a
        fixed-bucket table, whose stores index every key of their bucket)."""
        return KeySlice(self.routing, self.channels, self.owned) if self.slotted else None

    def prepare_full(self, buckets: Dict[BucketKey, BucketFiles], snapshot_id: int) -> Prepared:
        current = self.view
        stores, files, broken = {}, {}, {}
        jobs = {}
        keys_of = self.key_slice()
        for key, bf in buckets.items():
            files[key] = bf
            store = current.stores.get(key)
            if store is not None and key not in current.broken and store.keys_of == keys_of and \
                    current.files.get(key, BucketFiles()).same(bf):
                stores[key] = store  # the same files and keys: the same rows
                continue
            jobs[key] = (lambda key=key, bf=bf, store=store:
                         self.builder.full(key, bf, self.store_dir(key), store, snapshot_id, keys_of))
        for key, (store, error) in self._each(jobs).items():
            if error is not None:
                broken[key] = bucket_error(error)
            elif store is not None:
                stores[key] = store
        return Prepared(stores, files, broken, self._garbage(current.stores, stores))

    def prepare_delta(self, commit_kind: str, changes: Dict[BucketKey, BucketChange], snapshot_id: int) -> Prepared:
        current = self.view
        stores, files, broken = dict(current.stores), dict(current.files), dict(current.broken)
        jobs = {}
        keys_of = self.key_slice()
        for key, change in changes.items():
            before = files.get(key, BucketFiles())
            after = change.replace if change.replace is not None else before.apply(change.adds, change.deletes)
            files[key] = after
            if not after.files:
                files.pop(key)
            old = stores.get(key) if key not in broken else None
            if key in broken:
                jobs[key] = (lambda key=key, after=after:
                             self.builder.full(key, after, self.store_dir(key), None, snapshot_id, keys_of))
            else:
                jobs[key] = (lambda key=key, change=change, after=after, old=old:
                             self.builder.apply(old, key, change, commit_kind, after, self.store_dir(key),
                                                snapshot_id, keys_of))
        for key, (store, error) in self._each(jobs).items():
            if error is not None:
                stores.pop(key, None)
                broken[key] = bucket_error(error)
                continue
            broken.pop(key, None)
            if store is None:
                stores.pop(key, None)
            else:
                stores[key] = store
        return Prepared(stores, files, broken, self._garbage(current.stores, stores))

    @staticmethod
    def _garbage(before: Dict[BucketKey, BucketStore], after: Dict[BucketKey, BucketStore]
                 ) -> Tuple[List[Run], List[str]]:
        runs: List[Run] = []
        paths: List[str] = []
        for key, old in before.items():
            new = after.get(key)
            if new is old:
                continue
            r, p = old.garbage(new)
            runs += r
            paths += p
        return runs, paths

    # -- swapping (event loop) ----------------------------------------------------------------------------
    async def swap(self, prepared: Optional[Prepared], snapshot_id: int, commit_ms: int, full: bool) -> None:
        """Install a snapshot: new stores (or the same, for a delta without changes) and what they reflect."""
        v = self.view
        if prepared is None:
            new = replace(v, snapshot_id=snapshot_id, commit_ms=commit_ms)
        else:
            new = View(snapshot_id=snapshot_id, schema_id=self.table.table_schema.id, commit_ms=commit_ms,
                       ready=True, stores=prepared.stores, files=prepared.files, broken=prepared.broken,
                       served=self.owned if full else v.served, schema=self.schema, fields=tuple(self.table.fields),
                       routers=v.routers)
        await self._install(self._opened(new))
        if prepared is not None:
            _collect(prepared.garbage)

    async def _install(self, view: View) -> None:
        async with self.changed:
            self.view = view
            self.changed.notify_all()
        self._dirty.set()

    def assign(self, channels: int, owned: Sequence[int]) -> None:
        """A new assignment: channels taken away stop being answered now, and their buckets' stores and local
        files are dropped (the coordinator sends them no more changes); new ones wait for a full state."""
        v = self.view
        served = v.served & frozenset(owned) if channels == self.channels else frozenset()
        self.channels = channels
        self.owned = frozenset(owned)
        # a slotted table's stores are not a channel's: each indexes the keys of the channels it was built for, and
        # the next full state rebuilds those that index other channels' keys
        gone = set() if self.slotted else \
            {k for k in (*v.stores, *v.files, *v.broken) if self.channel_of(k) not in self.owned}
        if served == v.served and not gone:
            return
        self.view = self._opened(replace(
            v, served=served, stores={k: s for k, s in v.stores.items() if k not in gone},
            files={k: f for k, f in v.files.items() if k not in gone},
            broken={k: e for k, e in v.broken.items() if k not in gone}))
        for key in gone:
            store = v.stores.get(key)
            if store is not None:
                store.drop()

    def _opened(self, view: View) -> View:
        """``view`` with ``answering`` filled: every bucket of a served channel that is not broken; for a slotted
        table, ``by_partition``: its stores that are not broken, by the partition of a key."""
        if not self.slotted:
            answering = {key: store for key, store in view.stores.items()
                         if key not in view.broken and self.channel_of(key) in view.served}
            return replace(view, answering=answering)
        by_partition: Dict[tuple, Dict[BucketKey, BucketStore]] = {}
        cross = self.cross_partition
        for key, store in view.stores.items():
            if store is not None and key not in view.broken:
                by_partition.setdefault(() if cross else key[0], {})[key] = store
        routers = {p: r for p, r in view.routers.items() if p in by_partition}
        return replace(view, by_partition=by_partition, routers=routers)

    # -- background (off the lookup and change paths) -------------------------------------------------------
    def _want(self, run: Run) -> None:
        """(any thread) A lookup read this data file: write its frame file next (under ``--max-disk`` that is how
        the files lookups need replace the least recently used)."""
        self._wanted.append(run)
        loop = self._loop
        if loop is not None:
            loop.call_soon_threadsafe(self._dirty.set)

    async def maintain(self) -> None:
        """Forever: after each new view, write the frame files lookups asked for, fold what needs folding, then
        write the frame files no lookup has needed yet, then fill the memory cache; each step yields to newer
        views."""
        loop = self._loop = asyncio.get_running_loop()
        pool = self.shared.background
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            while self._wanted:
                run = self._wanted.popleft()
                if not run.built:
                    await loop.run_in_executor(pool, _write_quietly, run)
            for key, store in list(self.view.stores.items()):
                if store.needs_fold():
                    before = store.index
                    folded = await loop.run_in_executor(pool, before.folded, store.directory)
                    await self._install_fold(key, before, folded)
            await self._route(loop, pool)
            view = self.view
            await self._load(loop, pool)
            if not self._dirty.is_set() and not self._wanted:
                self.settled = view

    async def _route(self, loop, pool) -> None:
        """A slotted table's routers, built again for partitions whose stores changed since theirs was built
        (lookups stay right meanwhile: they also search the stores that changed)."""
        if not self.slotted:
            return
        for partition, stores in list(self.view.by_partition.items()):
            router = self.view.routers.get(partition)
            if self._dirty.is_set():
                return
            if router is not None and not router.changed(stores):
                continue
            built = await loop.run_in_executor(pool, Router.build, list(stores.values()))
            v = self.view
            if partition in v.by_partition:
                await self._install(replace(v, routers={**v.routers, partition: built}))

    async def _install_fold(self, key: BucketKey, before, folded) -> None:
        v = self.view
        store = v.stores.get(key)
        index = store.index.after_fold(before, folded) if store is not None else None
        if index is None:  # rebuilt meanwhile: this fold is stale
            _collect(([], [f for f in folded.files() if f not in before.files()]))
            return
        stores = dict(v.stores)
        stores[key] = store.with_index(index)
        await self._install(self._opened(replace(v, stores=stores)))
        self.folds += 1
        _collect(([], [f for f in before.files() if f not in folded.files()]))

    async def _load(self, loop, pool) -> None:
        disk = self.shared.disk
        todo = [r for s in self.view.stores.values() for r in s.runs.values() if not r.built]
        pending: set = set()
        for run in todo:  # a few files at a time (the background threads), stopping for a newer view
            if self._dirty.is_set():
                break
            if disk.max_bytes is not None and disk.bytes >= disk.max_bytes * 0.9:
                break  # leave the rest to lookups (each writes what it needs)
            if run.built:
                continue
            pending.add(loop.run_in_executor(pool, _write_quietly, run))
            if len(pending) >= LOADERS:
                _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        if pending:
            await asyncio.wait(pending)
        if self._dirty.is_set():
            return
        # Sheets only where every row fits the memory budget with room to spare and frame files stay: under a
        # budget that binds, rows stay per run (small evictions, no sheet rebuilt after each)
        cache = self.shared.cache
        runs = [r for s in self.view.stores.values() for r in s.runs.values()]
        rows_bytes = sum(r.rows_bytes() for r in runs)
        sheets = disk.max_bytes is None and all(r.built for r in runs) and rows_bytes * 1.25 <= cache.max_bytes
        for store in list(self.view.stores.values()):
            if sheets and not self._dirty.is_set() and \
                    await loop.run_in_executor(pool, sheet_of, list(store.runs.values()), cache):
                continue
            for run in list(store.runs.values()):
                if self._dirty.is_set() or not self.shared.cache.has_room(1 << 20):
                    return
                await loop.run_in_executor(pool, run.warm)

    def warm(self, view: View) -> bool:
        """Whether every row of ``view`` is on local disk (a lookup of it never reads a data file, so a small one
        may be answered on the event loop). Never with a disk budget (rows may go any time)."""
        if self.shared.disk.max_bytes is not None:
            return False
        seen, ok, at = self._warm
        if seen is view and (ok or time.monotonic() - at < 0.1):
            return ok
        ok = all(r.built for s in view.stores.values() for r in s.runs.values())
        self._warm = (view, ok, time.monotonic())
        return ok

    def loaded(self) -> Tuple[int, int]:
        """(runs written, runs) of the current view."""
        runs = [r for s in self.view.stores.values() for r in s.runs.values()]
        return sum(1 for r in runs if r.built), len(runs)


def _write_quietly(run: Run) -> None:
    try:
        run.write()
    except Exception:  # the lookup that needs it will report it
        log.debug("background write failed", exc_info=True)


def _collect(garbage: Tuple[Sequence[Run], Sequence[str]]) -> None:
    runs, paths = garbage
    for run in runs:
        run.drop()
    for path in paths:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


__all__ = ["Prepared", "Stores", "TableState", "bucket_error"]
