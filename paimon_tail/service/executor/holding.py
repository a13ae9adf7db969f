"""What an executor holds, and how the coordinator's messages change it: its tables (``state.py``), the channels'
owners, the threads and budgets its tables share, and its counters. ``lookups.py`` answers from it (it is the
``Holder`` lookups read); ``session.py`` applies the coordinator's messages to it and reports it in heartbeats.

Messages are applied one at a time: stores are built in a worker thread while lookups keep being answered. A
welcome naming the same tables as before (a rejoin) keeps everything held: a full state of the same files reuses
the stores.
"""
from __future__ import annotations

import asyncio
import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Sequence

from ...storage.retry import StorageRetry
from ..keys.routing import partition_path
from ..protocol import lookup_pb2 as pb
from ..protocol.executor_spec import ExecutorSpec
from ..protocol.local_dirs import own_dir_name, remove_dead_dirs
from ..store import DiskBudget, MemoryCache
from ..store.budget import default_max_memory, use_returning_allocator
from .executor_metrics import LookupStats
from .state import LOADERS, Stores, TableState


class Holding:
    """An executor's tables, owners and counters (see the module's docstring)."""

    def __init__(self, spec: ExecutorSpec, instance_id: str) -> None:
        self.spec = spec
        self.instance_id = instance_id
        self.index = spec.index
        self.tables: Dict[str, TableState] = {}
        self.owners: tuple = ()  # owners[channel] = executor index, from the latest assignment
        self.requests = 0
        self.keys_looked_up = 0
        self.max_batch_keys = 100_000
        self.pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="executor-lookup")
        self._apply_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="executor-apply")
        use_returning_allocator()  # its memory cache churns (store/budget.py)
        # A storage outage is waited out (the executor keeps answering from what it holds).
        retry = StorageRetry(timeout=None)
        self.stores = Stores(
            cache=MemoryCache(spec.max_memory or default_max_memory(spec.memory_share)), disk=DiskBudget(spec.max_disk),
            work=ThreadPoolExecutor(max_workers=2, thread_name_prefix="executor-build"),
            background=ThreadPoolExecutor(max_workers=LOADERS, thread_name_prefix="executor-background"),
            call=retry.call_sync)
        self._maintenance: List[asyncio.Task] = []
        self.root = ""
        self.table_names: List[str] = []
        self.stats = LookupStats()
        self.draining = False
        self.released = asyncio.Event()  # (draining) its channels are all with other executors now

    def ready(self) -> bool:
        """Every channel it owns is loaded (what its health reports as SERVING)."""
        return bool(self.tables) and all(st.view.ready and st.owned <= st.view.served for st in self.tables.values())

    # -- the coordinator's messages ------------------------------------------------------------------------
    async def open(self, names: Sequence[str]) -> None:
        """The tables a welcome names, opened in a directory of this executor's own under ``--local-dir`` (the
        same names as before: nothing to do, what it holds stays)."""
        if list(names) == self.table_names:
            return
        from ...catalog import open_table

        root = os.path.join(self.spec.local_dir, own_dir_name(self.index, self.instance_id))

        def open_all():
            remove_dead_dirs(self.spec.local_dir)  # what a killed executor before us left (no cleanup of its ran)
            os.makedirs(root, mode=0o700, exist_ok=True)
            try:
                catalog = self.spec.catalog.open()
                return {name: TableState(name, open_table(name, catalog), os.path.join(root, name), self.stores)
                        for name in names}
            except BaseException:  # (a warehouse this machine cannot open) nothing of ours stays in --local-dir
                shutil.rmtree(root, ignore_errors=True)
                raise

        tables = await asyncio.to_thread(open_all)
        old_root, self.root = self.root, root
        for task in self._maintenance:
            task.cancel()
        self.tables, self.table_names = tables, list(names)
        self._maintenance = [asyncio.ensure_future(t.maintain()) for t in tables.values()]
        if old_root and old_root != root:
            shutil.rmtree(old_root, ignore_errors=True)

    def assign(self, a: pb.Assignment) -> None:
        self.owners = tuple(a.owners)
        # what it owns, and what it loads to own next (a move made before the break: answered too, it is loaded
        # and kept current like an owned channel)
        mine = [c for c, owner in enumerate(a.owners) if owner == self.index or
                (c < len(a.warm) and a.warm[c] == self.index)]
        for state in self.tables.values():
            state.assign(a.channels, mine)
        if self.draining and not mine:
            self.released.set()

    async def full(self, msg: pb.TableFull) -> None:
        state = self.tables.get(msg.table)
        if state is None:
            return

        def prepare():
            if msg.snapshot_id:
                state.at_schema(msg.schema_id)
            return state.prepare_full(state.codec.full(msg), msg.snapshot_id)

        prepared = await asyncio.get_running_loop().run_in_executor(self._apply_pool, prepare)
        await state.swap(prepared, msg.snapshot_id, msg.commit_time_ms, full=True)

    async def delta(self, msg: pb.TableDelta) -> None:
        state = self.tables.get(msg.table)
        if state is None or not state.view.ready or msg.snapshot_id <= state.view.snapshot_id:
            return
        if not msg.changes and msg.schema_id == state.table.table_schema.id:
            await state.swap(None, msg.snapshot_id, msg.commit_time_ms, full=False)
            self._visible(msg.commit_time_ms)
            return

        def prepare():
            state.at_schema(msg.schema_id)
            return state.prepare_delta(msg.commit_kind, state.codec.delta(msg), msg.snapshot_id)

        prepared = await asyncio.get_running_loop().run_in_executor(self._apply_pool, prepare)
        await state.swap(prepared, msg.snapshot_id, msg.commit_time_ms, full=False)
        self._visible(msg.commit_time_ms)

    def _visible(self, commit_ms: int) -> None:
        if commit_ms:
            self.stats.visible.observe(max(0.0, time.time() - commit_ms / 1000))

    # -- what a heartbeat says ------------------------------------------------------------------------------
    def serving(self) -> List[pb.TableServing]:
        out = []
        for name, st in self.tables.items():
            v = st.view
            buckets = [pb.BucketInfo(partition=partition_path(st.routing.partition_keys, k[0]), bucket=k[1],
                                     rows=s.rows) for k, s in sorted(v.stores.items(), key=lambda kv: (str(kv[0][0]), kv[0][1]))]
            loaded, files = st.loaded()
            out.append(pb.TableServing(table=name, snapshot_id=v.snapshot_id if v.ready else 0,
                                       commit_time_ms=v.commit_ms, keys=v.keys_held(), buckets=buckets,
                                       schema_id=v.schema_id, channels=sorted(v.served) if v.ready else [],
                                       files_loaded=loaded, files=files,
                                       disk_bytes=sum(s.disk_bytes() for s in v.stores.values()),
                                       settled=v.ready and st.settled is v))
        return out

    def heartbeat(self) -> pb.Heartbeat:
        return pb.Heartbeat(tables=self.serving(), requests=self.requests, keys_looked_up=self.keys_looked_up,
                            memory_bytes=self.stores.cache.bytes, draining=self.draining, stats=self.stats.message())

    def stop_maintenance(self) -> None:
        for task in self._maintenance:
            task.cancel()

    def close(self) -> None:
        """Its threads and background work ended, its directory removed."""
        self.stop_maintenance()
        self.pool.shutdown(wait=False, cancel_futures=True)
        self._apply_pool.shutdown(wait=False, cancel_futures=True)
        self.stores.work.shutdown(wait=False, cancel_futures=True)
        self.stores.background.shutdown(wait=False, cancel_futures=True)
        if self.root:
            shutil.rmtree(self.root, ignore_errors=True)


__all__ = ["Holding"]
