"""The lookup join: rows enriched with a served table's row for their key (the Query Service proposal's first use).

    import paimon_tail
    enriched = paimon_tail.lookup_join(events, "shop.orders", on="order_id", warehouse="/wh")   # pyarrow in and out

Each batch of input rows becomes one ``LookupClient`` call with an Arrow table of keys; the answers are taken
back into input order and appended as columns. ``JoinPlan`` checks the names and types once, where the join is
declared (the Spark driver, or here); ``LookupJoiner`` does the per-batch work, with several batches in flight.
The same joiner runs inside Spark's ``mapInArrow`` (``paimon_tail.spark.lookup_join``) and behind the SQL function
(``paimon_tail.spark.register_lookup_function``).
"""
from __future__ import annotations

import itertools
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import pyarrow as pa

from .concurrency import in_order
from .errors import ServiceError, UsageError
from .stream.reader import coalesced

HOWS = ("left", "inner")
DEFAULT_IN_FLIGHT = 4
# Keys per lookup: small input batches (Spark hands 10,000 rows at a time) are looked up together. The service
# answers a 64k-key call ~1.7x faster per key than 10k-key calls (benchmarks/spark_bench.py, docs/performance.md).
DEFAULT_LOOKUP_KEYS = 65536

On = Union[None, str, Sequence[str], Mapping[str, str]]


@dataclass(frozen=True)
class JoinPlan:
    """What a lookup join adds and how it finds it; built once, shipped to wherever the batches are."""

    table: str  # db.table
    keys: Tuple[str, ...]  # the table's primary key
    on: Tuple[str, ...]  # the input columns holding the key, in key order
    columns: Tuple[str, ...]  # table columns appended
    names: Tuple[str, ...]  # their names in the output (``prefix`` + column)
    how: str = "left"
    snapshot_column: Optional[str] = None  # the snapshot the answers reflect (the lowest of a batch's answers)
    min_snapshot: Optional[int] = None
    timeout: float = 30.0
    in_flight: int = DEFAULT_IN_FLIGHT
    lookup_keys: int = DEFAULT_LOOKUP_KEYS  # input rows gathered into one lookup

    @classmethod
    def make(cls, meta, input_names: Sequence[str], on: On = None, how: str = "left", *,
             select: Optional[Sequence[str]] = None, prefix: str = "", snapshot_column: Optional[str] = None,
             min_snapshot: Optional[int] = None, timeout: float = 30.0,
             in_flight: int = DEFAULT_IN_FLIGHT, lookup_keys: int = DEFAULT_LOOKUP_KEYS) -> "JoinPlan":
        """Check a join of input columns ``input_names`` with the table ``meta`` describes (a ``TableMeta``)."""
        if how not in HOWS:
            raise UsageError(f"unsupported join type how={how!r}", hint="use how='left' or how='inner'")
        keys = tuple(meta.primary_keys)
        if not keys:
            raise UsageError(f"{meta.name} has no primary key: a lookup join needs one")
        inputs = list(input_names)
        on_cols = _on_columns(on, keys, meta.name)
        absent = [c for c in on_cols if c not in inputs]
        if absent:
            raise UsageError(
                f"the input has no column{'s' if len(absent) > 1 else ''} {', '.join(absent)} "
                f"(the key of {meta.name} is ({', '.join(keys)}))",
                hint="pass on= with the input columns that hold the key, in key order, or as {key: column}")
        fields = list(meta.field_names)
        if select is None:
            columns = [c for c in fields if c not in keys]
        else:
            columns = [select] if isinstance(select, str) else list(select)
            unknown = [c for c in columns if c not in fields]
            if unknown:
                raise UsageError(f"unknown column{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} in select",
                                 hint=f"columns of {meta.name} are {', '.join(fields)}")
        names = [prefix + c for c in columns]
        if snapshot_column:
            names_all = names + [snapshot_column]
        else:
            names_all = names
        clash = [n for n in names_all if n in inputs]
        dup = {n for n in names_all if names_all.count(n) > 1}
        if clash or dup:
            bad = clash or sorted(dup)
            raise UsageError(f"the joined column{'s' if len(bad) > 1 else ''} {', '.join(bad)} would clash with "
                             f"{'the input' if clash else 'each other'}",
                             hint="pick columns with select=, or name them apart with prefix=")
        if min_snapshot is not None and int(min_snapshot) < 0:
            raise UsageError(f"min_snapshot={min_snapshot} must not be negative")
        if not timeout or float(timeout) <= 0:
            raise UsageError(f"timeout={timeout} must be positive (seconds)")
        if int(in_flight) < 1 or int(lookup_keys) < 1:
            raise UsageError(f"in_flight={in_flight} and lookup_keys={lookup_keys} must be at least 1")
        return cls(meta.name, keys, tuple(on_cols), tuple(columns), tuple(names), how, snapshot_column or None,
                   int(min_snapshot) if min_snapshot else None, float(timeout), int(in_flight), int(lookup_keys))

    def check_key_types(self, input_schema: pa.Schema, key_schema: pa.Schema) -> None:
        """Each ``on`` column must cast to its key column's type (checked on the types, before any data)."""
        for col, key in zip(self.on, self.keys):
            src, dst = input_schema.field(col).type, key_schema.field(key).type
            if src != dst and not _comparable(src, dst):
                raise UsageError(f"column {col} ({src}) cannot be compared with key column {key} of {self.table} "
                                 f"({dst})", hint="cast it to the key's type first")

    def added_fields(self, table_schema: pa.Schema) -> List[pa.Field]:
        """The appended columns as Arrow fields (all nullable: a key may be missing)."""
        out = [pa.field(name, table_schema.field(col).type, nullable=True)
               for col, name in zip(self.columns, self.names)]
        if self.snapshot_column:
            out.append(pa.field(self.snapshot_column, pa.int64(), nullable=True))
        return out

    def output_schema(self, input_schema: pa.Schema, table_schema: pa.Schema) -> pa.Schema:
        return pa.schema(list(input_schema) + self.added_fields(table_schema))


_FAMILIES = (
    ("integer", pa.types.is_integer), ("float", pa.types.is_floating), ("decimal", pa.types.is_decimal),
    ("string", lambda t: pa.types.is_string(t) or pa.types.is_large_string(t)),
    ("binary", lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)),
    ("date", pa.types.is_date), ("timestamp", pa.types.is_timestamp), ("boolean", pa.types.is_boolean),
)


def _family(t: pa.DataType) -> Optional[str]:
    return next((name for name, test in _FAMILIES if test(t)), None)


def _comparable(src: pa.DataType, dst: pa.DataType) -> bool:
    """Key values of ``src`` go to a ``dst`` key as they are (a cast that cannot change a value's meaning):
    the same family, or integers to a decimal key. Strings are not parsed into numbers or dates."""
    a, b = _family(src), _family(dst)
    return a is not None and (a == b or (a == "integer" and b == "decimal"))


def _on_columns(on: On, keys: Tuple[str, ...], table: str) -> List[str]:
    if on is None:
        return list(keys)
    if isinstance(on, str):
        on = [on]
    if isinstance(on, Mapping):
        unknown = [k for k in on if k not in keys]
        if unknown or len(on) != len(keys):
            raise UsageError(f"on={dict(on)!r} must map every key column of {table} ({', '.join(keys)}) to an "
                             "input column")
        return [str(on[k]) for k in keys]
    cols = [str(c) for c in on]
    if len(cols) != len(keys):
        raise UsageError(f"on names {len(cols)} column{'s' if len(cols) > 1 else ''} but the key of {table} has "
                         f"{len(keys)} ({', '.join(keys)})", hint="one input column per key column, in key order")
    return cols


class _Pending:
    """One input batch and its lookup (running, or done)."""

    __slots__ = ("batch", "positions", "answer")

    def __init__(self, batch: pa.RecordBatch, positions: Optional[np.ndarray], answer: Any) -> None:
        self.batch = batch
        self.positions = positions  # input rows that have a key (None: all of them)
        self.answer = answer  # a LookupResult, a Future of one, or None (no key to look up)


class LookupJoiner:
    """Joins record batches with the table ``client`` serves, as ``plan`` says. ``added``: the appended columns'
    Arrow fields as the caller promised them (``plan.added_fields``, or Spark's Arrow types); answers are cast to
    them."""

    def __init__(self, client, plan: JoinPlan, added: Sequence[pa.Field]) -> None:
        self.client = client
        self.plan = plan
        self.added = list(added)
        self._select = list(plan.columns) or list(plan.keys[:1])  # an empty select means "all columns"

    # -- one batch ------------------------------------------------------------------------------------------
    def _keys(self, batch: pa.RecordBatch) -> Tuple[Optional[pa.Table], Optional[np.ndarray]]:
        cols = [batch.column(batch.schema.get_field_index(c)) for c in self.plan.on]
        positions = None
        if any(c.null_count for c in cols):  # a null key matches nothing
            valid = np.ones(batch.num_rows, dtype=bool)
            for c in cols:
                if c.null_count:
                    valid &= c.is_valid().to_numpy(zero_copy_only=False)
            positions = np.flatnonzero(valid)
            cols = [c.take(pa.array(positions)) for c in cols]
        if not len(cols[0]):
            return None, positions
        return pa.Table.from_arrays(cols, names=list(self.plan.keys)), positions

    def _lookup(self, keys: pa.Table):
        return self.client.lookup_sync(keys, select=self._select, min_snapshot=self.plan.min_snapshot,
                                       timeout=self.plan.timeout)

    def _start(self, batch: pa.RecordBatch, pool: Optional[ThreadPoolExecutor]) -> _Pending:
        keys, positions = self._keys(batch)
        if keys is None:
            return _Pending(batch, positions, None)
        return _Pending(batch, positions, pool.submit(self._lookup, keys) if pool is not None else self._lookup(keys))

    def _finish(self, p: _Pending) -> pa.RecordBatch:
        result = p.answer.result() if isinstance(p.answer, Future) else p.answer
        batch, plan = p.batch, self.plan
        n = batch.num_rows
        if result is None:
            found = np.empty(0, dtype=np.int64)
            rows = None
            snapshot = None
        else:
            if result.failed:  # a key the service could not answer is not a key without a row: no null for it
                pos, why = next(iter(result.failed.items()))
                raise ServiceError(f"lookup join: {len(result.failed)} keys could not be answered, e.g. "
                                   f"{result.key(pos)}: {why}")
            found = np.asarray(result.found, dtype=np.int64)
            if p.positions is not None:
                found = p.positions[found]
            rows = result.rows
            snapshot = result.snapshot_id
        if plan.how == "inner":
            if len(found) < n:
                batch = batch.take(pa.array(found))
            added = [self._column(rows, c, None) for c in plan.columns]
        else:
            take = None
            if len(found) < n:
                idx = np.full(n, -1, dtype=np.int64)
                idx[found] = np.arange(len(found), dtype=np.int64)
                take = pa.array(idx, mask=idx < 0)
            added = [self._column(rows, c, take, n) for c in plan.columns]
        if plan.snapshot_column:
            added.append(pa.array(np.full(batch.num_rows, snapshot or 0, dtype=np.int64),
                                  mask=None if snapshot is not None else np.ones(batch.num_rows, dtype=bool)))
        added = [a if a.type == f.type else a.cast(f.type) for a, f in zip(added, self.added)]
        return pa.RecordBatch.from_arrays(list(batch.columns) + added,
                                          schema=pa.schema(list(batch.schema) + self.added))

    def _column(self, rows: Optional[pa.Table], column: str, take: Optional[pa.Array], n: int = 0) -> pa.Array:
        if rows is None:
            return pa.nulls(n, type=self._type(column))
        col = rows.column(column)
        if take is not None:
            col = col.take(take)
        return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col

    def _type(self, column: str) -> pa.DataType:
        return self.added[self.plan.columns.index(column)].type

    def join(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        return self._finish(self._start(batch, None))

    def join_batches(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Joined batches in input order; up to ``plan.in_flight`` lookups run while earlier batches are handed
        out and later ones are read. Input batches are gathered up to ``plan.lookup_keys`` rows a lookup."""
        pool = ThreadPoolExecutor(self.plan.in_flight, thread_name_prefix="lookup-join")
        try:
            yield from in_order(coalesced(iter(batches), self.plan.lookup_keys), lambda b: self._start(b, pool),
                                self._finish, self.plan.in_flight)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    # -- the SQL function's shape: key arrays in, one struct array out -----------------------------------------
    def lookup_struct(self, arrays: Sequence[pa.Array], pool: Optional[ThreadPoolExecutor] = None) -> Any:
        """Start the lookup of key arrays (one per key column); ``struct_of`` finishes it."""
        batch = pa.RecordBatch.from_arrays(list(arrays), names=list(self.plan.on))
        return self._start(batch, pool)

    def struct_of(self, p: _Pending, struct_type: pa.StructType) -> pa.StructArray:
        """The looked-up columns as one struct per input row, null where the key was not found."""
        joined = self._finish(p)
        n = joined.num_rows
        children = joined.columns[joined.num_columns - len(self.added):][:len(self.plan.names)]
        result = p.answer.result() if isinstance(p.answer, Future) else p.answer
        found = np.zeros(n, dtype=bool)
        if result is not None:
            idx = np.asarray(result.found, dtype=np.int64)
            found[p.positions[idx] if p.positions is not None else idx] = True
        fields = [struct_type.field(i) for i in range(struct_type.num_fields)]
        children = [c if c.type == f.type else c.cast(f.type) for c, f in zip(children, fields)]
        return pa.StructArray.from_arrays(children, fields=fields, mask=pa.array(~found))


def table_arrow_schema(meta) -> pa.Schema:
    """The table's columns as Arrow types (Paimon's mapping, as the executors answer them)."""
    from pypaimon.schema.data_types import PyarrowFieldParser

    return PyarrowFieldParser.from_paimon_schema(meta.data_fields())


def lookup_join(data: Union[pa.Table, pa.RecordBatch, Iterable[pa.RecordBatch]], table: str, on: On = None,
                how: str = "left", *, client=None, warehouse: Optional[str] = None,
                options: Union[Mapping[str, str], Sequence[str]] = (), config_file: Optional[str] = None,
                select: Optional[Sequence[str]] = None, prefix: str = "", snapshot_column: Optional[str] = None,
                min_snapshot: Optional[int] = None, timeout: float = 30.0, in_flight: int = DEFAULT_IN_FLIGHT,
                lookup_keys: int = DEFAULT_LOOKUP_KEYS) -> Union[pa.Table, Iterator[pa.RecordBatch]]:
    """``data`` with the columns of ``table``'s row for each row's key, from a running ``paimon-tail serve``.

    A table or record batch gives a table back; any other iterable of record batches (a ``RecordBatchReader``, a
    generator) gives an iterator of joined batches, ``lookup_keys`` rows a lookup and ``in_flight`` lookups at a
    time. ``on``: the input columns
    holding the primary key (default: the key's own names; a list in key order, or ``{key: column}``). ``how``:
    ``left`` keeps rows without a match (nulls), ``inner`` drops them. ``client``: a ``LookupClient`` to use
    (otherwise one is opened from ``warehouse``/``options``/``config_file`` and closed at the end).
    """
    own = client is None
    if own:
        from .service.client import LookupClient

        client = LookupClient(table, warehouse=warehouse, options=options, config_file=config_file)
    try:
        whole = isinstance(data, (pa.Table, pa.RecordBatch))
        schema = getattr(data, "schema", None)
        if schema is None:  # a plain iterable: the first batch says the schema
            it = iter(data)
            first = next(it, None)
            if first is None:
                if own:
                    client.close_sync()
                return iter(())
            schema, data = first.schema, itertools.chain([first], it)
        plan = JoinPlan.make(client.meta, schema.names, on, how, select=select, prefix=prefix,
                             snapshot_column=snapshot_column, min_snapshot=min_snapshot, timeout=timeout,
                             in_flight=in_flight, lookup_keys=lookup_keys)
        table_schema = table_arrow_schema(client.meta)
        key_schema = pa.schema([table_schema.field(k) for k in plan.keys])
        plan.check_key_types(schema, key_schema)
        out_schema = plan.output_schema(schema, table_schema)
        joiner = LookupJoiner(client, plan, plan.added_fields(table_schema))
    except BaseException:
        if own:
            client.close_sync()
        raise
    if whole:
        try:
            batches = data.to_batches(max_chunksize=lookup_keys) if isinstance(data, pa.Table) else [data]
            return pa.Table.from_batches(list(joiner.join_batches(batches)), schema=out_schema)
        finally:
            if own:
                client.close_sync()
    return _joined(joiner, data, client if own else None)


def _joined(joiner: LookupJoiner, batches: Iterable[pa.RecordBatch], owned) -> Iterator[pa.RecordBatch]:
    try:
        yield from joiner.join_batches(batches)
    finally:
        if owned is not None:
            owned.close_sync()


__all__ = ["HOWS", "JoinPlan", "LookupJoiner", "lookup_join", "table_arrow_schema"]
