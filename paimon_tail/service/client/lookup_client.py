"""``LookupClient``: point lookups against a running query service, async and sync.

    async with LookupClient("shop.orders", warehouse="/wh") as client:
        result = await client.lookup([42, 43])          # or {"id": 42, "dt": "2026-11-01"} for composite keys
        result.rows                                     # pyarrow.Table, found keys in request order
        result.missing                                  # request positions not found
        result.failed                                   # positions the service could not answer, and why
    row = LookupClient("shop.orders", warehouse="/wh").get_sync(42)   # dict or None

Discovery: the registration in ``<table>/service/`` → the coordinator's ``Executors`` (channels, owners,
addresses) → executors. This class is a facade: it opens the table, turns keys into an operation of the sans-IO
core (``prepare_keys.py`` → ``many_keys.Lookup`` / ``one_key.OneKey``) and hands it to one of two transports,
``async_transport.py`` (grpc.aio) or ``sync_transport.py`` (plain grpc from the caller's thread). Every call has a
deadline; when an executor moved or died the client re-discovers and retries within the total ``timeout``, then
fails with one line. It never hangs.
"""
from __future__ import annotations

from contextlib import aclosing
from typing import Any, AsyncIterator, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import pyarrow as pa

from ...catalog import CatalogConfig, catalog_config, open_table, reload_table
from ...table_meta import read_local, table_meta
from ...concurrency import in_order_async
from ...errors import PaimonTailError
from ..keys.parse import KeyParser
from ..keys.routing import TableRouting
from ..protocol import lookup_pb2 as pb
from ..protocol.security import Security
from ..protocol.wire import FirstRow
from .async_transport import AsyncTransport
from .call_failures import LookupTimeout
from .coalesce import Coalescer
from .deadline import Deadline
from .discovery import Discovery
from .lookup_result import LookupResult
from .many_keys import Lookup
from .one_key import OneKey
from .prepare_keys import KeyPreparer, Prepared, check_select
from .route import Route
from .sync_transport import SyncTransport

DEFAULT_BATCH = 10_000


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
        self.keys = KeyPreparer(self.name, self.parser, self.routing)
        self.security = security if security is not None else Security.from_options()
        self.timeout = timeout
        self.call_timeout = call_timeout
        self.batch_size = max(1, batch_size)
        self.max_in_flight = max(1, max_in_flight)
        self._first_row = FirstRow()
        self._discovery = Discovery(self.meta, self.security, on_wait)
        self.aio = AsyncTransport(self._discovery, self.security, self.max_in_flight)
        # concurrent get_sync calls to one executor share gRPC calls (coalesce.py); share_calls=False: never
        coalescer = Coalescer(self.security.metadata(), self._first_row) if share_calls else None
        self.sync = SyncTransport(self._discovery, self.security, self.max_in_flight, coalescer)

    @property
    def on_wait(self) -> Optional[Callable[[str], None]]:
        """Told (once a lookup) when it waits for a service to be registered."""
        return self._discovery.on_wait

    @on_wait.setter
    def on_wait(self, value: Optional[Callable[[str], None]]) -> None:
        self._discovery.on_wait = value

    # -- keys and operations (no I/O) ---------------------------------------------------------------------
    def parse_keys(self, keys: Sequence[Any]) -> List[Dict[str, Any]]:
        return self.keys.parse(keys)

    def prepare(self, keys: Any, parsed: bool = False) -> Prepared:
        """Parse keys (mappings, scalars, tuples, or an Arrow table/record batch of the key columns) and route them."""
        return self.keys.many(keys, parsed)

    def refresh_schema(self) -> List[str]:
        """Read the table's latest schema again (a writer may have added a column); returns its columns."""
        meta = None
        if self.table is None and isinstance(self._catalog, CatalogConfig):
            meta = read_local(self.name, dict(self._catalog.options))
        elif self.table is not None:
            meta = table_meta(reload_table(self.table))
        if meta is not None:
            self.meta = self._discovery.meta = meta
            self.table = meta.table
        return self.meta.field_names

    def _check_select(self, select: Sequence[str]) -> None:
        check_select(select, self.meta.field_names, self.refresh_schema)

    def _empty_schema(self, select) -> pa.Schema:
        from pypaimon.schema.data_types import PyarrowFieldParser

        schema = PyarrowFieldParser.from_paimon_schema(self.meta.data_fields())
        return pa.schema([schema.field(c) for c in select]) if select else schema

    def _deadline(self, timeout: Optional[float]) -> Deadline:
        return Deadline(self.timeout if timeout is None else timeout)

    def many_keys(self, keys: Any, select=None, min_snapshot=None, timeout=None, parsed: bool = False) -> Lookup:
        """The core's operation for a lookup of ``keys`` (what ``lookup``/``lookup_sync`` carry)."""
        prep = self.prepare(keys, parsed)
        self._check_select(select)
        return Lookup(self.name, prep, select, min_snapshot, self._deadline(timeout), self.call_timeout,
                      self.batch_size, self._empty_schema)

    def one_key(self, key: Any, select=None, min_snapshot=None, timeout=None) -> OneKey:
        """The core's operation for one key (what ``get``/``get_sync`` carry)."""
        return self.keys.one_key(key, select, min_snapshot, self._deadline(timeout), self.call_timeout,
                                 self._first_row, self._check_select)

    # -- async --------------------------------------------------------------------------------------------
    async def discover(self, deadline: Deadline, force: bool = False) -> Route:
        """The coordinator's current routing (cached until a lookup needs a fresh one)."""
        return await self.aio.discover(deadline, force)

    async def lookup(self, keys: Any, *, select: Optional[Sequence[str]] = None,
                     min_snapshot: Optional[int] = None, timeout: Optional[float] = None,
                     parsed: bool = False) -> LookupResult:
        """Latest merged rows for ``keys`` (mappings, scalars for one-column keys, tuples in key order, or an
        Arrow table / record batch with the key columns)."""
        self.aio.bind_loop()
        return await self.aio.carry(self.many_keys(keys, select, min_snapshot, timeout, parsed))

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
        self.aio.bind_loop()
        return await self.aio.carry(self.one_key(key, select, min_snapshot, timeout))

    async def executors(self) -> pb.ExecutorsResponse:
        return (await self.aio.discover(Deadline(self.timeout), force=True)).response

    async def status(self) -> pb.StatusResponse:
        return await self.aio.status(Deadline(self.timeout))

    async def close(self) -> None:
        self.sync.close()
        await self.aio.close()

    async def __aenter__(self) -> "LookupClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    # -- sync ---------------------------------------------------------------------------------------------
    def discover_sync(self, deadline: Deadline, force: bool = False) -> Route:
        return self.sync.discover(deadline, force)

    def lookup_sync(self, keys: Any, *, select: Optional[Sequence[str]] = None, min_snapshot: Optional[int] = None,
                    timeout: Optional[float] = None, parsed: bool = False) -> LookupResult:
        """``lookup`` without an event loop (same arguments, same result, same retries)."""
        return self.sync.carry(self.many_keys(keys, select, min_snapshot, timeout, parsed))

    def get_sync(self, key: Any, *, select: Optional[Sequence[str]] = None, min_snapshot: Optional[int] = None,
                 timeout: Optional[float] = None) -> Optional[Dict[str, Any]]:
        """``get`` without an event loop. Threads calling it at once share calls to an executor (``coalesce.py``)."""
        return self.sync.get(self.one_key(key, select, min_snapshot, timeout))

    def executors_sync(self) -> pb.ExecutorsResponse:
        return self.sync.discover(Deadline(self.timeout), force=True).response

    def status_sync(self) -> pb.StatusResponse:
        return self.sync.status(Deadline(self.timeout))

    @property
    def coalesced(self) -> Tuple[int, int]:
        """(calls ``get_sync`` shared among threads, keys they carried) so far (``coalesce.py``)."""
        c = self.sync.coalescer
        return (c.shared_calls, c.shared_keys) if c is not None else (0, 0)

    def close_sync(self) -> None:
        self.sync.close()
        self.aio.forget()

    def __enter__(self) -> "LookupClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close_sync()


__all__ = ["LookupClient", "LookupResult", "LookupTimeout", "PaimonTailError"]
