"""``LookupClient``: point lookups against a running query service (async and sync).

    async with LookupClient("shop.orders", warehouse="/wh") as client:
        result = await client.lookup([42, 43])          # or {"id": 42, "dt": "2026-11-01"} for composite keys
        result.rows                                     # pyarrow.Table, found keys in request order
        result.missing                                  # request positions not found
    row = LookupClient("shop.orders", warehouse="/wh").get_sync(42)   # dict or None

Discovery: the registration in ``<table>/service/`` → the address server → executors. Keys are routed client-side
(Paimon's bucket hash, Paimon's executor assignment), grouped per executor and sent as concurrent batches. Every
call has a deadline; when an executor moved or died the client re-discovers and retries with backoff, within
the total ``timeout``, then fails with one line. It never hangs.
"""
from __future__ import annotations

import asyncio
import random
import threading
import time
from typing import Any, AsyncIterator, Dict, List, Mapping, Optional, Sequence

import grpc
import numpy as np
import pyarrow as pa

from ..catalog import CatalogConfig, catalog_config, open_table
from ..compat.table_meta import read_local, table_meta
from ..errors import PaimonTailError, ServiceError, UsageError
from . import lookup_pb2 as pb
from . import lookup_pb2_grpc as pbg
from . import registration as regmod
from .keys import KeyParser
from .routing import TableRouting, channel
from .bucket_hash import channels_of
from .security import Security, make_channel, make_sync_channel
from .wire import indices, ipc_stream

DEFAULT_BATCH = 10_000
DEFAULT_MAX_MESSAGE_BYTES = 64 << 20


def _unreachable(error) -> str:
    """Why an address server could not be reached, in words a user can act on."""
    if not isinstance(error, grpc.RpcError) or not hasattr(error, "code"):
        return str(error)
    details = (error.details() or "") if hasattr(error, "details") else ""
    if "handshake" in details.lower():
        return f"{error.code().name}: TLS handshake failed; check --tls-ca, --tls-cert and --tls-key"
    return error.code().name


class LookupTimeout(ServiceError):
    """The service did not answer within the deadline."""


class LookupResult:
    """Found rows (request order), their request positions, the missing positions and the snapshot(s) answered."""

    __slots__ = ("rows", "found", "missing", "snapshot_ids", "_keys", "_key_table")

    def __init__(self, rows: pa.Table, found: List[int], missing: List[int],
                 snapshot_ids: Optional[Dict[int, int]] = None, keys: Optional[List[Dict[str, Any]]] = None,
                 key_table: Optional[pa.Table] = None) -> None:
        self.rows = rows  # found rows, ordered by request position
        self.found = found  # request position of each row
        self.missing = missing  # request positions not found (absent or deleted)
        self.snapshot_ids = snapshot_ids if snapshot_ids is not None else {}  # executor index → snapshot
        self._keys = keys
        self._key_table = key_table

    @property
    def key_table(self) -> pa.Table:
        """The keys as an Arrow table typed as the key columns, in request order."""
        if self._key_table is None:
            raise ValueError("this result was built without its key table")
        return self._key_table

    @property
    def keys(self) -> List[Dict[str, Any]]:
        """The parsed keys, in request order (built on first use when the keys came as Arrow/scalars)."""
        if self._keys is None:
            self._keys = self._key_table.to_pylist() if self._key_table is not None else []
        return self._keys

    def key(self, pos: int) -> Dict[str, Any]:
        """The key at request position ``pos`` (without building every key as a dict)."""
        if self._keys is not None:
            return self._keys[pos]
        return self._key_table.slice(pos, 1).to_pylist()[0]

    def __len__(self) -> int:
        if self._keys is not None:
            return len(self._keys)
        return self._key_table.num_rows if self._key_table is not None else 0

    @property
    def snapshot_id(self) -> int:
        """The lowest snapshot any answer reflects."""
        return min(self.snapshot_ids.values()) if self.snapshot_ids else 0

    def aligned(self) -> List[Optional[Dict[str, Any]]]:
        """One entry per requested key: the row as a dict, or None."""
        out: List[Optional[Dict[str, Any]]] = [None] * len(self)
        for pos, row in zip(self.found, self.rows.to_pylist()):
            out[pos] = row
        return out

    def __repr__(self) -> str:
        return (f"LookupResult(found={len(self.found)}, missing={len(self.missing)}, "
                f"snapshot_ids={self.snapshot_ids})")


class _Prepared:
    """Keys ready to send: one Arrow table typed as the key columns, each key's bucket and partition hash."""

    __slots__ = ("key_table", "buckets", "part_hashes", "keys", "n")

    def __init__(self, key_table: pa.Table, buckets: np.ndarray, part_hashes: np.ndarray,
                 keys: Optional[List[Dict[str, Any]]]) -> None:
        self.key_table = key_table
        self.buckets = buckets
        self.part_hashes = part_hashes
        self.keys = keys
        self.n = key_table.num_rows


class _Discovery:
    def __init__(self, registration: regmod.Registration, executors: pb.ExecutorsResponse) -> None:
        self.registration = registration
        self.executors = executors
        self.at = time.monotonic()


class LookupClient:
    def __init__(self, table, catalog: Optional[CatalogConfig] = None, *, warehouse: Optional[str] = None,
                 options: Mapping[str, str] | Sequence[str] = (), config_file: Optional[str] = None,
                 security: Optional[Security] = None, timeout: float = 10.0, call_timeout: float = 2.0,
                 batch_size: int = DEFAULT_BATCH, max_in_flight: int = 64) -> None:
        if isinstance(table, str):
            if catalog is None:
                catalog = catalog_config(warehouse, options, config_file)
            # a local warehouse: the schema file is all a client reads (no pypaimon catalog, ~0.8 s of imports)
            meta = read_local(table, dict(catalog.options)) if isinstance(catalog, CatalogConfig) else None
            table = meta if meta is not None else open_table(table, catalog)
        self.meta = table_meta(table)
        self.table = self.meta.table  # the pypaimon table when one was opened (None for a local schema read)
        self.name = self.meta.name
        self.routing = TableRouting.of(self.meta)
        self.parser = KeyParser(self.meta)
        self.security = security if security is not None else Security.from_options()
        self.timeout = timeout
        self.call_timeout = call_timeout
        self.batch_size = max(1, batch_size)
        self.max_in_flight = max(1, max_in_flight)
        self._discovery: Optional[_Discovery] = None
        self._channels: Dict[str, grpc.aio.Channel] = {}
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._sem: Optional[asyncio.Semaphore] = None
        self._sync: Optional[_SyncRunner] = None
        # synchronous fast path: plain grpc channels used from the calling thread (no event-loop hop)
        self._sync_channels: Dict[str, grpc.Channel] = {}
        self._sync_stubs: Dict[str, pbg.ExecutorServiceStub] = {}
        self._sync_lock = threading.Lock()
        self._columns = set(self.meta.field_names)
        self._empty_schemas: Dict[tuple, pa.Schema] = {}

    # -- discovery ----------------------------------------------------------------------------------------
    def _registration(self) -> regmod.Registration:
        reg = regmod.parse(self.meta.read_text(regmod.SERVICE_FILE))
        if reg is None:
            raise ServiceError(f"no query service is registered for {self.name}",
                               hint=f"start one with: paimon-tail serve {self.name}")
        if reg.tls and not self.security.tls:
            raise ServiceError(f"the service for {self.name} uses TLS", hint="pass --tls-ca (and a client certificate for mutual TLS)")
        if reg.auth == "token" and not self.security.token:
            raise ServiceError(f"the service for {self.name} requires a token",
                               hint="set PAIMON_TAIL_TOKEN or pass --token-file")
        return reg

    def _unreachable_error(self, reg: regmod.Registration, last: Optional[BaseException]) -> ServiceError:
        """A registration whose lease ran out is still tried (a service that cannot reach its storage cannot
        renew it, yet answers); only when its address server does not answer either is the service gone."""
        if not reg.is_live():
            ago = (regmod.now_ms() - reg.heartbeat_ms) / 1000
            return ServiceError(f"no live service for {self.name}: the registration of {reg.describe()} "
                                f"expired (last heartbeat {ago:.0f}s ago)")
        return ServiceError(f"no live service for {self.name}: the address server at "
                            f"{', '.join(reg.addresses)} does not answer ({_unreachable(last)})")

    @staticmethod
    def _budget(reg: regmod.Registration, deadline: float) -> float:
        # The address server refusing connections means the service is gone (or restarting): try briefly; an
        # expired registration more briefly still.
        return min(deadline, time.monotonic() + (2.0 if reg.is_live() else 0.5))

    def _channel(self, address: str) -> grpc.aio.Channel:
        ch = self._channels.get(address)
        if ch is None:
            ch = make_channel(address, self.security, DEFAULT_MAX_MESSAGE_BYTES)
            self._channels[address] = ch
        return ch

    async def _drop_channel(self, address: str) -> None:
        ch = self._channels.pop(address, None)
        if ch is not None:
            await ch.close(grace=None)

    async def discover(self, deadline: float, force: bool = False) -> _Discovery:
        if self._discovery is not None and not force:
            return self._discovery
        reg = await asyncio.to_thread(self._registration)
        last: Optional[BaseException] = None
        delay = 0.05
        budget_end = self._budget(reg, deadline)
        while True:
            for address in reg.addresses:
                try:
                    stub = pbg.AddressServiceStub(self._channel(address))
                    resp = await stub.Executors(
                        pb.ExecutorsRequest(table=self.name), timeout=max(0.05, min(1.0, deadline - time.monotonic())),
                        metadata=self.security.metadata(), wait_for_ready=False)
                    self._discovery = _Discovery(reg, resp)
                    return self._discovery
                except grpc.aio.AioRpcError as e:
                    self._raise_final(e, f"address server {address}")
                    last = e
                    await self._drop_channel(address)
            if time.monotonic() + delay >= budget_end:
                raise self._unreachable_error(reg, last)
            await asyncio.sleep(delay)
            delay = min(0.5, delay * 2)
            reg = await asyncio.to_thread(self._registration)

    def _raise_final(self, e: grpc.aio.AioRpcError, who: str) -> None:
        code = e.code()
        if code == grpc.StatusCode.UNAUTHENTICATED:
            raise ServiceError(f"{who} refused the credentials: {e.details()}",
                               hint="check PAIMON_TAIL_TOKEN / --token-file") from None
        if code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND, grpc.StatusCode.UNIMPLEMENTED,
                    grpc.StatusCode.DATA_LOSS):  # DATA_LOSS: a bucket whose files are missing or corrupt
            raise ServiceError(f"{who}: {e.details()}") from None

    # -- lookups ------------------------------------------------------------------------------------------
    def parse_keys(self, keys: Sequence[Any]) -> List[Dict[str, Any]]:
        return [self.parser.coerce(k, i) for i, k in enumerate(keys)]

    def _check_select(self, select) -> None:
        if select:
            unknown = [c for c in select if c not in self._columns]
            if unknown:
                names = self.meta.field_names
                raise UsageError(f"unknown column{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} in --select",
                                 hint=f"columns are {', '.join(names)}")

    def _fast_table(self, keys: Sequence[Any]) -> Optional[pa.Table]:
        """Plain ints/strs for a one-column integer/string key: one Arrow array, no per-key dicts."""
        if len(self.parser.names) != 1 or not len(keys):
            return None
        field = self.parser.arrow_schema.field(0)
        t = field.type
        if pa.types.is_integer(t):
            want = int
        elif pa.types.is_string(t) or pa.types.is_large_string(t):
            want = str
        else:
            return None
        if any(type(k) is not want for k in keys):
            return None
        try:
            arr = pa.array(keys, type=t)
        except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError):
            return None  # the per-key path names the key that does not fit
        return pa.Table.from_arrays([arr], schema=self.parser.arrow_schema)

    def _arrow_keys(self, keys: Any) -> pa.Table:
        if isinstance(keys, pa.RecordBatch):
            keys = pa.Table.from_batches([keys])
        missing = [k for k in self.parser.names if k not in keys.column_names]
        if missing:
            raise UsageError(f"the key table lacks column{'s' if len(missing) > 1 else ''} {', '.join(missing)}",
                             hint=f"the primary key is ({', '.join(self.parser.names)})")
        table = keys.select(self.parser.names)
        if any(table.column(k).null_count for k in self.parser.names):
            raise UsageError("primary-key values cannot be null")
        try:
            return table.cast(self.parser.arrow_schema)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise UsageError(f"the key table does not fit the key columns: {e}") from None

    def prepare(self, keys: Any, parsed: bool = False) -> _Prepared:
        """Parse keys (mappings, scalars, tuples, or an Arrow table/record batch of the key columns) and route them."""
        parsed_keys: Optional[List[Dict[str, Any]]] = None
        if isinstance(keys, (pa.Table, pa.RecordBatch)):
            table = self._arrow_keys(keys)
        else:
            table = None if parsed else self._fast_table(keys)
            if table is None:
                parsed_keys = list(keys) if parsed else self.parse_keys(keys)
                table = self.parser.to_arrow(parsed_keys)
        n = table.num_rows
        routing = self.routing
        if n == 1 and parsed_keys is not None:  # one key: pypaimon's scalar hash beats array set-up
            key = parsed_keys[0]
            buckets = np.asarray([routing.bucket(key)], dtype=np.int32)
            part_hashes = np.asarray([routing.partition_hash(routing.partition_of(key))], dtype=np.int64)
        else:
            buckets = routing.buckets_of(table)
            part_hashes = routing.partition_hashes_of(table)
        return _Prepared(table, buckets, part_hashes, parsed_keys)

    def _plan(self, prep: _Prepared, pending: np.ndarray, disc: "_Discovery"):
        num = disc.executors.num_executors
        if len(pending) == 1:
            i = int(pending[0])
            return [(channel(int(prep.part_hashes[i]), int(prep.buckets[i]), num), pending)]
        max_batch = min(self.batch_size, disc.executors.max_batch_keys or self.batch_size)
        owners = channels_of(prep.part_hashes[pending], prep.buckets[pending], num)
        jobs = []
        first = int(owners[0])
        groups = [(first, pending)] if np.all(owners == first) else \
            [(int(ex), pending[owners == ex]) for ex in np.unique(owners)]
        for ex, idx in groups:
            for s in range(0, len(idx), max_batch):
                jobs.append((ex, idx[s:s + max_batch]))
        return jobs

    def _request(self, prep: _Prepared, idx: np.ndarray, select, min_snapshot) -> pb.LookupRequest:
        sub = prep.key_table if len(idx) == prep.n else prep.key_table.take(indices(idx))
        return pb.LookupRequest(table=self.name, keys_ipc=_ipc(sub), buckets=prep.buckets[idx].tolist(),
                                min_snapshot_id=min_snapshot or 0, select=list(select or ()))

    def _answer(self, ex: int, resp) -> tuple:
        try:
            table = pa.ipc.open_stream(resp.rows_ipc).read_all()
        except Exception as e:
            raise ServiceError(f"executor {ex} sent an unreadable answer: {e}") from None
        return resp.snapshot_id, resp.found, table

    def _assemble(self, prep: _Prepared, found_pos, tables, snapshots, schema, select) -> LookupResult:
        n = prep.n
        if found_pos:
            found = np.concatenate(found_pos) if len(found_pos) > 1 else found_pos[0]
            rows = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
            if len(found) > 1 and np.any(np.diff(found) < 0):
                order = np.argsort(found, kind="stable")
                rows, found = rows.take(indices(order)), found[order]
        else:
            found = np.empty(0, dtype=np.int64)
            rows = (schema or self._schema(select)).empty_table()
        if len(found) == n:
            missing: List[int] = []
        else:
            missing_mask = np.ones(n, dtype=bool)
            missing_mask[found] = False
            missing = np.flatnonzero(missing_mask).tolist()
        return LookupResult(rows, found.tolist(), missing, snapshots, prep.keys, prep.key_table)

    @staticmethod
    def _backoff(attempt: int) -> float:
        return min(1.0, 0.05 * (2 ** min(attempt, 5))) * (0.5 + random.random() / 2)

    async def lookup(self, keys: Any, *, select: Optional[Sequence[str]] = None,
                     min_snapshot: Optional[int] = None, timeout: Optional[float] = None,
                     parsed: bool = False) -> LookupResult:
        """Latest merged rows for ``keys`` (mappings, scalars for one-column keys, tuples in key order, or an
        Arrow table / record batch with the key columns)."""
        if self._loop is not asyncio.get_running_loop():
            self._loop = asyncio.get_running_loop()
            self._channels = {}
            self._sem = asyncio.Semaphore(self.max_in_flight)
        prep = self.prepare(keys, parsed)
        self._check_select(select)
        total = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + total
        answers = _Answers(prep.n)
        while len(answers.pending):
            disc = await self.discover(deadline, force=answers.attempt > 0)
            jobs = self._plan(prep, answers.pending, disc)
            results = await asyncio.gather(*[
                self._call(disc, ex, idx, prep, select, min_snapshot, deadline) for ex, idx in jobs
            ])
            answers.absorb(jobs, results)
            if len(answers.pending):
                await asyncio.sleep(answers.backoff(self, deadline, total))
        return self._assemble(prep, answers.found_pos, answers.tables, answers.snapshots, answers.schema, select)

    def _schema(self, select) -> pa.Schema:
        from pypaimon.schema.data_types import PyarrowFieldParser

        schema = PyarrowFieldParser.from_paimon_schema(self.meta.data_fields())
        return pa.schema([schema.field(c) for c in select]) if select else schema

    async def _call(self, disc: "_Discovery", ex: int, idx: np.ndarray, prep: _Prepared, select, min_snapshot,
                    deadline: float):
        info = disc.executors.executors[ex] if ex < len(disc.executors.executors) else None
        if info is None or not info.address or not info.alive:
            return _Retry(f"executor {ex} is not available (restarting?)")
        request = self._request(prep, idx, select, min_snapshot)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return _Retry(f"executor {ex} at {info.address}: out of time")
        call_timeout = remaining if min_snapshot else min(self.call_timeout, remaining)
        stub = pbg.ExecutorServiceStub(self._channel(info.address))
        try:
            async with self._sem:
                resp = await stub.Lookup(request, timeout=call_timeout, metadata=self.security.metadata())
        except grpc.aio.AioRpcError as e:
            reason, drop = self._call_error(e, ex, info.address, call_timeout, min_snapshot)
            if drop:
                await self._drop_channel(info.address)
            return _Retry(reason)
        return self._answer(ex, resp)

    def _call_error(self, e: grpc.RpcError, ex: int, address: str, call_timeout: float, min_snapshot):
        """(retry reason, drop the channel?) for a failed Lookup call; raises for final errors."""
        code = e.code()
        self._raise_final(e, f"executor {ex} at {address}")
        if code == grpc.StatusCode.DEADLINE_EXCEEDED and min_snapshot and e.details() and "serves snapshot" in e.details():
            raise LookupTimeout(f"{e.details()} (waited {call_timeout:.1f}s)") from None
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            reason = f"executor {ex} at {address} did not answer within {call_timeout:.1f}s"
        else:
            reason = f"executor {ex} at {address}: {code.name} {e.details() or ''}".strip()
        return reason, code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)

    async def lookup_batches(self, batches: Any, *, select: Optional[Sequence[str]] = None,
                             min_snapshot: Optional[int] = None, timeout: Optional[float] = None,
                             in_flight: int = 4) -> AsyncIterator[LookupResult]:
        """``lookup`` of many key tables (an iterable or async iterable), results in order: up to ``in_flight``
        tables are being looked up while the caller consumes earlier results and the source produces later keys.
        An error from the source or a lookup is raised after the results before it."""
        queue: asyncio.Queue = asyncio.Queue(maxsize=max(1, in_flight))
        done = object()

        async def produce() -> None:
            try:
                if hasattr(batches, "__aiter__"):
                    async for keys in batches:
                        await queue.put(asyncio.ensure_future(
                            self.lookup(keys, select=select, min_snapshot=min_snapshot, timeout=timeout)))
                else:
                    for keys in batches:
                        await queue.put(asyncio.ensure_future(
                            self.lookup(keys, select=select, min_snapshot=min_snapshot, timeout=timeout)))
            except Exception as e:  # handed to the consumer, after the results before it
                await queue.put(e)
                return
            await queue.put(done)

        producer = asyncio.ensure_future(produce())
        try:
            while True:
                item = await queue.get()
                if item is done:
                    return
                if isinstance(item, Exception):
                    raise item
                yield await item
        finally:
            producer.cancel()
            while not queue.empty():
                item = queue.get_nowait()
                if isinstance(item, asyncio.Future):
                    item.cancel()

    async def get(self, key: Any, **kwargs) -> Optional[Dict[str, Any]]:
        result = await self.lookup([key], **kwargs)
        return result.aligned()[0]

    async def executors(self) -> pb.ExecutorsResponse:
        return (await self.discover(time.monotonic() + self.timeout, force=True)).executors

    async def status(self) -> pb.StatusResponse:
        deadline = time.monotonic() + self.timeout
        disc = await self.discover(deadline, force=True)
        address = disc.registration.addresses[0]
        try:
            return await pbg.AddressServiceStub(self._channel(address)).Status(
                pb.StatusRequest(table=self.name), timeout=max(0.1, deadline - time.monotonic()),
                metadata=self.security.metadata())
        except grpc.aio.AioRpcError as e:
            self._raise_final(e, f"address server {address}")
            raise ServiceError(f"address server {address}: {e.code().name} {e.details() or ''}".strip()) from None

    async def close(self) -> None:
        self._close_sync_channels()
        channels, self._channels = self._channels, {}
        for ch in channels.values():
            await ch.close(grace=None)
        if self._sync is not None:
            sync, self._sync = self._sync, None
            sync.close()

    async def __aenter__(self) -> "LookupClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    # -- synchronous API ----------------------------------------------------------------------------------
    def _runner(self) -> "_SyncRunner":
        if self._sync is None:
            self._sync = _SyncRunner()
        return self._sync

    # The synchronous path does not go through an event loop: plain (thread-safe) grpc channels called from the
    # caller's thread, one blocking call for one executor, ``.future()`` calls when keys span several executors.
    def _sync_channel(self, address: str) -> grpc.Channel:
        ch = self._sync_channels.get(address)
        if ch is None:
            with self._sync_lock:
                ch = self._sync_channels.get(address)
                if ch is None:
                    ch = make_sync_channel(address, self.security, DEFAULT_MAX_MESSAGE_BYTES)
                    self._sync_channels[address] = ch
        return ch

    def _sync_stub(self, address: str) -> pbg.ExecutorServiceStub:
        stub = self._sync_stubs.get(address)
        if stub is None:
            stub = pbg.ExecutorServiceStub(self._sync_channel(address))
            self._sync_stubs[address] = stub
        return stub

    def _drop_sync_channel(self, address: str) -> None:
        with self._sync_lock:
            ch = self._sync_channels.pop(address, None)
            self._sync_stubs.pop(address, None)
        if ch is not None:
            ch.close()

    def discover_sync(self, deadline: float, force: bool = False) -> _Discovery:
        disc = self._discovery
        if disc is not None and not force:
            return disc
        reg = self._registration()
        last: Optional[BaseException] = None
        delay = 0.05
        budget_end = self._budget(reg, deadline)
        md = self.security.metadata()
        while True:
            for address in reg.addresses:
                try:
                    stub = pbg.AddressServiceStub(self._sync_channel(address))
                    resp = stub.Executors(pb.ExecutorsRequest(table=self.name),
                                          timeout=max(0.05, min(1.0, deadline - time.monotonic())), metadata=md)
                    self._discovery = _Discovery(reg, resp)
                    return self._discovery
                except grpc.RpcError as e:
                    self._raise_final(e, f"address server {address}")
                    last = e
                    self._drop_sync_channel(address)
            if time.monotonic() + delay >= budget_end:
                raise self._unreachable_error(reg, last)
            time.sleep(delay)
            delay = min(0.5, delay * 2)
            reg = self._registration()

    def lookup_sync(self, keys: Any, *, select: Optional[Sequence[str]] = None, min_snapshot: Optional[int] = None,
                    timeout: Optional[float] = None, parsed: bool = False) -> LookupResult:
        """``lookup`` without an event loop (same arguments, same result, same retries)."""
        prep = self.prepare(keys, parsed)
        self._check_select(select)
        total = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + total
        md = self.security.metadata()
        answers = _Answers(prep.n)
        while len(answers.pending):
            disc = self.discover_sync(deadline, force=answers.attempt > 0)
            jobs = self._plan(prep, answers.pending, disc)
            results: List[Any] = [None] * len(jobs)
            calls = []
            for j, (ex, idx) in enumerate(jobs):
                info = disc.executors.executors[ex] if ex < len(disc.executors.executors) else None
                if info is None or not info.address or not info.alive:
                    results[j] = _Retry(f"executor {ex} is not available (restarting?)")
                    continue
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    results[j] = _Retry(f"executor {ex} at {info.address}: out of time")
                    continue
                call_timeout = remaining if min_snapshot else min(self.call_timeout, remaining)
                calls.append((j, ex, info.address, call_timeout, self._request(prep, idx, select, min_snapshot)))
            if len(calls) == 1:
                j, ex, address, call_timeout, request = calls[0]
                try:
                    results[j] = self._answer(ex, self._sync_stub(address).Lookup(
                        request, timeout=call_timeout, metadata=md))
                except grpc.RpcError as e:
                    reason, drop = self._call_error(e, ex, address, call_timeout, min_snapshot)
                    if drop:
                        self._drop_sync_channel(address)
                    results[j] = _Retry(reason)
            else:
                for w in range(0, len(calls), self.max_in_flight):
                    wave = calls[w:w + self.max_in_flight]
                    futures = [(c, self._sync_stub(c[2]).Lookup.future(c[4], timeout=c[3], metadata=md))
                               for c in wave]
                    for (j, ex, address, call_timeout, _), fut in futures:
                        try:
                            results[j] = self._answer(ex, fut.result())
                        except grpc.RpcError as e:
                            reason, drop = self._call_error(e, ex, address, call_timeout, min_snapshot)
                            if drop:
                                self._drop_sync_channel(address)
                            results[j] = _Retry(reason)
            answers.absorb(jobs, results)
            if len(answers.pending):
                time.sleep(answers.backoff(self, deadline, total))
        return self._assemble(prep, answers.found_pos, answers.tables, answers.snapshots, answers.schema, select)

    def get_sync(self, key: Any, **kwargs) -> Optional[Dict[str, Any]]:
        result = self.lookup_sync([key], **kwargs)
        if not result.found:
            return None
        return result.rows.to_pylist()[0]

    def status_sync(self) -> pb.StatusResponse:
        return self._runner().run(self.status())

    def _close_sync_channels(self) -> None:
        with self._sync_lock:
            channels, self._sync_channels, self._sync_stubs = self._sync_channels, {}, {}
        for ch in channels.values():
            ch.close()

    def close_sync(self) -> None:
        self._close_sync_channels()
        if self._sync is not None:
            sync = self._sync
            sync.run(self._close_channels())
            self._sync = None
            sync.close()

    async def _close_channels(self) -> None:
        channels, self._channels = self._channels, {}
        for ch in channels.values():
            await ch.close(grace=None)

    def __enter__(self) -> "LookupClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close_sync()


def _ipc(table: pa.Table) -> bytes:
    return ipc_stream(table)


class _Answers:
    """What the executors answered so far, across retries (one per lookup; shared by the async and sync paths)."""

    def __init__(self, n: int) -> None:
        self.found_pos: List[np.ndarray] = []
        self.tables: List[pa.Table] = []
        self.snapshots: Dict[int, int] = {}
        self.schema: Optional[pa.Schema] = None
        self.pending = np.arange(n)
        self.attempt = 0
        self.last_error = ""

    def absorb(self, jobs, results) -> None:
        retry = []
        for (ex, idx), res in zip(jobs, results):
            if isinstance(res, _Retry):
                retry.append(idx)
                self.last_error = res.reason
                continue
            snap, positions, table = res
            self.snapshots[ex] = snap if ex not in self.snapshots else min(self.snapshots[ex], snap)
            self.schema = self.schema or table.schema
            if table.num_rows:
                self.found_pos.append(idx[np.asarray(positions, dtype=np.int64)])
                self.tables.append(table)
        self.pending = np.concatenate(retry) if retry else np.empty(0, dtype=np.int64)

    def backoff(self, client: "LookupClient", deadline: float, total: float) -> float:
        """Seconds to wait before the next attempt; a clear error when that would pass the deadline."""
        self.attempt += 1
        wait = client._backoff(self.attempt)
        if time.monotonic() + wait >= deadline:
            raise LookupTimeout(f"lookup in {client.name} did not complete within {total:g}s: {self.last_error}")
        return wait


class _Retry:
    def __init__(self, reason: str) -> None:
        self.reason = reason


class _SyncRunner:
    """An event loop in a daemon thread, so sync callers reuse channels across calls."""

    def __init__(self) -> None:
        try:
            import uvloop

            self.loop = uvloop.new_event_loop()
        except ImportError:  # pragma: no cover
            self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="lookup-client")
        self.thread.start()

    def run(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=2)


__all__ = ["LookupClient", "LookupResult", "LookupTimeout", "PaimonTailError"]
