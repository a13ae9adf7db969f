"""``LookupClient``: point lookups against a running query service, async and sync.

    async with LookupClient("shop.orders", warehouse="/wh") as client:
        result = await client.lookup([42, 43])          # or {"id": 42, "dt": "2026-11-01"} for composite keys
        result.rows                                     # pyarrow.Table, found keys in request order
        result.missing                                  # request positions not found
        result.failed                                   # positions the service could not answer, and why
    row = LookupClient("shop.orders", warehouse="/wh").get_sync(42)   # dict or None

Discovery: the registration in ``<table>/service/`` → the coordinator's ``Executors`` (channels, owners,
addresses) → executors. Everything else is ``core.py``: this module holds the two transports that carry what
the core plans, the async one (grpc.aio, calls gathered, at most ``max_in_flight`` at once) and the sync one
(plain grpc channels from the caller's thread: no event loop, ``.future()`` calls when keys span executors).
Every call has a deadline; when an executor moved or died the client re-discovers and retries within the total
``timeout``, then fails with one line. It never hangs.
"""
from __future__ import annotations

import asyncio
import threading
import time
from contextlib import aclosing
from typing import Any, AsyncIterator, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import grpc
import numpy as np
import pyarrow as pa

from ...catalog import CatalogConfig, catalog_config, open_table, reload_table
from ...table_meta import read_local, table_meta
from ...concurrency import in_order_async
from ...errors import PaimonTailError, ServiceError, UsageError
from ..keys.parse import KeyParser
from ..keys.routing import TableRouting
from ..protocol import PROTOCOL_VERSION
from ..protocol import lookup_pb2 as pb
from ..protocol import lookup_pb2_grpc as pbg
from ..protocol import registration as regmod
from ..protocol.security import Security, make_channel, make_sync_channel
from ..protocol.wire import FirstRow, ipc_stream
from .coalesce import Coalescer
from .core import (Again, Deadline, Lookup, LookupResult, LookupTimeout, OneKey, Prepared, Route, check_registration,
                   check_select, discovery_deadline, address_failure, raise_final, retrying, run_async, run_sync,
                   unreachable_error)

DEFAULT_BATCH = 10_000
START_GRACE = 5.0  # seconds a lookup waits for a registration that is not there (a serve that is starting)
DEFAULT_MAX_MESSAGE_BYTES = 64 << 20
_INT_TYPES = ("TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT")
_TEXT_TYPES = ("STRING", "VARCHAR", "CHAR")


class LookupClient:
    def __init__(self, table, catalog: Optional[CatalogConfig] = None, *, warehouse: Optional[str] = None,
                 options: Mapping[str, str] | Sequence[str] = (), config_file: Optional[str] = None,
                 security: Optional[Security] = None, timeout: float = 10.0, call_timeout: float = 2.0,
                 batch_size: int = DEFAULT_BATCH, max_in_flight: int = 64, share_calls: bool = True,
                 on_wait: Optional[Callable[[str], None]] = None) -> None:
        if isinstance(table, str):
            if catalog is None:
                catalog = catalog_config(warehouse, options, config_file)
            # a local warehouse: the schema file is all a client reads (no pypaimon catalog, ~0.8 s of imports)
            meta = read_local(table, dict(catalog.options)) if isinstance(catalog, CatalogConfig) else None
            table = meta if meta is not None else open_table(table, catalog)
        self._catalog = catalog
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
        self._metadata = self.security.metadata()
        self._first_row = FirstRow()
        self._route: Optional[Route] = None
        self._typed_key = all(self.parser.types[k].split("(")[0].strip().upper() in _INT_TYPES + _TEXT_TYPES
                            for k in self.parser.names)
        # async transport: channels of the running loop
        self._channels: Dict[str, grpc.aio.Channel] = {}
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._sem: Optional[asyncio.Semaphore] = None
        # sync transport: plain (thread-safe) grpc channels used from the calling thread
        self._sync_channels: Dict[str, grpc.Channel] = {}
        self._sync_stubs: Dict[str, pbg.ExecutorServiceStub] = {}
        self._sync_lock = threading.Lock()
        # concurrent get_sync calls to one executor share gRPC calls (coalesce.py); share_calls=False: never
        self._coalescer = Coalescer(self._metadata, self._first_row) if share_calls else None
        self._no_partition = self.routing.partition_hash(())
        self.on_wait = on_wait  # told (once a lookup) when it waits for a service to be registered

    # -- keys (no I/O) ------------------------------------------------------------------------------------
    def parse_keys(self, keys: Sequence[Any]) -> List[Dict[str, Any]]:
        return [self.parser.coerce(k, i) for i, k in enumerate(keys)]

    def _fast_table(self, keys: Sequence[Any]) -> Optional[pa.Table]:
        """Plain ints/strs for a one-column integer/string key: one Arrow array, no per-key dicts."""
        if len(self.parser.names) != 1 or len(keys) < 2:
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

    def prepare(self, keys: Any, parsed: bool = False) -> Prepared:
        """Parse keys (mappings, scalars, tuples, or an Arrow table/record batch of the key columns) and route them."""
        routing = self.routing
        to_arrow = self.parser.to_arrow
        if isinstance(keys, (pa.Table, pa.RecordBatch)):
            table = self._arrow_keys(keys)
            return Prepared(routing.buckets_of(table), routing.partition_hashes_of(table), None, table, to_arrow)
        if len(keys) == 1:  # one key: Paimon's hash in plain Python, no Arrow unless the key needs it
            key = keys[0] if parsed else self.parser.coerce(keys[0], 0)
            one = None
            if self._typed_key:
                one = [pb.Value(int=v) if isinstance(v, int) else pb.Value(text=v)
                       for v in (key[k] for k in self.parser.names)]
            return Prepared(np.asarray([routing.bucket(key)], dtype=np.int32),
                            np.asarray([routing.partition_hash(routing.partition_of(key))], dtype=np.int64),
                            [key], None, to_arrow, one)
        table = None if parsed else self._fast_table(keys)
        parsed_keys = None
        if table is None:
            parsed_keys = list(keys) if parsed else self.parse_keys(keys)
            table = self.parser.to_arrow(parsed_keys)
        return Prepared(routing.buckets_of(table), routing.partition_hashes_of(table), parsed_keys, table, to_arrow)

    def _columns(self) -> List[str]:
        return self.meta.field_names

    def refresh_schema(self) -> List[str]:
        """Read the table's latest schema again (a writer may have added a column); returns its columns."""
        meta = None
        if self.table is None and isinstance(self._catalog, CatalogConfig):
            meta = read_local(self.name, dict(self._catalog.options))
        elif self.table is not None:
            meta = table_meta(reload_table(self.table))
        if meta is not None:
            self.meta = meta
            self.table = meta.table
        return self.meta.field_names

    def _empty_schema(self, select) -> pa.Schema:
        from pypaimon.schema.data_types import PyarrowFieldParser

        schema = PyarrowFieldParser.from_paimon_schema(self.meta.data_fields())
        return pa.schema([schema.field(c) for c in select]) if select else schema

    def _operation(self, keys, select, min_snapshot, timeout, parsed) -> Lookup:
        prep = self.prepare(keys, parsed)
        check_select(select, self.meta.field_names, self.refresh_schema)
        return Lookup(self.name, prep, select, min_snapshot, Deadline(self.timeout if timeout is None else timeout),
                      self.call_timeout, self.batch_size, self._empty_schema)

    def _one_key(self, key: Any, select, min_snapshot, timeout) -> OneKey:
        key = self.parser.coerce(key, 0)
        routing = self.routing
        bucket = routing.bucket(key)
        if select:
            select = list(select)
            check_select(select, self.meta.field_names, self.refresh_schema)
        if self._typed_key:  # the row comes back as values where the executor can (protocol 3)
            request = pb.LookupRequest(table=self.name, buckets=(bucket,), select=select,
                                       min_snapshot_id=min_snapshot or 0, protocol_version=PROTOCOL_VERSION,
                                       row_values=True)
            add = request.key.add
            for name in self.parser.names:
                v = key[name]
                if isinstance(v, int):
                    add(int=v)
                else:
                    add(text=v)
        else:
            request = pb.LookupRequest(table=self.name, buckets=(bucket,), select=select,
                                       min_snapshot_id=min_snapshot or 0, protocol_version=PROTOCOL_VERSION,
                                       keys_ipc=ipc_stream(self.parser.to_arrow([key])), row_values=True)
        part_hash = routing.partition_hash(routing.partition_of(key)) if routing.key_partition_keys else \
            self._no_partition
        return OneKey(self.name, request, bucket, part_hash, min_snapshot,
                      Deadline(self.timeout if timeout is None else timeout), self.call_timeout, self._first_row)

    def _routed(self, reg: regmod.Registration, resp: Optional[pb.ExecutorsResponse]) -> Optional[Route]:
        """The route an address server answered (``resp``), or, when none did, the registration's own executors
        (they answer from what they hold) unless standbys may take over; kept for the next lookups."""
        if resp is not None:
            self._route = Route(reg, resp)
        elif not reg.standbys:
            self._route = Route.from_registration(reg)
        else:
            return None
        return self._route

    def _registration(self, deadline: Optional[Deadline] = None) -> regmod.Registration:
        """The service's registration; with ``deadline``, one that is not there yet is waited for a while (a
        ``serve`` starting: ``serve db.t &`` then ``lookup db.t 1`` at once), within the deadline. One that is
        there but unreadable is named with what is wrong with it."""
        path = regmod.service_file(self.meta.branch)
        try:
            text = self.meta.read_text(path)
            if text is None and deadline is not None:  # (a file that is there but unreadable is no service starting)
                until = min(deadline.at, time.monotonic() + START_GRACE)
                if self.on_wait is not None and until > time.monotonic():
                    self.on_wait(f"waiting for {self.name} to be served")
                while text is None and time.monotonic() < until:
                    time.sleep(0.05)
                    text = self.meta.read_text(path)
            why = regmod.problem_of(text)
        except ValueError as e:  # not UTF-8
            from ...storage.files import problem

            text, why = None, problem(e)
        reg = regmod.parse(text)
        unreadable = f"its registration file {self.meta.path}/{path} {why.replace('it ', '', 1)}" \
            if reg is None and why else None
        return check_registration(reg, self.name, self.security.tls, bool(self.security.token), unreadable)

    # -- async transport ----------------------------------------------------------------------------------
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

    def _bind_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # channels and the semaphore belong to one loop
            self._loop = loop
            self._channels = {}
            self._sem = asyncio.Semaphore(self.max_in_flight)

    async def discover(self, deadline: Deadline, force: bool = False) -> Route:
        """The coordinator's current routing (cached until a lookup needs a fresh one)."""
        if self._route is not None and not force:
            return self._route
        self._bind_loop()
        seen = [await asyncio.to_thread(self._registration, deadline)]
        within = discovery_deadline(seen[0], deadline)

        async def attempt() -> Route:
            reg = seen[-1]
            last = "no address"
            for address in [*reg.addresses, *reg.standbys]:
                try:
                    resp = await pbg.AddressServiceStub(self._channel(address)).Executors(
                        pb.ExecutorsRequest(table=self.name, protocol_version=PROTOCOL_VERSION),
                        timeout=max(0.05, min(1.0, within.left())), metadata=self._metadata, wait_for_ready=False)
                except grpc.aio.AioRpcError as e:
                    last, drop = address_failure(e, address)
                    if drop:
                        await self._drop_channel(address)
                    continue
                return self._routed(reg, resp)
            route = self._routed(reg, None)
            if route is not None:
                return route
            seen.append(await asyncio.to_thread(self._registration))  # a standby may have taken over
            raise Again(last)

        return await run_async(attempt, lambda: retrying(within, lambda why: unreachable_error(self.name, seen[-1],
                                                                                                why)))

    async def _send(self, call) -> Any:
        stub = pbg.ExecutorServiceStub(self._channel(call.address))
        try:
            async with self._sem:
                return await stub.Lookup(call.request, timeout=call.timeout, metadata=self._metadata)
        except grpc.aio.AioRpcError as e:
            return e

    async def lookup(self, keys: Any, *, select: Optional[Sequence[str]] = None,
                     min_snapshot: Optional[int] = None, timeout: Optional[float] = None,
                     parsed: bool = False) -> LookupResult:
        """Latest merged rows for ``keys`` (mappings, scalars for one-column keys, tuples in key order, or an
        Arrow table / record batch with the key columns)."""
        self._bind_loop()
        return await self._carry(self._operation(keys, select, min_snapshot, timeout, parsed))

    async def _carry(self, op):
        """Attempts of ``op`` (a ``Lookup`` or a ``OneKey``) until it settles: its calls at once, their outcomes
        absorbed, retried by the one policy; its result."""
        async def attempt() -> None:
            route = await self.discover(op.deadline, force=op.attempts > 0)
            calls = op.plan(route)
            outcomes = [await self._send(calls[0])] if len(calls) == 1 else \
                await asyncio.gather(*[self._send(c) for c in calls])
            for call, outcome in zip(calls, outcomes):
                if op.absorb(call, outcome):
                    await self._drop_channel(call.address)
            op.settle()

        await run_async(attempt, lambda: retrying(op.deadline, op.give_up))
        return op.result()

    async def lookup_batches(self, batches: Any, *, select: Optional[Sequence[str]] = None,
                             min_snapshot: Optional[int] = None, timeout: Optional[float] = None,
                             in_flight: int = 4) -> AsyncIterator[LookupResult]:
        """``lookup`` of many key tables (an iterable or async iterable), results in order: up to ``in_flight``
        tables are being looked up while the caller consumes earlier results and the source produces later keys.
        An error from the source or a lookup is raised after the results before it."""

        def start(keys):
            return self.lookup(keys, select=select, min_snapshot=min_snapshot, timeout=timeout)

        async with aclosing(in_order_async(batches, start, in_flight)) as results:
            async for result in results:
                yield result

    async def get(self, key: Any, *, select: Optional[Sequence[str]] = None, min_snapshot: Optional[int] = None,
                  timeout: Optional[float] = None) -> Optional[Dict[str, Any]]:
        """The latest row of one key as a dict, or None; a key the service cannot answer raises ``ServiceError``."""
        self._bind_loop()
        return await self._carry(self._one_key(key, select, min_snapshot, timeout))

    async def executors(self) -> pb.ExecutorsResponse:
        return (await self.discover(Deadline(self.timeout), force=True)).response

    async def status(self) -> pb.StatusResponse:
        deadline = Deadline(self.timeout)
        route = await self.discover(deadline, force=True)
        address = route.registration.addresses[0]
        try:
            return await pbg.AddressServiceStub(self._channel(address)).Status(
                pb.StatusRequest(table=self.name), timeout=max(0.1, deadline.left()), metadata=self._metadata)
        except grpc.aio.AioRpcError as e:
            raise _status_error(e, address) from None

    async def close(self) -> None:
        self._close_sync_channels()
        channels, self._channels = self._channels, {}
        for ch in channels.values():
            await ch.close(grace=None)

    async def __aenter__(self) -> "LookupClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    # -- sync transport -----------------------------------------------------------------------------------
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

    def discover_sync(self, deadline: Deadline, force: bool = False) -> Route:
        route = self._route
        if route is not None and not force:
            return route
        seen = [self._registration(deadline)]
        within = discovery_deadline(seen[0], deadline)

        def attempt() -> Route:
            reg = seen[-1]
            last = "no address"
            for address in [*reg.addresses, *reg.standbys]:
                try:
                    resp = pbg.AddressServiceStub(self._sync_channel(address)).Executors(
                        pb.ExecutorsRequest(table=self.name, protocol_version=PROTOCOL_VERSION),
                        timeout=max(0.05, min(1.0, within.left())), metadata=self._metadata)
                except grpc.RpcError as e:
                    last, drop = address_failure(e, address)
                    if drop:
                        self._drop_sync_channel(address)
                    continue
                return self._routed(reg, resp)
            route = self._routed(reg, None)
            if route is not None:
                return route
            seen.append(self._registration())  # a standby may have taken over
            raise Again(last)

        return run_sync(attempt, lambda: retrying(within, lambda why: unreachable_error(self.name, seen[-1], why)))

    def _send_sync(self, calls) -> List[Any]:
        md = self._metadata
        if len(calls) == 1:
            call = calls[0]
            try:
                return [self._sync_stub(call.address).Lookup(call.request, timeout=call.timeout, metadata=md)]
            except grpc.RpcError as e:
                return [e]
        outcomes: List[Any] = []
        for w in range(0, len(calls), self.max_in_flight):
            wave = [(c, self._sync_stub(c.address).Lookup.future(c.request, timeout=c.timeout, metadata=md))
                    for c in calls[w:w + self.max_in_flight]]
            for _, future in wave:
                try:
                    outcomes.append(future.result())
                except grpc.RpcError as e:
                    outcomes.append(e)
        return outcomes

    def lookup_sync(self, keys: Any, *, select: Optional[Sequence[str]] = None, min_snapshot: Optional[int] = None,
                    timeout: Optional[float] = None, parsed: bool = False) -> LookupResult:
        """``lookup`` without an event loop (same arguments, same result, same retries)."""
        op = self._operation(keys, select, min_snapshot, timeout, parsed)

        def attempt() -> None:
            route = self.discover_sync(op.deadline, force=op.attempts > 0)
            calls = op.plan(route)
            for call, outcome in zip(calls, self._send_sync(calls)):
                if op.absorb(call, outcome):
                    self._drop_sync_channel(call.address)
            op.settle()

        run_sync(attempt, lambda: retrying(op.deadline, op.give_up))
        return op.result()

    def get_sync(self, key: Any, *, select: Optional[Sequence[str]] = None, min_snapshot: Optional[int] = None,
                 timeout: Optional[float] = None) -> Optional[Dict[str, Any]]:
        """``get`` without an event loop. Threads calling it at once share calls to an executor (``coalesce.py``)."""
        op = self._one_key(key, select, min_snapshot, timeout)

        def attempt() -> None:
            route = self.discover_sync(op.deadline, force=op.attempts > 0)
            calls = op.plan(route)
            if calls:
                call = calls[0]
                if self._coalescer is not None and route.shared_calls and not op.min_snapshot and \
                        len(call.request.key):
                    outcome = self._coalescer.send(call, self._sync_stub)
                else:
                    try:
                        outcome = self._sync_stub(call.address).Lookup(call.request, timeout=call.timeout,
                                                                       metadata=self._metadata or None)
                    except grpc.RpcError as e:
                        outcome = e
                if op.absorb(call, outcome):
                    self._drop_sync_channel(call.address)
            op.settle()

        run_sync(attempt, lambda: retrying(op.deadline, op.give_up))
        return op.result()

    def executors_sync(self) -> pb.ExecutorsResponse:
        return self.discover_sync(Deadline(self.timeout), force=True).response

    def status_sync(self) -> pb.StatusResponse:
        deadline = Deadline(self.timeout)
        route = self.discover_sync(deadline, force=True)
        address = route.registration.addresses[0]
        try:
            return pbg.AddressServiceStub(self._sync_channel(address)).Status(
                pb.StatusRequest(table=self.name), timeout=max(0.1, deadline.left()), metadata=self._metadata)
        except grpc.RpcError as e:
            raise _status_error(e, address) from None

    @property
    def coalesced(self) -> Tuple[int, int]:
        """(calls ``get_sync`` shared among threads, keys they carried) so far (``coalesce.py``)."""
        c = self._coalescer
        return (c.shared_calls, c.shared_keys) if c is not None else (0, 0)

    def _close_sync_channels(self) -> None:
        with self._sync_lock:
            channels, self._sync_channels, self._sync_stubs = self._sync_channels, {}, {}
        for ch in channels.values():
            ch.close()

    def close_sync(self) -> None:
        self._close_sync_channels()
        if self._channels:  # aio channels of a loop that is gone: nothing left to await them on
            self._channels = {}

    def __enter__(self) -> "LookupClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close_sync()


def _status_error(e: grpc.RpcError, address: str) -> ServiceError:
    try:
        raise_final(e, f"address server {address}")
    except ServiceError as final:
        return final
    return ServiceError(f"address server {address}: {e.code().name} {e.details() or ''}".strip())


__all__ = ["LookupClient", "LookupResult", "LookupTimeout", "PaimonTailError"]
