"""paimon-tail on S3: what an idle follower and server cost in requests, commit → stdout latency, and catch-up
against the same table on a local disk, at 0 and 20 ms added to every request.

The store is moto's S3 server (its own process) behind our proxy (tests/objectstore.py), which adds the latency
and counts requests and bytes. Writers write to moto directly, so the proxy counts what paimon-tail alone asks.
Note: the store runs on the same cores as paimon-tail here; a real store's CPU is not ours, so the S3 figures are
pessimistic by the store's share of the machine.
"""
from __future__ import annotations

import datetime
import json
import os
import random
import resource
import statistics
import subprocess
import threading
import time
from typing import Callable, List

import pyarrow as pa

from .common import Row, Size, child_env, commit_arrow, cpu_seconds, drain_stderr, make_batch, paimon_tail_cmd, \
    percentile, temp_warehouse, SCHEMA

SIZES = {  # rows, commits, latency commits, idle seconds, catch-up rounds
    "tiny": (20_000, 4, 8, 3.0, 1),
    "full": (500_000, 20, 60, 10.0, 5),
}
LATENCIES = (0.0, 0.02)


def _tables(catalog, rows: int, commits: int) -> None:
    from pypaimon import Schema

    catalog.create_database("db", True)
    catalog.create_table("db.events", Schema.from_pyarrow_schema(SCHEMA, options={"bucket": "-1"}), True)
    table = catalog.get_table("db.events")
    per = rows // commits
    for c in range(commits):
        commit_arrow(table, make_batch(c, c * per, per))
    catalog.create_table("db.kv", Schema.from_pyarrow_schema(
        pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())]), primary_keys=["k"],
        options={"bucket": "2"}), True)
    commit_arrow(catalog.get_table("db.kv"), pa.table({"k": pa.array(range(1000), pa.int64()),
                                                      "v": [f"v{i}" for i in range(1000)]}))


def _args(options: dict) -> List[str]:
    out = ["-w", options["warehouse"]]
    for k, v in options.items():
        if k != "warehouse":
            out += ["-O", f"{k}={v}"]
    return out


def _store_cpu(store_pid) -> float:
    """CPU seconds the simulated store used so far: moto's process and this process (the proxy's threads)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    return (cpu_seconds(store_pid) if store_pid else 0.0) + own.ru_utime + own.ru_stime


def _catchup(where: List[str], rows: int, store_pid=None) -> dict:
    """``follow --from earliest -e -f arrow``: spawn → EOF and first byte → EOF, and the CPU the follower and
    the store spent (on a real deployment the store's CPU is not on this machine)."""
    store0 = _store_cpu(store_pid)
    t0 = time.perf_counter()
    proc = subprocess.Popen(paimon_tail_cmd() + ["follow", "db.events", *where, "--from", "earliest", "-e", "-f",
                                                 "arrow"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=child_env())
    first = proc.stdout.read(1)
    t1 = time.perf_counter()
    data = first + proc.stdout.read()
    err = proc.stderr.read()
    t2 = time.perf_counter()
    _, status, usage = os.wait4(proc.pid, 0)  # reaps it, with its CPU time
    proc.returncode = os.waitstatus_to_exitcode(status)
    store = _store_cpu(store_pid) - store0
    if proc.returncode != 0:
        raise RuntimeError(f"catch-up failed: {err.decode()[-500:]}")
    got = pa.ipc.open_stream(data).read_all().num_rows
    if got != rows:
        raise RuntimeError(f"catch-up read {got} rows, expected {rows}")
    return {"spawn_to_eof": t2 - t0, "first_byte_to_eof": t2 - t1, "follower_cpu": usage.ru_utime + usage.ru_stime,
            "store_cpu": store}


def _idle_requests(proxy, cmd: List[str], ready: Callable[[subprocess.Popen], None], seconds: float) -> float:
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env())
    drain_stderr(proc)
    try:
        ready(proc)
        time.sleep(1.0)
        since = time.monotonic()
        time.sleep(seconds)
        return sum(proxy.count(since).values()) / seconds
    finally:
        proc.terminate()
        proc.wait(20)


def _latency(proxy, catalog, name: str, where: List[str], commits: int, log) -> dict:
    """Small commits at random gaps into a new table; latency of a row = its line's arrival − its snapshot's
    commit time. Requests counted include the idle polls between commits."""
    from pypaimon import Schema

    catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(
        pa.schema([("i", pa.int64()), ("payload", pa.string())]), options={"bucket": "-1"}), False)
    table = catalog.get_table(f"db.{name}")
    proc = subprocess.Popen(paimon_tail_cmd() + ["follow", f"db.{name}", *where, "--from", "earliest", "--meta",
                                                 "--nl"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env(), bufsize=0)
    err = drain_stderr(proc)
    arrivals: list = []
    threading.Thread(target=lambda: arrivals.extend((time.time(), line) for line in proc.stdout),
                     daemon=True).start()
    time.sleep(2.0)
    rng = random.Random(7)
    since = time.monotonic()
    for i in range(commits):
        commit_arrow(table, pa.table({"i": [i], "payload": ["x" * 64]}))
        time.sleep(rng.uniform(0.3, 0.8))
    deadline = time.monotonic() + 30
    while len(arrivals) < commits and time.monotonic() < deadline:
        time.sleep(0.05)
    requests = proxy.requests(since)
    proc.terminate()
    proc.wait(20)
    if len(arrivals) < commits:
        raise RuntimeError(f"latency: {len(arrivals)}/{commits} rows arrived: {b''.join(err).decode()[-500:]}")
    lat = []
    for t, line in arrivals:
        row = json.loads(line)
        committed = datetime.datetime.fromisoformat(row["_commit_time"]).timestamp()
        lat.append((t - committed) * 1000)
    return {"p50_ms": percentile(lat, 50), "p99_ms": percentile(lat, 99), "requests": len(requests),
            "bytes": sum(r.bytes_out + r.bytes_in for r in requests), "commits": commits}


def run(size: Size, log) -> tuple:
    from pypaimon import CatalogFactory

    from tests.objectstore import S3Proxy, S3Server

    rows, commits, lat_commits, idle_s, rounds = SIZES[size.name]
    local = temp_warehouse("bench-s3-local-")
    log(f"  writing {rows:,} rows / {commits} commits locally and to S3 (moto)")
    _tables(CatalogFactory.create({"warehouse": local}), rows, commits)
    out_rows, details = [], {}
    with S3Server() as s3:
        s3.create_bucket("lake")
        _tables(CatalogFactory.create(s3.catalog_options("s3://lake/wh")), rows, commits)
        for latency in LATENCIES:
            tag = f"S3 +{latency * 1000:.0f}ms"
            with S3Proxy(s3, latency=latency) as proxy:
                options = proxy.catalog_options("s3://lake/wh")
                where = _args(options)
                # catch-up, alternating with the local table (the machine's noise hits both alike)
                runs = {"local": [], "s3": []}
                for _ in range(rounds):
                    runs["local"].append(_catchup(["-w", local], rows))
                    proxy.reset()
                    runs["s3"].append(_catchup(where, rows, s3._proc.pid))
                    catchup_requests = sum(proxy.count().values())

                def med(side: str, key: str) -> float:
                    return statistics.median(r[key] for r in runs[side])

                spawn_ratio = med("local", "spawn_to_eof") / med("s3", "spawn_to_eof")
                flow_ratio = med("local", "first_byte_to_eof") / med("s3", "first_byte_to_eof")
                log(f"  {tag} catch-up: {rows / med('s3', 'spawn_to_eof'):,.0f} rows/s spawn→EOF "
                    f"({spawn_ratio:.2f}x local), {rows / med('s3', 'first_byte_to_eof'):,.0f} rows/s once rows "
                    f"flow ({flow_ratio:.2f}x local), {catchup_requests} requests; follower CPU "
                    f"{med('s3', 'follower_cpu'):.2f} s (local {med('local', 'follower_cpu'):.2f} s), the store's "
                    f"CPU on these cores {med('s3', 'store_cpu'):.2f} s")
                # idle costs
                follow_rps = _idle_requests(
                    proxy, paimon_tail_cmd() + ["follow", "db.kv", *where, "--nl", "--from", "latest"],
                    lambda p: time.sleep(3.0), idle_s)
                serve_rps = _idle_requests(
                    proxy, paimon_tail_cmd() + ["serve", "db.kv", *where, "--executors", "1"],
                    lambda p: time.sleep(8.0), idle_s)
                log(f"  {tag} idle: follow {follow_rps:.1f} requests/s, serve {serve_rps:.1f} requests/s")
                lat = _latency(proxy, CatalogFactory.create(s3.catalog_options("s3://lake/wh")),
                               f"lat{latency * 1000:.0f}", where, lat_commits, log)
                log(f"  {tag} commit→stdout p50 {lat['p50_ms']:.0f} ms p99 {lat['p99_ms']:.0f} ms; "
                    f"{lat['requests'] / lat['commits']:.1f} requests per commit followed")
            slow = latency > 0
            out_rows += [
                Row("s3", f"{tag} catch-up rows/s (spawn→EOF)", rows / med("s3", "spawn_to_eof"),
                    rows / med("local", "spawn_to_eof"), "same table, local disk", "rows/s", True,
                    ">= 0.8x local" if slow else ""),
                Row("s3", f"{tag} catch-up rows/s (first byte→EOF)", rows / med("s3", "first_byte_to_eof"),
                    rows / med("local", "first_byte_to_eof"), "same table, local disk", "rows/s", True,
                    ">= 0.8x local" if slow else "", (flow_ratio >= 0.8) if slow else None),
                Row("s3", f"{tag} idle follow requests/s", follow_rps, None, "", "req/s", False, "<= 5",
                    follow_rps <= 5),
                Row("s3", f"{tag} idle serve requests/s", serve_rps, None, "", "req/s", False, "<= 5",
                    serve_rps <= 5),
                Row("s3", f"{tag} commit→stdout p50", lat["p50_ms"], None, "", "ms", False,
                    "<= 300 ms" if slow else "", (lat["p50_ms"] <= 300) if slow else None),
                Row("s3", f"{tag} commit→stdout p99", lat["p99_ms"], None, "", "ms", False),
                Row("s3", f"{tag} requests per commit (polls between included)", lat["requests"] / lat["commits"],
                    None, "", "req", False),
            ]
            details[tag] = {"catchup": runs, "catchup_requests": catchup_requests, "idle_follow_rps": follow_rps,
                            "idle_serve_rps": serve_rps, "latency": lat}
    return out_rows, details
