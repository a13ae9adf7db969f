"""The lookup join (``paimon_tail.spark.lookup_join``, the SQL function, ``paimon_tail.lookup_join``) against a
real ``paimon-tail serve`` and a real local SparkSession.

The oracle is Spark's own join with a batch read of the table, through the data source, at the snapshot the
service reports: deletes, missing and null keys, composite keys of a partitioned table, and a streaming query
while a writer commits (each row then equals the table at a snapshot between the one its answer reports and the
latest one when its micro-batch ended).
"""
from __future__ import annotations

import decimal
import threading
import time

import pyarrow as pa
import pytest

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

try:
    from pyspark.sql import functions as F
except ImportError as e:  # pragma: no cover
    pytest.skip(f"!!! PySpark is not installed ({e}): the lookup join tests DID NOT RUN. "
                "Install it with: pip install 'paimon-tail[spark]'", allow_module_level=True)

import paimon_tail
import paimon_tail.spark
from paimon_tail.errors import UsageError
from tests.conftest import ORDERS, TestWarehouse
from tests.spark.conftest import local_spark

PARTS = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                   ("name", pa.string()), ("qty", pa.int32()), ("op", pa.string())])
VERSIONED = pa.schema([pa.field("id", pa.int64(), nullable=False), ("version", pa.int32()), ("status", pa.string()),
                       ("op", pa.string())])
EVENTS = pa.schema([("event_id", pa.int64()), ("order_id", pa.int64()), ("kind", pa.string())])
DAYS = ("2026-11-01", "2026-11-02", "2026-11-03")


@pytest.fixture(scope="module")
def spark():
    yield from local_spark("paimon-tail-lookup-join")


@pytest.fixture(scope="module")
def tables(tmp_path_factory, serve):
    """orders (inserts, updates, deletes), parts (partitioned, composite key), versioned (the streaming test's),
    served by one ``paimon-tail serve``."""
    wh = TestWarehouse(str(tmp_path_factory.mktemp("join") / "wh"))
    wh.create("orders", ORDERS, primary_keys=["id"], options={"bucket": "4"})
    wh.commit("orders", [{"id": i, "status": "new", "amount": decimal.Decimal(i) / 4, "op": "+I"} for i in range(300)])
    wh.commit("orders", [{"id": i, "status": "paid", "amount": decimal.Decimal(i), "op": "+U"}
                         for i in range(0, 300, 3)])
    wh.commit("orders", [{"id": i, "status": None, "amount": None, "op": "-D"} for i in range(0, 300, 7)])
    wh.create("parts", PARTS, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "2"})
    wh.commit("parts", [{"id": i, "dt": DAYS[i % 2], "name": f"p{i}", "qty": i, "op": "+I"} for i in range(120)])
    wh.commit("parts", [{"id": i, "dt": DAYS[i % 2], "name": f"q{i}", "qty": -i, "op": "+U"} for i in range(0, 120, 5)])
    wh.commit("parts", [{"id": i, "dt": DAYS[i % 2], "name": None, "qty": None, "op": "-D"} for i in range(0, 120, 11)])
    wh.create("versioned", VERSIONED, primary_keys=["id"], options={"bucket": "2"})
    wh.commit("versioned", [{"id": i, "version": 0, "status": "v0", "op": "+I"} for i in range(20)])
    wh.create("events", EVENTS)
    # Paimon's default primary-key table: dynamic buckets (keys routed by no hash a client knows), small ones
    wh.create("dyn_orders", ORDERS, primary_keys=["id"], options={"dynamic-bucket.target-row-num": "40"})
    wh.commit("dyn_orders", [{"id": i, "status": "new", "amount": decimal.Decimal(i), "op": "+I"} for i in range(300)])
    wh.commit("dyn_orders", [{"id": i, "status": None, "amount": None, "op": "-D"} for i in range(0, 300, 7)])
    serve(wh.path, "db.orders", "db.parts", "db.versioned", "db.dyn_orders")
    return wh


def _rows(df, order):
    return sorted((tuple(r[c] for c in order) for r in df.collect()), key=repr)


def _source(spark, wh, table, snapshot):
    return (spark.read.format("paimon_tail").option("warehouse", wh.path).option("scan.snapshot-id", snapshot)
            .load(table))


def _events(spark):
    """Keys that exist, were updated, were deleted (every 7th), were never written (>= 300), and nulls."""
    ids = list(range(0, 330, 2)) + [5, 5, 7, None, None, 1000]
    return spark.createDataFrame([(n, i, f"k{n % 3}") for n, i in enumerate(ids)],
                                 "event_id long, order_id long, kind string")


@pytest.mark.parametrize("how", ["left", "inner"])
def test_join_equals_spark_join_at_the_served_snapshot(spark, tables, how):
    latest = tables.latest("orders")
    ev = _events(spark)
    joined = paimon_tail.spark.lookup_join(ev, "db.orders", on="order_id", how=how, warehouse=tables.path,
                                           min_snapshot=latest, snapshot_column="snap")
    assert joined.columns == ["event_id", "order_id", "kind", "status", "amount", "op", "snap"]
    rows = joined.collect()
    assert {r["snap"] for r in rows} == {latest}
    orders = _source(spark, tables, "db.orders", latest)
    expected = ev.join(orders, ev.order_id == orders.id, how).drop("id")
    cols = ["event_id", "order_id", "kind", "status", "amount", "op"]
    assert _rows(joined, cols) == _rows(expected, cols)
    by_event = {r["event_id"]: r for r in rows}
    if how == "left":
        assert len(rows) == ev.count()
        assert by_event[0]["status"] is None and by_event[0]["order_id"] == 0  # deleted (0 % 7 == 0)
        assert by_event[ev.count() - 1]["status"] is None  # never written
    else:
        assert all(r["status"] is not None for r in rows)
    assert any(r["status"] == "paid" for r in rows) and any(r["status"] == "new" for r in rows)


def test_composite_key_partitioned_table(spark, tables):
    latest = tables.latest("parts")
    rows = [(n, i, DAYS[d]) for n, (i, d) in enumerate((i, d) for i in range(0, 130, 3) for d in (0, 1, 2))]
    ev = spark.createDataFrame(rows + [(999, None, DAYS[0]), (998, 4, None)], "n long, pid long, day string")
    joined = paimon_tail.spark.lookup_join(ev, "db.parts", on={"dt": "day", "id": "pid"}, warehouse=tables.path,
                                           min_snapshot=latest, prefix="part_")
    assert joined.columns == ["n", "pid", "day", "part_name", "part_qty", "part_op"]
    parts = _source(spark, tables, "db.parts", latest)
    expected = (ev.join(parts, (ev.pid == parts.id) & (ev.day == parts.dt), "left")
                .select("n", "pid", "day", F.col("name").alias("part_name"), F.col("qty").alias("part_qty"),
                        F.col("op").alias("part_op")))
    cols = ["n", "pid", "day", "part_name", "part_qty", "part_op"]
    got = _rows(joined, cols)
    assert got == _rows(expected, cols)
    assert sum(1 for r in got if r[3] is not None) > 30  # each key lives in one of the three partitions


def test_key_columns_by_their_own_names_and_select(spark, tables):
    latest = tables.latest("orders")
    ev = spark.range(0, 50).select(F.col("id"), (F.col("id") * 10).alias("x"))
    joined = paimon_tail.spark.lookup_join(ev, "db.orders", warehouse=tables.path, select=["status"],
                                           min_snapshot=latest, how="inner")
    orders = _source(spark, tables, "db.orders", latest)
    expected = ev.join(orders.select("id", "status"), "id", "inner")
    assert _rows(joined, ["id", "x", "status"]) == _rows(expected, ["id", "x", "status"])


def test_read_your_writes_with_min_snapshot(spark, tables):
    snapshot = tables.commit("orders", [{"id": 1, "status": "refunded", "amount": decimal.Decimal("1.50"),
                                         "op": "+U"}])
    ev = spark.createDataFrame([(1,)], "order_id long")
    row = paimon_tail.spark.lookup_join(ev, "db.orders", on="order_id", warehouse=tables.path,
                                        min_snapshot=snapshot, snapshot_column="snap").collect()[0]
    assert (row["status"], row["amount"]) == ("refunded", decimal.Decimal("1.50"))
    assert row["snap"] >= snapshot


def test_sql_function_equals_lookup_join(spark, tables):
    latest = tables.latest("orders")
    name = paimon_tail.spark.register_lookup_function(spark, "db.orders", warehouse=tables.path, min_snapshot=latest)
    assert name == "orders_lookup"
    _events(spark).createOrReplaceTempView("events_sql")
    sql = spark.sql("SELECT event_id, order_id, kind, o.* FROM "
                    "(SELECT *, orders_lookup(order_id) AS o FROM events_sql) WHERE o IS NOT NULL")
    joined = paimon_tail.spark.lookup_join(_events(spark), "db.orders", on="order_id", how="inner",
                                           warehouse=tables.path, min_snapshot=latest)
    cols = ["event_id", "order_id", "kind", "status", "amount", "op"]
    assert _rows(sql, cols) == _rows(joined, cols)
    parts = paimon_tail.spark.register_lookup_function(spark, "db.parts", name="part", warehouse=tables.path,
                                                       select=["name"])
    got = spark.sql(f"SELECT part(1, '{DAYS[1]}').name AS a, part(1, '{DAYS[0]}') AS b, part(2, '{DAYS[0]}').name AS c"
                    ).collect()[0]
    assert parts == "part" and got["a"] == "p1" and got["b"] is None and got["c"] == "p2"


def test_dynamic_bucket_table_joins_as_spark_does(spark, tables):
    """The join and the SQL function on Paimon's default primary-key table (dynamic buckets)."""
    latest = tables.latest("dyn_orders")
    assert tables.table("dyn_orders").bucket_mode().name == "HASH_DYNAMIC"
    ev = _events(spark)
    joined = paimon_tail.spark.lookup_join(ev, "db.dyn_orders", on="order_id", warehouse=tables.path,
                                           min_snapshot=latest, snapshot_column="snap")
    orders = _source(spark, tables, "db.dyn_orders", latest)
    cols = ["event_id", "order_id", "kind", "status", "amount", "op"]
    assert _rows(joined, cols) == _rows(ev.join(orders, ev.order_id == orders.id, "left").drop("id"), cols)
    assert {r["snap"] for r in joined.collect()} == {latest}
    paimon_tail.spark.register_lookup_function(spark, "db.dyn_orders", name="dyn", warehouse=tables.path,
                                               min_snapshot=latest)
    got = spark.sql("SELECT dyn(1).status AS a, dyn(7) AS b, dyn(1000) AS c").collect()[0]
    assert (got["a"], got["b"], got["c"]) == ("new", None, None)


def test_plain_python_join_equals_spark(spark, tables):
    latest = tables.latest("orders")
    ev = _events(spark)
    arrow = pa.Table.from_pylist([r.asDict() for r in ev.collect()], schema=EVENTS)
    joined = paimon_tail.lookup_join(arrow, "db.orders", on="order_id", warehouse=tables.path, min_snapshot=latest,
                                     lookup_keys=50)
    spark_joined = paimon_tail.spark.lookup_join(ev, "db.orders", on="order_id", warehouse=tables.path,
                                                 min_snapshot=latest)
    cols = ["event_id", "order_id", "kind", "status", "amount", "op"]
    assert joined.column_names == cols
    assert sorted((tuple(r[c] for c in cols) for r in joined.to_pylist()), key=repr) == _rows(spark_joined, cols)
    streamed = list(paimon_tail.lookup_join(iter(arrow.to_batches(max_chunksize=40)), "db.orders", on="order_id",
                                            how="inner", warehouse=tables.path, min_snapshot=latest, lookup_keys=100))
    assert len(streamed) == -(-arrow.num_rows // 120)  # 40-row batches gathered three to a lookup
    assert sum(b.num_rows for b in streamed) == sum(1 for r in joined.to_pylist() if r["status"] is not None)


def test_bad_joins_are_refused_on_the_driver(spark, tables):
    ev = _events(spark)
    cases = [
        (dict(on="nope"), "the input has no column nope"),
        (dict(on="order_id", how="outer"), "unsupported join type"),
        (dict(on=["order_id", "kind"]), "on names 2 columns but the key of db.orders has 1"),
        (dict(on="order_id", select=["kind"]), "unknown column kind in select"),
        (dict(on="order_id", select=["status", "op"], prefix="k"), None),  # kstatus, kop: no clash
        (dict(on="kind"), "column kind (string) cannot be compared"),
    ]
    for kwargs, message in cases:
        if message is None:
            paimon_tail.spark.lookup_join(ev, "db.orders", warehouse=tables.path, **kwargs)
            continue
        with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
            paimon_tail.spark.lookup_join(ev, "db.orders", warehouse=tables.path, **kwargs)
    with pytest.raises(UsageError, match="would clash with the input"):
        paimon_tail.spark.lookup_join(ev.withColumnRenamed("kind", "status"), "db.orders", on="order_id",
                                      warehouse=tables.path)
    with pytest.raises(UsageError, match="no primary key"):
        paimon_tail.spark.lookup_join(ev, "db.events", on="order_id", warehouse=tables.path)


def test_no_service_fails_the_job_with_the_reason(spark, tables):
    tables.create("unserved", VERSIONED, primary_keys=["id"], options={"bucket": "1"})
    ev = spark.createDataFrame([(1,)], "id long")
    joined = paimon_tail.spark.lookup_join(ev, "db.unserved", warehouse=tables.path, timeout=2)
    with pytest.raises(Exception) as info:
        joined.collect()
    assert "no query service is registered for db.unserved" in str(info.value)


def _versioned_states(wh: TestWarehouse, first: int, last: int) -> dict:
    """snapshot → {id: (version, status)} of the versioned table, by pypaimon's batch read at each snapshot."""
    table = wh.table("versioned")
    states = {}
    for s in range(first, last + 1):
        rb = table.copy({"scan.snapshot-id": str(s)}).new_read_builder()
        rows = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
        states[s] = {r["id"]: (r["version"], r["status"]) for r in rows}
    return states


def test_streaming_join_while_a_writer_commits(spark, tables, tmp_path):
    """Events stream in through the source while a writer updates (and deletes) the served table: every event
    comes out once, with the table's row at a snapshot no older than the one reported."""
    first = tables.latest("versioned")
    written = []
    errors = []

    batches = []

    def record(df, batch_id):
        rows = df.collect()
        batches.append((batch_id, rows, tables.latest("versioned")))

    def arrived() -> int:
        return sum(len(b[1]) for b in batches)

    def writer():
        try:
            for c in range(1, 9):
                deleted = c == 4  # every fifth key is deleted at version 4, and comes back at 5
                tables.commit("versioned", [
                    {"id": i, "version": c, "status": f"v{c}", "op": "-D" if deleted and i % 5 == 0 else "+U"}
                    for i in range(20)])
                batch = [{"event_id": c * 100 + k, "order_id": (c * 7 + k) % 24, "kind": "e"} for k in range(15)]
                tables.commit("events", batch)
                written.extend(r["event_id"] for r in batch)
                if c % 2:  # every other commit, let the query catch up: answers from several versions
                    deadline = time.monotonic() + 60
                    while arrived() < len(written) and time.monotonic() < deadline:
                        time.sleep(0.1)
                else:
                    time.sleep(0.3)
        except BaseException as e:  # surfaced below
            errors.append(e)

    events = (spark.readStream.format("paimon_tail").option("warehouse", tables.path).option("from", "earliest")
              .load("db.events"))
    joined = paimon_tail.spark.lookup_join(events, "db.versioned", on="order_id", warehouse=tables.path,
                                           snapshot_column="snap")
    query = (joined.writeStream.foreachBatch(record).trigger(processingTime="500 milliseconds")
             .option("checkpointLocation", str(tmp_path / "cp")).start())
    t = threading.Thread(target=writer, daemon=True)
    t.start()
    try:
        t.join(300)
        assert not errors, errors
        deadline = time.monotonic() + 90
        while arrived() < len(written) and time.monotonic() < deadline:
            assert query.exception() is None, query.exception()
            time.sleep(0.3)
    finally:
        query.stop()
    got = [r["event_id"] for _, rows, _ in batches for r in rows]
    assert sorted(got) == sorted(written)  # nothing lost, nothing twice
    states = _versioned_states(tables, first, tables.latest("versioned"))
    checked = 0
    for _, rows, hi in batches:
        for r in rows:
            answer = (r["version"], r["status"]) if r["version"] is not None else None
            window = [states[s].get(r["order_id"]) for s in range(r["snap"], hi + 1) if s in states]
            assert answer in window, (r, r["snap"], hi)
            checked += 1
    assert checked == len(written)
    assert any(r["version"] is None for _, rows, _ in batches for r in rows)  # 20..23 never exist
    assert len({r["version"] for _, rows, _ in batches for r in rows}) > 3  # answers moved with the writer

