"""A lookup of many keys, without I/O: plan the calls of an attempt (keys → executor, numpy for many keys), absorb
each call's answer (rows, the keys it could not answer and whether another try may), settle (raise ``Again`` while
keys are left), and finish with a ``LookupResult`` in request order. The transports run it
(``async_transport.py``, ``sync_transport.py``)."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence

import grpc
import numpy as np
import pyarrow as pa

from ...errors import ServiceError
from ..keys.bucket_hash import channels_of
from ..protocol import lookup_pb2 as pb
from ..protocol.wire import indices, ipc_stream
from .call_failures import LookupTimeout, call_error, fallback_error
from .call_plan import Call, plan_calls
from .deadline import Again, Deadline
from .lookup_requests import lookup_request
from .lookup_result import LookupResult
from .prepare_keys import Prepared
from .route import Route


class Lookup:
    """One lookup across attempts: what is still pending, what came back."""

    def __init__(self, table: str, prepared: Prepared, select: Optional[Sequence[str]], min_snapshot: Optional[int],
                 deadline: Deadline, call_timeout: float, batch_size: int, empty_schema: Callable) -> None:
        self.table = table
        self.prepared = prepared
        self.select = list(select or ())
        self.min_snapshot = min_snapshot or 0
        self.deadline = deadline
        self.call_timeout = call_timeout
        self.batch_size = batch_size
        self._empty_schema = empty_schema
        self.pending = np.arange(prepared.n)
        self.found_pos: List[np.ndarray] = []
        self.tables: List[pa.Table] = []
        self.snapshots: Dict[int, int] = {}
        self.schemas: Dict[int, int] = {}
        self.failed: Dict[int, str] = {}
        self.schema: Optional[pa.Schema] = None
        self.attempts = 0
        self.route: Optional[Route] = None
        self._retry: List[np.ndarray] = []
        self._reasons: List[str] = []
        self.answered_at = np.zeros(prepared.n, dtype=np.int64)  # the snapshot of each key's answer

    # -- plan ---------------------------------------------------------------------------------------------
    def plan(self, route: Route) -> List[Call]:
        """The calls of this attempt; keys without a reachable executor wait for the next one."""
        prep, pending = self.prepared, self.pending
        self.route = route
        if len(pending) == 1:
            i = int(pending[0])
            groups = [(route.owner(int(prep.part_hashes[i]), int(prep.buckets[i])), pending)]
        else:
            owners = route.owners[channels_of(prep.part_hashes[pending], prep.buckets[pending], route.channels)]
            first = int(owners[0])
            groups = [(first, pending)] if np.all(owners == first) else \
                [(int(ex), pending[owners == ex]) for ex in np.unique(owners)]
        max_batch = min(self.batch_size, route.max_batch_keys or self.batch_size)
        return plan_calls(route, groups, self.deadline, self.call_timeout, self.min_snapshot,
                          lambda idx: self._request(idx, route), self._again, max_batch=max_batch)

    def _request(self, idx: np.ndarray, route: Route) -> pb.LookupRequest:
        prep = self.prepared
        if prep.one is not None and len(idx) == 1 and route.v2:
            return lookup_request(self.table, [int(prep.buckets[0])], key=prep.one, select=self.select,
                                  min_snapshot=self.min_snapshot)
        table = prep.key_table
        sub = table if len(idx) == prep.n else table.take(indices(idx))
        return lookup_request(self.table, prep.buckets[idx].tolist(), keys_ipc=ipc_stream(sub), select=self.select,
                              min_snapshot=self.min_snapshot, any_order=True)  # ``result`` orders the rows

    # -- absorb -------------------------------------------------------------------------------------------
    def _again(self, idx: np.ndarray, reason: str) -> None:
        self._retry.append(idx)
        self._reasons.append(reason)

    def absorb(self, call: Call, outcome: Any) -> bool:
        """Take one call's response (or its ``grpc.RpcError``); True when its channel should be dropped."""
        if isinstance(outcome, grpc.RpcError):
            return self._error(call, outcome)
        try:
            table = pa.ipc.open_stream(outcome.rows_ipc).read_all()
        except Exception as e:
            raise ServiceError(f"executor {call.executor} sent an unreadable answer: {e}") from None
        ex = call.executor
        self.answered_at[call.positions] = outcome.snapshot_id
        self.snapshots[ex] = min(self.snapshots.get(ex, outcome.snapshot_id), outcome.snapshot_id)
        self.schemas[ex] = max(self.schemas.get(ex, outcome.schema_id), outcome.schema_id)
        if self.schema is None or len(table.schema) > len(self.schema):
            self.schema = table.schema
        if table.num_rows:
            self.found_pos.append(call.positions[np.asarray(outcome.found, dtype=np.int64)])
            self.tables.append(table)
        for failed in outcome.failed:
            positions = call.positions[np.asarray(failed.positions, dtype=np.int64)]
            if failed.retry:
                self._again(positions, f"executor {ex} at {call.address}: {failed.reason}")
            else:
                for pos in positions.tolist():
                    self.failed[pos] = failed.reason
        return False

    def _error(self, call: Call, e: grpc.RpcError) -> bool:
        if self.route is not None and self.route.fallback and e.code() == grpc.StatusCode.UNAVAILABLE:
            raise fallback_error(self.table, self.route, call, e)
        reason, drop = call_error(call, e, self.min_snapshot)
        self._again(call.positions, reason)
        return drop

    def settle(self) -> None:
        """End of an attempt: raise ``Again`` while keys are left to ask."""
        if self._retry:
            self.pending = np.concatenate(self._retry) if len(self._retry) > 1 else self._retry[0]
            reason = self._reasons[-1]
            self._retry, self._reasons = [], []
            self.attempts += 1
            raise Again(reason)
        self.pending = np.empty(0, dtype=np.int64)

    def give_up(self, reason: str) -> LookupTimeout:
        return LookupTimeout(f"lookup in {self.table} did not complete within {self.deadline.total:g}s: {reason}")

    # -- finish -------------------------------------------------------------------------------------------
    def result(self) -> LookupResult:
        prep = self.prepared
        n = prep.n
        if self.found_pos:
            found = np.concatenate(self.found_pos) if len(self.found_pos) > 1 else self.found_pos[0]
            if len(self.tables) == 1:
                rows = self.tables[0]
            else:  # answers read at different schemas (a column added meanwhile): the newest columns
                rows = pa.concat_tables(self.tables, promote_options="permissive")
            if len(found) > 1 and np.any(np.diff(found) < 0):
                order = np.argsort(found, kind="stable")
                rows, found = rows.take(indices(order)), found[order]
        else:
            found = np.empty(0, dtype=np.int64)
            rows = (self.schema or self._empty_schema(self.select)).empty_table()
        if len(found) + len(self.failed) == n:
            missing: List[int] = []
        else:
            mask = np.ones(n, dtype=bool)
            mask[found] = False
            if self.failed:
                mask[list(self.failed)] = False
            missing = np.flatnonzero(mask).tolist()
        return LookupResult(rows, found.tolist(), missing, self.snapshots, prep, self.failed, self.schemas,
                            self.answered_at)


__all__ = ["Lookup"]
