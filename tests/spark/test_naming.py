"""Living beside the Java connector: the source's names, a JVM source named ``paimon`` on the class path, and
paimon-spark's option names (table locations, ``database``, min rows per trigger, options refused).

The "taken" case is real: tests/spark/jvm/FakePaimonSource.java, a JVM data source registered as ``paimon`` the
way the paimon-spark connector is, compiled here with the JDK and put on a driver's class path (``spark.jars``) in
a Spark session of its own (a subprocess: a JVM's class path is fixed when it starts).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

try:
    import pyspark.sql  # noqa: F401
except ImportError as e:  # pragma: no cover
    pytest.skip(f"!!! PySpark is not installed ({e}): the Spark naming tests DID NOT RUN. "
                "Install it with: pip install 'paimon-tail[spark]'", allow_module_level=True)

import paimon_tail.spark
from paimon_tail.errors import UsageError
from paimon_tail.spark.source_options import parse_options
from paimon_tail.spark.runtime import ReadSpec
from paimon_tail.spark.stream import Limits, StreamPlanner
from tests.conftest import APPEND, TestWarehouse, append_rows
from tests.spark.conftest import local_spark


@pytest.fixture(scope="module")
def spark():
    yield from local_spark("paimon-tail-naming", register=False)


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> TestWarehouse:
    w = TestWarehouse(str(tmp_path_factory.mktemp("naming") / "wh"))
    w.create("t", APPEND)
    w.commit("t", append_rows(1, 30))
    return w


def test_both_names_when_paimon_is_free(spark, wh):
    assert paimon_tail.spark.register(spark) == ("paimon_tail", "paimon")
    ours = spark.read.format("paimon_tail").option("warehouse", wh.path).load("db.t")
    shared = spark.read.format("paimon").option("warehouse", wh.path).load("db.t")
    assert sorted(ours.collect()) == sorted(shared.collect()) and ours.count() == 30


def test_a_table_location_as_paimon_spark_loads_it(spark, wh):
    paimon_tail.spark.register(spark)
    location = os.path.join(wh.path, "db.db", "t")
    by_name = sorted(spark.read.format("paimon_tail").option("warehouse", wh.path).load("db.t").collect())
    assert sorted(spark.read.format("paimon_tail").load(location).collect()) == by_name
    assert sorted(spark.read.format("paimon_tail").load("file:" + location).collect()) == by_name
    assert sorted(spark.read.format("paimon_tail").option("warehouse", wh.path).option("database", "db")
                  .option("table", "t").load().collect()) == by_name
    spark.range(5).selectExpr("id + 100000 AS id", "'loc' AS writer", "1 AS n").write.format("paimon_tail") \
        .mode("append").save(location)
    assert spark.read.format("paimon_tail").load(location).where("writer = 'loc'").count() == 5


@pytest.mark.parametrize("options, message", [
    ({"path": "/tmp/wh/t"}, "is not a table location"),
    ({"path": "/tmp/wh/db.db/t", "warehouse": "/elsewhere"}, "is not in warehouse /elsewhere"),
    ({"path": "db.t", "warehouse": "/w", "write.merge-schema": "true"}, "write.merge-schema=true is not supported"),
    ({"path": "db.t", "warehouse": "/w", "catalog": "paimon"}, "a Spark catalog name cannot be used"),
    ({"path": "db.t", "warehouse": "/w", "read.stream.minRowsPerTrigger": "5"}, "go together"),
    ({"path": "db.t", "warehouse": "/w", "read.stream.maxRowsPerTrigger": "0"}, "must be at least 1"),
])
def test_connector_options_refused_clearly(options, message):
    with pytest.raises(UsageError, match=message):
        parse_options(options)


def test_connector_options_accepted():
    o = parse_options({"path": "db.t", "warehouse": "/w", "read.stream.maxFilesPerTrigger": "3",
                       "read.stream.maxBytesPerTrigger": "1024", "read.stream.maxRowsPerTrigger": "100",
                       "read.stream.minRowsPerTrigger": "50", "read.stream.maxTriggerDelayMs": "2000",
                       "consumer-id": "etl", "read.changelog": "true", "scan.mode": "from-snapshot",
                       "scan.snapshot-id": "3", "write.merge-schema": "false"})
    assert (o.max_files, o.max_bytes, o.max_rows, o.min_rows, o.max_delay_ms) == (3, 1024, 100, 50, 2000)
    assert (o.consumer_id, o.row_kind, o.start.kind, o.start.snapshot_id) == ("etl", True, "snapshot", 3)


def test_min_rows_per_trigger_waits_for_rows_or_the_delay(wh):
    wh.create("trickle", APPEND)
    wh.commit("trickle", append_rows(1, 20))
    o = parse_options({"path": "db.trickle", "warehouse": wh.path, "from": "earliest",
                       "read.stream.minRowsPerTrigger": "50", "read.stream.maxTriggerDelayMs": "1500"})
    planner = StreamPlanner(o, ReadSpec(columns=tuple(APPEND.names), streaming=True))
    start = planner.initial_offset()
    assert planner.latest_offset(start, Limits()) == start  # 20 rows < 50: no micro-batch yet
    wh.commit("trickle", append_rows(2, 20))
    assert planner.latest_offset(start, Limits()) == start  # 40 < 50
    wh.commit("trickle", append_rows(3, 20))
    end = planner.latest_offset(start, Limits())
    assert end["snapshot"] == 4 and sum(i.rows for i in planner.plan(start, end)) == 60
    wh.commit("trickle", append_rows(4, 20))
    assert planner.latest_offset(end, Limits()) == end  # 20 < 50, and the delay has not passed
    time.sleep(1.6)
    later = planner.latest_offset(end, Limits())
    assert later["snapshot"] == 5  # the delay passed: 20 rows are enough
    wh.commit("trickle", append_rows(5, 5))
    planner.prepare_available_now()  # availableNow never waits for rows
    assert planner.latest_offset(later, Limits())["snapshot"] == 6


PROBE = r"""
import json, os, sys, warnings
jar, wh = sys.argv[1], sys.argv[2]
os.environ["PYSPARK_PYTHON"] = sys.executable
from pyspark.sql import SparkSession
import paimon_tail.spark
spark = (SparkSession.builder.master("local[1]").config("spark.jars", jar).config("spark.ui.enabled", "false")
         .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
try:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        names = paimon_tail.spark.register(spark)
    out = {
        "names": list(names),
        "warnings": [str(w.message) for w in caught if issubclass(w.category, paimon_tail.spark.NameTakenWarning)],
        "jvm": [r.source for r in spark.read.format("paimon").load().collect()],
        "ours": sorted(r.id for r in spark.read.format("paimon_tail").option("warehouse", wh).load("db.beside")
                       .collect()),
    }
    print("RESULT " + json.dumps(out), flush=True)
finally:
    spark.stop()
"""


def test_jvm_source_named_paimon_keeps_its_name(fake_paimon_jar, wh, tmp_path):
    wh.create("beside", APPEND)
    wh.commit("beside", append_rows(2, 12))
    proc = subprocess.run([sys.executable, "-c", PROBE, fake_paimon_jar, wh.path], capture_output=True, text=True,
                          timeout=300, cwd=str(tmp_path))
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-4000:]
    out = json.loads(lines[-1][len("RESULT "):])
    assert out["names"] == ["paimon_tail"]
    assert len(out["warnings"]) == 1 and "'paimon' is taken by a JVM source" in out["warnings"][0] \
        and "format('paimon_tail')" in out["warnings"][0]
    assert out["jvm"] == ["jvm"]  # format("paimon") is still the JVM connector
    assert out["ours"] == sorted(r["id"] for r in append_rows(2, 12))
