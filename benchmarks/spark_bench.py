"""The Spark data source and the lookup join, each against a Spark baseline measured in the same run.

    .venv/bin/python benchmarks/spark_bench.py [--rows 1000000 --snapshots 20 --keys 1000000 --events 1000000]
        [--where local,cluster] [--json out.json]

Once: ``follow`` (the follower, one process) and a pypaimon write of the same rows. Then in each environment of
``--where`` (``local``: ``local[2]``; ``cluster``: a standalone master + two 1-core workers from PySpark's
``spark-class``, ``paimon_tail.spark.standalone``), after a warm-up pass through every path:

  parquet-batch       spark.read.parquet(the table's data files) → noop          (baseline of the reads)
  spark-batch         spark.read.format("paimon_tail") → noop                    ratio to parquet-batch
  parquet-stream      readStream.parquet(the data file directory), availableNow → noop
  python-floor-stream readStream of the same files through the least a Python data source does
                      (benchmarks/spark_floor.py: pyarrow reads each file): what PySpark costs any Python source
  spark-stream        readStream paimon_tail (from earliest), availableNow → noop  ratios to both parquet reads
                      and to the Python floor; end to end (query start to termination) and in micro-batches
  spark-write / spark-stream-write   spark.range → paimon_tail (batch), paimon_tail → paimon_tail (availableNow)
  join: a served primary-key table of ``--keys`` rows (``paimon-tail serve``, two local executor processes),
  ``--events`` events (order ids spread over 110% of the keys: ~9% miss) in ``--micro-batches`` snapshots:
  lookup-join-batch   spark.range events → paimon_tail.spark.lookup_join → noop
  lookup-join-stream  readStream events (one snapshot per micro-batch, availableNow) → lookup_join → noop
  events-stream       the events stream alone → noop: the ceiling of any join of it (lookup join / this)
  stream-static-join  the same stream joined with spark.read.format("paimon_tail").load(table), which Spark reads
                      again in every micro-batch (sort-merge join; the baseline of the lookup join)
``--parts`` picks sections (reads, writes, join).
  batch-join          spark.range events joined with one read of the table (context: no micro-batches)

Ratios are printed (and written with ``--json``); a target missed is printed, not an error.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Callable, Dict, List, Optional, Tuple

import pyarrow as pa

if __package__ in (None, ""):  # `python benchmarks/spark_bench.py`
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCHEMA = pa.schema([("id", pa.int64()), ("customer", pa.string()), ("amount", pa.float64()), ("qty", pa.int32())])
ORDERS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("customer", pa.string()), ("amount", pa.float64()),
                    ("status", pa.string())])
EVENTS = pa.schema([("event_id", pa.int64()), ("order_id", pa.int64()), ("kind", pa.string())])
PARTS = ("reads", "writes", "join")
ROUNDS = 1  # --rounds: the streaming reads alternate this many times


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def make_data(rows: int, start: int = 0) -> pa.Table:
    import numpy as np

    ids = np.arange(start, start + rows, dtype=np.int64)
    return pa.table({
        "id": ids,
        "customer": pa.array([f"customer-{i % 997}" for i in ids.tolist()]),
        "amount": (ids % 10000) / 100.0,
        "qty": (ids % 17).astype(np.int32),
    }, schema=SCHEMA)


def _catalog(wh: str):
    from pypaimon import CatalogFactory

    cat = CatalogFactory.create({"warehouse": wh})
    cat.create_database("bench", True)
    return cat


def create(wh: str, name: str, schema: pa.Schema = SCHEMA, primary_keys=None, options=None):
    from pypaimon import Schema

    cat = _catalog(wh)
    cat.create_table(f"bench.{name}", Schema.from_pyarrow_schema(schema, primary_keys=primary_keys or [],
                                                                 options=options or {}), True)
    return cat.get_table(f"bench.{name}")


def commit(table, data: pa.Table) -> None:
    wb = table.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(data)
    wb.new_commit().commit(w.prepare_commit())
    w.close()


def fill(table, rows: int, snapshots: int) -> None:
    per = rows // snapshots
    for k in range(snapshots):
        commit(table, make_data(per, k * per))


def make_orders(wh: str, keys: int):
    import numpy as np

    table = create(wh, "orders", ORDERS, ["id"], {"bucket": "4"})
    ids = np.arange(keys, dtype=np.int64)
    status = pa.array(["new", "paid", "shipped", "delivered"]).take(pa.array(ids % 4))
    commit(table, pa.table({"id": ids, "customer": pa.array([f"customer-{i % 997}" for i in range(keys)]),
                            "amount": (ids % 10000) / 100.0, "status": status}, schema=ORDERS))
    return table


def make_events(wh: str, events: int, keys: int, snapshots: int, name: str = "events") -> None:
    import numpy as np

    table = create(wh, name, EVENTS, options={"bucket": "-1"})
    per = events // snapshots
    for k in range(snapshots):
        ids = np.arange(k * per, (k + 1) * per, dtype=np.int64)
        commit(table, pa.table({"event_id": ids, "order_id": (ids * 7919) % (keys + keys // 10),
                                "kind": pa.array(["view", "buy"]).take(pa.array(ids % 2))}, schema=EVENTS))


def data_files(wh: str, table: str) -> List[str]:
    db, name = table.split(".")
    return sorted(glob.glob(os.path.join(wh, f"{db}.db", name, "**", "*.parquet"), recursive=True))


class Service:
    """``paimon-tail serve`` of the join's table (local executor processes), in its own process group."""

    def __init__(self, wh: str, table: str, executors: int = 2) -> None:
        env = dict(os.environ)
        env.pop("PAIMON_TAIL_TOKEN", None)
        self.proc = subprocess.Popen([sys.executable, "-m", "paimon_tail", "serve", table, "-w", wh, "--executors",
                                      str(executors)], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                                     env=env, start_new_session=True)
        t0 = time.perf_counter()
        for line in self.proc.stderr:
            if "ready in" in line:
                break
        else:
            raise RuntimeError("paimon-tail serve exited before it was ready")
        self.ready_s = time.perf_counter() - t0
        threading.Thread(target=lambda: [None for _ in self.proc.stderr], daemon=True).start()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def timed(fn: Callable[[], int]) -> Tuple[int, float]:
    t = time.perf_counter()
    n = fn()
    return n, time.perf_counter() - t


def _batch_seconds(query) -> float:
    """Time spent in micro-batches that had rows (without query start-up and the final empty trigger)."""
    return sum(p["durationMs"]["triggerExecution"] for p in query.recentProgress if p["numInputRows"]) / 1000.0


def _rows(query) -> int:
    return sum(p["numInputRows"] for p in query.recentProgress)


class Results:
    def __init__(self) -> None:
        self.rows: List[Dict] = []

    def add(self, where: str, name: str, n: int, seconds: float, baseline: Optional[str] = None,
            target: Optional[float] = None, note: str = "", min_rate: Optional[int] = None) -> None:
        row = {"where": where, "measure": name, "rows": n, "seconds": round(seconds, 3),
               "rows_per_second": round(n / seconds) if seconds else None, "note": note}
        if min_rate is not None:
            row["min_rate"], row["rate_ok"] = min_rate, bool(seconds) and n / seconds >= min_rate
        if baseline is not None:
            base = next(r for r in self.rows if r["where"] == where and r["measure"] == baseline)
            row["vs"] = baseline
            row["ratio"] = round(row["rows_per_second"] / base["rows_per_second"], 2)
            if target is not None:
                row["target"] = target
                row["ok"] = row["ratio"] >= target
        self.rows.append(row)
        log(f"  {where:<8} {name:<26} {n:>10,} rows {seconds:>7.2f}s {row['rows_per_second'] or 0:>12,} rows/s"
            + (f"  {row['ratio']}x {baseline}" if baseline else ""))

    def add_ratio(self, where: str, name: str, other: str, target: Optional[float] = None) -> None:
        """A second ratio for a measure already added (e.g. the stream also against the batch parquet read)."""
        a = next(r for r in self.rows if r["where"] == where and r["measure"] == name)
        b = next(r for r in self.rows if r["where"] == where and r["measure"] == other)
        row = {"where": where, "measure": f"{name} vs {other}", "rows": a["rows"], "seconds": a["seconds"],
               "rows_per_second": a["rows_per_second"], "vs": other,
               "ratio": round(a["rows_per_second"] / b["rows_per_second"], 2), "note": "same run as above"}
        if target is not None:
            row["target"], row["ok"] = target, row["ratio"] >= target
        self.rows.append(row)


def session(where: str, cluster) -> "object":
    from pyspark.sql import SparkSession

    if where == "local":
        builder = (SparkSession.builder.master("local[2]").config("spark.driver.host", "127.0.0.1")
                   .config("spark.driver.bindAddress", "127.0.0.1").config("spark.ui.enabled", "false")
                   .config("spark.sql.shuffle.partitions", "2"))
    else:
        builder = cluster.session_builder("paimon-tail-bench", executor_memory="1g")
    spark = builder.config("spark.ui.showConsoleProgress", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    import paimon_tail.spark

    from benchmarks import spark_floor

    paimon_tail.spark.register(spark)
    spark_floor.register(spark)
    return spark


def run_spark(where: str, spark, wh: str, rows: int, events: int, keys: int, micro_batches: int, parts,
              res: Results) -> None:
    import paimon_tail.spark

    fmt = "paimon_tail"
    files = data_files(wh, "bench.src")
    cp = tempfile.mkdtemp(prefix="cp-", dir=wh)

    def checkpoint() -> str:
        return tempfile.mkdtemp(dir=cp)

    # warm-up: JVM JIT, Python workers, the streaming source runner, the lookup client
    spark.read.format(fmt).option("warehouse", wh).load("bench.warm").write.format(fmt).option(
        "warehouse", wh).mode("append").save("bench.warm_w")
    (spark.readStream.format(fmt).option("warehouse", wh).option("from", "earliest").load("bench.warm")
     .writeStream.format(fmt).option("warehouse", wh).trigger(availableNow=True)
     .option("checkpointLocation", checkpoint()).start("bench.warm_s").awaitTermination())
    spark.read.parquet(*data_files(wh, "bench.warm")).write.format("noop").mode("overwrite").save()
    if "join" in parts:
        warm_ev = spark.range(0, 20000, numPartitions=2).selectExpr("id AS event_id", "id AS order_id")
        paimon_tail.spark.lookup_join(warm_ev, "bench.orders", on="order_id", warehouse=wh).write.format(
            "noop").mode("overwrite").save()

    in_batches: List[float] = []

    def stream(df) -> Callable[[], int]:
        def run() -> int:
            q = df.writeStream.format("noop").trigger(availableNow=True).option("checkpointLocation",
                                                                                 checkpoint()).start()
            q.awaitTermination()
            in_batches.append(_batch_seconds(q))
            return _rows(q)
        return run

    if "reads" in parts:
        run_reads(where, spark, wh, rows, res, files, stream, in_batches)
    if "writes" in parts:
        run_writes(where, spark, wh, rows, res, checkpoint, in_batches)
    if "join" in parts:
        run_join(where, spark, wh, events, keys, micro_batches, res, stream, in_batches)
    shutil.rmtree(cp, ignore_errors=True)


def run_reads(where, spark, wh, rows, res, files, stream, in_batches) -> None:
    fmt = "paimon_tail"

    def parquet_batch() -> int:
        spark.read.parquet(*files).write.format("noop").mode("overwrite").save()
        return rows

    def source_batch() -> int:
        spark.read.format(fmt).option("warehouse", wh).load("bench.src").write.format("noop").mode(
            "overwrite").save()
        return rows

    file_dir = os.path.dirname(files[0])
    schema = spark.read.parquet(files[0]).schema
    res.add(where, "parquet-batch", *timed(parquet_batch))
    res.add(where, "spark-batch", *timed(source_batch), baseline="parquet-batch", target=0.5)
    # the streams alternate for --rounds rounds (medians): one run of each moved by 2x on a shared machine
    runs: Dict[str, List[Tuple[float, float]]] = {"parquet": [], "floor": [], "source": []}
    for _ in range(ROUNDS):
        n, seconds = timed(stream(spark.readStream.schema(schema).parquet(file_dir)))
        runs["parquet"].append((seconds, in_batches[-1]))
        n1, seconds = timed(stream(spark.readStream.format("pyarrow_files").option("path", file_dir).load()))
        runs["floor"].append((seconds, in_batches[-1]))
        n2, seconds = timed(stream(
            spark.readStream.format(fmt).option("warehouse", wh).option("from", "earliest").load("bench.src")))
        runs["source"].append((seconds, in_batches[-1]))
        if (n, n1, n2) != (rows, rows, rows):
            raise RuntimeError(f"the streams read {n:,}, {n1:,} and {n2:,} rows of {rows:,}")
        log(f"  round: parquet {runs['parquet'][-1][0]:.2f}s, python floor {runs['floor'][-1][0]:.2f}s, source "
            f"{runs['source'][-1][0]:.2f}s (load {os.getloadavg()[0]:.1f})")

    def med(name: str, i: int) -> float:
        return sorted(r[i] for r in runs[name])[len(runs[name]) // 2]

    note = f"median of {ROUNDS} alternating rounds" if ROUNDS > 1 else ""
    res.add(where, "parquet-stream", rows, med("parquet", 0), note=note)
    res.add(where, "parquet-stream in micro-batches", rows, med("parquet", 1))
    res.add(where, "python-floor-stream", rows, med("floor", 0), baseline="parquet-stream",
            note="the least a Python data source does (benchmarks/spark_floor.py)")
    res.add(where, "python-floor-stream in micro-batches", rows, med("floor", 1),
            baseline="parquet-stream in micro-batches")
    res.add(where, "spark-stream", rows, med("source", 0), baseline="parquet-stream", target=0.6, note=note)
    res.add_ratio(where, "spark-stream", "parquet-batch", target=0.5)
    res.add_ratio(where, "spark-stream", "python-floor-stream")
    res.add(where, "spark-stream in micro-batches", rows, med("source", 1),
            baseline="parquet-stream in micro-batches")
    res.add_ratio(where, "spark-stream in micro-batches", "python-floor-stream in micro-batches")


def run_writes(where, spark, wh, rows, res, checkpoint, in_batches) -> None:
    fmt = "paimon_tail"
    df = spark.range(rows, numPartitions=2).selectExpr(
        "id", "concat('customer-', cast(id % 997 as string)) customer", "(id % 10000) / 100.0 amount",
        "cast(id % 17 as int) qty")

    def spark_write() -> int:
        df.write.format(fmt).option("warehouse", wh).mode("append").save(f"bench.sparkwrite_{where}")
        return rows

    res.add(where, "spark-write", *timed(spark_write))

    def stream_write() -> int:
        q = (spark.readStream.format(fmt).option("warehouse", wh).option("from", "earliest").load("bench.src")
             .writeStream.format(fmt).option("warehouse", wh).trigger(availableNow=True)
             .option("checkpointLocation", checkpoint()).start(f"bench.streamwrite_{where}"))
        q.awaitTermination()
        in_batches.append(_batch_seconds(q))
        return _rows(q)

    res.add(where, "spark-stream-write", *timed(stream_write))
    res.add(where, "spark-stream-write in micro-batches", rows, in_batches[-1])


def run_join(where, spark, wh, events, keys, micro_batches, res, stream, in_batches) -> None:
    import paimon_tail.spark

    fmt = "paimon_tail"
    span = keys + keys // 10
    ev = spark.range(0, events, numPartitions=2).selectExpr("id AS event_id", f"(id * 7919) % {span} AS order_id",
                                                            "if(id % 2 = 0, 'view', 'buy') AS kind")
    orders = spark.read.format(fmt).option("warehouse", wh).load("bench.orders")

    def lookup_batch() -> int:
        paimon_tail.spark.lookup_join(ev, "bench.orders", on="order_id", warehouse=wh).write.format("noop").mode(
            "overwrite").save()
        return events

    def batch_join() -> int:
        ev.join(orders, ev.order_id == orders.id, "left").write.format("noop").mode("overwrite").save()
        return events

    def event_stream():
        return (spark.readStream.format(fmt).option("warehouse", wh).option("from", "earliest")
                .option("read.stream.maxSnapshotsPerTrigger", 1).load("bench.events"))

    res.add(where, "events-stream", *timed(stream(event_stream())),
            note="the events alone, no join: the ceiling of any streaming join of them")
    res.add(where, "events-stream in micro-batches", events, in_batches[-1])
    res.add(where, "batch-join", *timed(batch_join), note="one read of the table, no micro-batches")
    res.add(where, "lookup-join-batch", *timed(lookup_batch), baseline="batch-join", min_rate=300_000)
    res.add(where, "stream-static-join", *timed(stream(_stream_static(event_stream(), orders))),
            note=f"{micro_batches} micro-batches, the table read in each (a sort-merge join: Spark's choice, and "
                 "faster here than a broadcast hint)")
    res.add(where, "stream-static-join in micro-batches", events, in_batches[-1])
    res.add(where, "lookup-join-stream", *timed(stream(paimon_tail.spark.lookup_join(
        event_stream(), "bench.orders", on="order_id", warehouse=wh))), baseline="stream-static-join", target=3.0,
        min_rate=300_000)
    res.add(where, "lookup-join-stream in micro-batches", events, in_batches[-1],
            baseline="stream-static-join in micro-batches")
    res.add_ratio(where, "lookup-join-stream", "events-stream")
    res.add_ratio(where, "events-stream", "stream-static-join")


def _stream_static(events, orders):
    return events.join(orders, events.order_id == orders.id, "left").drop("id")


def main(argv=None) -> int:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # loopback only (Spark would pick eth0's address)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000, help="rows of the read/write table")
    p.add_argument("--snapshots", type=int, default=20)
    p.add_argument("--keys", type=int, default=None, help="keys of the served table (default: --rows)")
    p.add_argument("--events", type=int, default=None, help="events joined (default: --rows)")
    p.add_argument("--micro-batches", type=int, default=10, help="micro-batches (snapshots) the events arrive in")
    p.add_argument("--where", default="local,cluster", help="local and/or cluster")
    p.add_argument("--parts", default=",".join(PARTS), help="reads, writes and/or join")
    p.add_argument("--rounds", type=int, default=1, help="alternating rounds of the streaming reads (medians)")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    global ROUNDS
    ROUNDS = max(1, args.rounds)
    keys = args.keys or args.rows
    events = (args.events or args.rows) // args.micro_batches * args.micro_batches
    wheres = [w.strip() for w in args.where.split(",") if w.strip()]
    parts = {w.strip() for w in args.parts.split(",") if w.strip()}
    if set(wheres) - {"local", "cluster"}:
        p.error("--where takes local and/or cluster")
    if parts - set(PARTS):
        p.error(f"--parts takes {', '.join(PARTS)}")

    os.environ["PYSPARK_PYTHON"] = sys.executable
    import paimon_tail
    from paimon_tail.catalog import open_table

    wh = tempfile.mkdtemp(prefix="paimon-spark-bench-")
    res = Results()
    service = cluster = None
    t_start = time.perf_counter()
    try:
        log(f"tables: {args.rows:,} rows in {args.snapshots} snapshots, {keys:,} served keys, {events:,} events")
        fill(create(wh, "src"), args.rows, args.snapshots)
        rows = args.rows // args.snapshots * args.snapshots
        fill(create(wh, "warm"), 20_000, 2)
        make_orders(wh, keys)
        make_events(wh, events, keys, args.micro_batches)
        if "join" in parts:
            service = Service(wh, "bench.orders")
            log(f"paimon-tail serve bench.orders ready in {service.ready_s:.1f}s")

        def follow() -> int:
            n = 0
            for item in paimon_tail.follow_sync(open_table("bench.src", warehouse=wh), start="earliest",
                                                exit_at_end=True):
                n += item.batch.num_rows
            return n

        res.add("python", "follow", *timed(follow))
        data = make_data(rows)
        target = create(wh, "pywrite")

        def pypaimon_write() -> int:
            commit(target, data)
            return rows

        res.add("python", "pypaimon-write", *timed(pypaimon_write))
        ev = pa.table({"event_id": pa.array(range(events), pa.int64()),
                       "order_id": pa.array([(i * 7919) % (keys + keys // 10) for i in range(events)], pa.int64())})

        def python_join() -> int:
            return paimon_tail.lookup_join(ev, "bench.orders", on="order_id", warehouse=wh).num_rows

        if "join" in parts:
            python_join()  # warm-up
            res.add("python", "lookup-join (pyarrow)", *timed(python_join))
        for where in wheres:
            log(f"[{where}]")
            if where == "cluster":
                from paimon_tail.spark.standalone import StandaloneCluster

                cluster = StandaloneCluster(workers=2, cores=1, memory="1500m").start()
            spark = session(where, cluster)
            try:
                run_spark(where, spark, wh, rows, events, keys, args.micro_batches, parts, res)
            finally:
                spark.stop()
                if cluster is not None:
                    cluster.stop()
                    cluster = None
    finally:
        if service is not None:
            service.stop()
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(wh, ignore_errors=True)

    load = os.getloadavg()[0]
    print(f"\n{args.rows:,} rows in {args.snapshots} snapshots; lookup join: {events:,} events in "
          f"{args.micro_batches} micro-batches against {keys:,} served keys; {os.cpu_count()} cores, load "
          f"{load:.1f}, {time.perf_counter() - t_start:.0f}s\n")
    print(f"{'where':<8} {'measure':<38} {'rows':>10} {'seconds':>8} {'rows/s':>11}  ratio")
    for r in res.rows:
        ratio = ""
        if "ratio" in r:
            ratio = f"{r['ratio']:.2f}x {r['vs']}"
            if "target" in r:
                ratio += f" (target >= {r['target']}: {'yes' if r['ok'] else 'MISSED'})"
        if "min_rate" in r:
            ratio += f" (target >= {r['min_rate']:,} rows/s: {'yes' if r['rate_ok'] else 'MISSED'})"
        print(f"{r['where']:<8} {r['measure']:<38} {r['rows']:>10,} {r['seconds']:>8.2f} "
              f"{r['rows_per_second'] or 0:>11,}  {ratio}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": args.rows, "snapshots": args.snapshots, "keys": keys, "events": events,
                       "micro_batches": args.micro_batches, "load": load, "results": res.rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
