"""Query service figures, with baselines measured in the same run.

    .venv/bin/python benchmarks/lookup.py [--size tiny|small|full|huge] [--rows N] [--executors 2] [--json out.json]
    .venv/bin/python benchmarks/lookup.py --ab /tmp/before [--rounds 3] [--size small]   # this tree vs another
    from benchmarks.lookup import run; run("tiny")          # the benchmark entry point's way (returns a dict)

Writes a primary-key table (id BIGINT, name STRING, amount DOUBLE; 4 buckets) with pypaimon into a temp
warehouse, starts `paimon-tail serve` as a process and measures through ``LookupClient``:

* single key: ``get_sync`` (synchronous fast path: plain grpc channel from the caller's thread) and ``await
  lookup`` (grpc.aio), p50/p99;
* batches of 1k/10k/100k keys (``lookup_sync`` with a plain list of ints), keys/s for the whole service and for
  one executor alone (keys chosen so they all belong to executor 0);
* 2,000 concurrent async single-key lookups; freshness: commit → visible via ``min_snapshot`` (p50/p99);
* footprint: `serve` cold start (spawn + copy + merge read + index) and the executors' RSS (anonymous vs.
  file-backed: rows and index are memory-mapped);
* baselines: pypaimon filtered read per key (plan + read with an equality predicate), Redis GET/MGET on
  127.0.0.1 (Debian's redis-server started here on a free port, ``--save '' --appendonly no``; redis-py), and a
  grpc unary echo (aio and sync clients against a uvloop grpc.aio server: the transport floor).

Results go to ``benchmarks/results/lookup-<size>-<time>.json`` (git-ignored) and a table is printed with ratios.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import platform
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"

SIZES: Dict[str, dict] = {
    # CI: seconds
    "tiny": dict(rows=20_000, single=300, batches=(1000, 10_000), batch_keys=40_000, burst=200, fresh=5,
                 pypaimon_keys=2, redis_gets=500, echo=500),
    # the reference size of docs/query-service.md
    "small": dict(rows=200_000, single=3000, batches=(1000, 10_000, 100_000), batch_keys=400_000, burst=2000,
                  fresh=30, pypaimon_keys=5, redis_gets=3000, echo=3000),
    "full": dict(rows=1_000_000, single=3000, batches=(1000, 10_000, 100_000), batch_keys=600_000, burst=2000,
                 fresh=30, pypaimon_keys=5, redis_gets=3000, echo=3000),
    "huge": dict(rows=10_000_000, single=2000, batches=(10_000, 100_000), batch_keys=400_000, burst=2000,
                 fresh=20, pypaimon_keys=2, redis_gets=2000, echo=2000),
}
SIZES["default"] = SIZES["small"]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def pct(values: List[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(len(s) * q))]


# ------------------------------------------------------------------------------------------------ data set
def write(table, schema, rows):
    wb = table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.Table.from_pylist(rows, schema=schema) if isinstance(rows, list) else rows)
    c.commit(w.prepare_commit())
    w.close()
    c.close()
    return table.snapshot_manager().get_latest_snapshot().id


SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64())])


def make_table(wh: str, n: int, buckets: int):
    from pypaimon import CatalogFactory, Schema

    cat = CatalogFactory.create({"warehouse": wh})
    cat.create_database("db", True)
    cat.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"],
                                                        options={"bucket": str(buckets)}), False)
    table = cat.get_table("db.t")
    step = 2_000_000
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        ids = np.arange(lo, hi, dtype=np.int64)
        write(table, SCHEMA, pa.table({"id": ids, "name": pa.array([f"name-{i}" for i in range(lo, hi)]),
                                       "amount": ids * 0.5}, schema=SCHEMA))
    return table


# ------------------------------------------------------------------------------------------------ processes
def proc_mem(pid: int) -> Dict[str, int]:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
                    out[k] = int(v.split()[0]) * 1024
    except OSError:
        pass
    return out


def executor_pids(serve_pid: int) -> List[int]:
    out = subprocess.run(["pgrep", "-P", str(serve_pid)], capture_output=True, text=True).stdout
    pids = []
    for pid in out.split():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"spawn_main" in f.read():
                    pids.append(int(pid))
        except OSError:
            pass
    return pids


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------------------------------------ baselines
def _echo_server(q) -> None:
    import grpc
    import uvloop

    async def handler(req, ctx):
        return req

    async def main():
        server = grpc.aio.server()
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("bench.Echo", {
            "Echo": grpc.unary_unary_rpc_method_handler(handler, lambda b: b, lambda b: b)}),))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        q.put(port)
        await server.wait_for_termination()

    uvloop.run(main())


def bench_echo(count: int) -> dict:
    """grpc unary echo of 100 bytes against a uvloop grpc.aio server (like the executors): the transport floor."""
    import grpc

    try:
        from paimon_tail.service.protocol.security import channel_options
    except ImportError:  # a tree before issue 13 (--product)
        from paimon_tail.service.security import channel_options

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_echo_server, args=(q,), daemon=True)
    p.start()
    out = {}
    try:
        port = q.get(timeout=30)
        target = f"127.0.0.1:{port}"
        payload = b"x" * 100

        def sync_run(options):
            ch = grpc.insecure_channel(target, options=options)
            call = ch.unary_unary("/bench.Echo/Echo", request_serializer=lambda b: b, response_deserializer=lambda b: b)
            for _ in range(200):
                call(payload)
            lat = []
            for _ in range(count):
                t = time.perf_counter()
                call(payload)
                lat.append((time.perf_counter() - t) * 1000)
            ch.close()
            return lat

        async def aio_run():
            ch = grpc.aio.insecure_channel(target)
            call = ch.unary_unary("/bench.Echo/Echo", request_serializer=lambda b: b,
                                  response_deserializer=lambda b: b)
            for _ in range(200):
                await call(payload)
            lat = []
            for _ in range(count):
                t = time.perf_counter()
                await call(payload)
                lat.append((time.perf_counter() - t) * 1000)
            await ch.close()
            return lat

        import uvloop

        for name, lat in (("aio", uvloop.run(aio_run())), ("sync", sync_run([])),
                          ("sync_service_options", sync_run(channel_options(64 << 20)))):
            out[f"echo_{name}_p50_ms"] = round(pct(lat, 0.5), 3)
            out[f"echo_{name}_p99_ms"] = round(pct(lat, 0.99), 3)
    finally:
        p.kill()
    return out


def bench_pypaimon(table, n: int, keys: int) -> dict:
    """pypaimon's own way to find one row: plan + read with an equality predicate, per key."""
    rnd = random.Random(7)
    lat = []
    for _ in range(keys):
        k = rnd.randrange(n)
        t = time.perf_counter()
        rb = table.new_read_builder()
        rb = rb.with_filter(rb.new_predicate_builder().equal("id", k))
        got = rb.new_read().to_arrow(rb.new_scan().plan().splits())
        lat.append((time.perf_counter() - t) * 1000)
        ids = got.column("id").to_pylist()
        assert k in ids, (k, ids[:5])
    return {"pypaimon_filtered_read_p50_ms": round(pct(lat, 0.5), 1), "pypaimon_filtered_read_keys": keys}


def bench_redis(n: int, gets: int, batches) -> dict:
    server = shutil.which("redis-server")
    try:
        import redis
    except ImportError:
        redis = None
    if not server or redis is None:
        why = "redis-server not installed (apt-get install redis-server)" if not server else \
            "redis-py not installed (pip install redis)"
        log(f"  redis baseline skipped: {why}")
        return {"redis_skipped": why}
    port = free_port()
    d = tempfile.mkdtemp(prefix="bench-redis-")
    proc = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", d, "--protected-mode", "yes"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    out: dict = {}
    try:
        r = redis.Redis(host="127.0.0.1", port=port)
        for _ in range(100):
            try:
                r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        try:
            import hiredis  # noqa: F401
            out["redis_parser"] = "hiredis"
        except ImportError:
            out["redis_parser"] = "python"
        loaded = min(n, 1_000_000)
        pipe = r.pipeline(transaction=False)
        for i in range(loaded):
            pipe.set(f"t:{i}", json.dumps({"id": i, "name": f"name-{i}", "amount": i * 0.5}))
            if i % 10_000 == 9_999:
                pipe.execute()
        pipe.execute()
        rnd = random.Random(3)
        lat = []
        for _ in range(gets):
            k = rnd.randrange(loaded)
            t = time.perf_counter()
            v = r.get(f"t:{k}")
            lat.append((time.perf_counter() - t) * 1000)
            assert v is not None
        out["redis_get_p50_ms"] = round(pct(lat, 0.5), 3)
        out["redis_get_p99_ms"] = round(pct(lat, 0.99), 3)
        for size in batches:
            if size > 10_000:
                continue
            keys = [f"t:{rnd.randrange(loaded)}" for _ in range(size)]
            reps = max(3, 100_000 // size)
            t = time.perf_counter()
            for _ in range(reps):
                vals = r.mget(keys)
            out[f"redis_mget_{size}_keys_per_s"] = int(size * reps / (time.perf_counter() - t))
            assert all(v is not None for v in vals)
        r.close()
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(d, ignore_errors=True)
    return out


# ------------------------------------------------------------------------------------------------ service
def bench_service(wh: str, table, cfg: dict, executors: int) -> dict:
    from paimon_tail.catalog import catalog_config
    from paimon_tail.service.client import LookupClient

    n = cfg["rows"]
    out: dict = {}
    proc = subprocess.Popen(
        [sys.executable, "-c", "from paimon_tail.cli import main; main()", "serve", "db.t", "--warehouse", wh,
         "--executors", str(executors)], stderr=subprocess.PIPE, text=True, start_new_session=True)
    t0 = time.perf_counter()
    for line in proc.stderr:
        if "ready in" in line:
            break
    out["serve_ready_s"] = round(time.perf_counter() - t0, 2)
    try:
        pids = executor_pids(proc.pid)
        mems = [proc_mem(p) for p in pids]
        out["executor_rss_mb"] = round(sum(m.get("VmRSS", 0) for m in mems) / 2 ** 20, 1)
        out["executor_rss_anon_mb"] = round(sum(m.get("RssAnon", 0) for m in mems) / 2 ** 20, 1)
        out["executor_rss_file_mb"] = round(sum(m.get("RssFile", 0) for m in mems) / 2 ** 20, 1)
        out["executor_peak_rss_mb"] = round(sum(m.get("VmHWM", 0) for m in mems) / 2 ** 20, 1)
        out["serve_rss_mb"] = round(proc_mem(proc.pid).get("VmRSS", 0) / 2 ** 20, 1)

        client = LookupClient("db.t", catalog_config(wh), timeout=30)
        rnd = random.Random(1)
        client.lookup_sync([1])
        # single key, synchronous fast path
        lat = []
        for _ in range(cfg["single"]):
            k = rnd.randrange(n)
            t = time.perf_counter()
            row = client.get_sync(k)
            lat.append((time.perf_counter() - t) * 1000)
            assert row is not None and row["id"] == k
        out["single_sync_p50_ms"] = round(pct(lat, 0.5), 3)
        out["single_sync_p99_ms"] = round(pct(lat, 0.99), 3)
        # batches through the whole service (both executors), plain list of ints
        for size in cfg["batches"]:
            keys = [rnd.randrange(n) for _ in range(size)]
            reps = max(2, cfg["batch_keys"] // size)
            client.lookup_sync(keys)
            t = time.perf_counter()
            for _ in range(reps):
                r = client.lookup_sync(keys)
            out[f"batch_{size}_keys_per_s"] = int(size * reps / (time.perf_counter() - t))
            assert len(r.found) == size
        # one executor alone: keys that all route to executor 0
        size = max(s for s in cfg["batches"] if s <= 10_000)
        cand = pa.table({"id": pa.array(rnd.sample(range(n), min(n, size * executors * 2)), pa.int64())})
        mine = cand.filter(pa.array(_owned_by_first(client, cand))).slice(0, size)
        reps = max(2, cfg["batch_keys"] // mine.num_rows)
        t = time.perf_counter()
        for _ in range(reps):
            r = client.lookup_sync(mine)
        out[f"one_executor_batch_{mine.num_rows}_keys_per_s"] = int(mine.num_rows * reps / (time.perf_counter() - t))
        assert len(r.found) == mine.num_rows
        # async API: single key and a burst of concurrent lookups
        import uvloop

        async def aio():
            await client.lookup([1])
            lat = []
            for _ in range(min(1000, cfg["single"])):
                k = rnd.randrange(n)
                t = time.perf_counter()
                r = await client.lookup([k])
                lat.append((time.perf_counter() - t) * 1000)
                assert r.rows.num_rows == 1
            out["single_async_p50_ms"] = round(pct(lat, 0.5), 3)
            out["single_async_p99_ms"] = round(pct(lat, 0.99), 3)
            t = time.perf_counter()
            rs = await asyncio.gather(*[client.lookup([rnd.randrange(n)]) for _ in range(cfg["burst"])])
            out[f"burst_{cfg['burst']}_concurrent_s"] = round(time.perf_counter() - t, 3)
            out["burst_all_found"] = all(r.rows.num_rows == 1 for r in rs)
            await client.close()

        uvloop.run(aio())
        # freshness: commit → visible to a client asking with min_snapshot
        fresh = []
        for i in range(cfg["fresh"]):
            k = rnd.randrange(n)
            sid = write(table, SCHEMA, [{"id": k, "name": f"new-{i}", "amount": 0.0}])
            committed = time.perf_counter()
            r = client.lookup_sync([k], min_snapshot=sid)
            fresh.append((time.perf_counter() - committed) * 1000)
            assert r.rows.to_pylist()[0]["name"] == f"new-{i}"
        out["freshness_p50_ms"] = round(pct(fresh, 0.5), 1)
        out["freshness_p99_ms"] = round(pct(fresh, 0.99), 1)
        mems = [proc_mem(p) for p in pids]
        out["executor_rss_after_mb"] = round(sum(m.get("VmRSS", 0) for m in mems) / 2 ** 20, 1)
        out["executor_rss_anon_after_mb"] = round(sum(m.get("RssAnon", 0) for m in mems) / 2 ** 20, 1)
        client.close_sync()
    finally:
        proc.send_signal(2)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
    return out


def _owned_by_first(client, keys) -> np.ndarray:
    """Which keys the first executor serves (this tree: channels and owners; a tree before issue 13, for
    ``--product``: Paimon's ChannelComputer over the executors)."""
    prep = client.prepare(keys)
    try:
        from paimon_tail.service.client.deadline import Deadline
        from paimon_tail.service.keys.bucket_hash import channels_of
    except ImportError:
        from paimon_tail.service.bucket_hash import channels_of

        disc = client.discover_sync(time.monotonic() + 10)
        return channels_of(prep.part_hashes, prep.buckets, disc.executors.num_executors) == 0
    route = client.discover_sync(Deadline(10))
    owners = route.owners[channels_of(prep.part_hashes, prep.buckets, route.channels)]
    return owners == owners.min()


def machine() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    with open("/proc/meminfo") as f:
        mem = int(f.readline().split()[1]) // 1024
    return {"cpus": os.cpu_count(), "cpu": cpu, "memory_mb": mem, "loadavg_start": round(os.getloadavg()[0], 2),
            "python": platform.python_version()}


ROWS = [
    # (label, key, unit, baseline key, target (value, "<=" or ">="))
    ("serve cold start", "serve_ready_s", "s", None, (10, "<=")),
    ("executor RSS after start (anon / file-backed)", "executor_rss_mb", "MB", None, (500, "<=")),
    ("single key get_sync p50", "single_sync_p50_ms", "ms", "echo_sync_p50_ms", (0.5, "<=")),
    ("single key get_sync p99", "single_sync_p99_ms", "ms", "echo_sync_p99_ms", (2.0, "<=")),
    ("single key await lookup p50", "single_async_p50_ms", "ms", "echo_aio_p50_ms", None),
    ("single key await lookup p99", "single_async_p99_ms", "ms", "echo_aio_p99_ms", None),
    ("batch 1k keys (service)", "batch_1000_keys_per_s", "keys/s", "redis_mget_1000_keys_per_s", None),
    ("batch 10k keys (service)", "batch_10000_keys_per_s", "keys/s", "redis_mget_10000_keys_per_s", None),
    ("batch 100k keys (service)", "batch_100000_keys_per_s", "keys/s", "redis_mget_10000_keys_per_s", None),
    ("one executor, batch", "one_executor", "keys/s", "redis_mget_10000_keys_per_s", (500_000, ">=")),
    ("freshness commit→visible p50", "freshness_p50_ms", "ms", None, (100, "<=")),
    ("freshness commit→visible p99", "freshness_p99_ms", "ms", None, None),
    ("baseline: pypaimon filtered read per key", "pypaimon_filtered_read_p50_ms", "ms", None, None),
    ("baseline: Redis GET p50", "redis_get_p50_ms", "ms", None, None),
    ("baseline: Redis GET p99", "redis_get_p99_ms", "ms", None, None),
    ("baseline: Redis MGET 1k", "redis_mget_1000_keys_per_s", "keys/s", None, None),
    ("baseline: Redis MGET 10k", "redis_mget_10000_keys_per_s", "keys/s", None, None),
    ("baseline: grpc echo sync client p50", "echo_sync_p50_ms", "ms", None, None),
    ("baseline: grpc echo aio client p50", "echo_aio_p50_ms", "ms", None, None),
]


def table_rows(out: dict) -> List[dict]:
    rows = []
    one = next((k for k in out if k.startswith("one_executor_batch_")), None)
    for label, key, unit, base, target in ROWS:
        if key == "one_executor":
            key = one
        if key is None or key not in out:
            continue
        v = out[key]
        row = {"measure": label, "value": v, "unit": unit}
        if key == "executor_rss_mb":
            row["value"] = f"{v} ({out.get('executor_rss_anon_mb')} / {out.get('executor_rss_file_mb')})"
        if base and base in out and out[base]:
            b = out[base]
            if unit == "keys/s":
                row["vs baseline"] = f"{v / b:.2f}x {base.replace('_keys_per_s', '')}"
            else:
                row["vs baseline"] = f"{v / b:.2f}x {base.replace('_ms', '')}"
        if key.startswith("single") and key.endswith("p50_ms") and out.get("pypaimon_filtered_read_p50_ms"):
            row["vs pypaimon"] = f"{out['pypaimon_filtered_read_p50_ms'] / v:.0f}x faster"
        if key.startswith("single_sync_p50") and out.get("redis_get_p50_ms"):
            row["vs baseline"] += f"; {v / out['redis_get_p50_ms']:.1f}x redis GET"
        if target:
            t, op = target
            row["target"] = f"{op} {t:g}"
            row["ok"] = v <= t if op == "<=" else v >= t
        rows.append(row)
    return rows


def print_table(rows: List[dict]) -> None:
    cols = ["measure", "value", "unit", "target", "ok", "vs baseline", "vs pypaimon"]
    width = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in cols}
    print("  ".join(c.ljust(width[c]) for c in cols))
    for r in rows:
        print("  ".join(str(r.get(c, "")).ljust(width[c]) for c in cols))


def run(size: str = "tiny", rows: Optional[int] = None, executors: int = 2, buckets: int = 4,
        baselines: bool = True, json_path: Optional[str] = None) -> dict:
    """Run the lookup benchmark at ``size`` (tiny|small|full|huge); returns the results dict (also saved)."""
    cfg = dict(SIZES[size])
    if rows:
        cfg["rows"] = rows
    info = machine()
    out: dict = {"benchmark": "lookup", "size": size, "rows": cfg["rows"], "executors": executors,
                 "buckets": buckets, "machine": info}
    wh = tempfile.mkdtemp(prefix="bench-lookup-")
    try:
        log(f"lookup benchmark, size {size}: {cfg['rows']:,} rows, {executors} executors; load {info['loadavg_start']}")
        t = time.perf_counter()
        table = make_table(wh, cfg["rows"], buckets)
        out["write_s"] = round(time.perf_counter() - t, 2)
        log(f"  table written in {out['write_s']}s; serving")
        out.update(bench_service(wh, table, cfg, executors))
        if baselines:
            log("  baselines: grpc echo")
            out.update(bench_echo(cfg["echo"]))
            log("  baselines: pypaimon filtered read")
            out.update(bench_pypaimon(table, cfg["rows"], cfg["pypaimon_keys"]))
            log("  baselines: redis")
            out.update(bench_redis(cfg["rows"], cfg["redis_gets"], cfg["batches"]))
    finally:
        shutil.rmtree(wh, ignore_errors=True)
    out["loadavg_end"] = round(os.getloadavg()[0], 2)
    out["table"] = table_rows(out)
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = Path(json_path) if json_path else RESULTS / f"lookup-{size}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(out, indent=2, default=str))
    out["results_path"] = str(path)
    return out


# ------------------------------------------------------------------------------------------------ before/after
def measure(wh: str, rounds: int, keys: int, executors: int) -> dict:
    """One product (whatever ``paimon_tail`` imports as): its ``serve`` on the table of ``wh``, then single-key
    ``get_sync`` and a grpc echo alternating in blocks of 200 calls (the same moments of a loaded machine), then
    batches of 1k and 10k keys."""
    import grpc

    from paimon_tail.catalog import catalog_config
    from paimon_tail.service.client import LookupClient

    env = dict(os.environ, PYTHONSAFEPATH="1")
    proc = subprocess.Popen([sys.executable, "-m", "paimon_tail", "serve", "db.t", "--warehouse", wh,
                             "--executors", str(executors)], stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=env, cwd=tempfile.gettempdir())
    for line in proc.stderr:
        if "ready in" in line:
            break
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    echo_proc = ctx.Process(target=_echo_server, args=(q,), daemon=True)
    echo_proc.start()
    out: dict = {}
    try:
        channel = grpc.insecure_channel(f"127.0.0.1:{q.get(timeout=30)}")
        echo = channel.unary_unary("/bench.Echo/Echo", request_serializer=lambda b: b,
                                   response_deserializer=lambda b: b)
        payload = b"x" * 100
        client = LookupClient("db.t", catalog_config(wh), timeout=30)
        rnd = random.Random(1)
        n = keys
        client.get_sync(1)
        lat = {"get": [], "echo": []}
        for _ in range(rounds):
            for name, call in (("echo", lambda: echo(payload)), ("get", lambda: client.get_sync(rnd.randrange(n)))):
                for _ in range(20):
                    call()
                for _ in range(200):
                    t = time.perf_counter()
                    call()
                    lat[name].append((time.perf_counter() - t) * 1000)
        for name, values in lat.items():
            out[f"{name}_p50_ms"] = round(pct(values, 0.5), 3)
            out[f"{name}_p99_ms"] = round(pct(values, 0.99), 3)
        out["get_vs_echo_p50"] = round(out["get_p50_ms"] / out["echo_p50_ms"], 2)
        for size in (1000, 10_000):
            batch = [rnd.randrange(n) for _ in range(size)]
            client.lookup_sync(batch)
            reps = max(3, 200_000 // size)
            t = time.perf_counter()
            for _ in range(reps):
                r = client.lookup_sync(batch)
            out[f"batch_{size}_keys_per_s"] = int(size * reps / (time.perf_counter() - t))
            assert len(r.found) == size
        client.close_sync()
        channel.close()
    finally:
        echo_proc.kill()
        proc.send_signal(2)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
    return out


def ab(other: str, size: str = "small", rounds: int = 3, executors: int = 2) -> dict:
    """This tree against the paimon-tail source at ``other``, alternating product by product ``rounds`` times
    (each run its own processes, PYTHONPATH pointing at its tree): single-key latency against a grpc echo measured
    in the same moments, and batch throughput."""
    cfg = SIZES[size]
    wh = tempfile.mkdtemp(prefix="bench-lookup-ab-")
    products = {"this": str(ROOT), "other": str(Path(other).resolve())}
    runs: Dict[str, List[dict]] = {p: [] for p in products}
    try:
        make_table(wh, cfg["rows"], 4)
        for r in range(rounds):
            for name, src in products.items():
                env = dict(os.environ, PYTHONPATH=src, PYTHONSAFEPATH="1")
                res = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--measure", wh,
                                      "--rows", str(cfg["rows"]), "--executors", str(executors)],
                                     capture_output=True, text=True, env=env, cwd=tempfile.gettempdir(), timeout=900)
                if res.returncode:
                    raise RuntimeError(f"{name}: {res.stderr[-2000:]}")
                runs[name].append(json.loads(res.stdout.strip().splitlines()[-1]))
                log(f"  round {r + 1} {name}: {runs[name][-1]}")
    finally:
        shutil.rmtree(wh, ignore_errors=True)
    keys = runs["this"][0].keys()
    median = {name: {k: sorted(x[k] for x in rs)[len(rs) // 2] for k in keys} for name, rs in runs.items()}
    return {"benchmark": "lookup-ab", "size": size, "rows": cfg["rows"], "other": products["other"],
            "rounds": rounds, "machine": machine(), "median": median, "runs": runs}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=sorted(SIZES), default="small")
    ap.add_argument("--rows", type=int, default=None, help="override the size's row count")
    ap.add_argument("--executors", type=int, default=2)
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--no-baselines", action="store_true")
    ap.add_argument("--json", default=None, help="write results here instead of benchmarks/results/")
    ap.add_argument("--ab", metavar="PATH", help="before/after: this tree against the source tree at PATH, "
                    "alternating (single key vs a grpc echo, batches)")
    ap.add_argument("--rounds", type=int, default=3, help="--ab: alternating runs of each side")
    ap.add_argument("--measure", metavar="WAREHOUSE", help=argparse.SUPPRESS)  # one side of --ab
    args = ap.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.measure, 10, args.rows or SIZES[args.size]["rows"], args.executors)))
        return 0
    if args.ab:
        out = ab(args.ab, args.size, args.rounds, args.executors)
        RESULTS.mkdir(parents=True, exist_ok=True)
        path = Path(args.json) if args.json else RESULTS / f"lookup-ab-{args.size}-{time.strftime('%Y%m%d-%H%M%S')}.json"
        path.write_text(json.dumps(out, indent=2, default=str))
        m = out["machine"]
        print(f"\nlookup before/after, size {args.size}: {out['rows']:,} rows, {args.rounds} alternating rounds, "
              f"{m['cpus']} CPUs, load {m['loadavg_start']} → {os.getloadavg()[0]:.2f}; medians:")
        names = list(out["median"]["this"])
        print("  ".join(["measure".ljust(24)] + [f"{n:>12}" for n in ("this", "other")]))
        for k in names:
            print("  ".join([k.ljust(24)] + [f"{out['median'][n][k]:>12}" for n in ("this", "other")]))
        print(f"results: {path}")
        return 0
    out = run(args.size, args.rows, args.executors, args.buckets, not args.no_baselines, args.json)
    m = out["machine"]
    print(f"\nlookup benchmark, size {out['size']}: {out['rows']:,} rows, {out['executors']} executors, "
          f"{m['cpus']} CPUs ({m['cpu']}), load average {m['loadavg_start']} → {out['loadavg_end']}")
    print_table(out["table"])
    print(f"results: {out['results_path']}")
    return 0


if __name__ == "__main__":
    if __package__ in (None, ""):
        sys.path.append(str(ROOT))  # after PYTHONPATH: --ab runs each side with its own tree first
    sys.exit(main())
