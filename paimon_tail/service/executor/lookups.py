"""An executor's answers: the latest rows of a batch of keys, from one consistent view of one table.

One path for every lookup: the table, its keys decoded and checked (typed values, ``typed_keys.py``, or an Arrow
batch, ``arrow_keys.py``), the snapshot waited for, then one ``Reading`` of the table taken for the whole call
(``views.py``: its view, keys, answer schema, owners) and handed to the answer. A key whose bucket this executor
cannot answer right now is named in the answer (protocol 2: ``FailedKeys``, with ``retry`` when asking again
helps: the bucket moved to another executor or is still loading) while every other key is answered. A version 1
client gets the whole call refused instead (``Refused``: the servicer turns its ``Why`` into FAILED_PRECONDITION,
UNAVAILABLE, DATA_LOSS), as before.

No gRPC here: requests and answers are the protocol's typed messages, refusals a ``Refused`` with its reason
(``refusals.py``); ``servicer.py`` translates them into a call's status.
"""
from __future__ import annotations

import asyncio
import time
from concurrent.futures import Executor as Pool
from typing import List, Mapping, Optional, Protocol

import numpy as np
import pyarrow as pa

from ..protocol import lookup_pb2 as pb
from .arrow_keys import answer_arrow, arrow_keys
from .executor_metrics import LookupStats
from .refusals import Refused, Why
from .state import TableState
from .typed_keys import answer_typed, typed_values
from .views import View

INLINE_KEYS = 64  # batches up to this size are answered on the loop (no thread hop)


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
    """Answers ``LookupRequest``s from what an executor holds (``Holder``); raises ``Refused``."""

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
            response = await self._answer(state, request, time_remaining)
        except Refused as e:
            if e.counted:
                ex.stats.refused += 1
            raise
        ex.stats.answered(len(request.buckets), len(response.found),
                          sum(len(f.positions) for f in response.failed) if len(response.failed) else 0,
                          time.perf_counter() - t0)
        return response

    async def _answer(self, state: TableState, request, time_remaining: Optional[float]) -> pb.LookupResponse:
        ex = self.ex
        keys = state.keys
        typed = len(request.key) > 0
        if typed:
            values = typed_values(keys, request)
            _check_buckets(keys.routing, request.buckets)
            n = len(request.buckets)
        else:
            table = arrow_keys(keys, request, ex.max_batch_keys)
            n = table.num_rows
            buckets = np.asarray(request.buckets, dtype=np.int64)
            if n:
                _check_buckets(keys.routing, (int(buckets.min()), int(buckets.max())))
                if buckets.min() < 0:  # routing buckets the caller did not compute
                    unknown = buckets < 0
                    buckets[unknown] = keys.routing.buckets_of(table.filter(pa.array(unknown)))
        view = await self._view(state, request, time_remaining)
        reading = state.reading(view, _columns(view, request), ex.index, ex.owners)
        ex.requests += 1
        ex.keys_looked_up += n
        if typed:
            return await answer_typed(reading, values, request, ex.pool)
        v1 = request.protocol_version < 2
        ordered = not request.any_order
        if n <= INLINE_KEYS and reading.warm:
            found, rows, failed = answer_arrow(reading, table, buckets, v1, ordered)
        else:
            found, rows, failed = await asyncio.get_running_loop().run_in_executor(
                ex.pool, answer_arrow, reading, table, buckets, v1, ordered)
        return pb.LookupResponse(snapshot_id=view.snapshot_id, schema_id=view.schema_id, rows_ipc=rows, found=found,
                                 failed=failed)

    async def _view(self, state: TableState, request, time_remaining: Optional[float]) -> View:
        """The table's view, at ``min_snapshot_id`` or later (waited for until the caller's deadline, less a
        margin: ``Refused(NOT_YET)``, not counted as refused, when it comes first)."""
        wanted = request.min_snapshot_id
        if wanted > 0 and state.view.snapshot_id < wanted:
            timeout = None if time_remaining is None else max(0.0, time_remaining - 0.05)
            if not await state.until(wanted, timeout):
                raise Refused(Why.NOT_YET, f"executor {self.ex.index} serves snapshot {state.view.snapshot_id} of "
                              f"{state.name}, not yet {wanted}", counted=False)
        view = state.view
        if not view.ready:
            raise Refused(Why.UNAVAILABLE, f"executor {self.ex.index} is still loading {state.name}")
        return view


def _check_buckets(routing, buckets) -> None:
    """Routing buckets are -1 (the executor computes it) or below the table's buckets (or key slots)."""
    if not len(buckets):
        return
    if min(buckets) < -1 or max(buckets) >= routing.routes:
        raise Refused(Why.INVALID, "bucket out of range")


def _columns(view: View, request) -> Optional[List[str]]:
    columns = list(request.select) or None
    if columns:
        unknown = [c for c in columns if c not in view.schema.names]
        if unknown:
            raise Refused(Why.INVALID, f"unknown column(s) {', '.join(unknown)}")
    return columns


__all__ = ["Holder", "INLINE_KEYS", "Lookups"]
