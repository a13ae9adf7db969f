"""The lookup client's core, without I/O: prepare keys → plan calls per executor → absorb answers → retry or finish.

``LookupClient`` drives it with two transports, an async one (grpc.aio) and a sync one (grpc's blocking channels,
no event loop), which only send what the core planned and hand back what came. So routing, request building,
error classification, partial answers and retries exist once. Time is one ``Deadline`` value for the whole
lookup; retries are one policy (``retrying``: tenacity, jittered exponential backoff, never past the deadline).

* Keys: mappings, scalars (one-column keys), tuples in key order, or an Arrow table / record batch; parsed by
  the key columns' Paimon types, bucketed with Paimon's hash, their channel by Paimon's ``ChannelComputer``.
* A call per executor (batches of at most ``max_batch_keys``); one key of integer/string columns goes without
  Arrow (``LookupRequest.key``).
* An answer can name keys it could not answer: ``retry`` ones (the bucket moved, is loading) are asked again
  after re-discovery, the others end in ``LookupResult.failed`` with the reason.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import grpc
import numpy as np
import pyarrow as pa

from ...errors import ServiceError, UsageError
from ..keys.bucket_hash import channels_of
from ..protocol import PROTOCOL_VERSION
from ..protocol import lookup_pb2 as pb
from ..protocol import registration as regmod
from ..protocol.wire import indices, ipc_stream
from .route import Route


class LookupTimeout(ServiceError):
    """The service did not answer within the deadline."""


class Again(Exception):
    """Something worth another try after re-discovery (the reason is kept for the final error)."""


class Deadline:
    """When a whole operation must be over (monotonic clock); every call's timeout is cut from it."""

    __slots__ = ("at", "total")

    def __init__(self, seconds: float) -> None:
        self.total = seconds
        self.at = time.monotonic() + seconds

    def left(self) -> float:
        return self.at - time.monotonic()

    def expired(self) -> bool:
        return time.monotonic() >= self.at

    def sooner(self, seconds: float) -> "Deadline":
        """This deadline or ``seconds`` from now, whichever comes first."""
        d = Deadline.__new__(Deadline)
        d.total, d.at = self.total, min(self.at, time.monotonic() + seconds)
        return d


def retrying(deadline: Deadline, give_up: Callable[[str], BaseException]) -> dict:
    """The client's one retry policy, as keyword arguments for ``tenacity.Retrying`` / ``AsyncRetrying``: retry on
    ``Again`` with full-jitter exponential backoff (up to 1 s), and when the next wait would pass ``deadline``
    raise ``give_up(last reason)``."""
    from tenacity import retry_if_exception_type, wait_random_exponential

    def stop(state) -> bool:
        return time.monotonic() + state.upcoming_sleep >= deadline.at

    def raise_give_up(state):
        raise give_up(str(state.outcome.exception())) from None

    return dict(retry=retry_if_exception_type(Again), wait=wait_random_exponential(multiplier=0.05, max=1.0),
                stop=stop, retry_error_callback=raise_give_up)


def run_sync(attempt: Callable, policy: Callable[[], dict]):
    """``attempt()`` until it does not raise ``Again``: the first time inline (the common case costs no retry
    machinery), then under ``policy()`` (``retrying``)."""
    try:
        return attempt()
    except Again as e:
        first: Optional[Again] = e
    from tenacity import Retrying

    for step in Retrying(**policy()):
        with step:
            if first is not None:
                failed, first = first, None
                raise failed  # the inline attempt, as tenacity's first: it waits before the next
            return attempt()


async def run_async(attempt: Callable, policy: Callable[[], dict]):
    """``run_sync`` for a coroutine function."""
    try:
        return await attempt()
    except Again as e:
        first: Optional[Again] = e
    from tenacity import AsyncRetrying

    async for step in AsyncRetrying(**policy()):
        with step:
            if first is not None:
                failed, first = first, None
                raise failed
            return await attempt()


def unreachable(error: BaseException) -> str:
    """Why a server could not be reached, in words a user can act on."""
    if not isinstance(error, grpc.RpcError) or not hasattr(error, "code"):
        return str(error)
    details = error.details() or ""
    if "handshake" in details.lower():
        return f"{error.code().name}: TLS handshake failed; check --tls-ca, --tls-cert and --tls-key"
    return error.code().name


def raise_final(error: grpc.RpcError, who: str) -> None:
    """Errors no retry can fix become one line."""
    code = error.code()
    if code == grpc.StatusCode.UNAUTHENTICATED:
        raise ServiceError(f"{who} refused the credentials: {error.details()}",
                           hint="check PAIMON_TAIL_TOKEN / --token-file") from None
    if code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND, grpc.StatusCode.UNIMPLEMENTED,
                grpc.StatusCode.DATA_LOSS):  # DATA_LOSS: a version 1 executor's broken bucket
        raise ServiceError(f"{who}: {error.details()}") from None


# ------------------------------------------------------------------------------------------------ discovery
def check_registration(reg: Optional[regmod.Registration], table: str, tls: bool, token: bool) -> regmod.Registration:
    if reg is None:
        raise ServiceError(f"no query service is registered for {table}",
                           hint=f"start one with: paimon-tail serve {table}")
    if reg.tls and not tls:
        raise ServiceError(f"the service for {table} uses TLS",
                           hint="pass --tls-ca (and a client certificate for mutual TLS)")
    if reg.auth == "token" and not token:
        raise ServiceError(f"the service for {table} requires a token", hint="set PAIMON_TAIL_TOKEN or pass --token-file")
    return reg


def discovery_deadline(reg: regmod.Registration, deadline: Deadline) -> Deadline:
    """With standbys listed, one of them takes over when the active is gone: wait for it, within the whole
    deadline. Without, an address server refusing connections means the service is gone (or restarting): try
    briefly; an expired registration more briefly still (a service that cannot reach its storage cannot renew
    it, yet answers)."""
    if reg.standbys:
        return deadline
    return deadline.sooner(2.0 if reg.is_live() else 0.5)


def address_failure(error: grpc.RpcError, address: str) -> Tuple[str, bool]:
    """(why, whether to drop the channel) when the address server at ``address`` did not answer; raises for what
    no retry can fix. A standby's "standing by" is no broken channel: the next address is asked."""
    raise_final(error, f"address server {address}")
    if standing_by(error):
        return error.details(), False
    return unreachable(error), True


def standing_by(error: BaseException) -> bool:
    """A standby coordinator's answer: ask the next address (not a broken channel)."""
    return isinstance(error, grpc.RpcError) and hasattr(error, "details") and \
        (error.details() or "").startswith("standing by")


def unreachable_error(table: str, reg: regmod.Registration, last: str) -> ServiceError:
    if not reg.is_live():
        ago = (regmod.now_ms() - reg.heartbeat_ms) / 1000
        return ServiceError(f"no live service for {table}: the registration of {reg.describe()} "
                            f"expired (last heartbeat {ago:.0f}s ago)")
    return ServiceError(f"no live service for {table}: the address server at {', '.join(reg.addresses)} does not "
                        f"answer ({last})")


def fallback_error(table: str, route: Route, call: "Call", e: grpc.RpcError) -> ServiceError:
    """No coordinator answers, and neither does an executor the registration names."""
    reg = route.registration
    if not reg.is_live():
        ago = (regmod.now_ms() - reg.heartbeat_ms) / 1000
        return ServiceError(f"no live service for {table}: the registration of {reg.describe()} expired (last "
                            f"heartbeat {ago:.0f}s ago), and executor {call.executor} at {call.address} does not "
                            f"answer ({unreachable(e)})")
    return ServiceError(f"no live service for {table}: the address server at {', '.join(reg.addresses)} does not "
                        f"answer, nor executor {call.executor} at {call.address} ({unreachable(e)})")

# ------------------------------------------------------------------------------------------------ keys
class Prepared:
    """Keys ready to send: each key's bucket and partition hash; the Arrow table of the keys built when needed."""

    __slots__ = ("n", "keys", "buckets", "part_hashes", "_table", "_to_arrow", "one")

    def __init__(self, buckets: np.ndarray, part_hashes: np.ndarray, keys: Optional[List[Dict[str, Any]]],
                 table: Optional[pa.Table], to_arrow: Callable, one: Optional[List[Any]] = None) -> None:
        self.buckets = buckets
        self.part_hashes = part_hashes
        self.keys = keys
        self._table = table
        self._to_arrow = to_arrow
        self.n = table.num_rows if table is not None else len(keys)
        self.one = one  # one key's values in key order, when it can travel without Arrow

    @property
    def key_table(self) -> pa.Table:
        if self._table is None:
            self._table = self._to_arrow(self.keys)
        return self._table


class LookupResult:
    """Found rows (request order), their request positions, the positions not found, those that could not be
    answered (``failed``: position → reason), and the snapshot and schema each executor answered at."""

    __slots__ = ("rows", "found", "missing", "failed", "snapshot_ids", "schema_ids", "_prepared", "_keys", "_at")

    def __init__(self, rows: pa.Table, found: List[int], missing: List[int],
                 snapshot_ids: Optional[Dict[int, int]] = None, prepared: Optional[Prepared] = None,
                 failed: Optional[Dict[int, str]] = None, schema_ids: Optional[Dict[int, int]] = None,
                 answered_at: Optional[np.ndarray] = None) -> None:
        self.rows = rows  # found rows, ordered by request position
        self.found = found  # request position of each row
        self.missing = missing  # request positions not found (absent or deleted)
        self.failed = failed if failed is not None else {}  # positions the service could not answer, and why
        self.snapshot_ids = snapshot_ids if snapshot_ids is not None else {}  # executor index → snapshot
        self.schema_ids = schema_ids if schema_ids is not None else {}  # executor index → schema id
        self._prepared = prepared
        self._keys: Optional[List[Dict[str, Any]]] = prepared.keys if prepared is not None else None
        self._at = answered_at

    @property
    def key_table(self) -> pa.Table:
        """The keys as an Arrow table typed as the key columns, in request order."""
        if self._prepared is None:
            raise ValueError("this result was built without its keys")
        return self._prepared.key_table

    @property
    def keys(self) -> List[Dict[str, Any]]:
        """The parsed keys, in request order (built on first use when the keys came as Arrow/scalars)."""
        if self._keys is None:
            self._keys = self.key_table.to_pylist() if self._prepared is not None else []
        return self._keys

    def key(self, pos: int) -> Dict[str, Any]:
        """The key at request position ``pos`` (without building every key as a dict)."""
        if self._keys is not None:
            return self._keys[pos]
        return self.key_table.slice(pos, 1).to_pylist()[0]

    def __len__(self) -> int:
        return self._prepared.n if self._prepared is not None else 0

    def snapshot_of(self, pos: int) -> int:
        """The snapshot the answer for the key at ``pos`` (its row, or its absence) reflects."""
        return int(self._at[pos]) if self._at is not None else self.snapshot_id

    @property
    def snapshot_id(self) -> int:
        """The lowest snapshot any answer reflects."""
        return min(self.snapshot_ids.values()) if self.snapshot_ids else 0

    @property
    def schema_id(self) -> int:
        """The newest schema any answer was read with (the rows' columns are that schema's)."""
        return max(self.schema_ids.values()) if self.schema_ids else 0

    def aligned(self) -> List[Optional[Dict[str, Any]]]:
        """One entry per requested key: the row as a dict, or None (not found, or failed)."""
        out: List[Optional[Dict[str, Any]]] = [None] * len(self)
        for pos, row in zip(self.found, self.rows.to_pylist()):
            out[pos] = row
        return out

    def raise_failed(self) -> None:
        """Raise ``ServiceError`` naming the first failure, if any key could not be answered."""
        if self.failed:
            pos, reason = next(iter(sorted(self.failed.items())))
            more = f" (and {len(self.failed) - 1} more key(s))" if len(self.failed) > 1 else ""
            raise ServiceError(f"{reason}{more}")

    def __repr__(self) -> str:
        return (f"LookupResult(found={len(self.found)}, missing={len(self.missing)}, failed={len(self.failed)}, "
                f"snapshot_ids={self.snapshot_ids})")


# ------------------------------------------------------------------------------------------------ one lookup
def call_error(call: "Call", e: grpc.RpcError, min_snapshot: int) -> Tuple[str, bool]:
    """(why to retry, drop the channel?) for a failed call; raises for errors no retry can fix."""
    code = e.code()
    who = f"executor {call.executor} at {call.address}"
    raise_final(e, who)
    details = e.details() or ""
    if code == grpc.StatusCode.DEADLINE_EXCEEDED and min_snapshot and "serves snapshot" in details:
        raise LookupTimeout(f"{details} (waited {call.timeout:.1f}s)") from None
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        reason = f"{who} did not answer within {call.timeout:.1f}s"
    else:
        reason = f"{who}: {code.name} {details}".strip()
    return reason, code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


class Call:
    __slots__ = ("executor", "address", "positions", "request", "timeout")

    def __init__(self, executor: int, address: str, positions: np.ndarray, request: pb.LookupRequest,
                 timeout: float) -> None:
        self.executor, self.address, self.positions, self.request, self.timeout = \
            executor, address, positions, request, timeout


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
        calls = []
        for ex, idx in groups:
            info = route.available(ex)
            if info is None:
                self._again(idx, f"no executor serves these keys now (executor {ex} is not available)"
                            if ex >= 0 else "no executor serves these keys now (waiting for one to join)")
                continue
            left = self.deadline.left()
            if left <= 0:
                self._again(idx, f"executor {ex} at {info.address}: out of time")
                continue
            timeout = left if self.min_snapshot else min(self.call_timeout, left)
            for s in range(0, len(idx), max_batch):
                part = idx[s:s + max_batch]
                calls.append(Call(ex, info.address, part, self._request(part, route), timeout))
        return calls

    def _request(self, idx: np.ndarray, route: Route) -> pb.LookupRequest:
        prep = self.prepared
        if prep.one is not None and len(idx) == 1 and route.v2:
            return pb.LookupRequest(table=self.table, key=prep.one, buckets=[int(prep.buckets[0])],
                                    min_snapshot_id=self.min_snapshot, select=self.select,
                                    protocol_version=PROTOCOL_VERSION)
        table = prep.key_table
        sub = table if len(idx) == prep.n else table.take(indices(idx))
        return pb.LookupRequest(table=self.table, keys_ipc=ipc_stream(sub), buckets=prep.buckets[idx].tolist(),
                                min_snapshot_id=self.min_snapshot, select=self.select,
                                protocol_version=PROTOCOL_VERSION, any_order=True)  # ``result`` orders the rows

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
    return pa.ipc.open_stream(response.rows_ipc).read_all().to_pylist()


def split_answer(call: "Call", outcome: Any, n: int, first_row: Callable) -> List[Any]:
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
        ex = route.owner(self.part_hash, self.bucket)
        info = route.available(ex)
        if info is None:
            self._reason = f"no executor serves this key now (executor {ex} is not available)" if ex >= 0 else \
                "no executor serves this key now (waiting for one to join)"
            return []
        left = self.deadline.left()
        if left <= 0:
            self._reason = f"executor {ex} at {info.address}: out of time"
            return []
        return [Call(ex, info.address, None, self.request, left if self.min_snapshot else min(self.call_timeout, left))]

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


def check_select(select: Optional[Sequence[str]], columns, refresh: Callable[[], Sequence[str]]) -> None:
    """Refuse unknown ``--select`` columns; a column the client does not know yet may have been added since it
    read the schema, so it reads the schema again before refusing."""
    if not select:
        return
    unknown = [c for c in select if c not in columns]
    if unknown:
        columns = refresh()
        unknown = [c for c in select if c not in columns]
    if unknown:
        raise UsageError(f"unknown column{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} in --select",
                         hint=f"columns are {', '.join(columns)}")


__all__ = ["Again", "Call", "Deadline", "KeyAnswer", "Lookup", "LookupResult", "LookupTimeout", "OneKey", "Prepared",
           "Route", "rows_of", "split_answer", "value_of",
           "check_registration", "check_select", "discovery_deadline", "fallback_error", "raise_final", "retrying",
           "run_async", "run_sync", "standing_by", "unreachable", "unreachable_error"]
