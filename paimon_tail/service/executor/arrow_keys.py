"""A batch of keys as Arrow (``LookupRequest.keys_ipc``), answered from one call's ``Reading`` vectorised: keys
grouped by (partition, bucket) without per-key Python, each group looked up in its bucket's store (a slotted
table's: in the stores of its partition, through its router), rows in request order unless ``any_order``."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pyarrow as pa

from ..keys.bucket_hash import channels_of
from ..protocol import lookup_pb2 as pb
from ..protocol.wire import ipc_stream
from ..store.runs import positions_by_code
from .refusals import Refused, Why, broken_problem, bucket_problem, channel_problem
from .views import Reading, TableKeys


def arrow_keys(keys: TableKeys, request, max_batch_keys: int) -> pa.Table:
    """The request's keys, checked and cast to the key columns; raises ``Refused``."""
    try:
        table = pa.ipc.open_stream(request.keys_ipc).read_all()
    except Exception as e:
        raise Refused(Why.INVALID, f"keys are not an Arrow IPC stream: {e}") from None
    n = table.num_rows
    if n > max_batch_keys:
        raise Refused(Why.INVALID, f"batch of {n} keys exceeds the limit of {max_batch_keys} keys per request")
    if len(request.buckets) != n:
        raise Refused(Why.INVALID, f"{len(request.buckets)} buckets for {n} keys")
    missing = [k for k in keys.names if k not in table.column_names]
    if missing:
        raise Refused(Why.INVALID, f"missing key column(s) {', '.join(missing)}")
    try:
        table = table.select(keys.names)
        if [f.type for f in table.schema] != keys.types:
            table = table.cast(keys.schema)
    except Exception as e:
        raise Refused(Why.INVALID, f"keys do not fit the key columns: {e}") from None
    if n and any(table.column(k).null_count for k in keys.names):
        raise Refused(Why.INVALID, "primary-key values cannot be null")
    return table


def answer_arrow(r: Reading, keys: pa.Table, buckets: np.ndarray, v1: bool, ordered: bool = True):
    """(request positions found, their rows as Arrow IPC, FailedKeys) — raises ``Refused`` for version 1.
    ``buckets``: each key's routing bucket (its bucket, or its slot on a slotted table). ``ordered``: the rows
    in request order (else as the buckets gave them, ``any_order``)."""
    n = keys.num_rows
    if n == 0:
        return [], r.answer.empty_rows, []
    view = r.view
    h_all, h2_all = r.keys.hasher.hashes(keys)
    target = r.answer.target
    found_idx, tables, failed = [], [], []
    if r.keys.slotted:
        _slotted(r, keys, buckets, h_all, h2_all, v1, found_idx, tables, failed)
    for key, sel in () if r.keys.slotted else _groups(r.keys.routing.key_partition_keys, keys, buckets):
        problem = bucket_problem(r, key)
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
        return [], r.answer.empty_rows, failed
    found = np.concatenate(found_idx) if len(found_idx) > 1 else found_idx[0]
    table = tables[0] if len(tables) == 1 else pa.concat_tables(tables)
    if ordered and len(found) > 1 and np.any(np.diff(found) < 0):
        order = np.argsort(found, kind="stable")
        table = table.take(pa.array(order))
        found = found[order]
    return found.tolist(), ipc_stream(table), failed


def _slotted(r: Reading, keys: pa.Table, slots: np.ndarray, h_all: np.ndarray, h2_all: Optional[np.ndarray],
             v1: bool, found_idx: list, tables: list, failed: list) -> None:
    """Keys of a slotted table: those of a channel this executor does not serve now are named (loading,
    moved); the others are looked for in every store of their partition, each indexing the keys of this
    executor's channels, until found."""
    n = keys.num_rows
    view = r.view
    target = r.answer.target
    routing = r.keys.routing
    channels = channels_of(routing.partition_hashes_of(keys), slots, r.channels)
    served = np.isin(channels, np.fromiter(view.served, dtype=np.int64, count=len(view.served)))
    for channel in np.unique(channels[~served]).tolist():
        positions = np.flatnonzero(channels == channel)
        problem = channel_problem(r, channel)
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
        problem = broken_problem(r, partition) if len(remaining) else None
        if problem is not None:
            if v1:
                raise Refused(problem.code, problem.reason)
            failed.append(pb.FailedKeys(positions=remaining.tolist(), reason=problem.reason, retry=False))


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


__all__ = ["answer_arrow", "arrow_keys"]
