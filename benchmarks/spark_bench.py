"""Rows/s of the Spark data source vs the follower (and vs a plain pypaimon write) on the same table.

    .venv/bin/python benchmarks/spark_bench.py --rows 1000000 --snapshots 20 [--json out.json]

Measured after a warm-up pass over a small table, each on a fresh table in a temporary warehouse (SparkSession start-up excluded, table creation
excluded):
  follow          paimon_tail.follow_sync(start=earliest, exit_at_end=True), counting rows
  spark-stream    readStream paimon (from earliest) → noop sink, trigger availableNow
  spark-batch     spark.read paimon → count via noop write
  pypaimon-write  one BatchTableWrite of the whole Arrow table (single process)
  spark-write     spark.range → df.write paimon (batch, one commit)
  spark-stream-write  readStream paimon (availableNow) → writeStream paimon, one commit per micro-batch
The streaming rows are given twice: end to end (query start to termination) and "in micro-batches" (the sum
of the triggers that had rows, from the query's progress reports: what a long-running query sustains).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

import pyarrow as pa

SCHEMA = pa.schema([("id", pa.int64()), ("customer", pa.string()), ("amount", pa.float64()), ("qty", pa.int32())])


def make_data(rows: int, start: int = 0) -> pa.Table:
    import numpy as np

    ids = np.arange(start, start + rows, dtype=np.int64)
    return pa.table({
        "id": ids,
        "customer": pa.array([f"customer-{i % 997}" for i in ids.tolist()]),
        "amount": (ids % 10000) / 100.0,
        "qty": (ids % 17).astype(np.int32),
    }, schema=SCHEMA)


def create(wh: str, name: str):
    from pypaimon import CatalogFactory, Schema

    cat = CatalogFactory.create({"warehouse": wh})
    cat.create_database("bench", True)
    cat.create_table(f"bench.{name}", Schema.from_pyarrow_schema(SCHEMA), True)
    return cat.get_table(f"bench.{name}")


def fill(table, rows: int, snapshots: int) -> None:
    per = rows // snapshots
    for k in range(snapshots):
        wb = table.new_batch_write_builder()
        w = wb.new_write()
        w.write_arrow(make_data(per, k * per))
        wb.new_commit().commit(w.prepare_commit())
        w.close()


def timed(fn):
    t = time.perf_counter()
    n = fn()
    return n, time.perf_counter() - t


def _batch_seconds(query) -> float:
    """Time spent in micro-batches that had rows (without query start-up and the final empty trigger)."""
    return sum(p["durationMs"]["triggerExecution"] for p in query.recentProgress if p["numInputRows"]) / 1000.0


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--snapshots", type=int, default=20)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import paimon_tail
    import paimon_tail.spark
    from paimon_tail.catalog import open_table
    from pyspark.sql import SparkSession

    wh = tempfile.mkdtemp(prefix="paimon-spark-bench-")
    results = []
    try:
        source = create(wh, "src")
        fill(source, args.rows, args.snapshots)
        rows = args.rows // args.snapshots * args.snapshots

        def follow():
            n = 0
            for item in paimon_tail.follow_sync(open_table("bench.src", warehouse=wh), start="earliest",
                                                exit_at_end=True):
                n += item.batch.num_rows
            return n

        n, s = timed(follow)
        results.append(("follow", n, s))

        spark = (
            SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
            .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.sql.shuffle.partitions", "2").getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        paimon_tail.spark.register(spark)
        # Warm-up (JVM JIT, Python workers, the streaming source runner): a small table through every path once.
        warm = create(wh, "warm")
        fill(warm, 20_000, 2)
        spark.read.format("paimon").option("warehouse", wh).load("bench.warm").write.format("paimon").option(
            "warehouse", wh).mode("append").save("bench.warm_w")
        (spark.readStream.format("paimon").option("warehouse", wh).option("table", "bench.warm")
         .option("from", "earliest").load().writeStream.format("paimon").option("warehouse", wh)
         .trigger(availableNow=True).option("checkpointLocation", os.path.join(wh, "cp-warm"))
         .start("bench.warm_s").awaitTermination())

        def spark_stream():
            q = (spark.readStream.format("paimon").option("warehouse", wh).option("table", "bench.src")
                 .option("from", "earliest").load()
                 .writeStream.format("noop").trigger(availableNow=True)
                 .option("checkpointLocation", os.path.join(wh, "cp-read")).start())
            q.awaitTermination()
            in_batches.append(_batch_seconds(q))
            return sum(pr["numInputRows"] for pr in q.recentProgress)

        in_batches = []
        n, s = timed(spark_stream)
        results.append(("spark-stream", n, s))
        results.append(("  in micro-batches", n, in_batches[-1]))

        def spark_batch():
            spark.read.format("paimon").option("warehouse", wh).load("bench.src").write.format("noop").mode(
                "overwrite").save()
            return rows

        n, s = timed(spark_batch)
        results.append(("spark-batch", n, s))

        data = make_data(rows)
        target = create(wh, "pywrite")

        def pypaimon_write():
            wb = target.new_batch_write_builder()
            w = wb.new_write()
            w.write_arrow(data)
            wb.new_commit().commit(w.prepare_commit())
            w.close()
            return rows

        n, s = timed(pypaimon_write)
        results.append(("pypaimon-write", n, s))

        df = spark.range(rows, numPartitions=2).selectExpr(
            "id", "concat('customer-', cast(id % 997 as string)) customer", "(id % 10000) / 100.0 amount",
            "cast(id % 17 as int) qty")
        df.write.format("noop").mode("overwrite").save()  # the generation alone, to see what is the sink's

        def spark_write():
            df.write.format("paimon").option("warehouse", wh).mode("append").save("bench.sparkwrite")
            return rows

        n, s = timed(spark_write)
        results.append(("spark-write", n, s))

        def spark_stream_write():
            q = (spark.readStream.format("paimon").option("warehouse", wh).option("table", "bench.src")
                 .option("from", "earliest").load()
                 .writeStream.format("paimon").option("warehouse", wh).trigger(availableNow=True)
                 .option("checkpointLocation", os.path.join(wh, "cp-write")).start("bench.streamwrite"))
            q.awaitTermination()
            in_batches.append(_batch_seconds(q))
            return sum(pr["numInputRows"] for pr in q.recentProgress)

        n, s = timed(spark_stream_write)
        results.append(("spark-stream-write", n, s))
        results.append(("  in micro-batches", n, in_batches[-1]))
        spark.stop()
    finally:
        shutil.rmtree(wh, ignore_errors=True)

    print(f"\n{args.rows:,} rows in {args.snapshots} snapshots, {os.cpu_count()} cores, local[2]\n")
    print(f"{'measure':<20} {'rows':>10} {'seconds':>9} {'rows/s':>12}")
    out = []
    for name, n, s in results:
        print(f"{name:<20} {n:>10,} {s:>9.2f} {n / s:>12,.0f}")
        out.append({"measure": name, "rows": n, "seconds": round(s, 3), "rows_per_second": round(n / s)})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": args.rows, "snapshots": args.snapshots, "results": out}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
