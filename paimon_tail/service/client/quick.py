"""A lookup of the few keys given on a command line without pyarrow, numpy or pypaimon, so that
``paimon-tail lookup DB.T KEY`` starts in about the time of ``import grpc`` instead of ~1 s.

It walks the happy path once: the registration file, the coordinator's routing (``Executors``: channels, owners,
addresses), Paimon's bucket and channel of each key (``keys/binary_row.py``), one call per executor with the keys
as Arrow IPC (``protocol/ipc_py.py``) and the rows decoded in Python. Whenever anything is unusual (no live
registration; TLS or a token the options do not give; a key or row type outside ``ipc_py``'s subset; a table the
service cannot serve; an unknown ``--select`` column; any RPC error; a key the executor could not answer) it
returns None and the caller runs ``LookupClient``, which owns the retries, the deadline and every error message.
This path decides no error and retries nothing; ``lookup_keys`` is the one place that decides when it is tried,
with what share of the time, and hands the rest to ``LookupClient``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import grpc

from ...table_meta import TableMeta
from ..keys import binary_row
from ..keys import kinds as table_kinds
from ..protocol import PROTOCOL_VERSION, ipc_py
from ..protocol import lookup_pb2 as pb
from ..protocol import lookup_pb2_grpc as pbg
from ..protocol import registration as regmod
from ..protocol.security import Security, make_sync_channel
from .route import Route

if TYPE_CHECKING:
    from ...catalog import CatalogConfig
    from .core import LookupResult

MAX_MESSAGE_BYTES = 64 << 20


@dataclass
class FewRows:
    """Found rows in request order (Python values, as pyarrow's ``to_pylist`` gives them) and the missing keys."""

    columns: List[Tuple[str, ipc_py.Kind]]
    rows: List[List[Any]]
    found: List[int]
    missing: List[int]
    keys: List[Dict[str, Any]]
    failed: Dict[int, str] = field(default_factory=dict)  # always empty: a key not answered sends it to LookupClient

    def __len__(self) -> int:
        return len(self.keys)

    def key(self, pos: int) -> Dict[str, Any]:
        return self.keys[pos]


def lookup_keys(table: str, texts: Sequence[str], catalog: "CatalogConfig", *, security: Security,
                select: Optional[Sequence[str]] = None, min_snapshot: Optional[int] = None, timeout: float = 10.0,
                values: bool = True, on_wait: Optional[Callable[[str], None]] = None
                ) -> Union[FewRows, "LookupResult"]:
    """Keys as a command line writes them (``42``, ``id=42,dt=2026-11-01``), answered the quickest way that can:
    without pyarrow when ``values`` (the caller takes ``FewRows``), no ``min_snapshot`` is asked for and the table is
    local and plain, within half of ``timeout``; else ``LookupClient`` answers (a ``LookupResult``) within the time
    left, and owns every error."""
    from ...table_meta import read_local
    from ..keys.parse import KeyParser

    started = time.monotonic()
    if values and min_snapshot is None:
        meta = read_local(table, dict(catalog.options))
        if meta is not None and servable(meta):
            few = lookup_few(meta, [KeyParser(meta).from_text(k) for k in texts], security=security, select=select,
                             timeout=timeout / 2)
            if few is not None:
                return few
    from .lookup_client import LookupClient

    client = LookupClient(table, catalog, security=security, timeout=max(0.1, timeout - (time.monotonic() - started)),
                          on_wait=on_wait)
    try:
        return client.lookup_sync([client.parser.from_text(k) for k in texts], select=select,
                                  min_snapshot=min_snapshot, parsed=True)
    finally:
        client.close_sync()


def lookup_few(meta: TableMeta, keys: List[Dict[str, Any]], *, security: Security,
               select: Optional[Sequence[str]] = None, timeout: float = 5.0) -> Optional[FewRows]:
    """The rows for parsed ``keys`` (``KeyParser`` output), or None: then ask ``LookupClient``."""
    deadline = time.monotonic() + timeout
    try:
        plan = _plan(meta, keys, select)
        if plan is None:
            return None
        reg = regmod.parse(meta.read_text(regmod.service_file(meta.branch)))
        if reg is None or not reg.is_live() or not reg.addresses or (reg.tls and not security.tls) \
                or (reg.auth == "token" and not security.token):
            return None
        return _call(meta, keys, plan, reg, security, select, deadline)
    except (grpc.RpcError, ipc_py.Unsupported, binary_row.Unsupported, ValueError, KeyError, OSError):
        return None


def servable(meta: TableMeta) -> bool:
    """A primary-key table (else ``LookupClient`` says why not)."""
    return bool(meta.primary_keys)


def _plan(meta: TableMeta, keys, select) -> Optional[dict]:
    """Each key's routing bucket (its bucket, or its slot: ``keys/kinds.py``) and partition hash, as
    ``TableRouting`` computes them."""
    if not servable(meta):
        return None
    if select and any(c not in meta.field_names for c in select):
        return None
    kinds = [(k, ipc_py.kind_of_paimon(meta.type_name(k))) for k in meta.primary_keys]
    columns, partition_keys = table_kinds.routing_columns(meta), table_kinds.key_partition_keys(meta)
    route_types = [meta.type_name(k) for k in columns]
    partition_types = [meta.type_name(k) for k in partition_keys]
    routes = table_kinds.routes(meta)
    buckets = [binary_row.bucket(binary_row.row_hash([key[k] for k in columns], route_types), routes)
               for key in keys]
    partitions = [binary_row.row_hash([key[k] for k in partition_keys], partition_types) for key in keys]
    return {"kinds": kinds, "buckets": buckets, "partitions": partitions}


def _call(meta, keys, plan, reg, security: Security, select, deadline: float) -> Optional[FewRows]:
    metadata = security.metadata()
    channels: Dict[str, grpc.Channel] = {}

    def channel(address: str) -> grpc.Channel:
        if address not in channels:
            channels[address] = make_sync_channel(address, security, MAX_MESSAGE_BYTES)
        return channels[address]

    try:
        route = Route(reg, pbg.AddressServiceStub(channel(reg.addresses[0])).Executors(
            pb.ExecutorsRequest(table=meta.name, protocol_version=PROTOCOL_VERSION), timeout=_left(deadline),
            metadata=metadata))
        if not route.v2:
            return None
        calls = []
        for ex, positions in route.groups(plan["partitions"], plan["buckets"]).items():
            info = route.available(ex)
            if info is None:
                return None
            request = pb.LookupRequest(
                table=meta.name, buckets=[plan["buckets"][i] for i in positions], select=list(select or ()),
                keys_ipc=ipc_py.encode([(name, kind, [keys[i][name] for i in positions])
                                        for name, kind in plan["kinds"]]), protocol_version=PROTOCOL_VERSION)
            stub = pbg.ExecutorServiceStub(channel(info.address))
            calls.append((positions, stub.Lookup.future(request, timeout=_left(deadline), metadata=metadata)))
        columns = None
        found: List[Tuple[int, List[Any]]] = []
        for positions, call in calls:
            response = call.result()
            if len(response.failed):
                return None
            cols, rows = ipc_py.decode(response.rows_ipc)
            columns = columns or cols
            found += [(positions[p], row) for p, row in zip(response.found, rows)]
    finally:
        for ch in channels.values():
            ch.close()
    found.sort(key=lambda item: item[0])
    hit = {pos for pos, _ in found}
    return FewRows(columns or [], [row for _, row in found], [pos for pos, _ in found],
                   [i for i in range(len(keys)) if i not in hit], keys)


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise ValueError("out of time")
    return left


__all__ = ["FewRows", "lookup_few", "lookup_keys", "servable"]
