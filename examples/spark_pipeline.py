"""A Structured Streaming job that keeps a Paimon primary-key table of orders up to date.

Spark's ``rate-micro-batch`` source ticks; every tick becomes a change to one of ``--orders`` orders: the first
time an order is seen it is inserted (+I), later it is updated (+U: new status and amount), and every 17th tick
deletes it (-D). The changes are upserted into a table of its own, ``spark_demo.orders`` (``--table``; in the
demo's warehouse too, it never touches the demo's ``shop`` tables), through paimon-tail's data source (format
``paimon_tail``), one Paimon commit per micro-batch, and each micro-batch is reported as it commits. Watch it
from another terminal with:

    paimon-tail follow spark_demo.orders -w /tmp/paimon-spark-wh --row-kind

Run:

    python examples/spark_pipeline.py --warehouse /tmp/paimon-spark-wh            # Ctrl-C to stop
    python examples/spark_pipeline.py --warehouse /tmp/paimon-spark-wh --batches 5  # stop after 5 micro-batches
    python examples/spark_pipeline.py -w /shared/wh --master spark://master:7077 --conf spark.driver.host=HOST

Stopping and starting again with the same ``--checkpoint`` continues where it stopped; a micro-batch that was
committed to Paimon but not to Spark's commit log is not committed twice. Needs the Spark extra (from a clone:
``pip install -e '.[spark]'``) and Java 17.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from typing import Optional, Sequence


def build_session(app: str = "paimon-spark-pipeline", master: Optional[str] = None, conf: Sequence[str] = ()):
    """A SparkSession with paimon-tail's source registered. ``master``: ``--master``, else ``$SPARK_MASTER``,
    else ``local[2]``. On a local master Spark stays on 127.0.0.1 (no UI); on a cluster nothing is pinned: the
    driver must be reachable from the executors. ``conf`` (``key=value``, from ``--conf``) wins over every
    default here, e.g. ``--conf spark.driver.host=10.0.0.5``."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # executors need the Python that has pypaimon
    from pyspark.sql import SparkSession

    import paimon_tail.spark

    master = master or os.environ.get("SPARK_MASTER", "local[2]")
    settings = {"spark.sql.shuffle.partitions": "2", "spark.pyspark.python": os.environ["PYSPARK_PYTHON"],
                "spark.ui.showConsoleProgress": "false"}
    if master.startswith("local"):
        settings.update({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                         "spark.ui.enabled": "false"})
    for item in conf:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"--conf {item!r} is not key=value")
        settings[key.strip()] = value
    builder = SparkSession.builder.master(master).appName(app)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    paimon_tail.spark.register(spark)
    return spark


def default_warehouse(otherwise: str) -> str:
    """The warehouse paimon-tail's commands would open without -w: PAIMON_WAREHOUSE, else the default named
    catalog's, when it is a file-system catalog; else ``otherwise``."""
    from paimon_tail.catalog import catalog_config

    try:
        options = catalog_config().options
    except Exception:  # a broken catalogs.yaml: paimon-tail's commands say what is wrong with it
        return otherwise
    if options.get("metastore", "filesystem") != "filesystem":
        return otherwise
    return options.get("warehouse") or otherwise


def add_session_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--master", default=None, help="Spark master (default: $SPARK_MASTER or local[2])")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark setting; wins over the defaults (repeatable)")


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


def committed_snapshot(table, commit_user: str, batch_id: int, after: int = 0):
    """The snapshot micro-batch ``batch_id`` committed, or None: paimon_tail's sink commits each micro-batch with
    Paimon's commit identifier = its batch id, under the query's commit user (docs/spark.md). The table's latest
    snapshot would not do: the next micro-batch may have committed already. Looks at the snapshots after
    ``after``, the newest first."""
    manager = table.snapshot_manager()
    latest = manager.get_latest_snapshot()
    sid = latest.id if latest is not None else 0
    while sid > after:
        ids = list(range(sid, max(after, sid - 32), -1))
        found = manager.get_snapshots_batch(ids)
        for i in ids:
            snap = found.get(i)
            if snap is not None and snap.commit_user == commit_user and snap.commit_identifier == batch_id:
                return snap
        sid = ids[-1] - 1
    return None


def report_batch(number: int, progress: dict, table, commit_user: str, after: int) -> int:
    """One line per micro-batch once it is committed (``number`` counts this run's from 1): its changes and the
    Paimon snapshot it made. Returns that snapshot's id (or ``after``)."""
    snap = committed_snapshot(table, commit_user, progress["batchId"], after)
    seconds = progress.get("durationMs", {}).get("triggerExecution", 0) / 1000
    made = f"snapshot {snap.id}" if snap is not None else "no snapshot: nothing to commit"
    print(f"batch {number}: {progress['numInputRows']} changes committed in {seconds:.1f}s "
          f"({made} of {table.identifier.get_full_name()})", flush=True)
    return snap.id if snap is not None else after


def stop_between_batches(query, spark, wait: float = 30.0) -> None:
    """Stop once the sources are started and the running micro-batch (if any) is done, and without Spark's "WARN
    DAGScheduler: Failed to cancel job group … Cannot find active jobs for it" (stopping a query cancels its job
    group, and Spark warns when, as between micro-batches, it has no job running: nothing failed).

    Stopping in the middle of a micro-batch cancels its tasks, and stopping while a Python source starts breaks
    PySpark's offset runner mid-handshake, both reported at length (the batch is redone on the next start anyway).
    """
    deadline = time.monotonic() + wait
    try:
        while query.isActive and time.monotonic() < deadline and (
                query.status["isTriggerActive"] or query.status["message"] == "Initializing sources"):
            time.sleep(0.02)
    except KeyboardInterrupt:
        pass
    _quiet_job_cancelling(spark)
    query.stop()


def _quiet_job_cancelling(spark) -> None:
    """The DAGScheduler's warnings off (errors still shown) for the stop; a Spark Connect session has no JVM here."""
    try:
        log4j = spark._jvm.org.apache.logging.log4j
        log4j.core.config.Configurator.setLevel("org.apache.spark.scheduler.DAGScheduler", log4j.Level.ERROR)
    except Exception:
        pass


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--warehouse", "-w", default=default_warehouse("/tmp/paimon-spark-wh"),
                   help="default: PAIMON_WAREHOUSE, else the default catalog's (docs/catalogs.md), else %(default)s")
    p.add_argument("--table", default="spark_demo.orders", help="the table written (created on the first batch)")
    p.add_argument("--checkpoint", default=None, help="default: <warehouse>/_checkpoints/<table>")
    p.add_argument("--rows-per-batch", type=int, default=200)
    p.add_argument("--orders", type=int, default=1000)
    p.add_argument("--trigger", default="2 seconds", help="processing-time trigger interval")
    p.add_argument("--batches", type=int, default=0, help="stop after N micro-batches (0: run until Ctrl-C)")
    p.add_argument("--buckets", type=int, default=4)
    add_session_args(p)
    args = p.parse_args(argv)
    if args.rows_per_batch > args.orders:
        p.error("--rows-per-batch must not exceed --orders (an order would change twice in one micro-batch)")
    os.makedirs(args.warehouse, exist_ok=True)
    checkpoint = args.checkpoint or os.path.join(args.warehouse, "_checkpoints", args.table)
    # the query's commit user, stable across restarts with this checkpoint: how its snapshots are found
    commit_user = "spark-pipeline-" + hashlib.sha256(f"{checkpoint}\0{args.table}".encode()).hexdigest()[:16]

    spark = build_session(master=args.master, conf=args.conf)
    changes = orders_changes(spark, args.rows_per_batch, args.orders)
    query = (
        changes.repartition(2, "order_id")  # all changes of one order in one write task
        .writeStream.format("paimon_tail")  # also "paimon", unless the Java connector has that name
        .option("warehouse", args.warehouse)
        # used only when the table does not exist yet:
        .option("primary-key", "order_id")
        .option("bucket", str(args.buckets))
        .option("rowkind.field", "op")
        .option("checkpointLocation", checkpoint)
        .option("commit.user", commit_user)
        .trigger(processingTime=args.trigger)
        .queryName("orders-to-paimon")
        .start(args.table)
    )
    print(f"writing {args.table} in {args.warehouse} (checkpoint {checkpoint}); follow it with:\n"
          f"  paimon-tail follow {args.table} -w {args.warehouse} --row-kind", flush=True)
    import paimon_tail

    table = None
    reported, batches, last_snapshot = -1, 0, 0

    def report_new() -> None:
        nonlocal table, reported, batches, last_snapshot
        for progress in query.recentProgress:
            if progress["batchId"] > reported:
                reported = progress["batchId"]
                batches += 1
                table = table or paimon_tail.open_table(args.table, warehouse=args.warehouse)
                last_snapshot = report_batch(batches, progress, table, commit_user, last_snapshot)

    try:
        while query.isActive:
            report_new()
            if args.batches and batches >= args.batches:
                break
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        stop_between_batches(query, spark)
    try:
        report_new()  # a batch that ran while the query was stopping between batches is committed: said too
    except KeyboardInterrupt:
        pass
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
