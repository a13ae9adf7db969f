"""The ``paimon`` PySpark data source against pypaimon and the follower, on a real local SparkSession.

One SparkSession for the module (local[2], no UI, loopback). Tables are small and written with pypaimon.
"""
from __future__ import annotations

import os
from collections import Counter

import pyarrow as pa
import pytest

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

try:
    import pyspark  # noqa: F401
except ImportError as e:  # pragma: no cover
    pytest.skip(
        f"!!! PySpark is not installed ({e}): the Spark data source tests DID NOT RUN. "
        "Install it with: pip install 'paimon-tail[spark]'",
        allow_module_level=True,
    )

import paimon_tail
import paimon_tail.spark
from paimon_tail.catalog import open_table
from pypaimon import CatalogFactory, Schema

from tests.spark.conftest import local_spark

KV = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("qty", pa.int32()),
                ("op", pa.string())])
APPEND = pa.schema([("id", pa.int64()), ("region", pa.string()), ("amount", pa.float64())])


@pytest.fixture(scope="module")
def spark():
    yield from local_spark("paimon-tail-tests")


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("warehouse"))
    cat = CatalogFactory.create({"warehouse": path})
    cat.create_database("db", True)
    return path


def _catalog(wh):
    return CatalogFactory.create({"warehouse": wh})


def _write(table, rows, schema):
    wb = table.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(pa.Table.from_pylist(rows, schema=schema))
    c = wb.new_commit()
    c.commit(w.prepare_commit())
    w.close()
    c.close()


def _pk_table(wh, name, partitioned=False):
    schema = KV
    partition = None
    if partitioned:
        schema = KV.append(pa.field("dt", pa.string(), nullable=False))
        partition = ["dt"]
    cat = _catalog(wh)
    cat.create_table(
        f"db.{name}",
        Schema.from_pyarrow_schema(schema, partition_keys=partition,
                                   primary_keys=["id"] + (partition or []),
                                   options={"bucket": "2", "rowkind.field": "op"}),
        False,
    )
    return cat.get_table(f"db.{name}"), schema


def _history(table, schema, partitioned=False):
    """Five snapshots: inserts, updates, deletes, more inserts."""
    def row(i, name, qty, op):
        r = {"id": i, "name": name, "qty": qty, "op": op}
        if partitioned:
            r["dt"] = "2024-01-0%d" % (1 + i % 2)
        return r

    _write(table, [row(i, f"n{i}", i, "+I") for i in range(40)], schema)
    _write(table, [row(i, f"u{i}", i * 10, "+U") for i in range(0, 40, 3)], schema)
    _write(table, [row(i, f"n{i}", 0, "-D") for i in range(0, 40, 7)], schema)
    _write(table, [row(i, f"n{i}", i, "+I") for i in range(40, 60)], schema)
    _write(table, [row(i, f"v{i}", 1, "+U") for i in range(50, 55)], schema)


def _pypaimon_rows(table, **kw):
    rb = table.new_read_builder()
    return rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()


def _key(r):
    return tuple(sorted((k, str(v)) for k, v in r.items()))


def _spark_rows(df):
    return [r.asDict() for r in df.collect()]


def _read(spark, wh, **options):
    reader = spark.read.format("paimon").option("warehouse", wh)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader


def _stream(spark, wh, table, **options):
    reader = spark.readStream.format("paimon").option("warehouse", wh).option("table", table)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def _run_available_now(df, path, name):
    q = (df.writeStream.format("memory").queryName(name).trigger(availableNow=True)
         .option("checkpointLocation", path).start())
    q.awaitTermination(180)
    assert q.exception() is None, q.exception()
    return q


# -- batch read ---------------------------------------------------------------------------------------------
def test_batch_read_equals_pypaimon(spark, wh):
    table, schema = _pk_table(wh, "kv_batch", partitioned=True)
    _history(table, schema, partitioned=True)
    expected = _pypaimon_rows(table)
    got = _spark_rows(_read(spark, wh).load("db.kv_batch"))
    assert sorted(map(_key, got)) == sorted(map(_key, expected))
    assert len(got) == 60 - len(range(0, 40, 7))

    # pushed filters (pruning) and Spark's own filtering agree with Python filtering
    filtered = _spark_rows(_read(spark, wh).load("db.kv_batch").where("id >= 20 AND dt = '2024-01-01'"))
    assert sorted(map(_key, filtered)) == sorted(
        _key(r) for r in expected if r["id"] >= 20 and r["dt"] == "2024-01-01"
    )
    # select option and time travel to snapshot 1 (before updates and deletes)
    first = _spark_rows(_read(spark, wh, select="id,name", **{"scan.snapshot-id": "1"}).load("db.kv_batch"))
    assert sorted((r["id"], r["name"]) for r in first) == [(i, f"n{i}") for i in range(40)]
    # many tasks: a tiny target split size packs each split into its own task
    df = _read(spark, wh, **{"source.split.target-size": "1b"}).load("db.kv_batch")
    assert df.rdd.getNumPartitions() >= 4
    assert df.count() == len(expected)


def test_batch_read_append_table(spark, wh):
    cat = _catalog(wh)
    cat.create_table("db.events", Schema.from_pyarrow_schema(APPEND), False)
    table = cat.get_table("db.events")
    for k in range(3):
        _write(table, [{"id": k * 100 + i, "region": "eu" if i % 2 else "us", "amount": i / 2} for i in range(50)],
               APPEND)
    expected = _pypaimon_rows(table)
    got = _spark_rows(_read(spark, wh, table="db.events").load())
    assert sorted(map(_key, got)) == sorted(map(_key, expected))
    assert _read(spark, wh).load("db.events").where("region = 'eu' AND amount > 10").count() == sum(
        1 for r in expected if r["region"] == "eu" and r["amount"] > 10
    )


# -- streaming read -----------------------------------------------------------------------------------------
def test_stream_available_now_equals_follower(spark, wh, tmp_path):
    table, schema = _pk_table(wh, "kv_stream")
    _history(table, schema)
    df = _stream(spark, wh, "db.kv_stream", **{"from": "earliest", "read.changelog": "true"})
    _run_available_now(df, str(tmp_path / "cp"), "kv_stream_out")
    got = _spark_rows(spark.table("kv_stream_out"))

    followed = []
    for item in paimon_tail.follow_sync(open_table("db.kv_stream", warehouse=wh), start="earliest",
                                        exit_at_end=True, row_kind=True):
        followed.extend(item.batch.to_pylist())
    assert Counter(map(_key, got)) == Counter(map(_key, followed))
    kinds = Counter(r["_row_kind"] for r in got)
    assert kinds["-D"] == len(range(0, 40, 7)) and kinds["+U"] > 0


def test_stream_start_positions(spark, wh, tmp_path):
    table = open_table("db.kv_stream", warehouse=wh)
    # latest-full (Paimon's default): the table at the latest snapshot, like a batch read
    _run_available_now(_stream(spark, wh, "db.kv_stream"), str(tmp_path / "a"), "pos_full")
    assert sorted(map(_key, _spark_rows(spark.table("pos_full")))) == sorted(map(_key, _pypaimon_rows(table)))
    # latest: nothing committed before the start
    _run_available_now(_stream(spark, wh, "db.kv_stream", **{"scan.mode": "latest"}), str(tmp_path / "b"),
                       "pos_latest")
    assert spark.table("pos_latest").count() == 0
    # from-snapshot 4: the deltas of snapshots 4 and 5
    _run_available_now(
        _stream(spark, wh, "db.kv_stream", **{"scan.mode": "from-snapshot", "scan.snapshot-id": "4"}),
        str(tmp_path / "c"), "pos_snap",
    )
    assert spark.table("pos_snap").count() == 20 + 5


def test_admission_control_consumer_advances_per_batch(spark, wh, tmp_path):
    table = open_table("db.kv_stream", warehouse=wh)
    consumer_file = os.path.join(table.table_path, "consumer", "consumer-spark-it")
    seen = []

    def record(batch_df, batch_id):
        position = None
        if os.path.exists(consumer_file):
            with open(consumer_file) as f:
                position = f.read()
        seen.append((batch_id, batch_df.count(), position))

    df = _stream(spark, wh, "db.kv_stream", **{
        "from": "earliest", "consumer-id": "spark-it", "read.stream.maxRowsPerTrigger": "15",
    })
    q = (df.writeStream.foreachBatch(record).trigger(availableNow=True)
         .option("checkpointLocation", str(tmp_path / "cp")).start())
    q.awaitTermination(180)
    assert q.exception() is None
    batches = [s for s in seen if s[1] > 0]
    total = sum(s[1] for s in batches)
    assert total == 40 + len(range(0, 40, 3)) + len(range(0, 40, 7)) + 20 + 5
    assert len(batches) >= 5  # snapshot 1 (40 rows, 2 splits) alone needs two micro-batches
    positions = [s[2] for s in batches]
    # every batch after the first sees the position the previous batch ended at; the values only grow
    import json

    numbers = [json.loads(p)["nextSnapshot"] if p else 0 for p in positions]
    assert numbers == sorted(numbers) and numbers[-1] > numbers[0]
    with open(consumer_file) as f:
        assert json.loads(f.read()) == {"nextSnapshot": 6}  # all 5 snapshots consumed

    # a new query with the same consumer id and no checkpoint resumes at the consumer position: nothing new
    _run_available_now(_stream(spark, wh, "db.kv_stream", **{"consumer-id": "spark-it"}), str(tmp_path / "cp2"),
                       "resume_out")
    assert spark.table("resume_out").count() == 0
    _write(table, [{"id": 99, "name": "late", "qty": 1, "op": "+I"}], KV)
    _run_available_now(_stream(spark, wh, "db.kv_stream", **{"consumer-id": "spark-it"}), str(tmp_path / "cp3"),
                       "resume_out2")
    assert [r["id"] for r in spark.table("resume_out2").collect()] == [99]


# -- writing ------------------------------------------------------------------------------------------------
def test_batch_write_append_and_overwrite(spark, wh):
    df = spark.range(100).selectExpr("id", "case when id % 2 = 0 then 'eu' else 'us' end region",
                                     "cast(id as double) / 4 amount",
                                     "timestamp_seconds(1700000000 + id) ts").repartition(3)
    df.write.format("paimon").option("warehouse", wh).mode("append").save("db.app_w")
    df.write.format("paimon").option("warehouse", wh).mode("append").save("db.app_w")
    table = open_table("db.app_w", warehouse=wh)
    rows = _pypaimon_rows(table)
    assert len(rows) == 200 and Counter(r["id"] for r in rows) == Counter({i: 2 for i in range(100)})
    assert {r["ts"].timestamp() for r in rows} == {1700000000.0 + i for i in range(100)}
    back = _read(spark, wh).load("db.app_w").where("id = 5").select("ts").collect()
    assert [r.ts.timestamp() for r in back] == [1700000005.0] * 2
    assert len(table.snapshot_manager().list_snapshots()) == 2  # one commit per Spark job
    df.limit(10).write.format("paimon").option("warehouse", wh).mode("overwrite").save("db.app_w")
    assert len(_pypaimon_rows(open_table("db.app_w", warehouse=wh))) == 10


def test_batch_write_primary_key_upserts_and_deletes(spark, wh):
    opts = {"warehouse": wh, "primary-key": "id", "bucket": "2", "rowkind.field": "op"}
    first = spark.createDataFrame([(i, f"n{i}", i, "+I") for i in range(30)], "id long, name string, qty int, op string")
    first.write.format("paimon").options(**opts).mode("append").save("db.pk_w")
    changes = spark.createDataFrame(
        [(1, "one", 100, "+U"), (2, "x", 0, "-D"), (3, "x", 0, "-D"), (40, "new", 4, "+I")],
        "id long, name string, qty int, op string",
    ).repartition(2, "id")
    changes.write.format("paimon").option("warehouse", wh).mode("append").save("db.pk_w")
    rows = {r["id"]: r for r in _pypaimon_rows(open_table("db.pk_w", warehouse=wh))}
    assert set(rows) == (set(range(30)) - {2, 3}) | {40}
    assert rows[1]["name"] == "one" and rows[1]["qty"] == 100
    # and the Spark reader agrees
    assert _read(spark, wh).load("db.pk_w").count() == len(rows)


def _events_table(wh, name):
    cat = _catalog(wh)
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("qty", pa.int32()), ("op", pa.string())])
    cat.create_table(f"db.{name}", Schema.from_pyarrow_schema(schema), False)
    return cat.get_table(f"db.{name}"), schema


def test_stream_write_primary_key_with_deletes(spark, wh, tmp_path):
    source, schema = _events_table(wh, "changes_src")
    _write(source, [{"id": i, "name": f"n{i}", "qty": i, "op": "+I"} for i in range(20)], schema)
    _write(source, [{"id": i, "name": "gone", "qty": 0, "op": "-D"} for i in range(0, 20, 4)], schema)
    _write(source, [{"id": 1, "name": "upd", "qty": 7, "op": "+U"}], schema)
    df = _stream(spark, wh, "db.changes_src", **{"from": "earliest", "read.stream.maxSnapshotsPerTrigger": "1"})
    q = (df.repartition(2, "id").writeStream.format("paimon").option("warehouse", wh)
         .option("primary-key", "id").option("bucket", "2").option("rowkind.field", "op")
         .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start("db.pk_stream_w"))
    q.awaitTermination(180)
    assert q.exception() is None
    target = open_table("db.pk_stream_w", warehouse=wh)
    rows = {r["id"]: r for r in _pypaimon_rows(target)}
    assert set(rows) == set(range(20)) - set(range(0, 20, 4))
    assert rows[1]["name"] == "upd"
    snaps = target.snapshot_manager().list_snapshots()
    assert len(snaps) == 3  # one commit per micro-batch (one source snapshot each)
    assert len({s.commit_user for s in snaps}) == 1
    assert [s.commit_identifier for s in snaps] == sorted(s.commit_identifier for s in snaps)


def test_stream_write_restart_before_commit_log_does_not_duplicate(spark, wh, tmp_path):
    source, schema = _events_table(wh, "append_src")
    for k in range(3):
        _write(source, [{"id": k * 10 + i, "name": "x", "qty": 1, "op": "+I"} for i in range(10)], schema)
    cp = str(tmp_path / "cp")

    def run():
        df = _stream(spark, wh, "db.append_src", **{"from": "earliest", "read.stream.maxSnapshotsPerTrigger": "1"})
        q = (df.writeStream.format("paimon").option("warehouse", wh).option("checkpointLocation", cp)
             .trigger(availableNow=True).start("db.append_w"))
        q.awaitTermination(180)
        assert q.exception() is None

    run()
    target = open_table("db.append_w", warehouse=wh)
    assert len(_pypaimon_rows(target)) == 30
    # Crash simulation: the Paimon commit of the last micro-batch happened, Spark's commit log entry did not.
    commits = os.path.join(cp, "commits")
    last = max(int(n) for n in os.listdir(commits) if n.isdigit())
    os.remove(os.path.join(commits, str(last)))
    crc = os.path.join(commits, f".{last}.crc")
    if os.path.exists(crc):
        os.remove(crc)
    run()  # Spark replays micro-batch `last` with the same offsets
    assert os.path.exists(os.path.join(commits, str(last)))  # it did run it again
    target = open_table("db.append_w", warehouse=wh)
    rows = _pypaimon_rows(target)
    assert len(rows) == 30 and len(set(r["id"] for r in rows)) == 30
    assert len(target.snapshot_manager().list_snapshots()) == 3


def test_stream_writer_commit_twice_same_batch_id(spark, wh):
    from paimon_tail.spark import PaimonDataSource
    from paimon_tail.spark import commit as commit_mod
    from pyspark.sql.pandas.types import from_arrow_schema

    schema = pa.schema([("id", pa.int64()), ("s", pa.string())])
    source = PaimonDataSource({"warehouse": wh, "table": "db.twice", "commit.user": "twice-test"})
    writer = source.streamWriter(from_arrow_schema(schema), False)
    batch = pa.RecordBatch.from_pylist([{"id": i, "s": "a"} for i in range(5)], schema=schema)
    message = writer.write(iter([batch]))
    writer.commit([message], 7)
    commit_mod._scanned.clear()  # as if the driver process restarted
    writer2 = PaimonDataSource({"warehouse": wh, "table": "db.twice", "commit.user": "twice-test"}).streamWriter(
        from_arrow_schema(schema), False)
    writer2.commit([message], 7)
    writer2.commit([writer2.write(iter([batch]))], 7)  # a re-run attempt with new files: skipped too
    table = open_table("db.twice", warehouse=wh)
    assert len(_pypaimon_rows(table)) == 5
    writer2.commit([writer2.write(iter([batch]))], 8)
    assert len(_pypaimon_rows(open_table("db.twice", warehouse=wh))) == 10


# -- corrupt files (docs/errors.md#corrupt-files; the commands' side: tests/storage/test_corrupt_files.py) ------
@pytest.mark.parametrize("kind, mode", [("snapshot", "truncated"), ("manifest", "garbage"), ("data file", "deleted")])
def test_corrupt_files_are_named_by_the_source(spark, tmp_path, kind, mode):
    """A batch read and a stream of a table with a broken file fail with the line that names the file and what is
    wrong with it (in Spark's error), never with fewer rows."""
    from tests.storage.test_corrupt_files import _delta_manifest_list, _newest, _snapshot, corrupt

    wh = str(tmp_path / "wh")
    _catalog(wh).create_database("db", True)
    table, schema = _pk_table(wh, "kv")
    _history(table, schema)
    t = f"{wh}/db.db/kv"
    path = {"snapshot": lambda: _snapshot(t, "latest"), "manifest list": lambda: _delta_manifest_list(t),
            "manifest": lambda: _newest(f"{t}/manifest/manifest-[0-9a-f]*"),
            "data file": lambda: _newest(f"{t}/bucket-*/data-*")}[kind]()
    corrupt(path, mode)
    with pytest.raises(Exception) as batch:
        _read(spark, wh).load("db.kv").collect()
    assert f"cannot read {kind} {path}: " in str(batch.value), str(batch.value)[-3000:]
    q = (_stream(spark, wh, "db.kv", **{"from": "earliest"}).writeStream.format("memory")
         .queryName(f"corrupt_{kind.replace(' ', '_')}_{mode}").trigger(availableNow=True)
         .option("checkpointLocation", str(tmp_path / "cp")).start())
    try:
        q.awaitTermination(180)
    except Exception as e:  # noqa: BLE001 - the query's failure, as Spark reports it
        failure = str(e)
    else:
        failure = str(q.exception())
    assert f"cannot read {kind} {path}: " in failure, failure[-3000:]
