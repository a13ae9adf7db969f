"""A lookup of the few keys given on a command line without pyarrow, numpy or pypaimon, so that
``paimon-tail lookup DB.T KEY`` starts in about the time of ``import grpc`` instead of ~1 s.

It is the client's core used once, on the happy path: the keys' routing buckets in plain Python
(``keys/binary_row.py``), the coordinator's routing (``Executors``), the calls planned by ``call_plan.py`` with
requests from ``lookup_requests.py`` (the keys as Arrow IPC written by ``protocol/ipc_py.py``), sent by the sync
transport, the rows decoded in Python (``FewKeys`` absorbs them). Whenever anything is unusual (no live
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

from ...errors import ServiceError
from ...table_meta import TableMeta
from ..keys import binary_row
from ..keys import kinds as table_kinds
from ..protocol import ipc_py
from ..protocol import lookup_pb2 as pb
from ..protocol.security import Security
from .call_plan import Call, plan_calls
from .deadline import Deadline
from .discovery import Discovery
from .lookup_requests import lookup_request
from .route import Route
from .sync_transport import SyncTransport

if TYPE_CHECKING:
    from ...catalog import CatalogConfig
    from .lookup_result import LookupResult


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
    deadline = Deadline(timeout)
    try:
        routes = key_routes(meta, keys, select)
        if routes is None:
            return None
        discovery = Discovery(meta, security)
        reg = discovery.registration()  # (no waiting for a service that is starting: LookupClient does)
        if not reg.is_live() or not reg.addresses:
            return None
        transport = SyncTransport(discovery, security)
        try:
            route = Route(reg, transport.executors(reg.addresses[0], _left(deadline)))
            if not route.v2:
                return None
            op = FewKeys(meta.name, keys, routes, select, deadline)
            transport.attempt(op, route)
            return op.result()
        finally:
            transport.close()
    except (grpc.RpcError, ServiceError, ipc_py.Unsupported, binary_row.Unsupported, ValueError, KeyError, OSError):
        return None


def servable(meta: TableMeta) -> bool:
    """A primary-key table (else ``LookupClient`` says why not)."""
    return bool(meta.primary_keys)


def key_routes(meta: TableMeta, keys, select) -> Optional[dict]:
    """Each key's routing bucket (its bucket, or its slot: ``keys/kinds.py``) and partition hash, as
    ``TableRouting`` computes them, in plain Python; None when this path does not serve the lookup."""
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


class FewKeys:
    """The core's operation for the few keys, in one attempt: ``plan`` the calls, ``absorb`` the answers (rows
    decoded by ``ipc_py``), ``result`` (None when anything was unusual: a key without an executor now, an RPC
    error, a key an executor could not answer)."""

    def __init__(self, table: str, keys: List[Dict[str, Any]], routes: dict, select: Optional[Sequence[str]],
                 deadline: Deadline) -> None:
        self.table = table
        self.keys = keys
        self.routes = routes
        self.select = list(select or ())
        self.deadline = deadline
        self.attempts = 0
        self.unusual = False
        self.columns: Optional[List[Tuple[str, ipc_py.Kind]]] = None
        self.found: List[Tuple[int, List[Any]]] = []

    def plan(self, route: Route) -> List[Call]:
        groups = route.groups(self.routes["partitions"], self.routes["buckets"]).items()
        calls = plan_calls(route, groups, self.deadline, self.deadline.total, 0, self._request, self._unusual)
        return [] if self.unusual else calls

    def _request(self, positions: List[int]) -> pb.LookupRequest:
        keys, buckets = self.keys, self.routes["buckets"]
        return lookup_request(self.table, [buckets[i] for i in positions], select=self.select,
                              keys_ipc=ipc_py.encode([(name, kind, [keys[i][name] for i in positions])
                                                      for name, kind in self.routes["kinds"]]))

    def _unusual(self, positions: Any, reason: str) -> None:
        self.unusual = True

    def absorb(self, call: Call, outcome: Any) -> bool:
        if isinstance(outcome, grpc.RpcError) or len(outcome.failed):
            self.unusual = True
            return False
        columns, rows = ipc_py.decode(outcome.rows_ipc)
        self.columns = self.columns or columns
        self.found += [(call.positions[p], row) for p, row in zip(outcome.found, rows)]
        return False

    def result(self) -> Optional[FewRows]:
        if self.unusual:
            return None
        found = sorted(self.found, key=lambda item: item[0])
        hit = {pos for pos, _ in found}
        return FewRows(self.columns or [], [row for _, row in found], [pos for pos, _ in found],
                       [i for i in range(len(self.keys)) if i not in hit], self.keys)


def _left(deadline: Deadline) -> float:
    left = deadline.left()
    if left <= 0:
        raise ValueError("out of time")
    return left


__all__ = ["FewKeys", "FewRows", "key_routes", "lookup_few", "lookup_keys", "servable"]
