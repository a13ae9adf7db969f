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
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

import grpc
import numpy as np
import pyarrow as pa

from ..catalog import CatalogConfig, catalog_config, open_table
from ..errors import PaimonTailError, ServiceError, UsageError
from . import lookup_pb2 as pb
from . import lookup_pb2_grpc as pbg
from . import registration as regmod
from .keys import KeyParser
from .routing import TableRouting
from .security import Security, make_channel

DEFAULT_BATCH = 10_000
DEFAULT_MAX_MESSAGE_BYTES = 64 << 20


class LookupTimeout(ServiceError):
    """The service did not answer within the deadline."""


@dataclass
class LookupResult:
    rows: pa.Table  # found rows, ordered by request position
    found: List[int]  # request position of each row
    missing: List[int]  # request positions not found (absent or deleted)
    snapshot_ids: Dict[int, int] = field(default_factory=dict)  # executor index → snapshot it answered at
    keys: List[Dict[str, Any]] = field(default_factory=list)  # the parsed keys, in request order

    @property
    def snapshot_id(self) -> int:
        """The lowest snapshot any answer reflects."""
        return min(self.snapshot_ids.values()) if self.snapshot_ids else 0

    def aligned(self) -> List[Optional[Dict[str, Any]]]:
        """One entry per requested key: the row as a dict, or None."""
        out: List[Optional[Dict[str, Any]]] = [None] * len(self.keys)
        for pos, row in zip(self.found, self.rows.to_pylist()):
            out[pos] = row
        return out


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
            table = open_table(table, catalog)
        self.table = table
        self.name = table.identifier.get_full_name() if hasattr(table.identifier, "get_full_name") \
            else str(table.identifier)
        self.routing = TableRouting.of(table)
        self.parser = KeyParser(table)
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

    # -- discovery ----------------------------------------------------------------------------------------
    def _registration(self) -> regmod.Registration:
        reg = regmod.read(self.table)
        if reg is None:
            raise ServiceError(f"no query service is registered for {self.name}",
                               hint=f"start one with: paimon-tail serve {self.name}")
        if not reg.is_live():
            ago = (regmod.now_ms() - reg.heartbeat_ms) / 1000
            raise ServiceError(f"no live service for {self.name}: the registration of {reg.describe()} "
                               f"expired (last heartbeat {ago:.0f}s ago)")
        if reg.tls and not self.security.tls:
            raise ServiceError(f"the service for {self.name} uses TLS", hint="pass --tls-ca (and a client certificate for mutual TLS)")
        if reg.auth == "token" and not self.security.token:
            raise ServiceError(f"the service for {self.name} requires a token",
                               hint="set PAIMON_TAIL_TOKEN or pass --token-file")
        return reg

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
        # The address server refusing connections means the service is gone (or restarting): try briefly.
        budget_end = min(deadline, time.monotonic() + 2.0)
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
                detail = last.code().name if isinstance(last, grpc.aio.AioRpcError) else str(last)
                raise ServiceError(f"no live service for {self.name}: the address server at "
                                   f"{', '.join(reg.addresses)} does not answer ({detail})")
            await asyncio.sleep(delay)
            delay = min(0.5, delay * 2)
            reg = await asyncio.to_thread(self._registration)

    def _raise_final(self, e: grpc.aio.AioRpcError, who: str) -> None:
        code = e.code()
        if code == grpc.StatusCode.UNAUTHENTICATED:
            raise ServiceError(f"{who} refused the credentials: {e.details()}",
                               hint="check PAIMON_TAIL_TOKEN / --token-file") from None
        if code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND, grpc.StatusCode.UNIMPLEMENTED):
            raise ServiceError(f"{who}: {e.details()}") from None

    # -- lookups ------------------------------------------------------------------------------------------
    def parse_keys(self, keys: Sequence[Any]) -> List[Dict[str, Any]]:
        return [self.parser.coerce(k, i) for i, k in enumerate(keys)]

    async def lookup(self, keys: Sequence[Any], *, select: Optional[Sequence[str]] = None,
                     min_snapshot: Optional[int] = None, timeout: Optional[float] = None,
                     parsed: bool = False) -> LookupResult:
        """Latest merged rows for ``keys`` (mappings, scalars for one-column keys, or tuples in key order)."""
        if self._loop is not asyncio.get_running_loop():
            self._loop = asyncio.get_running_loop()
            self._channels = {}
            self._sem = asyncio.Semaphore(self.max_in_flight)
        keys = list(keys) if parsed else self.parse_keys(keys)
        if select:
            names = [f.name for f in self.table.fields]
            unknown = [c for c in select if c not in names]
            if unknown:
                raise UsageError(f"unknown column{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} in --select",
                                 hint=f"columns are {', '.join(names)}")
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        n = len(keys)
        buckets = np.empty(n, dtype=np.int32)
        parts = []
        for i, key in enumerate(keys):
            buckets[i] = self.routing.bucket(key)
            parts.append(self.routing.partition_of(key))
        key_table = self.parser.to_arrow(keys)

        found_pos: List[np.ndarray] = []
        tables: List[pa.Table] = []
        snapshots: Dict[int, int] = {}
        pending = np.arange(n)
        attempt = 0
        last_error = ""
        schema: Optional[pa.Schema] = None
        while len(pending):
            disc = await self.discover(deadline, force=attempt > 0)
            num = disc.executors.num_executors
            max_batch = min(self.batch_size, disc.executors.max_batch_keys or self.batch_size)
            owners = np.asarray([self.routing.executor_of(parts[i], int(buckets[i]), num) for i in pending],
                                dtype=np.int64)
            jobs = []
            for ex in np.unique(owners):
                idx = pending[owners == ex]
                for s in range(0, len(idx), max_batch):
                    jobs.append((int(ex), idx[s:s + max_batch]))
            results = await asyncio.gather(*[
                self._call(disc, ex, idx, key_table, buckets, select, min_snapshot, deadline) for ex, idx in jobs
            ])
            retry = []
            for (ex, idx), res in zip(jobs, results):
                if isinstance(res, _Retry):
                    retry.append(idx)
                    last_error = res.reason
                    continue
                snap, positions, table = res
                snapshots[ex] = snap if ex not in snapshots else min(snapshots[ex], snap)
                schema = schema or table.schema
                if table.num_rows:
                    found_pos.append(idx[np.asarray(positions, dtype=np.int64)])
                    tables.append(table)
            pending = np.concatenate(retry) if retry else np.empty(0, dtype=np.int64)
            if len(pending):
                attempt += 1
                backoff = min(1.0, 0.05 * (2 ** min(attempt, 5))) * (0.5 + random.random() / 2)
                if time.monotonic() + backoff >= deadline:
                    raise LookupTimeout(f"lookup in {self.name} did not complete within "
                                        f"{self.timeout if timeout is None else timeout:g}s: {last_error}")
                await asyncio.sleep(backoff)
        if found_pos:
            found = np.concatenate(found_pos)
            rows = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
            order = np.argsort(found, kind="stable")
            rows, found = rows.take(pa.array(order)), found[order]
        else:
            found = np.empty(0, dtype=np.int64)
            rows = (schema or self._schema(select)).empty_table()
        missing_mask = np.ones(n, dtype=bool)
        missing_mask[found] = False
        return LookupResult(rows, found.tolist(), np.nonzero(missing_mask)[0].tolist(), snapshots, keys)

    def _schema(self, select) -> pa.Schema:
        from pypaimon.schema.data_types import PyarrowFieldParser

        schema = PyarrowFieldParser.from_paimon_schema(self.table.fields)
        return pa.schema([schema.field(c) for c in select]) if select else schema

    async def _call(self, disc: _Discovery, ex: int, idx: np.ndarray, key_table: pa.Table, buckets: np.ndarray,
                    select, min_snapshot, deadline: float):
        info = disc.executors.executors[ex] if ex < len(disc.executors.executors) else None
        if info is None or not info.address or not info.alive:
            return _Retry(f"executor {ex} is not available (restarting?)")
        sub = key_table.take(pa.array(idx))
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, sub.schema) as w:
            w.write_table(sub)
        request = pb.LookupRequest(table=self.name, keys_ipc=sink.getvalue().to_pybytes(),
                                   buckets=buckets[idx].tolist(), min_snapshot_id=min_snapshot or 0,
                                   select=list(select or ()))
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return _Retry(f"executor {ex} at {info.address}: out of time")
        call_timeout = remaining if min_snapshot else min(self.call_timeout, remaining)
        stub = pbg.ExecutorServiceStub(self._channel(info.address))
        try:
            async with self._sem:
                resp = await stub.Lookup(request, timeout=call_timeout, metadata=self.security.metadata())
        except grpc.aio.AioRpcError as e:
            code = e.code()
            self._raise_final(e, f"executor {ex} at {info.address}")
            if code == grpc.StatusCode.DEADLINE_EXCEEDED and min_snapshot and e.details() and "serves snapshot" in e.details():
                raise LookupTimeout(f"{e.details()} (waited {call_timeout:.1f}s)") from None
            if code == grpc.StatusCode.DEADLINE_EXCEEDED:
                reason = f"executor {ex} at {info.address} did not answer within {call_timeout:.1f}s"
            else:
                reason = f"executor {ex} at {info.address}: {code.name} {e.details() or ''}".strip()
            if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                await self._drop_channel(info.address)
            return _Retry(reason)
        try:
            table = pa.ipc.open_stream(resp.rows_ipc).read_all()
        except Exception as e:
            raise ServiceError(f"executor {ex} sent an unreadable answer: {e}") from None
        return resp.snapshot_id, list(resp.found), table

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

    def lookup_sync(self, keys: Sequence[Any], **kwargs) -> LookupResult:
        return self._runner().run(self.lookup(keys, **kwargs))

    def get_sync(self, key: Any, **kwargs) -> Optional[Dict[str, Any]]:
        return self._runner().run(self.get(key, **kwargs))

    def status_sync(self) -> pb.StatusResponse:
        return self._runner().run(self.status())

    def close_sync(self) -> None:
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
