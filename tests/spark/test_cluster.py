"""The data source and the lookup join on a real Spark standalone cluster: a master and two 1-core workers started
from PySpark's own ``spark-class`` on 127.0.0.1 (``paimon_tail.spark.standalone``), the driver in this process.

Batch write and read through the source on both executors; the lookup join against a ``paimon-tail serve``
(local executor processes) equal to Spark's join with a batch read; and a streaming query (source → lookup join
→ source as sink) while a writer commits, with one worker killed mid-stream (the worker, its executor and its
Python workers, as a lost machine): the query goes on on the other worker, and every event arrives exactly once,
enriched right. Slow (~2–3 min on 2 shared cores): a cluster's JVMs start once for the module.
"""
from __future__ import annotations

import decimal
import os
import sys
import threading
import time

import pyarrow as pa
import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(900)]

try:
    import pyspark  # noqa: F401
except ImportError as e:  # pragma: no cover
    pytest.skip(f"!!! PySpark is not installed ({e}): the Spark cluster tests DID NOT RUN. "
                "Install it with: pip install 'paimon-tail[spark]'", allow_module_level=True)

import paimon_tail.spark
from tests.conftest import ORDERS, TestWarehouse

EVENTS = pa.schema([("event_id", pa.int64()), ("order_id", pa.int64()), ("kind", pa.string())])
ORDER_IDS = 400


@pytest.fixture(scope="module")
def spark(cluster):
    os.environ["PYSPARK_PYTHON"] = sys.executable  # the driver's Python workers (planning, commits) too
    session = cluster.session_builder("paimon-tail-cluster-tests").getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    paimon_tail.spark.register(session)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def wh(tmp_path_factory, serve):
    w = TestWarehouse(str(tmp_path_factory.mktemp("cluster") / "wh"))
    w.create("orders", ORDERS, primary_keys=["id"], options={"bucket": "4"})
    w.commit("orders", [{"id": i, "status": "new", "amount": decimal.Decimal(i), "op": "+I"} for i in range(ORDER_IDS)])
    w.commit("orders", [{"id": i, "status": "paid", "amount": None, "op": "+U"} for i in range(0, ORDER_IDS, 3)])
    w.commit("orders", [{"id": i, "status": None, "amount": None, "op": "-D"} for i in range(0, ORDER_IDS, 10)])
    serve(w.path, "db.orders")
    return w


def _executors(spark) -> int:
    return len(spark.sparkContext._jsc.sc().statusTracker().getExecutorInfos()) - 1  # minus the driver


def _wait_executors(spark, n: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while _executors(spark) < n:
        assert time.monotonic() < deadline, f"{_executors(spark)} executor(s) registered, expected {n}"
        time.sleep(0.5)


def _latest(wh: TestWarehouse, name: str) -> int:
    """The latest snapshot of a table the query creates when it starts (0 before)."""
    from pypaimon.catalog.catalog_exception import TableNotExistException

    try:
        return wh.latest(name)
    except TableNotExistException:
        return 0


def test_batch_write_and_read_on_two_executors(spark, cluster, wh):
    _wait_executors(spark, 2)
    df = spark.range(0, 20000, numPartitions=4).selectExpr("id", "concat('w', cast(id % 7 as string)) AS writer",
                                                          "cast(id % 100 as int) AS n")
    df.write.format("paimon_tail").option("warehouse", wh.path).mode("append").save("db.written")
    hosts = spark.sparkContext.parallelize(range(4), 4).map(lambda _: __import__("os").getpid()).distinct().count()
    assert hosts == 2  # tasks ran in the Python workers of both executors
    back = spark.read.format("paimon_tail").option("warehouse", wh.path).load("db.written")
    assert back.count() == 20000
    assert sorted(r["id"] for r in back.select("id").collect()) == list(range(20000))
    assert {r["writer"]: r["c"] for r in back.groupBy("writer").count().withColumnRenamed("count", "c").collect()} \
        == {f"w{k}": len(range(k, 20000, 7)) for k in range(7)}


def test_lookup_join_on_the_cluster_equals_spark_join(spark, wh):
    latest = wh.latest("orders")
    ev = spark.range(0, 3000, numPartitions=4).selectExpr("id AS event_id", f"id % {ORDER_IDS + 50} AS order_id")
    joined = paimon_tail.spark.lookup_join(ev, "db.orders", on="order_id", warehouse=wh.path, min_snapshot=latest)
    orders = (spark.read.format("paimon_tail").option("warehouse", wh.path).option("scan.snapshot-id", latest)
              .load("db.orders"))
    expected = ev.join(orders, ev.order_id == orders.id, "left").drop("id")
    cols = ["event_id", "order_id", "status", "amount", "op"]
    got = sorted(tuple(r[c] for c in cols) for r in joined.collect())
    assert got == sorted(tuple(r[c] for c in cols) for r in expected.collect())
    assert sum(1 for r in got if r[2] is None) >= 3000 * 50 // (ORDER_IDS + 50)  # missing and deleted keys


def test_streaming_join_survives_a_lost_worker(spark, cluster, wh, tmp_path):
    wh.create("events", EVENTS)
    orders = {r["id"]: r for r in wh.batch_rows("orders")}
    written: list = []
    errors: list = []

    def write(commits: range, pause: float) -> None:
        try:
            for c in commits:
                batch = [{"event_id": c * 1000 + k, "order_id": (c * 37 + k * 11) % (ORDER_IDS + 20), "kind": "e"}
                         for k in range(200)]
                wh.commit("events", batch)
                written.extend(r["event_id"] for r in batch)
                time.sleep(pause)
        except BaseException as e:  # surfaced below
            errors.append(e)

    def arrived() -> int:
        return len(wh.batch_rows("enriched")) if _latest(wh, "enriched") else 0

    def wait(predicate, what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            assert query.exception() is None, query.exception()
            assert time.monotonic() < deadline, what
            time.sleep(0.5)

    events = spark.readStream.format("paimon_tail").option("warehouse", wh.path).option("from", "earliest") \
        .load("db.events")
    enriched = paimon_tail.spark.lookup_join(events, "db.orders", on="order_id", warehouse=wh.path)
    query = (enriched.writeStream.format("paimon_tail").option("warehouse", wh.path)
             .option("checkpointLocation", str(tmp_path / "cp")).trigger(processingTime="1 second")
             .start("db.enriched"))
    try:
        write(range(0, 5), 0.2)  # phase 1: the query runs on both workers
        wait(lambda: arrived() == len(written), "the first events did not arrive", 300)
        assert not errors, errors
        t = threading.Thread(target=write, args=(range(5, 30), 0.3), daemon=True)
        t.start()  # phase 2: events keep coming while a worker is lost
        time.sleep(2.0)
        cluster.kill_worker(0)
        t.join(120)
        assert not errors, errors
        wait(lambda: arrived() >= len(written), "the stream did not recover", 300)
        time.sleep(2.0)  # a duplicate commit would land now
    finally:
        query.stop()
    rows = wh.batch_rows("enriched")
    assert sorted(r["event_id"] for r in rows) == sorted(written)  # nothing lost, nothing twice
    for r in rows:
        o = orders.get(r["order_id"])
        assert (r["status"], r["amount"], r["op"]) == ((o["status"], o["amount"], o["op"]) if o else (None,) * 3), r
    assert cluster.alive_workers() == 1 and _executors(spark) == 1
