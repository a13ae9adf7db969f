"""One key: ``get``/``get_sync``'s operation, and each key's part of a call shared by several (``coalesce.py``).

The same plan → absorb → settle as the batch operation (``many_keys.py``), without numpy or Arrow tables: the key
goes typed (``LookupRequest.key``) when its columns are integers or strings, and the row comes back as values
(protocol 3) or is read straight into a dict (``wire.FirstRow``). No I/O: a transport sends what ``plan`` returns
and hands back what came.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

import grpc

from ...errors import ServiceError
from ..protocol import lookup_pb2 as pb
from .call_failures import LookupTimeout, call_error, fallback_error
from .call_plan import Call, plan_calls
from .deadline import Again, Deadline
from .route import Route


class KeyAnswer:
    """One key's part of an answer to several keys (a call shared by concurrent ``get``s): its row (or None), the
    snapshot and schema it was read at, or why it was not answered (``again``: worth another try; ``failure``:
    not)."""

    __slots__ = ("snapshot_id", "schema_id", "row", "again", "failure")

    def __init__(self, snapshot_id: int = 0, schema_id: int = 0, row: Optional[Dict[str, Any]] = None,
                 again: str = "", failure: str = "") -> None:
        self.snapshot_id, self.schema_id, self.row, self.again, self.failure = \
            snapshot_id, schema_id, row, again, failure


def value_of(v: pb.Value) -> Any:
    """A ``Value``'s Python value (None when none is set: a null)."""
    kind = v.WhichOneof("kind")
    return getattr(v, kind) if kind is not None else None


def rows_of(response: pb.LookupResponse, first_row: Callable) -> List[Dict[str, Any]]:
    """The found rows of an answer, as dicts in ``found`` order: from its values (protocol 3) or its Arrow IPC."""
    columns = list(response.columns)
    if columns:
        values = [value_of(v) for v in response.values]
        w = len(columns)
        return [dict(zip(columns, values[i:i + w])) for i in range(0, len(values), w)]
    if len(response.found) == 1:
        return [first_row(response.rows_ipc)]
    import pyarrow as pa  # (only an answer of several rows as Arrow IPC)

    return pa.ipc.open_stream(response.rows_ipc).read_all().to_pylist()


def split_answer(call: Call, outcome: Any, n: int, first_row: Callable) -> List[Any]:
    """A shared call's outcome as each of its ``n`` keys' (``KeyAnswer``, or the call's ``grpc.RpcError``)."""
    if isinstance(outcome, grpc.RpcError):
        return [outcome] * n
    snap, schema = outcome.snapshot_id, outcome.schema_id
    answers = [KeyAnswer(snap, schema) for _ in range(n)]
    try:
        rows = rows_of(outcome, first_row) if len(outcome.found) else []
    except Exception as e:
        raise ServiceError(f"executor {call.executor} sent an unreadable answer: {e}") from None
    for pos, row in zip(outcome.found, rows):
        answers[pos].row = row
    for failed in outcome.failed:
        for pos in failed.positions:
            if failed.retry:
                answers[pos].again = f"executor {call.executor} at {call.address}: {failed.reason}"
            else:
                answers[pos].failure = failed.reason
    return answers


class OneKey:
    """``get``: one key, one call, its row as a dict. The same plan → absorb → settle as ``Lookup``, without
    numpy or Arrow tables: the key goes typed (``LookupRequest.key``) when its columns are integers or strings,
    and the row comes back as values (protocol 3) or is read straight into a dict (``wire.FirstRow``). Its call
    may be shared with other keys (``KeyAnswer``)."""

    __slots__ = ("table", "request", "bucket", "part_hash", "min_snapshot", "deadline", "call_timeout",
                 "_first_row", "attempts", "route", "row", "failure", "snapshot_id", "schema_id", "_reason")

    def __init__(self, table: str, request: pb.LookupRequest, bucket: int, part_hash: int,
                 min_snapshot: Optional[int], deadline: Deadline, call_timeout: float, first_row: Callable) -> None:
        self.table = table
        self.request = request
        self.bucket = bucket
        self.part_hash = part_hash
        self.min_snapshot = min_snapshot or 0
        self.deadline = deadline
        self.call_timeout = call_timeout
        self._first_row = first_row
        self.attempts = 0
        self.route: Optional[Route] = None
        self.row: Optional[Dict[str, Any]] = None
        self.failure = ""
        self.snapshot_id = self.schema_id = 0
        self._reason = ""

    def plan(self, route: Route) -> List[Call]:
        self.route = route
        return plan_calls(route, ((route.owner(self.part_hash, self.bucket), None),), self.deadline,
                          self.call_timeout, self.min_snapshot, self._request_of, self._wait, what="this key")

    def _request_of(self, positions: None) -> pb.LookupRequest:
        return self.request

    def _wait(self, positions: None, reason: str) -> None:
        self._reason = reason

    def absorb(self, call: Call, outcome: Any) -> bool:
        """Take the call's response, this key's ``KeyAnswer`` of a shared call, or a ``grpc.RpcError``; True when
        the channel should be dropped."""
        if isinstance(outcome, KeyAnswer):
            self.snapshot_id, self.schema_id, self.row = outcome.snapshot_id, outcome.schema_id, outcome.row
            self._reason, self.failure = outcome.again, outcome.failure
            return False
        if isinstance(outcome, grpc.RpcError):
            if self.route is not None and self.route.fallback and outcome.code() == grpc.StatusCode.UNAVAILABLE:
                raise fallback_error(self.table, self.route, call, outcome)
            self._reason, drop = call_error(call, outcome, self.min_snapshot)
            return drop
        self.snapshot_id, self.schema_id = outcome.snapshot_id, outcome.schema_id
        if len(outcome.failed):
            failed = outcome.failed[0]
            if failed.retry:
                self._reason = f"executor {call.executor} at {call.address}: {failed.reason}"
            else:
                self.failure = failed.reason
            return False
        if not len(outcome.found):
            self.row = None
            return False
        try:
            columns = outcome.columns
            if len(columns):  # protocol 3: the row's values
                self.row = dict(zip(columns, map(value_of, outcome.values)))
            else:
                self.row = self._first_row(outcome.rows_ipc)
        except Exception as e:
            raise ServiceError(f"executor {call.executor} sent an unreadable answer: {e}") from None
        return False

    def settle(self) -> None:
        if self._reason:
            reason, self._reason = self._reason, ""
            self.attempts += 1
            raise Again(reason)

    def give_up(self, reason: str) -> LookupTimeout:
        return LookupTimeout(f"lookup in {self.table} did not complete within {self.deadline.total:g}s: {reason}")

    def result(self) -> Optional[Dict[str, Any]]:
        if self.failure:
            raise ServiceError(self.failure)
        return self.row


__all__ = ["KeyAnswer", "OneKey", "rows_of", "split_answer", "value_of"]
