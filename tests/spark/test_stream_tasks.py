"""The streaming source's micro-batches planned by the tasks that read them (``runtime.SnapshotTask``): the same
rows as the splits planned on the driver, for append and primary-key tables, full starts and deltas, more or fewer
snapshots than tasks; and the driver's Python process never imports pypaimon's read path for it."""
from __future__ import annotations

import collections
import json
import subprocess
import sys

import pyarrow as pa
import pytest

from paimon_tail.spark.source_options import parse_options
from paimon_tail.spark.runtime import ReadSpec, SnapshotTask, SplitTask, read_task
from paimon_tail.spark.stream import Limits, StreamPlanner
from tests.conftest import APPEND, ORDERS, TestWarehouse, append_rows

pytest.importorskip("pyspark")


def _schema(table, row_kind: bool) -> pa.Schema:
    from paimon_tail.spark.runtime import output_arrow_schema

    return output_arrow_schema(table, [f.name for f in table.fields], row_kind)


def _rows(tasks, schema) -> collections.Counter:
    out = collections.Counter()
    for task in tasks:
        for batch in read_task(task, schema):
            out.update(json.dumps(r, sort_keys=True, default=str) for r in batch.to_pylist())
    return out


def _micro_batches(wh, name: str, options: dict, parallelism: int, deferred: bool):
    o = parse_options({"path": f"db.{name}", "warehouse": wh.path, **options})
    table = wh.table(name)
    spec = ReadSpec(columns=tuple(f.name for f in table.fields), row_kind=o.row_kind, streaming=True)
    planner = StreamPlanner(o, spec, parallelism=parallelism)
    assert planner.deferred  # a local table, no limits: nothing needs the splits on the driver
    planner.deferred = deferred
    start = planner.initial_offset()
    planner.prepare_available_now()
    end = planner.latest_offset(start, Limits())
    tasks = planner.tasks(start, end)
    assert {type(t) for t in tasks} == ({SnapshotTask} if deferred else {SplitTask})
    return tasks, _schema(table, o.row_kind)


@pytest.fixture
def tables(wh: TestWarehouse) -> TestWarehouse:
    wh.create("events", APPEND)
    for c in range(7):
        wh.commit("events", append_rows(c, 50 + c))
    wh.create("orders", ORDERS, primary_keys=["id"], options={"bucket": "3"})
    for c in range(4):
        wh.commit("orders", [{"id": i, "status": f"s{c}", "amount": None, "op": "-D" if i % 11 == 0 and c else "+U"}
                             for i in range(c * 20, c * 20 + 60)])
    return wh


@pytest.mark.parametrize("name, start, expected", [("events", "earliest", [(1, False), (3, False), (5, False),
                                                                             (7, False), (8, False)]),
                                                    ("orders", "latest-full", [(4, True), (5, False)])])
def test_snapshots_per_trigger_are_counted_without_planning(tables, name, start, expected):
    """read.stream.maxSnapshotsPerTrigger: the same offsets as the driver's planning gives, and no split planned."""
    def walk(deferred: bool) -> list:
        o = parse_options({"path": f"db.{name}", "warehouse": tables.path, "from": start,
                           "read.stream.maxSnapshotsPerTrigger": "2"})
        planner = StreamPlanner(o, ReadSpec(columns=tuple(f.name for f in tables.table(name).fields),
                                            streaming=True), parallelism=2)
        assert planner.deferred
        planner.deferred = deferred
        offsets = [planner.initial_offset()]
        while True:
            end = planner.latest_offset(offsets[-1], Limits(snapshots=2))
            if end == offsets[-1]:
                assert (planner.planner is None) == deferred  # nothing planned on the driver
                return offsets
            offsets.append(end)

    light = walk(True)
    assert light == walk(False) and [(o["snapshot"], o["full"]) for o in light] == expected


@pytest.mark.parametrize("name, options", [
    ("events", {"from": "earliest"}),
    ("events", {"from": "latest-full"}),
    ("events", {"from": "snapshot:6"}),
    ("orders", {"from": "latest-full"}),
    ("orders", {"from": "earliest", "read.changelog": "true"}),
    ("orders", {"from": "snapshot:3", "read.changelog": "true"}),
])
@pytest.mark.parametrize("parallelism", [1, 2, 5])
def test_tasks_read_what_the_driver_planned(tables, name, options, parallelism):
    deferred, schema = _micro_batches(tables, name, options, parallelism, True)
    planned, _ = _micro_batches(tables, name, options, parallelism, False)
    got, expected = _rows(deferred, schema), _rows(planned, schema)
    assert got == expected and sum(got.values()) > 0
    assert len(deferred) >= min(parallelism, 2) or parallelism == 1


def test_a_full_start_is_dealt_over_the_tasks(tables):
    deferred, schema = _micro_batches(tables, "orders", {"from": "latest-full"}, 3, True)
    assert [(t.snapshots, t.full, t.shard, t.shards) for t in deferred] == [((4,), True, i, 3) for i in range(3)]
    sizes = [sum(b.num_rows for b in read_task(t, schema)) for t in deferred]
    assert all(sizes) and sum(sizes) == len({i for i in range(120)} - {i for i in range(20, 120) if i % 11 == 0})


def test_compactions_and_schema_changes_in_the_range(tables):
    """An OVERWRITE snapshot (no delta to read) and a snapshot of a newer schema: the tasks open the table at the
    newest schema of their snapshots."""
    table = tables.table("events")
    builder = table.new_batch_write_builder().overwrite()
    write, commit = builder.new_write(), builder.new_commit()
    write.write_arrow(pa.Table.from_pylist(append_rows(90, 5), schema=APPEND))
    commit.commit(write.prepare_commit())
    write.close()
    commit.close()
    from pypaimon.schema.schema_change import SchemaChange
    from pypaimon.schema.data_types import AtomicType

    tables.catalog.alter_table("db.events", [SchemaChange.add_column("extra", AtomicType("STRING"))], False)
    tables.commit("events", [dict(r, extra="x") for r in append_rows(91, 4)],
                  pa.schema(list(APPEND) + [pa.field("extra", pa.string())]))
    deferred, schema = _micro_batches(tables, "events", {"from": "earliest"}, 2, True)
    planned, _ = _micro_batches(tables, "events", {"from": "earliest"}, 2, False)
    assert max(t.schema_id for t in deferred) == tables.table("events").table_schema.id
    assert _rows(deferred, schema) == _rows(planned, schema)


def test_the_driver_process_loads_no_read_path(tables):
    """What Spark's streaming source runner does with the source (offsets, partitions), in a fresh interpreter
    that has imported what PySpark's runner imports: no pypaimon table, reader, catalog or polars."""
    code = r"""
import json, sys
import pyspark.sql.streaming.python_streaming_source_runner
from pyspark.sql.types import LongType, StringType, IntegerType, StructField, StructType
from paimon_tail.spark.source import PaimonDataSource
ds = PaimonDataSource({"warehouse": sys.argv[1], "path": "db.events", "from": "earliest"})
schema = StructType([StructField("id", LongType()), StructField("writer", StringType()), StructField("n", IntegerType())])
reader = ds.streamReader(schema)
reader.parallelism = 2
start = reader.initialOffset()
reader.prepareForTriggerAvailableNow()
end = reader.latestOffset(start, None)
parts = reader.partitions(start, end)
print(json.dumps({"end": end, "parts": len(parts), "loaded": sorted(sys.modules)}))
"""
    out = subprocess.run([sys.executable, "-c", code, tables.path], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.splitlines()[-1])
    assert result["end"]["snapshot"] == 8 and result["parts"] == 2
    heavy = [m for m in result["loaded"] if m.startswith(("pypaimon.read", "pypaimon.table", "pypaimon.catalog",
                                                           "polars", "pyarrow.dataset", "pypaimon.branch"))]
    assert not heavy, heavy


def test_limits_and_consumers_plan_on_the_driver(tables):
    for extra in ({"read.stream.maxRowsPerTrigger": "10"}, {"consumer-id": "c"},
                  {"read.stream.minRowsPerTrigger": "5", "read.stream.maxTriggerDelayMs": "100"}):
        o = parse_options({"path": "db.events", "warehouse": tables.path, "from": "earliest", **extra})
        planner = StreamPlanner(o, ReadSpec(columns=tuple(APPEND.names), streaming=True), parallelism=2)
        assert not planner.deferred and planner.planner is not None
        start = planner.initial_offset()
        planner.prepare_available_now()
        end = planner.latest_offset(start, Limits(rows=10) if "read.stream.maxRowsPerTrigger" in extra else Limits())
        assert all(isinstance(t, SplitTask) for t in planner.tasks(start, end))


@pytest.fixture(scope="module")
def spark():
    from tests.spark.conftest import local_spark

    yield from local_spark("paimon-tail-stream-tasks")


def test_full_reads_use_the_rust_reader_in_pyspark_workers(spark, tables):
    """A full start (and a batch read) merges buckets through pypaimon's Rust reader inside PySpark's forked Python
    workers, with the rows of pypaimon's Python merge read; deltas and row kinds keep the Python reader."""
    from paimon_tail.compat.adapters.native_reads import OPTION

    def _read_in_worker(tasks, schema_bytes):
        """In a PySpark Python worker (forked from PySpark's daemon): the tasks' rows, and how often pypaimon's Rust
        reader ran there (its own entry point, counted and called through). Nested: shipped by value."""
        import json
        import pyarrow as pa
        import pypaimon.read.native_plan as native_plan

        from paimon_tail.spark.runtime import read_task

        schema = pa.ipc.read_schema(pa.py_buffer(schema_bytes))
        calls = []
        real = native_plan.native_read

        def counting(*args, **kwargs):
            calls.append(1)
            return real(*args, **kwargs)

        native_plan.native_read = counting
        try:
            rows = [json.dumps(r, sort_keys=True, default=str) for t in tasks for b in read_task(t, schema)
                    for r in b.to_pylist()]
        finally:
            native_plan.native_read = real
        return rows, len(calls)

    deferred, schema = _micro_batches(tables, "orders", {"from": "latest-full"}, 2, True)
    data = schema.serialize().to_pybytes()
    results = spark.sparkContext.parallelize(deferred, len(deferred)).mapPartitions(
        lambda tasks: [_read_in_worker(list(tasks), data)]).collect()
    rows = collections.Counter(r for part, _ in results for r in part)
    assert all(calls for _, calls in results), "the Rust reader did not run in a worker"
    python = tables.table("orders").copy({OPTION: "false"})
    rb = python.new_read_builder()
    expected = collections.Counter(json.dumps(r, sort_keys=True, default=str)
                                   for r in rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist())
    assert rows == expected and sum(rows.values()) > 50
    batch = spark.read.format("paimon_tail").option("warehouse", tables.path).load("db.orders")
    assert collections.Counter(json.dumps(r.asDict(), sort_keys=True, default=str) for r in batch.collect()) == expected
    changes, schema = _micro_batches(tables, "orders", {"from": "earliest", "read.changelog": "true"}, 2, True)
    data = schema.serialize().to_pybytes()
    assert not any(calls for _, calls in spark.sparkContext.parallelize(changes, len(changes)).mapPartitions(
        lambda tasks: [_read_in_worker(list(tasks), data)]).collect())


def test_one_file_of_an_append_table_is_shared_by_the_tasks(tables):
    """A micro-batch of one snapshot holding one file (the usual append commit): the tasks read ranges of its rows
    (pypaimon's slice_append_splits), so every core works; together they read each row once."""
    deferred, schema = _micro_batches(tables, "events", {"from": "snapshot:7"}, 3, True)
    assert [(t.snapshots, t.shard, t.shards) for t in deferred] == [((7,), i, 3) for i in range(3)]
    parts = [_rows([t], schema) for t in deferred]
    assert [sum(p.values()) for p in parts] == [19, 19, 18]  # 56 rows
    planned, _ = _micro_batches(tables, "events", {"from": "snapshot:7"}, 3, False)
    assert len(planned) == 1 and sum(parts, collections.Counter()) == _rows(planned, schema)
