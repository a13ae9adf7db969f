"""A lookup of the few keys given on a command line without pyarrow, numpy or pypaimon, so that
``paimon-tail lookup DB.T KEY`` starts in about the time of ``import grpc`` instead of ~1 s.

It walks the happy path once: the registration file, the coordinator's routing (``Executors``: channels, owners,
addresses), Paimon's bucket and channel of each key (``keys/binary_row.py``), one call per executor with the keys
as Arrow IPC (``protocol/ipc_py.py``) and the rows decoded in Python. Whenever anything is unusual (no live
registration; TLS or a token the options do not give; a key or row type outside ``ipc_py``'s subset; a table the
service cannot serve; an unknown ``--select`` column; any RPC error; a key the executor could not answer) it
returns None and the caller runs ``LookupClient``, which owns the retries, the deadline and every error message.
This path decides no error and retries nothing.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import grpc

from ...compat.table_meta import TableMeta
from ..keys import binary_row
from ..protocol import PROTOCOL_VERSION, ipc_py
from ..protocol import lookup_pb2 as pb
from ..protocol import lookup_pb2_grpc as pbg
from ..protocol import registration as regmod
from ..protocol.security import Security, make_sync_channel

MAX_MESSAGE_BYTES = 64 << 20


@dataclass
class FewRows:
    """Found rows in request order (Python values, as pyarrow's ``to_pylist`` gives them) and the missing keys."""

    columns: List[Tuple[str, ipc_py.Kind]]
    rows: List[List[Any]]
    found: List[int]
    missing: List[int]
    keys: List[Dict[str, Any]]


def lookup_few(meta: TableMeta, keys: List[Dict[str, Any]], *, security: Security,
               select: Optional[Sequence[str]] = None, timeout: float = 5.0) -> Optional[FewRows]:
    """The rows for parsed ``keys`` (``KeyParser`` output), or None: then ask ``LookupClient``."""
    deadline = time.monotonic() + timeout
    try:
        plan = _plan(meta, keys, select)
        if plan is None:
            return None
        reg = regmod.parse(meta.read_text(regmod.SERVICE_FILE))
        if reg is None or not reg.is_live() or not reg.addresses or (reg.tls and not security.tls) \
                or (reg.auth == "token" and not security.token):
            return None
        return _call(meta, keys, plan, reg, security, select, deadline)
    except (grpc.RpcError, ipc_py.Unsupported, binary_row.Unsupported, ValueError, KeyError, OSError):
        return None


def servable(meta: TableMeta) -> bool:
    """A primary-key table with fixed buckets and Paimon's bucket function (else ``LookupClient`` says why not)."""
    return bool(meta.primary_keys) and meta.num_buckets >= 1 and \
        meta.options.get("bucket-function.type", "default").lower() == "default"


def _plan(meta: TableMeta, keys, select) -> Optional[dict]:
    if not servable(meta):
        return None
    if select and any(c not in meta.field_names for c in select):
        return None
    kinds = [(k, ipc_py.kind_of_paimon(meta.type_name(k))) for k in meta.primary_keys]
    bucket_types = [meta.type_name(k) for k in meta.bucket_keys]
    partition_types = [meta.type_name(k) for k in meta.partition_keys]
    buckets = [binary_row.bucket(binary_row.row_hash([key[k] for k in meta.bucket_keys], bucket_types),
                                 meta.num_buckets) for key in keys]
    partitions = [binary_row.row_hash([key[k] for k in meta.partition_keys], partition_types) for key in keys]
    return {"kinds": kinds, "buckets": buckets, "partitions": partitions}


def _call(meta, keys, plan, reg, security: Security, select, deadline: float) -> Optional[FewRows]:
    metadata = security.metadata()
    channels: Dict[str, grpc.Channel] = {}

    def channel(address: str) -> grpc.Channel:
        if address not in channels:
            channels[address] = make_sync_channel(address, security, MAX_MESSAGE_BYTES)
        return channels[address]

    try:
        route = pbg.AddressServiceStub(channel(reg.addresses[0])).Executors(
            pb.ExecutorsRequest(table=meta.name, protocol_version=PROTOCOL_VERSION), timeout=_left(deadline),
            metadata=metadata)
        if not route.channels:
            return None
        executors = {e.index: e for e in route.executors}
        groups: Dict[int, List[int]] = {}
        for i, (part, bucket) in enumerate(zip(plan["partitions"], plan["buckets"])):
            groups.setdefault(route.owners[binary_row.channel(part, bucket, route.channels)], []).append(i)
        calls = []
        for ex, positions in groups.items():
            info = executors.get(ex)
            if info is None or not info.alive or not info.address:
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


__all__ = ["FewRows", "lookup_few", "servable"]
