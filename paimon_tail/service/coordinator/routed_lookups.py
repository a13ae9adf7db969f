"""``ExecutorService.Lookup`` on the coordinator's port: keys from any client, routed for it.

A client that computes neither Paimon's bucket hash nor the channel of a key (grpcurl with JSON keys, a service in
another language) asks the one registered address. The coordinator routes the keys with the lookup client's own
core (``LookupClient``: one road for every lookup, with its retries and its deadline), and answers in the
executors' message: found positions, rows (as values when asked and the columns allow, else Arrow IPC), the
snapshot (the oldest any key was answered at), and the keys that could not be answered, each with its reason.

Keys come as ``LookupRequest.key`` (typed values, key after key, in primary-key order; a text value is parsed by
its column's type, so a DATE key is ``{"text": "2026-11-01"}``) or as ``keys_ipc``; ``buckets`` are ignored.
"""
from __future__ import annotations

import logging
from typing import Callable, Dict, Optional

import grpc

from ...errors import PaimonTailError, UsageError
from ..client.call_failures import LookupTimeout
from ..client.lookup_client import LookupClient
from ..client.one_key import value_of
from ..protocol import lookup_pb2 as pb
from ..protocol import lookup_pb2_grpc as pbg
from ..protocol.security import Security
from ..protocol.wire import ipc_stream, value_kind

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 10.0  # a call without a deadline


class RoutedLookups(pbg.ExecutorServiceServicer):
    def __init__(self, tables: Dict[str, object], security: Security,
                 standing_by: Callable[[], Optional[str]]) -> None:
        self.tables = tables  # name → the pypaimon table
        self.security = security
        self.standing_by = standing_by
        self._clients: Dict[str, LookupClient] = {}

    def _client(self, table: str) -> LookupClient:
        client = self._clients.get(table)
        if client is None:
            client = self._clients[table] = LookupClient(self.tables[table], security=self.security)
        return client

    async def Lookup(self, request: pb.LookupRequest, context) -> pb.LookupResponse:
        if request.table not in self.tables:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"table {request.table!r} is not served here (serving "
                                f"{', '.join(self.tables)})")
        why = self.standing_by()
        if why is not None:
            await context.abort(grpc.StatusCode.UNAVAILABLE, why)
        client = self._client(request.table)
        left = context.time_remaining()
        try:
            keys = _keys(client, request)
            result = await client.lookup(keys, select=list(request.select) or None,
                                         min_snapshot=request.min_snapshot_id or None,
                                         timeout=max(0.1, left - 0.05) if left is not None else DEFAULT_TIMEOUT)
        except UsageError as e:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        except LookupTimeout as e:
            await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, str(e))
        except PaimonTailError as e:
            await context.abort(grpc.StatusCode.UNAVAILABLE, str(e))
        response = pb.LookupResponse(snapshot_id=result.snapshot_id, schema_id=result.schema_id,
                                     found=result.found)
        reasons: Dict[str, list] = {}
        for pos, reason in sorted(result.failed.items()):
            reasons.setdefault(reason, []).append(pos)
        response.failed.extend(pb.FailedKeys(positions=p, reason=r) for r, p in reasons.items())
        kinds = [value_kind(f.type) for f in result.rows.schema]
        if request.row_values and None not in kinds:
            if result.rows.num_rows:
                response.columns.extend(result.rows.column_names)
                add = response.values.add
                for row in zip(*(c.to_pylist() for c in result.rows.columns)):
                    for kind, v in zip(kinds, row):
                        if v is None:
                            add()
                        else:
                            add(**{kind: v})
        else:
            response.rows_ipc = ipc_stream(result.rows)
        return response

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()
        self._clients = {}


def _keys(client: LookupClient, request: pb.LookupRequest):
    """The request's keys as the lookup client takes them: tuples in key order, or an Arrow table."""
    if len(request.key):
        width = len(client.parser.names)
        values = [value_of(v) for v in request.key]
        if len(values) % width:
            raise UsageError(f"{len(values)} key values for keys of {width} columns ({', '.join(client.parser.names)})")
        return [tuple(values[i:i + width]) for i in range(0, len(values), width)]
    if request.keys_ipc:
        import pyarrow as pa

        try:
            return pa.ipc.open_stream(request.keys_ipc).read_all()
        except Exception as e:
            raise UsageError(f"keys are not an Arrow IPC stream: {e}") from None
    raise UsageError("no keys: give them as key (typed values, key after key) or keys_ipc")


__all__ = ["RoutedLookups"]
