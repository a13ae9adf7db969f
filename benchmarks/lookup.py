"""Query service figures: single-key latency (p50/p99), batch keys/s, burst, freshness (commit → visible).

    .venv/bin/python benchmarks/lookup.py [--rows 200000] [--executors 2] [--json out.json]

Writes a primary-key table with pypaimon into a temp warehouse, starts `paimon-tail serve` as a process, and
measures through ``LookupClient`` (the same path as `paimon-tail lookup`). Prints a table and JSON.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

import pyarrow as pa


def write(table, schema, rows):
    wb = table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.Table.from_pylist(rows, schema=schema) if isinstance(rows, list) else rows)
    c.commit(w.prepare_commit())
    w.close()
    c.close()
    return table.snapshot_manager().get_latest_snapshot().id


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--executors", type=int, default=2)
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    from pypaimon import CatalogFactory, Schema

    from paimon_tail.catalog import catalog_config
    from paimon_tail.service.client import LookupClient

    wh = tempfile.mkdtemp(prefix="bench-lookup-")
    cat = CatalogFactory.create({"warehouse": wh})
    cat.create_database("db", True)
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64())])
    cat.create_table("db.t", Schema.from_pyarrow_schema(schema, primary_keys=["id"],
                                                        options={"bucket": str(args.buckets)}), False)
    table = cat.get_table("db.t")
    n = args.rows
    t0 = time.perf_counter()
    write(table, schema, pa.table({"id": pa.array(range(n), pa.int64()),
                                   "name": pa.array([f"name-{i}" for i in range(n)]),
                                   "amount": pa.array([i * 0.5 for i in range(n)])}))
    write_s = time.perf_counter() - t0

    proc = subprocess.Popen(
        [sys.executable, "-c", "from paimon_tail.cli import main; main()", "serve", "db.t", "--warehouse", wh,
         "--executors", str(args.executors)], stderr=subprocess.PIPE, text=True, start_new_session=True)
    t0 = time.perf_counter()
    for line in proc.stderr:
        if "ready in" in line:
            break
    ready_s = time.perf_counter() - t0
    out = {"rows": n, "executors": args.executors, "buckets": args.buckets, "write_s": round(write_s, 2),
           "serve_ready_s": round(ready_s, 2)}
    try:
        client = LookupClient("db.t", catalog_config(wh), timeout=30)

        async def run():
            rnd = random.Random(1)
            await client.lookup([1])
            # single-key latency
            lat = []
            for _ in range(2000):
                k = rnd.randrange(n)
                t = time.perf_counter()
                r = await client.lookup([k])
                lat.append((time.perf_counter() - t) * 1000)
                assert r.rows.num_rows == 1
            lat.sort()
            out["single_p50_ms"] = round(lat[len(lat) // 2], 3)
            out["single_p99_ms"] = round(lat[int(len(lat) * 0.99)], 3)
            # batches
            for size in (1000, 10_000, 100_000):
                keys = [rnd.randrange(n) for _ in range(size)]
                keys_parsed = client.parse_keys(keys)
                t = time.perf_counter()
                reps = max(1, 200_000 // size)
                for _ in range(reps):
                    await client.lookup(keys_parsed, parsed=True)
                dt = time.perf_counter() - t
                out[f"batch_{size}_keys_per_s"] = int(size * reps / dt)
            # burst: 2000 concurrent single-key lookups
            t = time.perf_counter()
            rs = await asyncio.gather(*[client.lookup([rnd.randrange(n)]) for _ in range(2000)])
            out["burst_2000_concurrent_s"] = round(time.perf_counter() - t, 3)
            out["burst_all_found"] = all(r.rows.num_rows == 1 for r in rs)
            # freshness: commit → visible to a client polling with min_snapshot
            fresh = []
            for i in range(20):
                k = rnd.randrange(n)
                t = time.perf_counter()
                sid = await asyncio.to_thread(write, table, schema, [{"id": k, "name": f"new-{i}", "amount": 0.0}])
                committed = time.perf_counter()
                r = await client.lookup([k], min_snapshot=sid)
                assert r.rows.to_pylist()[0]["name"] == f"new-{i}"
                fresh.append((time.perf_counter() - committed) * 1000)
            fresh.sort()
            out["freshness_p50_ms"] = round(fresh[len(fresh) // 2], 1)
            out["freshness_max_ms"] = round(fresh[-1], 1)
            await client.close()

        import uvloop

        uvloop.run(run())
    finally:
        proc.send_signal(2)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
    for k, v in out.items():
        print(f"{k:>28}  {v}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
