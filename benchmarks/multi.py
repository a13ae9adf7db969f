"""Catch-up of 10 tables: one `follow 'db.*'` process against ten single-table follows, and the single-table rate.

Ten append tables, each a tenth of the catch-up data set's rows in as many commits as that set (so ten times its
snapshots in all). Contenders, every one a process whose stdout is a pipe drained here (wall time from spawn to
the last exit, start-up included, as a user sees it):

- `follow 'db.*' --from earliest -e` (JSON lines; and Debezium events): one process, one event loop, a follower
  per table;
- the ten tables followed one after another by ten `follow db.tN` processes (a shell loop);
- the same ten processes at once (`&` in a shell);
- one of the tables alone: the single-table rate.

Rows are counted by newline and must equal the data set's, so a short or repeated output fails the run.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from typing import Callable, List

from .common import (DATA, Row, Size, child_env, commit_arrow, make_batch, median, paimon_tail_cmd, spread)

TABLES = 10


def dataset(size: Size, log: Callable[[str], None]) -> dict:
    """Ten append tables ``db.t0`` .. ``db.t9`` (built once, then reused)."""
    from pypaimon import CatalogFactory, Schema

    from .common import SCHEMA

    per_table = size.rows // TABLES
    base = DATA / f"multi-{size.name}-{TABLES}x{per_table}-{size.commits}"
    wh = base / "warehouse"
    ds = {"warehouse": str(wh), "tables": [f"db.t{i}" for i in range(TABLES)], "rows_per_table": per_table,
          "rows": per_table * TABLES, "commits_per_table": size.commits}
    if (base / "done").exists():
        return ds
    if base.exists():
        shutil.rmtree(base)
    wh.mkdir(parents=True)
    log(f"building {TABLES} tables of {per_table:,} rows / {size.commits} commits in {base} (once)")
    cat = CatalogFactory.create({"warehouse": str(wh)})
    cat.create_database("db", True)
    per_commit = per_table // size.commits
    for i in range(TABLES):
        cat.create_table(f"db.t{i}", Schema.from_pyarrow_schema(SCHEMA, options={"bucket": "-1"}), False)
        table = cat.get_table(f"db.t{i}")
        for c in range(size.commits):
            n = per_commit if c < size.commits - 1 else per_table - c * per_commit
            commit_arrow(table, make_batch(i * 1000 + c, i * per_table + c * per_commit, n))
    (base / "done").write_text("ok")
    return ds


def run_processes(cmds: List[List[str]], expect_rows: int, timeout: float = 1800) -> dict:
    """Start every command at once, drain their pipes, wait for all: rows and wall time to the last exit."""
    t0 = time.perf_counter()
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env(), bufsize=0)
             for cmd in cmds]
    counts = [0] * len(procs)
    errors: List[bytes] = [b""] * len(procs)
    firsts: List[float] = []
    ends: List[float] = []

    def drain(i: int, proc: subprocess.Popen) -> None:
        fd = proc.stdout.fileno()
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            if not counts[i]:
                firsts.append(time.perf_counter())
            counts[i] += chunk.count(b"\n")
        ends.append(time.perf_counter())
        errors[i] = proc.stderr.read()

    threads = [threading.Thread(target=drain, args=(i, p), daemon=True) for i, p in enumerate(procs)]
    for t in threads:
        t.start()
    for p in procs:
        p.wait(timeout)
    for t in threads:
        t.join(timeout)
    wall = time.perf_counter() - t0
    rows = sum(counts)
    failed = [(p.args, p.returncode, e.decode()[-500:]) for p, e in zip(procs, errors) if p.returncode != 0]
    if failed or rows != expect_rows:
        raise RuntimeError(f"{len(cmds)} processes: {rows} rows of {expect_rows}; failures: {failed}")
    streaming = max(ends) - min(firsts)
    return {"wall_s": wall, "rows": rows, "rows_per_s": rows / wall, "first_byte_s": min(firsts) - t0,
            "stream_rows_per_s": rows / max(streaming, 1e-9)}


def contenders(ds: dict) -> dict:
    pt = paimon_tail_cmd() + ["follow"]
    opts = ["-w", ds["warehouse"], "--from", "earliest", "-e"]
    one = ds["rows_per_table"]
    return {
        "multi: follow 'db.*' (jsonl)": ("together", [pt + ["db.*", *opts, "--nl"]], ds["rows"]),
        "multi: follow 'db.*' (debezium)": ("together", [pt + ["db.*", *opts, "-f", "debezium"]], ds["rows"]),
        "10 follows, one after another": ("sequential", [pt + [t, *opts, "--nl"] for t in ds["tables"]], ds["rows"]),
        "10 follows at once": ("together", [pt + [t, *opts, "--nl"] for t in ds["tables"]], ds["rows"]),
        "one table alone": ("together", [pt + [ds["tables"][0], *opts, "--nl"]], one),
    }


def run(size: Size, log) -> tuple:
    ds = dataset(size, log)
    chosen = contenders(ds)
    runs: dict = {n: [] for n in chosen}
    for _ in range(size.repeat):  # rounds, so machine noise hits every contender alike
        for name, (how, cmds, rows) in chosen.items():
            if how == "sequential":
                parts = [run_processes([cmd], rows // len(cmds)) for cmd in cmds]
                wall = sum(p["wall_s"] for p in parts)
                streaming = sum(p["wall_s"] - p["first_byte_s"] for p in parts)
                r = {"wall_s": wall, "rows": rows, "rows_per_s": rows / wall, "first_byte_s": parts[0]["first_byte_s"],
                     "stream_rows_per_s": rows / streaming}
            else:
                r = run_processes(cmds, rows)
            runs[name].append(r)
            log(f"  {name}: {r['rows_per_s'] / 1e6:.3f}M rows/s  wall {r['wall_s']:.2f}s  load {os.getloadavg()[0]:.1f}")
    res = {}
    for name, rs in runs.items():
        rates = [r["rows_per_s"] for r in rs]
        res[name] = {"rows_per_s": median(rates), "wall_s": median([r["wall_s"] for r in rs]),
                     "stream_rows_per_s": median([r["stream_rows_per_s"] for r in rs]),
                     "spread": spread(rates), "runs": rs, "cmds": chosen[name][1]}
    multi, dbz = res["multi: follow 'db.*' (jsonl)"], res["multi: follow 'db.*' (debezium)"]
    seq, par, one = res["10 follows, one after another"], res["10 follows at once"], res["one table alone"]
    note = (f"{TABLES} append tables x {ds['rows_per_table']:,} rows in {ds['commits_per_table']} commits each "
            f"({ds['rows']:,} rows, {TABLES * ds['commits_per_table']} snapshots); median of {size.repeat}")
    rows = [
        Row("multi catch-up", "10 tables, one process vs 10 follows in turn", multi["rows_per_s"], seq["rows_per_s"],
            "10 follows in turn", "rows/s", note=note),
        Row("multi catch-up", "10 tables, one process vs 10 follows at once", multi["rows_per_s"], par["rows_per_s"],
            "10 processes at once", "rows/s"),
        Row("multi catch-up", "10 tables, one process vs one table alone", multi["rows_per_s"], one["rows_per_s"],
            "the single-table rate", "rows/s", target=">= 0.8x", ok=multi["rows_per_s"] >= 0.8 * one["rows_per_s"]
            if size.name == "full" else None),
        Row("multi catch-up", "first byte to EOF, one process vs one table alone", multi["stream_rows_per_s"],
            one["stream_rows_per_s"], "the single-table rate", "rows/s",
            note="start-up excluded: the rate once rows flow"),
        Row("multi catch-up", "first byte to EOF, one process vs 10 follows in turn", multi["stream_rows_per_s"],
            seq["stream_rows_per_s"], "10 follows in turn", "rows/s"),
        Row("multi catch-up", "wall time, one process vs 10 follows in turn", multi["wall_s"], seq["wall_s"],
            "10 follows in turn", "s", False),
        Row("multi catch-up", "debezium vs jsonl, 10 tables", dbz["rows_per_s"], multi["rows_per_s"],
            "jsonl, same process", "rows/s"),
    ]
    return rows, res
