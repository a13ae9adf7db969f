"""The data source and the lookup join from a Spark Connect client.

A Spark Connect server started by the test from PySpark's ``sbin/start-connect-server.sh`` on 127.0.0.1
(``paimon_tail.spark.standalone.ConnectServer``, ``local[2]``), with a JVM source named ``paimon`` on its class
path as a server with the paimon-spark connector would have; this process is a thin client
(``SparkSession.builder.remote("sc://127.0.0.1:PORT")``, no JVM of its own). The source and the join's tasks run
in the server's Python workers.
"""
from __future__ import annotations

import decimal
import os
import warnings

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(600)]

try:
    from pyspark.sql import SparkSession
    from pyspark.sql.connect.utils import check_dependencies

    check_dependencies()
except ImportError as e:  # pragma: no cover
    pytest.skip(f"!!! PySpark with Spark Connect is not installed ({e}): the Spark Connect tests DID NOT RUN. "
                "Install it with: pip install 'paimon-tail[spark]'", allow_module_level=True)

import paimon_tail.spark
from paimon_tail.spark.standalone import ConnectServer
from tests.conftest import APPEND, ORDERS, TestWarehouse, append_rows


@pytest.fixture(scope="module")
def server(fake_paimon_jar, tmp_path_factory):
    s = ConnectServer(master="local[2]", jars=[fake_paimon_jar], base_dir=str(tmp_path_factory.mktemp("connect")))
    s.start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def registration(server):
    """The Connect session, with the names ``register`` gave it and the warnings it raised."""
    session = SparkSession.builder.remote(server.url).getOrCreate()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        names = paimon_tail.spark.register(session)
    yield session, names, [w for w in caught if issubclass(w.category, paimon_tail.spark.NameTakenWarning)]
    session.stop()
    # PySpark marks the process as a Connect client for good (os.environ); later modules start classic sessions
    for key in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE"):
        os.environ.pop(key, None)


@pytest.fixture(scope="module")
def spark(registration):
    return registration[0]


@pytest.fixture(scope="module")
def wh(tmp_path_factory, serve):
    w = TestWarehouse(str(tmp_path_factory.mktemp("connect") / "wh"))
    w.create("events", APPEND)
    for c in range(3):
        w.commit("events", append_rows(c, 40))
    w.create("orders", ORDERS, primary_keys=["id"], options={"bucket": "2"})
    w.commit("orders", [{"id": i, "status": "new", "amount": decimal.Decimal(i), "op": "+I"} for i in range(100)])
    w.commit("orders", [{"id": i, "status": None, "amount": None, "op": "-D"} for i in range(0, 100, 9)])
    serve(w.path, "db.orders")
    return w


def test_register_beside_the_servers_jvm_paimon(spark, registration):
    assert type(spark).__module__.startswith("pyspark.sql.connect")
    _, names, taken = registration
    assert names == ("paimon_tail",) and len(taken) == 1
    assert [r.source for r in spark.read.format("paimon").load().collect()] == ["jvm"]


def test_batch_and_streaming_read_and_write(spark, wh, tmp_path):
    expected = sorted(r["id"] for r in wh.batch_rows("events"))
    df = spark.read.format("paimon_tail").option("warehouse", wh.path).load("db.events")
    assert sorted(r.id for r in df.collect()) == expected
    df.where("n = 1").write.format("paimon_tail").option("warehouse", wh.path).mode("append").save("db.copy")
    assert sorted(r["id"] for r in wh.batch_rows("copy")) == [r["id"] for r in append_rows(1, 40)]
    query = (spark.readStream.format("paimon_tail").option("warehouse", wh.path).option("from", "earliest")
             .load("db.events").writeStream.format("paimon_tail").option("warehouse", wh.path)
             .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start("db.streamed"))
    query.awaitTermination(300)
    assert query.exception() is None
    assert sorted(r["id"] for r in wh.batch_rows("streamed")) == expected


def test_lookup_join_and_sql_function(spark, wh):
    latest = wh.latest("orders")
    ev = spark.range(0, 130).selectExpr("id AS event_id", "id % 110 AS order_id")
    joined = paimon_tail.spark.lookup_join(ev, "db.orders", on="order_id", warehouse=wh.path, min_snapshot=latest)
    orders = (spark.read.format("paimon_tail").option("warehouse", wh.path).option("scan.snapshot-id", latest)
              .load("db.orders"))
    expected = ev.join(orders, ev.order_id == orders.id, "left").drop("id")
    cols = ["event_id", "order_id", "status", "amount", "op"]
    got = sorted(tuple(r[c] for c in cols) for r in joined.collect())
    assert got == sorted(tuple(r[c] for c in cols) for r in expected.collect())
    assert sum(1 for r in got if r[2] is None) == sum(1 for i in range(130) if i % 110 >= 100 or i % 110 % 9 == 0)
    name = paimon_tail.spark.register_lookup_function(spark, "db.orders", warehouse=wh.path, min_snapshot=latest)
    ev.createOrReplaceTempView("connect_events")
    sql = spark.sql(f"SELECT event_id, {name}(order_id).status AS status FROM connect_events").collect()
    assert sorted((r.event_id, r.status) for r in sql) == sorted((g[0], g[2]) for g in got)
