"""A Structured Streaming job that keeps a Paimon primary-key table of orders up to date.

Spark's ``rate-micro-batch`` source ticks; every tick becomes a change to one of ``--orders`` orders: the first
time an order is seen it is inserted (+I), later it is updated (+U: new status and amount), and every 17th tick
deletes it (-D). The changes are upserted into ``shop.orders`` through the ``paimon`` data source, one Paimon
commit per micro-batch. Watch it from another terminal with:

    paimon-tail follow shop.orders -w /tmp/paimon-spark-wh --row-kind

Run:

    python examples/spark_pipeline.py --warehouse /tmp/paimon-spark-wh            # Ctrl-C to stop
    python examples/spark_pipeline.py --warehouse /tmp/paimon-spark-wh --batches 5  # stop after 5 micro-batches

Stopping and starting again with the same ``--checkpoint`` continues where it stopped; a micro-batch that was
committed to Paimon but not to Spark's commit log is not committed twice. Needs ``pip install 'paimon-tail[spark]'``
and Java 17.
"""
from __future__ import annotations

import argparse
import os
import sys
import time


def build_session(app: str = "paimon-spark-pipeline"):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # executors need the Python that has pypaimon
    from pyspark.sql import SparkSession

    import paimon_tail.spark

    spark = (
        SparkSession.builder.master(os.environ.get("SPARK_MASTER", "local[2]"))
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    paimon_tail.spark.register(spark)
    return spark


def orders_changes(spark, rows_per_batch: int, orders: int):
    """Changes to orders; ``rows_per_batch`` <= ``orders`` keeps each order at most once per micro-batch."""
    ticks = (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", rows_per_batch)
        .option("numPartitions", 2)
        .load()
    )
    return ticks.selectExpr(
        f"value % {orders} AS order_id",
        "concat('customer-', cast((value * 7919) % 97 AS string)) AS customer",
        "cast(((value * 31) % 10000) / 100.0 AS decimal(10, 2)) AS amount",
        "element_at(array('new', 'paid', 'shipped', 'delivered'), "
        f"cast(least(value DIV {orders}, 3) AS int) + 1) AS status",
        "current_timestamp() AS updated_at",
        f"CASE WHEN value % 17 = 0 THEN '-D' WHEN value < {orders} THEN '+I' ELSE '+U' END AS op",
    )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--warehouse", "-w", default=os.environ.get("PAIMON_WAREHOUSE", "/tmp/paimon-spark-wh"))
    p.add_argument("--table", default="shop.orders")
    p.add_argument("--checkpoint", default=None, help="default: <warehouse>/_checkpoints/<table>")
    p.add_argument("--rows-per-batch", type=int, default=200)
    p.add_argument("--orders", type=int, default=1000)
    p.add_argument("--trigger", default="2 seconds", help="processing-time trigger interval")
    p.add_argument("--batches", type=int, default=0, help="stop after N micro-batches (0: run until Ctrl-C)")
    p.add_argument("--buckets", type=int, default=4)
    args = p.parse_args(argv)
    if args.rows_per_batch > args.orders:
        p.error("--rows-per-batch must not exceed --orders (an order would change twice in one micro-batch)")
    os.makedirs(args.warehouse, exist_ok=True)
    checkpoint = args.checkpoint or os.path.join(args.warehouse, "_checkpoints", args.table)

    spark = build_session()
    changes = orders_changes(spark, args.rows_per_batch, args.orders)
    query = (
        changes.repartition(2, "order_id")  # all changes of one order in one write task
        .writeStream.format("paimon")
        .option("warehouse", args.warehouse)
        # used only when the table does not exist yet:
        .option("primary-key", "order_id")
        .option("bucket", str(args.buckets))
        .option("rowkind.field", "op")
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime=args.trigger)
        .queryName("orders-to-paimon")
        .start(args.table)
    )
    print(f"writing {args.table} in {args.warehouse} (checkpoint {checkpoint}); follow it with:\n"
          f"  paimon-tail follow {args.table} -w {args.warehouse} --row-kind", flush=True)
    try:
        while query.isActive:
            progress = query.lastProgress
            if progress and args.batches and progress["batchId"] + 1 >= args.batches:
                break
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        query.stop()
    if query.exception() is not None:
        print(f"query failed: {query.exception()}", file=sys.stderr)
        return 1
    spark.stop()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # Ctrl-C while Spark starts: no traceback, the shell's code for an interrupt
        sys.exit(130)
