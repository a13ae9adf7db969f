"""The ``paimon`` Python data source (PySpark 4 ``pyspark.sql.datasource``): batch and streaming reads and writes.

    spark.read.format("paimon").option("warehouse", wh).load("shop.orders")
    spark.readStream.format("paimon").option("warehouse", wh).option("consumer-id", "etl").load("shop.orders")
    df.write.format("paimon").option("warehouse", wh).mode("append").save("shop.orders")
    df.writeStream.format("paimon").option("warehouse", wh).option("checkpointLocation", cp).start("shop.orders")

Everything Spark pickles (readers, writers, input partitions, commit messages) holds plain data: catalog
options, the table id, serialized splits / commit messages. Tables are opened where they are used.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, List, Optional

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource, DataSourceArrowWriter, DataSourceReader, DataSourceStreamReader, InputPartition, WriterCommitMessage,
)
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from ..errors import UsageError
from .source_options import SourceOptions, parse_options
from .runtime import ROW_KIND, ReadSpec, SplitTask, get_table, output_arrow_schema, read_task

try:  # PySpark >= 4.1 (filters), >= 4.2 (admission control, availableNow)
    from pyspark.sql.datasource import (
        EqualTo, GreaterThan, GreaterThanOrEqual, In, IsNotNull, IsNull, LessThan, LessThanOrEqual,
        StringStartsWith,
    )

    HAVE_FILTERS = True
except ImportError:  # pragma: no cover - PySpark 4.0
    HAVE_FILTERS = False
try:
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable, ReadMaxBytes, ReadMaxFiles, ReadMaxRows, SupportsTriggerAvailableNow,
    )

    HAVE_ADMISSION = True
except ImportError:  # pragma: no cover - PySpark < 4.2
    HAVE_ADMISSION = False

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        pass

try:
    from pyspark.sql.datasource import DataSourceStreamArrowWriter as _StreamWriterBase
except ImportError:  # pragma: no cover
    from pyspark.sql.datasource import DataSourceStreamWriter as _StreamWriterBase


class PaimonInputPartition(InputPartition):
    def __init__(self, task: SplitTask) -> None:  # InputPartition has its own __init__(value)
        self.task = task


@dataclass
class PaimonCommitMessage(WriterCommitMessage):
    messages: List[bytes]
    rows: int


def _columns(table, options: SourceOptions) -> List[str]:
    names = [f.name for f in table.fields]
    if not options.select:
        return names
    unknown = [c for c in options.select if c not in names]
    if unknown:
        raise UsageError(f"unknown column {', '.join(unknown)} in option select", hint=f"columns are {', '.join(names)}")
    return list(options.select)


class PaimonDataSource(DataSource):
    """Apache Paimon tables through pypaimon."""

    _pushdown = True
    _parallelism = 2  # set by register() to the session's default parallelism

    @classmethod
    def name(cls) -> str:
        return "paimon"

    def _options(self, need_table: bool = True) -> SourceOptions:
        return parse_options(self.options)

    def schema(self):
        o = self._options()
        table = get_table(o.catalog, o.table, fresh=True)
        arrow = output_arrow_schema(table, _columns(table, o), o.row_kind)
        return from_arrow_schema(arrow)

    # -- reading -----------------------------------------------------------------------------------------
    def _spec(self, o: SourceOptions, schema: StructType, streaming: bool) -> ReadSpec:
        names = [f.name for f in schema.fields if not (o.row_kind and f.name == ROW_KIND)]
        return ReadSpec(
            columns=tuple(names), where=o.where, row_kind=o.row_kind, streaming=streaming,
            time_travel=tuple(sorted(o.time_travel.items())) if not streaming else (), batch_size=o.batch_size,
            read_overwrite=o.read_overwrite,
        )

    def reader(self, schema: StructType) -> DataSourceReader:
        o = self._options()
        cls = PaimonBatchReader if (HAVE_FILTERS and o.filter_pushdown and self._pushdown) else PaimonPlainBatchReader
        reader = cls(o, self._spec(o, schema, streaming=False), schema)
        reader.parallelism = self._parallelism
        return reader

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        o = self._options()
        reader = PaimonStreamReader(o, self._spec(o, schema, streaming=True), schema)
        reader.parallelism = self._parallelism
        return reader

    # -- writing -----------------------------------------------------------------------------------------
    def _prepare_write(self, schema: StructType) -> SourceOptions:
        from .commit import check_writable, create_table_if_missing

        o = self._options()
        create_table_if_missing(
            o.catalog, o.table, to_arrow_schema(schema, timezone="UTC"), list(o.primary_keys), list(o.partition_keys),
            o.table_options,
        )
        check_writable(get_table(o.catalog, o.table, fresh=True))
        return o

    def writer(self, schema: StructType, overwrite: bool) -> "PaimonBatchWriter":
        return PaimonBatchWriter(self._prepare_write(schema), overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> "PaimonStreamWriter":
        from .commit import stream_commit_user

        o = self._prepare_write(schema)
        options = {str(k).lower(): v for k, v in self.options.items()}
        return PaimonStreamWriter(o, stream_commit_user(options, o.table, o.commit_user), schema)


# -- batch read -------------------------------------------------------------------------------------------
class PaimonPlainBatchReader(DataSourceReader):
    def __init__(self, options: SourceOptions, spec: ReadSpec, schema: StructType) -> None:
        self.options = options
        self.spec = spec
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")
        self.parallelism = 1

    def partitions(self):
        from .runtime import pack, serialize_split, split_weight

        o = self.options
        table = get_table(o.catalog, o.table, fresh=True)
        # pypaimon packs splits to 128mb: a table of small files would be one task. Planned at the open-file
        # cost instead, the splits are packed into tasks here (about the target size, over the parallelism).
        planning = table.copy({"source.split.target-size": str(o.open_file_cost)})
        splits = list(self.spec.builder(planning).new_scan().plan().splits())
        groups = pack([split_weight(s, o.open_file_cost) for s in splits], o.target_split_size, self.parallelism,
                      o.open_file_cost)
        schema_id = self.spec.table_for(table).table_schema.id
        return [
            PaimonInputPartition(SplitTask(o.catalog, o.table, schema_id, self.spec,
                                           [serialize_split(splits[i]) for i in g]))
            for g in groups
        ]

    def read(self, partition: PaimonInputPartition) -> Iterator[pa.RecordBatch]:
        yield from read_task(partition.task, self.arrow_schema)


def _filter_value(value):
    return value if isinstance(value, (bool, int, float, str)) else None


class PaimonBatchReader(PaimonPlainBatchReader):
    def pushFilters(self, filters):
        """Translate what pypaimon can prune with; every filter is still returned, so Spark re-checks rows.

        For primary-key tables only key and partition columns are pushed (value filters before merging would
        be wrong for merge-on-read).
        """
        table = get_table(self.options.catalog, self.options.table)
        allowed = set(table.partition_keys)
        if table.is_primary_key_table:
            allowed |= set(table.primary_keys)
        else:
            allowed |= {f.name for f in table.fields}
        pushed = []
        simple = {
            EqualTo: "equal", GreaterThan: "greater_than", GreaterThanOrEqual: "greater_or_equal",
            LessThan: "less_than", LessThanOrEqual: "less_or_equal", StringStartsWith: "startswith",
        }
        for f in filters:
            attr = getattr(f, "attribute", ())
            column = attr[0] if len(attr) == 1 else None
            if column in allowed:
                op = simple.get(type(f))
                if op and _filter_value(f.value) is not None:
                    pushed.append((op, column, f.value))
                elif isinstance(f, In) and all(_filter_value(v) is not None for v in f.value):
                    pushed.append(("in", column, tuple(f.value)))
                elif isinstance(f, IsNull):
                    pushed.append(("is_null", column, None))
                elif isinstance(f, IsNotNull):
                    pushed.append(("is_not_null", column, None))
            yield f
        if pushed:
            from dataclasses import replace

            self.spec = replace(self.spec, filters=tuple(pushed))


# -- streaming read ---------------------------------------------------------------------------------------
class PaimonStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: SourceOptions, spec: ReadSpec, schema: StructType) -> None:
        self.options = options
        self.spec = spec
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")
        self._planner = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_planner"] = None  # driver-only; read() needs none of it
        return state

    @property
    def planner(self):
        if self._planner is None:
            from .stream import StreamPlanner

            self._planner = StreamPlanner(self.options, self.spec, parallelism=getattr(self, "parallelism", 1))
        return self._planner

    def initialOffset(self) -> dict:
        return self.planner.initial_offset()

    def _limits(self, limit):
        from .stream import Limits, limits_from

        if not HAVE_ADMISSION or limit is None or isinstance(limit, ReadAllAvailable):
            return Limits()
        base = limits_from(self.options)
        if isinstance(limit, ReadMaxRows) and limit.max_rows < (1 << 62):
            base = Limits(min(filter(None, (base.rows, limit.max_rows))), base.files, base.bytes, base.snapshots)
        elif isinstance(limit, ReadMaxFiles):
            base = Limits(base.rows, min(filter(None, (base.files, limit.max_files))), base.bytes, base.snapshots)
        elif isinstance(limit, ReadMaxBytes):
            base = Limits(base.rows, base.files, min(filter(None, (base.bytes, limit.max_bytes))), base.snapshots)
        return base

    def latestOffset(self, start: Optional[dict] = None, limit=None) -> dict:
        if start is None:  # PySpark 4.0/4.1: no admission control
            latest = self.planner.latest_available()
            return latest if latest is not None else self.planner.initial_offset()
        return self.planner.latest_offset(start, self._limits(limit))

    def getDefaultReadLimit(self):
        o = self.options
        if o.max_rows:
            return ReadMaxRows(o.max_rows)
        if o.max_files:
            return ReadMaxFiles(o.max_files)
        if o.max_bytes:
            return ReadMaxBytes(o.max_bytes)
        if o.max_snapshots:  # Spark has no snapshot limit: carry it as a limit that never binds on rows
            return ReadMaxRows(1 << 62)
        return ReadAllAvailable()

    def reportLatestOffset(self):
        return self.planner.latest_available()

    def prepareForTriggerAvailableNow(self) -> None:
        self.planner.prepare_available_now()

    def partitions(self, start: dict, end: dict):
        return [PaimonInputPartition(t) for t in self.planner.tasks(start, end)]

    def read(self, partition: PaimonInputPartition) -> Iterator[pa.RecordBatch]:
        yield from read_task(partition.task, self.arrow_schema)

    def commit(self, end: dict) -> None:
        self.planner.commit(end)

    def stop(self) -> None:
        self._planner = None


# -- writing ----------------------------------------------------------------------------------------------
class PaimonBatchWriter(DataSourceArrowWriter):
    def __init__(self, options: SourceOptions, overwrite: bool) -> None:
        from .runtime import new_commit_user

        self.options = options
        self.overwrite = overwrite
        self.commit_user = options.commit_user or new_commit_user()

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PaimonCommitMessage:
        from .runtime import write_batches

        o = self.options
        messages, rows = write_batches(o.catalog, o.table, self.commit_user, iterator, self.overwrite)
        return PaimonCommitMessage(messages, rows)

    def commit(self, messages: List[Optional[PaimonCommitMessage]]) -> None:
        from .commit import commit_batch

        payloads = [m for msg in messages if msg is not None for m in msg.messages]
        commit_batch(self.options.catalog, self.options.table, self.commit_user, payloads, self.overwrite)

    def abort(self, messages) -> None:
        # Files of finished tasks are left for Paimon's orphan-file cleanup: after an uncertain commit they may
        # already belong to a snapshot, and deleting them would corrupt the table.
        pass


def _as_batches(iterator, arrow_schema: pa.Schema, size: int = 8192) -> Iterator[pa.RecordBatch]:
    """Arrow batches from an Arrow writer's input, or from Rows (PySpark 4.0 has no streaming Arrow writer)."""
    rows = []
    for item in iterator:
        if isinstance(item, pa.RecordBatch):
            yield item
            continue
        rows.append(item.asDict(recursive=True))
        if len(rows) >= size:
            yield pa.RecordBatch.from_pylist(rows, schema=arrow_schema)
            rows = []
    if rows:
        yield pa.RecordBatch.from_pylist(rows, schema=arrow_schema)


class PaimonStreamWriter(_StreamWriterBase):
    def __init__(self, options: SourceOptions, commit_user: str, schema: Optional[StructType] = None) -> None:
        self.options = options
        self.commit_user = commit_user
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC") if schema is not None else None

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PaimonCommitMessage:
        from .runtime import write_batches

        o = self.options
        if self.arrow_schema is not None:
            iterator = _as_batches(iterator, self.arrow_schema)
        messages, rows = write_batches(o.catalog, o.table, self.commit_user, iterator, False)
        return PaimonCommitMessage(messages, rows)

    def commit(self, messages: List[Optional[PaimonCommitMessage]], batchId: int) -> None:
        from .commit import commit_stream

        payloads = [m for msg in messages if msg is not None for m in msg.messages]
        commit_stream(self.options.catalog, self.options.table, self.commit_user, payloads, batchId)

    def abort(self, messages, batchId: int) -> None:
        pass
