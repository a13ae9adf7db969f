"""An executor: owns a set of (table, partition, bucket), keeps their merged rows locally, answers lookups.

Runs as its own process (``multiprocessing`` spawn; ``executor_main``) or in-process (``Executor.run`` as a task).
The scanner's messages arrive through a pipe and are applied one at a time in a worker thread: new bucket stores
are built off the loop and swapped in together with the served snapshot id, so a lookup always answers from
exactly one snapshot, the one it reports. Lookups run on the loop for small batches and in threads for big ones.
"""
from __future__ import annotations

import asyncio
import logging
import os
import shutil
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import grpc
import numpy as np
import pyarrow as pa

from . import lookup_pb2 as pb
from . import lookup_pb2_grpc as pbg
from .mirror import BucketFiles, LocalMirror, partition_path
from .routing import TableRouting
from .scanner import BucketChange, table_mode
from .security import Security, add_port, make_channel, server_options
from .store import BucketStore, key_hashes
from .wire import ipc_stream

log = logging.getLogger(__name__)

INLINE_KEYS = 64  # batches up to this size are answered on the loop (no thread hop)
OVERLAY_LIMIT = 200_000  # re-merge a bucket once its overlays hold this many rows (or a quarter of the base)


@dataclass
class ExecutorSpec:
    index: int
    num_executors: int
    tables: Sequence[str]
    catalog: object  # CatalogConfig
    local_dir: str
    address_server: str
    host: str = "127.0.0.1"
    security: Security = field(default_factory=Security)
    max_batch_keys: int = 100_000
    max_message_bytes: int = 64 << 20
    heartbeat_interval: float = 0.5


class TableState:
    """One table on one executor: immutable maps swapped as a whole per snapshot."""

    def __init__(self, name: str, table, root: str) -> None:
        self.name = name
        self.table = table
        self.routing = TableRouting.of(table)
        self.mode = table_mode(table)
        self.key_names = list(self.routing.primary_keys)
        self.root = root
        self.mirror = LocalMirror(table, os.path.join(root, "files"))
        self.schema = self.mirror.output_schema()
        self.key_schema = pa.schema([self.schema.field(k) for k in self.key_names])
        self.key_types = [f.type for f in self.key_schema]
        self.stores: Dict[Tuple, BucketStore] = {}
        self.files: Dict[Tuple, BucketFiles] = {}
        self.snapshot_id = 0
        self.commit_ms = 0
        self.ready = False
        self.changed = asyncio.Condition()
        self.broken: Dict[Tuple, str] = {}  # (partition, bucket) -> why it cannot be served
        self.broken_pending: Dict[Tuple, str] = {}  # set by prepare_*, swapped in with the stores

    def out_schema(self, columns) -> pa.Schema:
        return self.schema if columns is None else pa.schema([self.schema.field(c) for c in columns])

    def store_dir(self, key) -> str:
        partition, bucket = key
        ppath = partition_path(self.routing.partition_keys, partition)
        return os.path.join(self.root, "stores", ppath, f"bucket-{bucket}")

    def keys_held(self) -> int:
        return sum(s.rows for s in self.stores.values())

    # -- applying scanner messages (worker thread) --------------------------------------------------------
    def _build(self, key, files: BucketFiles) -> Optional[BucketStore]:
        if not files.files:
            return None
        # As a batch read: level-0 files are invisible on first-row and deletion-vector tables until compacted.
        batches = self.mirror.merged_batches(key[0], key[1], files,
                                             skip_level0=self.table.options.batch_scan_skip_level0())
        return BucketStore.build(self.store_dir(key), self.key_names, self.schema, batches)

    def prepare_full(self, buckets: Dict) -> Tuple[Dict, Dict, List]:
        stores, files, old = {}, {}, list(self.stores.values())
        self.broken_pending = {}
        for key, bf in buckets.items():
            files[key] = bf
            try:
                store = self._build(key, bf)
            except Exception as e:  # a missing or corrupt file: this bucket reports it, the others serve
                self.broken_pending[key] = _bucket_error(e)
                continue
            if store is not None:
                stores[key] = store
        return stores, files, old

    def prepare_delta(self, commit_kind: str, changes: Dict) -> Tuple[Dict, Dict, List]:
        stores, files, old = dict(self.stores), dict(self.files), []
        self.broken_pending = dict(self.broken)
        for key, change in changes.items():
            try:
                self._apply_change(key, change, commit_kind, stores, files, old)
                self.broken_pending.pop(key, None)
            except Exception as e:  # a missing or corrupt file: this bucket reports it, the others serve
                current = stores.pop(key, None)
                if current is not None:
                    old.append(current)
                self.broken_pending[key] = _bucket_error(e)
        return stores, files, old

    def _apply_change(self, key, change, commit_kind: str, stores: Dict, files: Dict, old: List) -> None:
        change: BucketChange
        before = files.get(key, BucketFiles())
        if change.replace is not None:
            after = change.replace
        else:
            after = before.apply(change.adds, change.deletes)
        files[key] = after
        current = stores.get(key)
        incremental = (
            self.mode == "dedup" and commit_kind == "APPEND" and current is not None and not change.deletes
            and change.replace is None and all(m.level == 0 for m in change.adds)
        )
        content_kept = commit_kind == "COMPACT" and self.mode in ("dedup", "merge") and change.replace is None
        if incremental:
            new = current.with_changes(self.mirror.change_batches(key[0], key[1], change.adds))
            if new.overlay_rows > max(OVERLAY_LIMIT, current.base.num_rows // 4):
                new = self._build(key, after)
                old.append(current)
        elif content_kept and (current is not None or not after.files):
            new = current
            # Keep the local mirror small: copy the compacted files now, drop the replaced ones.
            self.mirror.localize(key[0], key[1], BucketFiles(list(change.adds)))
        else:
            new = self._build(key, after)
            if current is not None:
                old.append(current)
        if new is None:
            stores.pop(key, None)
        else:
            stores[key] = new
        if change.deletes:
            self.mirror.release(key[0], key[1], change.deletes)
        if not after.files:
            files.pop(key, None)


class ExecutorServicer(pbg.ExecutorServiceServicer):
    def __init__(self, executor: "Executor") -> None:
        self.ex = executor

    async def Lookup(self, request, context):
        ex = self.ex
        state = ex.tables.get(request.table)
        if state is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"table {request.table!r} is not served here")
        try:
            keys = pa.ipc.open_stream(request.keys_ipc).read_all()
        except Exception as e:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"keys are not an Arrow IPC stream: {e}")
        n = keys.num_rows
        if n > ex.spec.max_batch_keys:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                f"batch of {n} keys exceeds the limit of {ex.spec.max_batch_keys} keys per request")
        if len(request.buckets) != n:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                f"{len(request.buckets)} buckets for {n} keys")
        missing = [k for k in state.key_names if k not in keys.column_names]
        if missing:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"missing key column(s) {', '.join(missing)}")
        try:
            keys = keys.select(state.key_names)
            if [f.type for f in keys.schema] != state.key_types:
                keys = keys.cast(state.key_schema)
        except Exception as e:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"keys do not fit the key columns: {e}")
        if keys.num_rows and any(keys.column(k).null_count for k in state.key_names):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "primary-key values cannot be null")
        columns = list(request.select) or None
        if columns:
            unknown = [c for c in columns if c not in state.schema.names]
            if unknown:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"unknown column(s) {', '.join(unknown)}")
        buckets = np.asarray(request.buckets, dtype=np.int64)
        if n and (buckets.min() < 0 or buckets.max() >= state.routing.num_buckets):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "bucket out of range")
        if request.min_snapshot_id > 0 and state.snapshot_id < request.min_snapshot_id:
            await ex.wait_snapshot(state, request.min_snapshot_id, context)
        if not state.ready:
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"executor {ex.spec.index} is still loading {state.name}")
        stores, snapshot_id = state.stores, state.snapshot_id  # one consistent snapshot
        if state.broken:
            bad = _broken_hit(state, state.broken, keys, buckets)
            if bad:
                await context.abort(grpc.StatusCode.DATA_LOSS, bad)
        ex.requests += 1
        ex.keys_looked_up += n
        try:
            if n <= INLINE_KEYS:
                found, rows = ex.answer(state, stores, keys, buckets, columns)
            else:
                found, rows = await asyncio.get_running_loop().run_in_executor(
                    ex.pool, ex.answer, state, stores, keys, buckets, columns)
        except NotOwner as e:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(e))
        return pb.LookupResponse(snapshot_id=snapshot_id, rows_ipc=rows, found=found)


class NotOwner(Exception):
    pass


def _bucket_error(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".strip()


def _broken_hit(state: "TableState", broken: Dict, keys: pa.Table, buckets: np.ndarray) -> Optional[str]:
    """The error of the first broken (partition, bucket) this request touches, if any."""
    pkeys = state.routing.partition_keys
    parts = list(zip(*[keys.column(k).to_pylist() for k in pkeys])) if pkeys else [()] * keys.num_rows
    for p, b in set(zip(parts, buckets.tolist())):
        if (p, b) in broken:
            where = f"partition {partition_path(pkeys, p)} bucket {b}" if pkeys else f"bucket {b}"
            return f"{where} of {state.name} cannot be served: {broken[(p, b)]}"
    return None


def _groups(partition_keys: Sequence[str], keys: pa.Table, buckets: np.ndarray):
    """[((partition tuple, bucket), request indices or None for all)], vectorised (no per-key Python)."""
    n = keys.num_rows
    if not partition_keys:
        first = int(buckets[0])
        if n == 1 or np.all(buckets == first):
            return [(((), first), None)]
        codes = buckets.astype(np.int64)
        labels = None
    else:
        dicts, cols = [], []
        for k in partition_keys:
            col = keys.column(k)
            enc = (col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col).dictionary_encode()
            dicts.append(enc.dictionary.to_pylist())
            cols.append(np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64))
        cols.append(buckets.astype(np.int64))
        combo = np.stack(cols, axis=1)
        uniq, inverse = np.unique(combo, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        labels = [(tuple(dicts[j][int(u[j])] for j in range(len(partition_keys))), int(u[-1])) for u in uniq]
        if len(labels) == 1:
            return [(labels[0], None)]
        codes = inverse
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    bounds = np.flatnonzero(np.diff(sorted_codes)) + 1
    out = []
    for grp in np.split(order, bounds):
        code = int(codes[grp[0]])
        out.append(((((), code) if labels is None else labels[code]), grp))
    return out


def _ipc(table: pa.Table) -> bytes:
    return ipc_stream(table)


class Executor:
    def __init__(self, spec: ExecutorSpec, conn=None) -> None:
        self.spec = spec
        self.conn = conn
        self.instance_id = uuid.uuid4().hex
        self.tables: Dict[str, TableState] = {}
        self.requests = 0
        self.keys_looked_up = 0
        self.address = ""
        self.pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="executor-lookup")
        self._apply_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="executor-apply")
        self._stop = asyncio.Event()
        self.server: Optional[grpc.aio.Server] = None
        self.root = os.path.join(spec.local_dir, f"executor-{spec.index}-{self.instance_id[:8]}")
        self.stop_reason: Optional[str] = None  # None: stopped by the service ("stop" message, stop())
        self.orphan_timeout: Optional[float] = None  # remote executors: stop after this long without heartbeats

    # -- lookups ------------------------------------------------------------------------------------------
    def answer(self, state: TableState, stores, keys: pa.Table, buckets: np.ndarray, columns):
        n = keys.num_rows
        if n == 0:
            return [], _ipc(state.out_schema(columns).empty_table())
        h_all = key_hashes(keys)
        found_idx, tables = [], []
        for (p, b), sel in _groups(state.routing.partition_keys, keys, buckets):
            owner = state.routing.executor_of(p, b, self.spec.num_executors)
            if owner != self.spec.index:
                raise NotOwner(f"partition {p} bucket {b} belongs to executor {owner}, not {self.spec.index}")
            store = stores.get((p, b))
            if store is None:
                continue
            if sel is None:  # the whole batch is one (partition, bucket)
                req, rows = store.lookup(keys, h_all, columns)
                if rows is not None and len(req):
                    found_idx.append(req)
                    tables.append(rows)
                continue
            sub = keys.take(pa.array(sel)) if not store.exact else keys
            req, rows = store.lookup(sub, h_all[sel], columns)
            if rows is not None and len(req):
                found_idx.append(sel[req])
                tables.append(rows)
        if not tables:
            return [], _ipc(state.out_schema(columns).empty_table())
        found = np.concatenate(found_idx) if len(found_idx) > 1 else found_idx[0]
        table = tables[0] if len(tables) == 1 else pa.concat_tables(tables)
        if len(found) > 1 and np.any(np.diff(found) < 0):
            order = np.argsort(found, kind="stable")
            table = table.take(pa.array(order))
            found = found[order]
        return found.tolist(), _ipc(table)

    async def wait_snapshot(self, state: TableState, snapshot_id: int, context) -> None:
        remaining = context.time_remaining()
        timeout = None if remaining is None else max(0.0, remaining - 0.05)

        async def until():
            async with state.changed:
                await state.changed.wait_for(lambda: state.snapshot_id >= snapshot_id)

        try:
            await asyncio.wait_for(until(), timeout)
        except asyncio.TimeoutError:
            await context.abort(
                grpc.StatusCode.DEADLINE_EXCEEDED,
                f"executor {self.spec.index} serves snapshot {state.snapshot_id} of {state.name}, "
                f"not yet {snapshot_id}",
            )

    # -- scanner messages ---------------------------------------------------------------------------------
    async def apply(self, msg: tuple) -> None:
        loop = asyncio.get_running_loop()
        kind, name = msg[0], msg[1]
        state = self.tables.get(name)
        if state is None:
            return
        if kind == "full":
            _, _, snapshot_id, commit_ms, buckets = msg
            stores, files, old = await loop.run_in_executor(self._apply_pool, state.prepare_full, buckets)
        elif kind == "delta":
            _, _, snapshot_id, commit_ms, commit_kind, changes = msg
            if not state.ready or snapshot_id <= state.snapshot_id:
                return
            if changes:
                stores, files, old = await loop.run_in_executor(
                    self._apply_pool, state.prepare_delta, commit_kind, changes)
            else:
                stores, files, old = state.stores, state.files, []
        else:
            return
        async with state.changed:
            state.stores, state.files = stores, files
            state.broken = state.broken_pending
            state.snapshot_id, state.commit_ms, state.ready = snapshot_id, commit_ms, True
            state.changed.notify_all()
        live = {id(s.base) for s in stores.values()}
        for s in old:
            if id(s.base) not in live:
                s.drop()

    def _reader_thread(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue) -> None:
        while True:
            try:
                msg = self.conn.recv()
            except (EOFError, OSError):
                if not self._stop.is_set():
                    self.stop_reason = self.stop_reason or "the service closed the connection"
                loop.call_soon_threadsafe(self._stop.set)  # the service is gone: so are we
                return
            loop.call_soon_threadsafe(queue.put_nowait, msg)
            if msg == ("stop",):
                return

    async def _apply_loop(self, queue: asyncio.Queue) -> None:
        while True:
            msg = await queue.get()
            if msg == ("stop",):
                self._stop.set()
                return
            try:
                await self.apply(msg)
            except Exception:
                log.exception("executor %s failed to apply %s", self.spec.index, msg[:3])
                self.stop_reason = f"failed to apply {msg[:3]}"
                self._stop.set()  # the supervisor restarts us from a full state
                return

    # -- address server -----------------------------------------------------------------------------------
    def _serving(self) -> List[pb.TableServing]:
        out = []
        for name, st in self.tables.items():
            buckets = [pb.BucketInfo(partition=partition_path(st.routing.partition_keys, k[0]), bucket=k[1],
                                     rows=s.rows) for k, s in sorted(st.stores.items(), key=lambda kv: (str(kv[0][0]), kv[0][1]))]
            out.append(pb.TableServing(table=name, snapshot_id=st.snapshot_id if st.ready else 0,
                                       commit_time_ms=st.commit_ms, keys=st.keys_held(), buckets=buckets))
        return out

    async def _heartbeats(self) -> None:
        channel = make_channel(self.spec.address_server, self.spec.security, self.spec.max_message_bytes)
        stub = pbg.AddressServiceStub(channel)
        md = self.spec.security.metadata()
        registered = False
        last_ok = time.monotonic()
        try:
            while not self._stop.is_set():
                if self.orphan_timeout is not None and time.monotonic() - last_ok > self.orphan_timeout:
                    self.stop_reason = f"no address server for {self.orphan_timeout:.0f}s"
                    log.error("executor %s: %s, stopping", self.spec.index, self.stop_reason)
                    self._stop.set()
                    return
                try:
                    if not registered:
                        await stub.Register(pb.RegisterRequest(
                            executor_index=self.spec.index, address=self.address, pid=os.getpid(),
                            instance_id=self.instance_id), timeout=2.0, metadata=md)
                        registered = True
                    resp = await stub.Heartbeat(pb.HeartbeatRequest(
                        executor_index=self.spec.index, instance_id=self.instance_id, tables=self._serving(),
                        requests=self.requests, keys_looked_up=self.keys_looked_up), timeout=2.0, metadata=md)
                    last_ok = time.monotonic()
                    if not resp.known:
                        registered = False
                        continue
                except grpc.aio.AioRpcError as e:
                    if e.code() == grpc.StatusCode.UNAUTHENTICATED:
                        log.error("address server refused our token")
                    registered = False
                try:
                    await asyncio.wait_for(self._stop.wait(), self.spec.heartbeat_interval)
                except asyncio.TimeoutError:
                    pass
        finally:
            await channel.close()

    # -- life cycle ---------------------------------------------------------------------------------------
    async def _open_tables(self) -> None:
        from ..catalog import open_table

        def open_all():
            catalog = self.spec.catalog.open()
            out = {}
            for name in self.spec.tables:
                table = open_table(name, catalog)
                out[name] = TableState(name, table, os.path.join(self.root, name))
            return out

        os.makedirs(self.root, mode=0o700, exist_ok=True)
        self.tables = await asyncio.to_thread(open_all)

    async def start(self) -> None:
        await self._open_tables()
        self.server = grpc.aio.server(
            options=server_options(self.spec.max_message_bytes),
            interceptors=self.spec.security.server_interceptors(),
        )
        pbg.add_ExecutorServiceServicer_to_server(ExecutorServicer(self), self.server)
        port = add_port(self.server, f"{self.spec.host}:0", self.spec.security)
        await self.server.start()
        host = self.spec.host
        if host in ("0.0.0.0", "::", "[::]", ""):
            import socket

            host = socket.getfqdn()
        self.address = f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()
        await self.start()
        tasks = [asyncio.create_task(self._heartbeats()), asyncio.create_task(self._apply_loop(queue))]
        if self.conn is not None:
            threading.Thread(target=self._reader_thread, args=(loop, queue), daemon=True).start()
        self.queue = queue
        try:
            await self._stop.wait()
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.close()

    async def close(self) -> None:
        if self.server is not None:
            await self.server.stop(0.5)
            self.server = None
        self.pool.shutdown(wait=False, cancel_futures=True)
        self._apply_pool.shutdown(wait=False, cancel_futures=True)
        shutil.rmtree(self.root, ignore_errors=True)

    def stop(self) -> None:
        self._stop.set()


def executor_main(spec: ExecutorSpec, conn) -> None:
    """Entry point of an executor process."""
    import signal

    logging.basicConfig(level=os.environ.get("PAIMON_TAIL_LOG", "WARNING"),
                        format=f"executor-{spec.index} %(levelname)s %(message)s")
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the service stops us through the pipe
    os.umask(0o077)  # file copies, stores and every directory on the way: owner-only
    try:
        import uvloop

        runner = uvloop.run
    except ImportError:  # pragma: no cover
        runner = asyncio.run
    runner(Executor(spec, conn).run())
