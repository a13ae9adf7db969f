"""A streaming enrichment job: every event of ``shop.events`` with its order from ``shop.orders``, looked up in a
running ``paimon-tail serve`` (the lookup join) instead of read by the job.

Against the demo warehouse (``paimon-tail demo`` creates it, and its writer commits in the background until
``paimon-tail demo --stop``):

    paimon-tail demo --no-follow                                         # the tables and their writer
    paimon-tail serve shop.orders -w paimon-tail-demo &                  # the query service
    python examples/streaming_enrichment.py -w paimon-tail-demo          # Ctrl-C to stop

Each micro-batch reads the new events through paimon-tail's data source, looks their orders up (a batch of keys
per Arrow batch, several in flight, one client per Python worker) and prints a summary and a few rows, or with
``--into shop.enriched_events`` writes them to a Paimon table (one commit per micro-batch, exactly once across
restarts with the same ``--checkpoint``). Events whose order is gone (deleted) keep nulls (``--how inner`` drops
them). ``--master spark://…`` and ``--conf key=value`` run it on a cluster (examples/spark_pipeline.py's session).
Without ``--checkpoint`` (and ``--into``) the checkpoint is a temporary directory, removed when the job ends.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spark_pipeline import add_session_args, build_session, default_warehouse, stop_between_batches  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--warehouse", "-w", default=default_warehouse("paimon-tail-demo"),
                   help="default: PAIMON_WAREHOUSE, else the default catalog's (docs/catalogs.md), else %(default)s")
    p.add_argument("--events", default="shop.events")
    p.add_argument("--orders", default="shop.orders", help="the served table (paimon-tail serve must run)")
    p.add_argument("--on", default="order_id", help="the events' column holding the order's key")
    p.add_argument("--how", choices=("left", "inner"), default="left")
    p.add_argument("--from", dest="start", default="latest", help="where the events start (follow --from)")
    p.add_argument("--into", default=None, help="write to this Paimon table instead of printing")
    p.add_argument("--checkpoint", default=None, help="default: a temporary directory (or <warehouse>/_checkpoints"
                                                      "/<--into> with --into)")
    p.add_argument("--trigger", default="2 seconds", help="processing-time trigger interval")
    p.add_argument("--batches", type=int, default=0, help="stop after N micro-batches with events (0: Ctrl-C)")
    add_session_args(p)
    args = p.parse_args(argv)

    import paimon_tail.spark

    warehouse = os.path.abspath(args.warehouse)
    # printed rows need a checkpoint only while the job runs: a temporary one, removed however the job ends
    temporary = tempfile.mkdtemp(prefix="paimon-enrichment-") if not (args.into or args.checkpoint) else None
    try:
        spark = build_session("paimon-enrichment", master=args.master, conf=args.conf)
        events = (spark.readStream.format("paimon_tail").option("warehouse", warehouse).option("from", args.start)
                  .load(args.events))
        enriched = paimon_tail.spark.lookup_join(events, args.orders, on=args.on, how=args.how, warehouse=warehouse,
                                                 select=["customer", "status", "amount"], snapshot_column="orders_at")
        seen = {"batches": 0}

        def show(df, batch_id: int) -> None:
            rows = df.collect()
            if not rows:
                return
            seen["batches"] += 1  # this run's micro-batches with events, from 1 (Spark's ids go on from a checkpoint)
            found = [r for r in rows if r["status"] is not None]
            statuses = {}
            for r in found:
                statuses[r["status"]] = statuses.get(r["status"], 0) + 1
            print(f"batch {seen['batches']}: {len(rows)} events, {len(found)} with their order "
                  f"(orders at snapshot {rows[0]['orders_at']}): "
                  + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())), flush=True)
            for r in rows[:3]:
                print(f"  event {r['event_id']} {r['kind']:<8} order {r[args.on]}: "
                      f"{r['customer'] or '-'} {r['status'] or '(no such order)'} {r['amount'] or ''}", flush=True)

        writer = enriched.writeStream.trigger(processingTime=args.trigger).queryName("enrich-events")
        if args.into:
            checkpoint = args.checkpoint or os.path.join(warehouse, "_checkpoints", args.into)
            query = (writer.format("paimon_tail").option("warehouse", warehouse)
                     .option("checkpointLocation", checkpoint).start(args.into))
            print(f"writing {args.events} ⋈ {args.orders} into {args.into} (checkpoint {checkpoint})", flush=True)
        else:
            checkpoint = args.checkpoint or temporary
            query = writer.foreachBatch(show).option("checkpointLocation", checkpoint).start()
            print(f"enriching {args.events} with {args.orders} from the query service (Ctrl-C stops)", flush=True)
        try:
            while query.isActive:
                done = seen["batches"] if not args.into else sum(
                    1 for pr in query.recentProgress if pr["numInputRows"])
                if args.batches and done >= args.batches:
                    break
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            stop_between_batches(query, spark)
        if query.exception() is not None:
            print(f"query failed: {query.exception()}", file=sys.stderr)
            return 1
        spark.stop()
        return 0
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
