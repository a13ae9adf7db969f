"""Commit → stdout latency of a follower process while a writer commits small batches at random intervals.

Each contender is a real process writing JSON lines to a pipe; a thread here timestamps every line as it arrives.
The writer (another process) commits ``lat_rows`` rows at a time and reports when ``commit()`` returned; latency
of a row = arrival of its line − that commit time. The first ``WARMUP`` batches are left out. Then the writer
stops and we read the follower's CPU time from /proc/<pid>/stat over ``idle_seconds``.
"""
from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from typing import List

import pyarrow as pa

from .common import (Row, Size, baseline_cmd, child_env, commit_arrow, cpu_seconds, drain_stderr, paimon_tail_cmd,
                     percentile, temp_warehouse)

WARMUP = 3
SCHEMA = pa.schema([("batch", pa.int32()), ("i", pa.int32()), ("ts_ns", pa.int64()), ("payload", pa.string())])


def _fresh_table(prefix: str) -> str:
    from pypaimon import CatalogFactory, Schema

    wh = temp_warehouse(prefix)
    cat = CatalogFactory.create({"warehouse": wh})
    cat.create_database("db", True)
    cat.create_table("db.lat", Schema.from_pyarrow_schema(SCHEMA, options={"bucket": "-1"}), False)
    commit_arrow(cat.get_table("db.lat"), pa.table({"batch": [-1], "i": [0], "ts_ns": [time.time_ns()],
                                                    "payload": ["warm-up"]}, schema=SCHEMA))
    return wh


def measure(name: str, cmd_for, size: Size, log) -> dict:
    wh = _fresh_table(f"bench-lat-{name.replace(' ', '-')}-")
    cmd = cmd_for(wh)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env(), bufsize=0)
    err = drain_stderr(proc)
    arrivals: List[tuple] = []
    first = threading.Event()

    def read() -> None:
        for line in proc.stdout:
            arrivals.append((time.time_ns(), line))
            first.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    if not first.wait(60):
        proc.kill()
        raise RuntimeError(f"{name}: no warm-up row within 60s: {b''.join(err).decode()[-2000:]}")
    expected = size.lat_commits * size.lat_rows + 1
    writer = subprocess.Popen(
        baseline_cmd("writer", "-w", wh, "-t", "db.lat", "--commits", str(size.lat_commits), "--rows",
                     str(size.lat_rows), "--min-gap", str(size.lat_min_gap), "--max-gap", str(size.lat_max_gap)),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=child_env(), text=True)
    writer.stdin.write("go\n")
    writer.stdin.flush()
    commits = {}
    for line in writer.stdout:
        d = json.loads(line)
        commits[d["batch"]] = d
    if writer.wait() != 0:
        raise RuntimeError("writer failed")
    deadline = time.monotonic() + 30
    while len(arrivals) < expected and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    # idle CPU: the writer is done and every row is out
    time.sleep(1.0)
    c0, t0 = cpu_seconds(proc.pid), time.monotonic()
    time.sleep(size.idle_seconds)
    c1, t1 = cpu_seconds(proc.pid), time.monotonic()
    idle_pct = 100.0 * (c1 - c0) / (t1 - t0)
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    lat_ms, lat_from_write_ms, seen = [], [], set()
    for t, line in arrivals:
        row = json.loads(line)
        b = row["batch"]
        seen.add((b, row["i"]))
        if b < WARMUP:
            continue
        lat_ms.append((t - commits[b]["commit_ns"]) / 1e6)
        lat_from_write_ms.append((t - row["ts_ns"]) / 1e6)
    missing = expected - len(seen)
    if missing:
        log(f"  {name}: {missing} rows missing! stderr: {b''.join(err).decode()[-1000:]}")
    commit_ms = [(c["commit_ns"] - c["start_ns"]) / 1e6 for c in commits.values()]
    res = {
        "name": name, "cmd": cmd, "rows": len(arrivals), "missing": missing, "duplicates": len(arrivals) - len(seen),
        "p50_ms": percentile(lat_ms, 50), "p90_ms": percentile(lat_ms, 90), "p99_ms": percentile(lat_ms, 99),
        "max_ms": max(lat_ms) if lat_ms else None, "p50_from_write_ms": percentile(lat_from_write_ms, 50),
        "idle_cpu_pct": idle_pct, "idle_seconds": t1 - t0, "writer_commit_p50_ms": percentile(commit_ms, 50),
        "samples": len(lat_ms),
    }
    log(f"  {name}: p50 {res['p50_ms']:.1f} ms  p99 {res['p99_ms']:.1f} ms  idle CPU {idle_pct:.2f}%  "
        f"({res['samples']} rows, {missing} missing)")
    return res


def run(size: Size, log) -> tuple:
    ours = measure("paimon-tail", lambda wh: paimon_tail_cmd() + ["follow", "db.lat", "-w", wh, "--from", "earliest",
                                                                  "--nl"], size, log)
    base = measure("pypaimon default", lambda wh: baseline_cmd("pypaimon-stream", "-w", wh, "-t", "db.lat"), size, log)
    fast = measure("pypaimon 20ms", lambda wh: baseline_cmd("pypaimon-stream", "-w", wh, "-t", "db.lat",
                                                            "--poll-ms", "20"), size, log)
    ok = ours["missing"] == 0 and ours["duplicates"] == 0
    rows = [
        Row("latency", "p50", ours["p50_ms"], base["p50_ms"], "pypaimon 1000ms poll", "ms", False, "<= 20 ms",
            ok and ours["p50_ms"] <= 20),
        Row("latency", "p99", ours["p99_ms"], base["p99_ms"], "pypaimon 1000ms poll", "ms", False, "<= 50 ms",
            ok and ours["p99_ms"] <= 50),
        Row("latency", "p50 vs 20ms poll", ours["p50_ms"], fast["p50_ms"], "pypaimon 20ms poll", "ms", False),
        Row("latency", "idle CPU", ours["idle_cpu_pct"], fast["idle_cpu_pct"], "pypaimon 20ms poll", "% core",
            False, "< 1 %", ours["idle_cpu_pct"] < 1.0,
            note=f"pypaimon default (1000ms) idles at {base['idle_cpu_pct']:.2f}% of a core"),
    ]
    return rows, {"paimon-tail": ours, "pypaimon default": base, "pypaimon 20ms": fast}
