"""Every ``LookupRequest`` the client sends is built here: the batch and one-key paths, the command line's few keys
and the calls threads share (``coalesce.py``). One place decides what a request carries, so the paths cannot drift
apart in what they ask an executor. Plain Python: the few-keys path imports it without pyarrow."""
from __future__ import annotations

from typing import Any, Iterable, List, Sequence

from ..protocol import PROTOCOL_VERSION
from ..protocol import lookup_pb2 as pb


def lookup_request(table: str, buckets: Iterable[int], *, key: Sequence[pb.Value] = (), keys_ipc: bytes = b"",
                   select: Sequence[str] = (), min_snapshot: int = 0, row_values: bool = False,
                   any_order: bool = False) -> pb.LookupRequest:
    """A request for keys given either as typed values (``key``, key after key) or as Arrow IPC (``keys_ipc``),
    with their routing ``buckets``. Fields left at their defaults are not set (the same bytes on the wire)."""
    fields: dict = {"table": table, "buckets": buckets, "protocol_version": PROTOCOL_VERSION}
    if key:
        fields["key"] = key
    if keys_ipc:
        fields["keys_ipc"] = keys_ipc
    if select:
        fields["select"] = select
    if min_snapshot:
        fields["min_snapshot_id"] = min_snapshot
    if row_values:
        fields["row_values"] = True
    if any_order:
        fields["any_order"] = True
    return pb.LookupRequest(**fields)


def typed_key(values: Iterable[Any]) -> List[pb.Value]:
    """One key's values (integers or strings, in key order) as ``LookupRequest.key`` carries them."""
    return [pb.Value(int=v) if isinstance(v, int) else pb.Value(text=v) for v in values]


def shared_request(requests: Sequence[pb.LookupRequest]) -> pb.LookupRequest:
    """One request for the typed keys of several one-key requests to one executor (the first one's projection and
    options), their keys and buckets in order."""
    lead = requests[0]
    return lookup_request(lead.table, [b for r in requests for b in r.buckets],
                          key=[v for r in requests for v in r.key], select=list(lead.select),
                          min_snapshot=lead.min_snapshot_id, row_values=lead.row_values, any_order=lead.any_order)


__all__ = ["lookup_request", "shared_request", "typed_key"]
