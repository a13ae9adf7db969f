"""What runs on both sides of Spark: opening tables (cached per Python worker), read builders, split and
commit-message serialization, split packing and reading. No PySpark import here.

Executors get catalog options + table id + serialized splits (pypaimon's cross-language ``SplitSerializer`` v1
format), open the table themselves and read with the same builder options as the driver planned with.

Why one module: it is what a Python worker loads (and caches tables in) for every task, reads and writes alike;
its parts are a few small functions each, and splitting them would only add imports to every task.
"""
from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import pyarrow as pa

from ..catalog import CatalogConfig, open_table
from ..compat.adapters.commit_user import batch_write_builder

ROW_KIND = "_row_kind"

_lock = threading.Lock()
_tables: Dict[tuple, object] = {}
_reads: Dict[tuple, object] = {}


def _catalog_key(catalog: Dict[str, str]) -> tuple:
    return tuple(sorted(catalog.items()))


def get_table(catalog: Dict[str, str], ident: str, min_schema_id: int = 0, fresh: bool = False):
    """The table, cached per process; reloaded when a newer schema is needed or ``fresh`` is asked."""
    key = (_catalog_key(catalog), ident)
    with _lock:
        table = None if fresh else _tables.get(key)
    if table is None or table.table_schema.id < min_schema_id:
        table = open_table(ident, CatalogConfig(dict(catalog)))
        with _lock:
            _tables[key] = table
    return table


def forget_table(catalog: Dict[str, str], ident: str) -> None:
    with _lock:
        _tables.pop((_catalog_key(catalog), ident), None)


@dataclass(frozen=True)
class ReadSpec:
    """Everything that shapes a read, the same on the driver (planning) and the executors (reading)."""

    columns: Tuple[str, ...]  # table columns to read, in output order (never _row_kind)
    where: Optional[str] = None
    filters: Tuple[tuple, ...] = ()  # (op, column, value) pushed from Spark, for pruning
    row_kind: bool = False
    streaming: bool = False
    time_travel: Tuple[Tuple[str, str], ...] = ()
    # pypaimon reads 1,024 rows a batch by default; every batch costs a round through PySpark's Arrow stream
    batch_size: int = 65536
    read_overwrite: Optional[bool] = None  # streaming-read-overwrite (None: the table's own option)

    def table_for(self, table):
        return table.copy({"read.batch-size": str(self.batch_size), **dict(self.time_travel)})

    def predicate(self, table):
        """The where option and Spark's pushed filters over ``table``, as one pypaimon predicate (or None)."""
        from pypaimon.common.predicate_builder import PredicateBuilder

        from ..stream.filters import parse_where

        predicates = []
        if self.where:
            predicate = parse_where(self.where, table.fields, label="option where")
            if predicate is not None:
                predicates.append(predicate)
        if self.filters:
            pb = PredicateBuilder(table.fields)
            predicates.extend(_predicate(pb, *f) for f in self.filters)
        if len(predicates) > 1:
            return PredicateBuilder.and_predicates(predicates)
        return predicates[0] if predicates else None

    def builder(self, table):
        table = self.table_for(table)
        builder = table.new_stream_read_builder() if self.streaming else table.new_read_builder()
        predicate = self.predicate(table)
        if predicate is not None:
            builder.with_filter(predicate)
        builder.with_projection(list(self.columns))
        if self.row_kind:
            builder.with_include_row_kind(True)
        return builder


def _predicate(pb, op: str, column: str, value):
    if op == "in":
        return pb.is_in(column, list(value))
    if op in ("is_null", "is_not_null"):
        return getattr(pb, op)(column)
    return getattr(pb, op)(column, value)


def table_read(catalog: Dict[str, str], ident: str, spec: ReadSpec, schema_id: int = 0, merged: bool = False):
    """A ``TableRead`` for ``spec``, cached per process (executor Python workers are reused).

    ``merged``: the read of a table's content (a batch read, a streaming full plan), where primary-key buckets are
    merged: through pypaimon's Rust reader on a local table (``compat/adapters/native_reads.py``, 6-10x the Python merge),
    unless rows carry their kinds (the Rust merge gives a row ``+I`` where pypaimon gives its last record's kind).
    Changes (delta plans) are read by pypaimon's Python reader, as in ``follow``."""
    native = merged and not spec.row_kind
    key = (_catalog_key(catalog), ident, spec, schema_id, native)
    with _lock:
        read = _reads.get(key)
    if read is None:
        table = get_table(catalog, ident, schema_id)
        if native:
            from ..compat.adapters.native_reads import with_native_reads

            table = with_native_reads(table)
        from ..stream.diff import DiffRead  # an overwrite's ReplaceSplits: its removed rows -D, its added rows +I

        read = DiffRead(spec.builder(table).new_read(), spec.table_for(table), spec.predicate(table), spec.row_kind)
        with _lock:
            if len(_reads) > 64:
                _reads.clear()
            _reads[key] = read
    return read


_REPLACE = b"paimon-tail-replace/1\n"  # an overwrite's ReplaceSplit: its before and after splits


def serialize_split(split) -> bytes:
    """pypaimon's cross-language split format (v1); an overwrite's ``ReplaceSplit`` as its sides' splits, each in
    that format. A REST query-auth wrapping is not written: the task that reads asks the catalog itself."""
    from pypaimon.read.split_serializer import serialize_split_v1

    from ..stream.overwrite import ReplaceSplit
    from ..stream.query_auth import unwrap

    if isinstance(split, ReplaceSplit):
        parts = [(0, s) for s in split.before] + [(1, s) for s in split.after]
        out = bytearray(_REPLACE)
        for side, inner in parts:
            data = serialize_split_v1(unwrap(inner))
            out += bytes([side]) + len(data).to_bytes(4, "big") + data
        return bytes(out)
    return serialize_split_v1(unwrap(split))


def deserialize_split(table, data: bytes):
    from pypaimon.read.split_serializer import deserialize_split_v1

    if data.startswith(_REPLACE):
        from ..stream.overwrite import ReplaceSplit

        sides, at = ([], []), len(_REPLACE)
        while at < len(data):
            side, size = data[at], int.from_bytes(data[at + 1:at + 5], "big")
            sides[side].append(deserialize_split(table, data[at + 5:at + 5 + size]))
            at += 5 + size
        first = (sides[0] or sides[1])[0]
        return ReplaceSplit(first.partition, first.bucket, sides[0], sides[1])
    return deserialize_split_v1(data, table.partition_keys_fields, table.trimmed_primary_keys_fields)


def with_query_auth(table, spec: "ReadSpec", splits: list) -> list:
    """``splits`` wrapped with the REST catalog's row filter and column masks for this read (asked here, in the
    process that reads: a split arrives without its driver-side wrapping)."""
    from ..stream import query_auth

    if not query_auth.enabled(table):
        return splits
    fields = [f for f in table.fields if f.name in spec.columns]
    rules = query_auth.rules(table, fields)
    out = []
    for split in splits:
        if type(split).__name__ == "ReplaceSplit":
            split.before, split.after = query_auth.wrap(split.before, rules), query_auth.wrap(split.after, rules)
            out.append(split)
        else:
            out.extend(query_auth.wrap([split], rules))
    return out


def split_weight(split, open_file_cost: int) -> int:
    return sum(max(int(getattr(f, "file_size", 0) or 0), open_file_cost) for f in split.files)


def split_files(split) -> int:
    return len(split.files)


def split_bytes(split) -> int:
    return sum(int(getattr(f, "file_size", 0) or 0) for f in split.files)


def pack(weights: Sequence[int], target: int, parallelism: int = 1, open_file_cost: int = 0) -> List[List[int]]:
    """Indexes of consecutive items packed into groups of about ``target`` weight (Paimon's split packing).

    Like Spark's file sources, the target shrinks so that small reads still spread over ``parallelism``
    tasks: ``min(target, max(open_file_cost, total / parallelism))``.
    """
    if parallelism > 1 and weights:
        target = min(target, max(open_file_cost, -(-sum(weights) // parallelism)))
    groups: List[List[int]] = []
    current: List[int] = []
    total = 0
    for i, w in enumerate(weights):
        if current and total + w > target:
            groups.append(current)
            current, total = [], 0
        current.append(i)
        total += w
    if current:
        groups.append(current)
    return groups


@dataclass
class SplitTask:
    """One Spark input partition: some splits of one table, read with one spec. Pickled to executors."""

    catalog: Dict[str, str]
    table: str
    schema_id: int
    spec: ReadSpec
    splits: List[bytes] = field(default_factory=list)


@dataclass
class SnapshotTask:
    """One Spark input partition planned where it is read: snapshots of one table (their full plans with ``full``,
    else their delta plans), of which this task reads its ``shard`` of ``shards`` (``shard_of``: the splits
    ``shard``, ``shard + shards``, ... in ``split_order``, or a range of an append table's rows). Every task of a micro-batch plans the same snapshots the same way, so the shards of a snapshot
    are its splits, each read once. The streaming planner hands these out when it needs no split on the driver
    (``stream.py``): the driver's Python process then never imports pypaimon's read path."""

    catalog: Dict[str, str]
    table: str
    schema_id: int
    spec: ReadSpec
    snapshots: Tuple[int, ...]
    full: bool = False
    shard: int = 0
    shards: int = 1


def split_order(split) -> tuple:
    """A stable order of one plan's splits: partition, bucket, then the split's files."""
    partition = getattr(split.partition, "values", split.partition)
    return (repr(tuple(partition) if partition is not None else ()), split.bucket,
            tuple(f.file_name for f in split.files))


def read_task(task, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """Arrow batches of a task's splits, shaped to ``schema`` (the Spark schema as Arrow)."""
    if isinstance(task, SnapshotTask):
        yield from _read_snapshots(task, schema)
        return
    read = table_read(task.catalog, task.table, task.spec, task.schema_id, merged=not task.spec.streaming)
    table = get_table(task.catalog, task.table, task.schema_id)
    splits = with_query_auth(table, task.spec, [deserialize_split(table, data) for data in task.splits])
    for split in splits:
        yield from _read_split(read, split, schema, task.spec.batch_size)


def _read_split(read, split, schema: pa.Schema, rows: int) -> Iterator[pa.RecordBatch]:
    """The split's batches, small ones put together up to ``rows`` (the Rust reader's are 1,024 rows, and every
    batch is a round through PySpark's Arrow stream)."""
    from ..stream.reader import split_batches

    for batch in split_batches(read, [split], rows):
        yield conform(batch, schema)


def snapshot_splits(planner, snapshot_id: int, full: bool) -> list:
    """The splits of snapshot ``snapshot_id``'s full or delta plan in ``split_order`` (as the driver plans them)."""
    from ..errors import SnapshotExpired

    snap = planner.snapshot(snapshot_id)
    if snap is None:
        raise SnapshotExpired(f"snapshot {snapshot_id} of this micro-batch cannot be found")
    if full:
        splits = list(planner.start_plan(snap).splits())
    elif planner.should_scan(snap):
        splits = list(planner.delta_plan(snap).splits())
    else:
        splits = []
    return sorted(splits, key=split_order)


def shard_of(splits: list, shard: int, shards: int, append: bool) -> list:
    """Task ``shard`` of ``shards``'s part of one plan's splits: every ``shards``-th split; or, for an append table
    with fewer splits than tasks (a snapshot of one big file), a contiguous range of the plan's rows (pypaimon's
    ``slice_append_splits``, as its own sharded scans do), so that the tasks share the file. Every row is in one
    part."""
    if shards == 1:
        return splits
    if append and len(splits) < shards:
        from pypaimon.read.scan_distribution import shard_range, slice_append_splits

        total = sum(int(f.row_count) for split in splits for f in split.files)
        start, end = shard_range(total, shard, shards)
        return slice_append_splits(splits, start, end)
    return splits[shard::shards]


def _read_snapshots(task: SnapshotTask, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    from ..stream.planner import SnapshotPlanner

    table = get_table(task.catalog, task.table, task.schema_id)
    planner = SnapshotPlanner(task.spec.builder(table).new_streaming_scan(), read_overwrite=task.spec.read_overwrite)
    read = table_read(task.catalog, task.table, task.spec, task.schema_id, merged=task.full)
    append = not table.is_primary_key_table
    for snapshot_id in task.snapshots:
        splits = shard_of(snapshot_splits(planner, snapshot_id, task.full), task.shard, task.shards, append)
        for split in with_query_auth(table, task.spec, splits):  # planned here: wrapped already, kept as is
            yield from _read_split(read, split, schema, task.spec.batch_size)


def conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """Reorder and cast a batch to ``schema`` by column name (no-op when it already matches)."""
    if batch.schema.equals(schema, check_metadata=False):
        return batch
    names = batch.schema.names
    arrays = []
    for f in schema:
        if f.name not in names:
            raise ValueError(f"column {f.name} is missing from the data (columns are {', '.join(names)})")
        col = batch.column(names.index(f.name))
        if col.type != f.type:
            col = col.cast(f.type)
        arrays.append(col)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def table_arrow_schema(table) -> pa.Schema:
    from pypaimon.schema.data_types import PyarrowFieldParser

    return PyarrowFieldParser.from_paimon_schema(table.fields)


def output_arrow_schema(table, columns: Sequence[str], row_kind: bool) -> pa.Schema:
    full = table_arrow_schema(table)
    fields = [full.field(c) for c in columns]
    if row_kind:
        fields.insert(0, pa.field(ROW_KIND, pa.string()))
    return pa.schema(fields)


# -- writing --------------------------------------------------------------------------------------------
def new_commit_user(prefix: str = "paimon-tail-spark") -> str:
    return f"{prefix}-{uuid.uuid4()}"


def write_batches(
    catalog: Dict[str, str], ident: str, commit_user: str, batches: Iterator[pa.RecordBatch],
    overwrite: bool = False,
) -> Tuple[List[bytes], int]:
    """Write Arrow batches with a one-shot table write; returns serialized commit messages and the row count."""
    from pypaimon.write.commit_message_serializer import serialize_commit_message

    table = get_table(catalog, ident, fresh=True)  # fresh: sequence numbers restore from the latest snapshot
    builder = batch_write_builder(table, commit_user)
    if overwrite:
        builder.overwrite()
    write = builder.new_write()
    target = table_arrow_schema(table)
    rows = 0
    try:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            rows += batch.num_rows
            write.write_arrow_batch(conform_for_write(batch, target))
        messages = write.prepare_commit()
    except BaseException:
        try:
            write.abort()
        except Exception:
            pass
        raise
    finally:
        try:
            write.close()
        except Exception:
            pass
    out = [serialize_commit_message(m, table.partition_keys_fields) for m in messages if not m.is_empty()]
    return out, rows


def conform_for_write(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    names = batch.schema.names
    missing = [f.name for f in target if f.name not in names]
    if missing:
        raise ValueError(
            f"the data has no column{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
            f"(table columns are {', '.join(target.names)})"
        )
    extra = [n for n in names if n not in target.names]
    if extra:
        raise ValueError(f"the table has no column{'s' if len(extra) > 1 else ''} {', '.join(extra)}")
    arrays = []
    for f in target:
        col = batch.column(names.index(f.name))
        if col.type != f.type:
            col = col.cast(f.type)
        arrays.append(col)
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def deserialize_messages(table, payloads: Sequence[bytes]) -> list:
    from pypaimon.write.commit_message_serializer import deserialize_commit_message
    from pypaimon.utils.file_store_path_factory import canonical_data_file_path

    out = []
    for data in payloads:
        message = deserialize_commit_message(data, table.partition_keys_fields, table.trimmed_primary_keys_fields)
        for f in message.new_files + message.changelog_files:
            f.file_path = f.physical_path() if f.external_path else canonical_data_file_path(
                table, message.partition, message.bucket, f.file_name
            )
        out.append(message)
    return out
