"""An executor's answers: the latest rows of a batch of keys, from one consistent view of one table.

A key whose bucket this executor cannot answer right now is named in the answer (protocol 2: ``FailedKeys``,
with ``retry`` when asking again helps: the bucket moved to another executor or is still loading) while every
other key is answered. A version 1 client gets the whole call refused instead (``Refused``: the servicer turns
its ``Why`` into FAILED_PRECONDITION, UNAVAILABLE, DATA_LOSS), as before. One key given as ``LookupRequest.key``
takes a short path without Arrow on the way in.

No gRPC here: requests and answers are the protocol's typed messages, refusals a ``Refused`` with its reason;
``servicer.py`` translates them into a call's status.
"""
from __future__ import annotations

import asyncio
import enum
import time
from concurrent.futures import Executor as Pool
from typing import Dict, List, Mapping, Optional, Protocol, Sequence

import numpy as np
import pyarrow as pa

from ..keys.bucket_hash import channels_of
from ..keys.routing import partition_path
from ..protocol import lookup_pb2 as pb
from ..protocol.changes import BucketKey
from ..protocol.wire import ipc_stream, stream_of, value_kind
from ..store.runs import positions_by_code
from .executor_metrics import LookupStats
from .state import TableState, View

INLINE_KEYS = 64  # batches up to this size are answered on the loop (no thread hop)
_SIGN = 1 << 63
_NOT_HERE = object()


class Why(enum.Enum):
    """Why a call (or a bucket's keys) cannot be answered; each is one gRPC status (``servicer.STATUS``)."""

    INVALID = "invalid"  # the request makes no sense (INVALID_ARGUMENT)
    NOT_FOUND = "not found"  # the table is not served here (NOT_FOUND)
    UNAVAILABLE = "unavailable"  # starting, or still loading (UNAVAILABLE)
    MOVED = "moved"  # the bucket belongs to another executor (FAILED_PRECONDITION)
    DATA_LOSS = "data loss"  # the bucket's files cannot be read (DATA_LOSS)
    NOT_YET = "not yet"  # the snapshot asked for did not come within the caller's deadline (DEADLINE_EXCEEDED)


class Refused(Exception):
    """The whole call is refused (version 1 clients, and requests that make no sense). ``counted``: in the
    executor's ``requests_refused``."""

    def __init__(self, why: Why, message: str, counted: bool = True) -> None:
        super().__init__(message)
        self.why = why
        self.counted = counted


class Problem:
    __slots__ = ("reason", "retry", "code")

    def __init__(self, reason: str, retry: bool, code: Why) -> None:
        self.reason, self.retry, self.code = reason, retry, code


class Holder(Protocol):
    """What an executor holds that its answers read (``holding.Holding``)."""

    index: int
    tables: Mapping[str, TableState]
    owners: tuple  # owners[channel] = executor index
    pool: Pool  # lookups that do not run on the loop
    max_batch_keys: int
    requests: int
    keys_looked_up: int
    stats: LookupStats


class Lookups:
    """Answers ``LookupRequest``s from what an executor holds (``Holder``); raises ``Refused`` or ``NotYet``."""

    def __init__(self, executor: Holder) -> None:
        self.ex = executor

    async def lookup(self, request: pb.LookupRequest, time_remaining: Optional[float]) -> pb.LookupResponse:
        """Answer one request; ``time_remaining``: seconds the caller still waits (None: no deadline)."""
        ex = self.ex
        state = ex.tables.get(request.table)
        if state is None:
            if not ex.tables:  # joined a moment ago: its tables are still opening
                raise Refused(Why.UNAVAILABLE, f"executor {ex.index} is starting", counted=False)
            raise Refused(Why.NOT_FOUND, f"table {request.table!r} is not served here", counted=False)
        t0 = time.perf_counter()
        try:
            if len(request.key):
                response = await self._typed(state, request, time_remaining)
            else:
                response = await self._batch(state, request, time_remaining)
        except Refused as e:
            if e.counted:
                ex.stats.refused += 1
            raise
        ex.stats.answered(len(request.buckets), len(response.found),
                          sum(len(f.positions) for f in response.failed) if len(response.failed) else 0,
                          time.perf_counter() - t0)
        return response

    async def wait_snapshot(self, state: TableState, snapshot_id: int, time_remaining: Optional[float]) -> None:
        """Until ``state`` serves ``snapshot_id``; ``Refused(NOT_YET)`` (not counted as refused) when the caller's deadline
        comes first."""
        timeout = None if time_remaining is None else max(0.0, time_remaining - 0.05)

        async def until():
            async with state.changed:
                await state.changed.wait_for(lambda: state.view.snapshot_id >= snapshot_id)

        try:
            await asyncio.wait_for(until(), timeout)
        except asyncio.TimeoutError:
            raise Refused(Why.NOT_YET, f"executor {self.ex.index} serves snapshot {state.view.snapshot_id} of "
                          f"{state.name}, not yet {snapshot_id}", counted=False) from None

    # -- keys as typed values (no Arrow on the way in; rows as values on the way out when asked) ----------------
    async def _typed(self, state: TableState, request, time_remaining):
        """Keys given as ``LookupRequest.key`` (one, or several in protocol 3): each found through its bucket's key
        index (a slotted table's: each store of its partition here in turn) and read from the batch that holds its
        row — no Arrow table of keys, no vectorised machinery for a few keys. Rows go back as protobuf values
        (``row_values``, plain column types) or as Arrow IPC."""
        kinds = state.key_kinds
        width = len(kinds)
        raw = request.key
        buckets = request.buckets
        n = len(buckets)
        if not n or len(raw) != width * n or (n > 1 and request.protocol_version < 3):
            raise Refused(Why.INVALID, f"{len(raw)} key values and {n} buckets for "
                          f"{'keys' if n > 1 else 'a key'} of {width} columns")
        values = []
        for i, value in enumerate(raw):
            kind = kinds[i % width]
            got = value.WhichOneof("kind")
            if got != kind:
                raise Refused(Why.INVALID, f"keys do not fit the key columns: a {got} value "
                              f"for a {kind} column")
            values.append(value.int if kind == "int" else value.text)
        routing = state.routing
        self._check_buckets(routing, buckets)
        view = await self._view(state, request, time_remaining) if request.min_snapshot_id > 0 else state.view
        if not view.ready:
            raise Refused(Why.UNAVAILABLE, f"executor {self.ex.index} is still loading {state.name}")
        columns = self._columns(view, request) if len(request.select) else None
        ex = self.ex
        ex.requests += 1
        ex.keys_looked_up += n
        target = state.target(view, columns)
        parts = state.partition_positions
        answering = view.answering
        hits: list = []  # (position, run, row) of an exact store, or (position, None, one-row table)
        failed: dict = {}  # reason → (positions, retry)
        cold = False
        slotted = state.slotted
        for i in range(n):
            kv = values[i * width:(i + 1) * width]
            partition = tuple([kv[j] for j in parts]) if parts else ()
            bucket = buckets[i]
            if bucket < 0:  # the caller did not compute it: the executor does
                bucket = routing.bucket(dict(zip(state.key_names, kv)))
            if slotted:  # the key's slot: every store of its partition here indexes the keys of this executor's slots
                problem = self._channel_problem(state, view, state.channel_of((partition, bucket)))
                stores = () if problem is not None else _candidates(view, partition, self._hash_one(state, kv))
            else:
                store = answering.get((partition, bucket), _NOT_HERE)
                problem = self._problem(state, view, (partition, bucket)) if store is _NOT_HERE else None
                stores = () if store is None or store is _NOT_HERE else (store,)  # (None: no rows yet)
            if problem is not None:
                if request.protocol_version < 2:
                    raise Refused(problem.code, problem.reason)
                failed.setdefault(problem.reason, ([], problem.retry))[0].append(i)
                continue
            hit = None
            for store in stores:
                hit = await self._probe(state, view, store, kv, target)
                if hit is not None:
                    hits.append((i, *hit))
                    cold = cold or (hit[0] is not None and not hit[0].built)
                    break
            if hit is None and slotted:
                problem = self._broken(state, view, partition)
                if problem is not None:
                    failed.setdefault(problem.reason, ([], problem.retry))[0].append(i)
        kinds_out = _value_kinds(target) if request.row_values else None
        response = pb.LookupResponse(snapshot_id=view.snapshot_id, schema_id=view.schema_id)
        if failed:
            response.failed.extend(pb.FailedKeys(positions=p, reason=reason, retry=retry)
                                   for reason, (p, retry) in failed.items())
        if hits:
            response.found.extend([h[0] for h in hits])
            if cold:  # a row not on local disk yet (loading, or evicted) is read in a thread: the loop never waits
                await asyncio.get_running_loop().run_in_executor(ex.pool, self._rows, state, view, columns, target,
                                                                 hits, kinds_out, response)
            else:
                self._rows(state, view, columns, target, hits, kinds_out, response)
        elif kinds_out is None:
            response.rows_ipc = state.empty_rows(view, columns)
        return response

    @staticmethod
    def _hash_one(state: TableState, kv: list) -> int:
        """One key's index hash (``store/key_hashes.py``), as a Python int."""
        if state.hasher.exact:
            return state.hasher.one(kv[state.exact_position])
        keys = pa.Table.from_pydict({k: [v] for k, v in zip(state.key_names, kv)}, schema=state.key_schema)
        return int(state.hasher.hashes(keys)[0][0])

    async def _probe(self, state: TableState, view: View, store, kv: list, target):
        """One key (its values ``kv`` in key order) in one bucket's store: (run, row) of an exact store, (None,
        one-row table) otherwise, or None when the store does not hold it."""
        if store.exact:
            v = kv[state.exact_position]
            if not -_SIGN <= v < _SIGN:
                raise Refused(Why.INVALID, "keys do not fit the key columns: out of range")
            return store.find_one(state.hasher.one(v))
        keys = pa.Table.from_pydict({k: [v] for k, v in zip(state.key_names, kv)}, schema=state.key_schema)
        h, h2 = state.hasher.hashes(keys)
        if state.warm(view):
            req, rows = store.lookup(keys, h, h2, target)
        else:
            req, rows = await asyncio.get_running_loop().run_in_executor(
                self.ex.pool, store.lookup, keys, h, h2, target)
        return (None, rows) if len(req) else None

    @staticmethod
    def _check_buckets(routing, buckets) -> None:
        """Routing buckets are -1 (the executor computes it) or below the table's buckets (or key slots)."""
        if not len(buckets):
            return
        if min(buckets) < -1 or max(buckets) >= routing.routes:
            raise Refused(Why.INVALID, "bucket out of range")

    @staticmethod
    def _rows(state: TableState, view: View, columns, target, hits: list, kinds_out, response) -> None:
        """Put the rows of ``hits`` into ``response``: as values (``kinds_out``: each column's Value field) or as
        an Arrow IPC stream."""
        if kinds_out is not None:
            add = response.values.add  # each value made in place: no message built, then copied in
            response.columns.extend(target.columns)
            for _, run, r in hits:
                row = run.values(r, target) if run is not None else list(r.to_pylist()[0].values())
                for k, v in zip(kinds_out, row):
                    if v is None:
                        add()
                    else:
                        add(**{k: v})
            return
        if len(hits) == 1 and hits[0][1] is not None:
            _, run, r = hits[0]
            response.rows_ipc = stream_of(state.schema_message(view, columns), run.row(r, target))
            return
        batches = []
        for _, run, r in hits:
            if run is not None:
                batches.append(run.row(r, target))
            else:
                batches += r.to_batches()
        response.rows_ipc = ipc_stream(pa.Table.from_batches(batches, target.schema))

    # -- a batch of keys as Arrow --------------------------------------------------------------------------
    async def _batch(self, state: TableState, request, time_remaining):
        ex = self.ex
        try:
            keys = pa.ipc.open_stream(request.keys_ipc).read_all()
        except Exception as e:
            raise Refused(Why.INVALID, f"keys are not an Arrow IPC stream: {e}") from None
        n = keys.num_rows
        if n > ex.max_batch_keys:
            raise Refused(Why.INVALID,
                          f"batch of {n} keys exceeds the limit of {ex.max_batch_keys} keys per request")
        if len(request.buckets) != n:
            raise Refused(Why.INVALID, f"{len(request.buckets)} buckets for {n} keys")
        missing = [k for k in state.key_names if k not in keys.column_names]
        if missing:
            raise Refused(Why.INVALID, f"missing key column(s) {', '.join(missing)}")
        try:
            keys = keys.select(state.key_names)
            if [f.type for f in keys.schema] != state.key_types:
                keys = keys.cast(state.key_schema)
        except Exception as e:
            raise Refused(Why.INVALID, f"keys do not fit the key columns: {e}") from None
        if n and any(keys.column(k).null_count for k in state.key_names):
            raise Refused(Why.INVALID, "primary-key values cannot be null")
        buckets = np.asarray(request.buckets, dtype=np.int64)
        routing = state.routing
        if n:
            self._check_buckets(routing, (int(buckets.min()), int(buckets.max())))
            if buckets.min() < 0:  # routing buckets the caller did not compute
                unknown = buckets < 0
                buckets[unknown] = routing.buckets_of(keys.filter(pa.array(unknown)))
        view = await self._view(state, request, time_remaining)
        columns = self._columns(view, request)
        ex.requests += 1
        ex.keys_looked_up += n
        v1 = request.protocol_version < 2
        ordered = not request.any_order
        if n <= INLINE_KEYS and state.warm(view):
            found, rows, failed = self.answer(state, view, keys, buckets, columns, v1, ordered)
        else:
            found, rows, failed = await asyncio.get_running_loop().run_in_executor(
                ex.pool, self.answer, state, view, keys, buckets, columns, v1, ordered)
        return pb.LookupResponse(snapshot_id=view.snapshot_id, schema_id=view.schema_id, rows_ipc=rows, found=found,
                                 failed=failed)

    def answer(self, state: TableState, view: View, keys: pa.Table, buckets: np.ndarray, columns, v1: bool,
               ordered: bool = True):
        """(request positions found, their rows as Arrow IPC, FailedKeys) — raises ``Refused`` for version 1.
        ``buckets``: each key's routing bucket (its bucket, or its slot on a slotted table). ``ordered``: the rows
        in request order (else as the buckets gave them, ``any_order``)."""
        n = keys.num_rows
        if n == 0:
            return [], state.empty_rows(view, columns), []
        h_all, h2_all = state.hasher.hashes(keys)
        target = state.target(view, columns)
        found_idx, tables, failed = [], [], []
        if state.slotted:
            self._slotted(state, view, keys, buckets, h_all, h2_all, target, v1, found_idx, tables, failed)
        for key, sel in () if state.slotted else _groups(state.routing.key_partition_keys, keys, buckets):
            problem = self._problem(state, view, key)
            if problem is not None:
                if v1:
                    raise Refused(problem.code, problem.reason)
                positions = np.arange(n) if sel is None else sel
                failed.append(pb.FailedKeys(positions=positions.tolist(), reason=problem.reason, retry=problem.retry))
                continue
            store = view.stores.get(key)
            if store is None:
                continue
            if sel is None:  # the whole batch is one (partition, bucket)
                req, rows = store.lookup(keys, h_all, h2_all, target)
                if rows is not None and len(req):
                    found_idx.append(req)
                    tables.append(rows)
                continue
            sub = keys.take(pa.array(sel)) if not store.exact else keys
            req, rows = store.lookup(sub, h_all[sel], h2_all[sel] if h2_all is not None else None, target)
            if rows is not None and len(req):
                found_idx.append(sel[req])
                tables.append(rows)
        if not tables:
            return [], state.empty_rows(view, columns), failed
        found = np.concatenate(found_idx) if len(found_idx) > 1 else found_idx[0]
        table = tables[0] if len(tables) == 1 else pa.concat_tables(tables)
        if ordered and len(found) > 1 and np.any(np.diff(found) < 0):
            order = np.argsort(found, kind="stable")
            table = table.take(pa.array(order))
            found = found[order]
        return found.tolist(), ipc_stream(table), failed

    def _slotted(self, state: TableState, view: View, keys: pa.Table, slots: np.ndarray, h_all: np.ndarray,
                 h2_all: Optional[np.ndarray], target, v1: bool, found_idx: list, tables: list, failed: list) -> None:
        """Keys of a slotted table: those of a channel this executor does not serve now are named (loading,
        moved); the others are looked for in every store of their partition, each indexing the keys of this
        executor's channels, until found."""
        n = keys.num_rows
        routing = state.routing
        channels = channels_of(routing.partition_hashes_of(keys), slots, state.channels)
        served = np.isin(channels, np.fromiter(view.served, dtype=np.int64, count=len(view.served)))
        for channel in np.unique(channels[~served]).tolist():
            positions = np.flatnonzero(channels == channel)
            problem = self._channel_problem(state, view, channel)
            if v1:
                raise Refused(problem.code, problem.reason)
            failed.append(pb.FailedKeys(positions=positions.tolist(), reason=problem.reason, retry=problem.retry))
        def probe(store, positions: np.ndarray) -> np.ndarray:
            """``positions`` looked for in ``store``: those it does not hold."""
            if not len(positions):
                return positions
            sub = keys if store.exact else keys.take(pa.array(positions))
            req, rows = store.lookup(sub, h_all[positions], h2_all[positions] if h2_all is not None else None, target)
            if rows is None or not len(req):
                return positions
            found_idx.append(positions[req])
            tables.append(rows)
            keep = np.ones(len(positions), dtype=bool)
            keep[req] = False
            return positions[keep]

        for (partition, _), sel in _groups(routing.key_partition_keys, keys, np.zeros(n, np.int64)):
            remaining = np.arange(n) if sel is None else sel
            remaining = remaining[served[remaining]]
            stores = view.by_partition.get(partition, {})
            router = view.routers.get(partition)
            if router is None:  # not built yet: every store in turn
                for store in stores.values():
                    remaining = probe(store, remaining)
            elif len(remaining):
                routed = router.route(h_all[remaining])
                ambiguous = remaining[routed == -2]  # low bits another key shares: every store
                rest = [remaining[routed == -1]]  # in no store the router saw: in one changed since, or nowhere
                for ordinal in np.unique(routed[routed >= 0]).tolist():
                    store = router.current(ordinal, stores)
                    sel_here = remaining[routed == ordinal]
                    rest.append(sel_here if store is None else probe(store, sel_here))
                remaining = np.concatenate(rest)
                for store in router.changed(stores):
                    remaining = probe(store, remaining)
                for store in stores.values() if len(ambiguous) else ():
                    ambiguous = probe(store, ambiguous)
                remaining = np.concatenate([remaining, ambiguous])
            problem = self._broken(state, view, partition) if len(remaining) else None
            if problem is not None:
                if v1:
                    raise Refused(problem.code, problem.reason)
                failed.append(pb.FailedKeys(positions=remaining.tolist(), reason=problem.reason, retry=False))

    def _broken(self, state: TableState, view: View, partition: tuple) -> Optional[Problem]:
        """On a slotted table, a key not found may be in a bucket of its partition (of any, on a cross-partition
        table) that cannot be served: why, or None."""
        broken = view.broken_in(partition, state.cross_partition)
        if broken is None:
            return None
        key, error = broken
        return Problem(f"{_bucket_name(state, key)} of {state.name} cannot be served: {error}", False, Why.DATA_LOSS)

    # -- shared -------------------------------------------------------------------------------------------
    async def _view(self, state: TableState, request, time_remaining) -> View:
        if request.min_snapshot_id > 0 and state.view.snapshot_id < request.min_snapshot_id:
            await self.wait_snapshot(state, request.min_snapshot_id, time_remaining)
        view = state.view
        if not view.ready:
            raise Refused(Why.UNAVAILABLE, f"executor {self.ex.index} is still loading {state.name}")
        return view

    @staticmethod
    def _columns(view: View, request) -> Optional[List[str]]:
        columns = list(request.select) or None
        if columns:
            unknown = [c for c in columns if c not in view.schema.names]
            if unknown:
                raise Refused(Why.INVALID, f"unknown column(s) {', '.join(unknown)}")
        return columns

    def _problem(self, state: TableState, view: View, key: BucketKey) -> Optional[Problem]:
        """Why this executor cannot answer for a (partition, bucket) now, or None."""
        error = view.broken.get(key)
        if error is not None:
            return Problem(f"{_bucket_name(state, key)} of {state.name} cannot be served: {error}", False,
                           Why.DATA_LOSS)
        return self._channel_problem(state, view, state.channel_of(key),
                                     f"partition {key[0]} bucket {key[1]} of {state.name}")

    def _channel_problem(self, state: TableState, view: View, channel: int, where: str = "") -> Optional[Problem]:
        """Why this executor does not answer for a channel now (it loads it, or another executor has it), or
        None; ``where``: what was asked for, for the reason (default: the channel)."""
        if channel in view.served:
            return None
        ex = self.ex
        where = where or f"channel {channel} of {state.name}"
        if channel in state.owned:
            return Problem(f"executor {ex.index} is still loading {where}", True, Why.UNAVAILABLE)
        owner = ex.owners[channel] if channel < len(ex.owners) else -1
        return Problem(f"{where} belongs to executor {owner}, not {ex.index}", True, Why.MOVED)


def _candidates(view: View, partition: tuple, h: int) -> list:
    """The stores of a slotted table's ``partition`` one key (index hash ``h``) may be in, likeliest first: the one
    the router names, then those changed since it was built; every store when there is no router yet or the key's
    low bits are another's too."""
    stores = view.by_partition.get(partition)
    if not stores:
        return []
    router = view.routers.get(partition)
    if router is None:
        return list(stores.values())
    ordinal = int(router.route(np.asarray([h], dtype=np.uint64))[0])
    if ordinal == -2:
        return list(stores.values())
    first = router.current(ordinal, stores) if ordinal >= 0 else None
    changed = router.changed(stores)
    return ([first] if first is not None else []) + [s for s in changed if s is not first]


def _bucket_name(state: TableState, key: BucketKey) -> str:
    """``partition dt=2026-11-01 bucket 3`` (``bucket 3`` in an unpartitioned table), for reasons."""
    pkeys = state.routing.partition_keys
    return f"partition {partition_path(pkeys, key[0])} bucket {key[1]}" if pkeys else f"bucket {key[1]}"


_KINDS: Dict[int, tuple] = {}  # id(target) → (target, its columns' Value fields or None)


def _value_kinds(target) -> Optional[List[str]]:
    """Each column's ``Value`` field, or None when a column's type has none (rows then go as Arrow IPC)."""
    entry = _KINDS.get(id(target))
    if entry is None or entry[0] is not target:
        kinds = [value_kind(f.type) for f in target.schema]
        entry = _KINDS[id(target)] = (target, None if None in kinds else kinds)
    return entry[1]


def _groups(partition_keys: Sequence[str], keys: pa.Table, buckets: np.ndarray):
    """[((partition tuple, bucket), request indices or None for all)], vectorised (no per-key Python)."""
    n = keys.num_rows
    if not partition_keys:
        first = int(buckets[0])
        if n == 1 or np.all(buckets == first):
            return [(((), first), None)]
        codes = buckets.astype(np.int64)
        labels = None
    else:
        dicts, cols = [], []
        for k in partition_keys:
            col = keys.column(k)
            enc = (col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col).dictionary_encode()
            dicts.append(enc.dictionary.to_pylist())
            cols.append(np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64))
        cols.append(buckets.astype(np.int64))
        combo = np.stack(cols, axis=1)
        uniq, inverse = np.unique(combo, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        labels = [(tuple(dicts[j][int(u[j])] for j in range(len(partition_keys))), int(u[-1])) for u in uniq]
        if len(labels) == 1:
            return [(labels[0], None)]
        codes = inverse
    return [((((), code) if labels is None else labels[code]), grp) for code, grp in positions_by_code(codes)]


__all__ = ["Holder", "INLINE_KEYS", "Lookups", "Refused", "Why"]
