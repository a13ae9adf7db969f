"""Keys given as typed values (``LookupRequest.key``: one, or several in protocol 3), answered from one call's
``Reading``: each found through its bucket's key index (a slotted table's: each store of its partition here in
turn) and read from the batch that holds its row — no Arrow table of keys, no vectorised machinery for a few
keys. Rows go back as protobuf values (``row_values``, plain column types) or as Arrow IPC."""
from __future__ import annotations

import asyncio
from concurrent.futures import Executor as Pool
from typing import Dict, List, Optional

import numpy as np
import pyarrow as pa

from ..protocol import lookup_pb2 as pb
from ..protocol.wire import ipc_stream, stream_of, value_kind
from .refusals import Refused, Why, broken_problem, bucket_problem, channel_problem
from .views import Reading, TableKeys

_SIGN = 1 << 63
_NOT_HERE = object()


def typed_values(keys: TableKeys, request) -> list:
    """The request's key values, checked against the key columns' kinds; raises ``Refused``."""
    kinds = keys.kinds
    width = len(kinds)
    raw = request.key
    n = len(request.buckets)
    if not n or len(raw) != width * n or (n > 1 and request.protocol_version < 3):
        raise Refused(Why.INVALID, f"{len(raw)} key values and {n} buckets for "
                      f"{'keys' if n > 1 else 'a key'} of {width} columns")
    values = []
    for i, value in enumerate(raw):
        kind = kinds[i % width]
        got = value.WhichOneof("kind")
        if got != kind:
            raise Refused(Why.INVALID, f"keys do not fit the key columns: a {got} value for a {kind} column")
        values.append(value.int if kind == "int" else value.text)
    return values


async def answer_typed(r: Reading, values: list, request, pool: Pool) -> pb.LookupResponse:
    """Answer the keys ``values`` (``typed_values``, key after key) of ``request`` from ``r``."""
    keys = r.keys
    width = len(keys.kinds)
    buckets = request.buckets
    n = len(buckets)
    routing = keys.routing
    view = r.view
    target = r.answer.target
    parts = keys.partition_positions
    answering = view.answering
    hits: list = []  # (position, run, row) of an exact store, or (position, None, one-row table)
    failed: dict = {}  # reason → (positions, retry)
    cold = False
    slotted = keys.slotted
    for i in range(n):
        kv = values[i * width:(i + 1) * width]
        partition = tuple([kv[j] for j in parts]) if parts else ()
        bucket = buckets[i]
        if bucket < 0:  # the caller did not compute it: the executor does
            bucket = routing.bucket(dict(zip(keys.names, kv)))
        if slotted:  # the key's slot: every store of its partition here indexes the keys of this executor's slots
            problem = channel_problem(r, routing.channel_of(partition, bucket, r.channels))
            stores = () if problem is not None else _candidates(view, partition, _hash_one(keys, kv))
        else:
            store = answering.get((partition, bucket), _NOT_HERE)
            problem = bucket_problem(r, (partition, bucket)) if store is _NOT_HERE else None
            stores = () if store is None or store is _NOT_HERE else (store,)  # (None: no rows yet)
        if problem is not None:
            if request.protocol_version < 2:
                raise Refused(problem.code, problem.reason)
            failed.setdefault(problem.reason, ([], problem.retry))[0].append(i)
            continue
        hit = None
        for store in stores:
            hit = await _probe(r, store, kv, pool)
            if hit is not None:
                hits.append((i, *hit))
                cold = cold or (hit[0] is not None and not hit[0].built)
                break
        if hit is None and slotted:
            problem = broken_problem(r, partition)
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
            await asyncio.get_running_loop().run_in_executor(pool, _rows, r, hits, kinds_out, response)
        else:
            _rows(r, hits, kinds_out, response)
    elif kinds_out is None:
        response.rows_ipc = r.answer.empty_rows
    return response


def _hash_one(keys: TableKeys, kv: list) -> int:
    """One key's index hash (``store/key_hashes.py``), as a Python int."""
    if keys.hasher.exact:
        return keys.hasher.one(kv[keys.exact_position])
    table = pa.Table.from_pydict({k: [v] for k, v in zip(keys.names, kv)}, schema=keys.schema)
    return int(keys.hasher.hashes(table)[0][0])


async def _probe(r: Reading, store, kv: list, pool: Pool):
    """One key (its values ``kv`` in key order) in one bucket's store: (run, row) of an exact store, (None,
    one-row table) otherwise, or None when the store does not hold it."""
    keys = r.keys
    if store.exact:
        v = kv[keys.exact_position]
        if not -_SIGN <= v < _SIGN:
            raise Refused(Why.INVALID, "keys do not fit the key columns: out of range")
        return store.find_one(keys.hasher.one(v))
    table = pa.Table.from_pydict({k: [v] for k, v in zip(keys.names, kv)}, schema=keys.schema)
    h, h2 = keys.hasher.hashes(table)
    target = r.answer.target
    if r.warm:
        req, rows = store.lookup(table, h, h2, target)
    else:
        req, rows = await asyncio.get_running_loop().run_in_executor(pool, store.lookup, table, h, h2, target)
    return (None, rows) if len(req) else None


def _rows(r: Reading, hits: list, kinds_out, response) -> None:
    """Put the rows of ``hits`` into ``response``: as values (``kinds_out``: each column's Value field) or as
    an Arrow IPC stream."""
    target = r.answer.target
    if kinds_out is not None:
        add = response.values.add  # each value made in place: no message built, then copied in
        response.columns.extend(target.columns)
        for _, run, row in hits:
            values = run.values(row, target) if run is not None else list(row.to_pylist()[0].values())
            for k, v in zip(kinds_out, values):
                if v is None:
                    add()
                else:
                    add(**{k: v})
        return
    if len(hits) == 1 and hits[0][1] is not None:
        _, run, row = hits[0]
        response.rows_ipc = stream_of(r.answer.schema_message, run.row(row, target))
        return
    batches = []
    for _, run, row in hits:
        if run is not None:
            batches.append(run.row(row, target))
        else:
            batches += row.to_batches()
    response.rows_ipc = ipc_stream(pa.Table.from_batches(batches, target.schema))


def _candidates(view, partition: tuple, h: int) -> list:
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


_KINDS: Dict[int, tuple] = {}  # id(target) → (target, its columns' Value fields or None)


def _value_kinds(target) -> Optional[List[str]]:
    """Each column's ``Value`` field, or None when a column's type has none (rows then go as Arrow IPC)."""
    entry = _KINDS.get(id(target))
    if entry is None or entry[0] is not target:
        kinds = [value_kind(f.type) for f in target.schema]
        entry = _KINDS[id(target)] = (target, None if None in kinds else kinds)
    return entry[1]


__all__ = ["answer_typed", "typed_values"]
