"""latest-full of a primary-key table (issue 21): `follow --from latest-full -e -f arrow` against pyarrow reading the
same files without merging.

    python -m benchmarks fullread [--size tiny|full] [--before PATH]

The table is ``benchmarks/tables.py``'s primary-key ``db.t`` (``id, name, v, ts, qty, cat``): 20M rows, 16 buckets,
20 commits of sequential ids, so 20 sorted files per bucket that the read merges (full; tiny: 200k rows, 4 buckets,
4 files). Contenders are processes whose Arrow IPC output is decoded and counted here (a short output fails the run);
peak RSS is the process's VmHWM. Baseline: every data file of the table read with ``pyarrow.parquet`` and written as
the same IPC stream, unmerged (``benchmarks/baselines.py parquet-arrow``). ``--before PATH`` runs the tree at PATH
in the same rounds (main before the Rust merge read: pypaimon's Python merge; one round, it is slow).
Targets: >= 1M rows/s, >= 0.5x the unmerged pyarrow read, peak RSS <= 400 MB.
"""
from __future__ import annotations

import os

from . import tables
from .catchup import run_one
from .common import Row, Size, baseline_cmd, median, paimon_tail_cmd, spread

SHAPES = {"tiny": (200_000, 4, 4), "full": (20_000_000, 16, 20)}


def run(size: Size, log, before: str = "") -> tuple:
    total, buckets, files = SHAPES["tiny" if size.name == "tiny" else "full"]
    wh = tables.pk_table(total, buckets, files, log)
    follow = ["follow", "db.t", "-w", wh, "--from", "latest-full", "-e", "-f", "arrow"]
    contenders = {
        "paimon-tail latest-full": (lambda: paimon_tail_cmd() + follow, None),
        "pyarrow, unmerged": (lambda: baseline_cmd("parquet-arrow", tables.table_dir(wh)), None),
    }
    if before:
        contenders["before"] = (lambda: paimon_tail_cmd() + follow, before)
    rounds = 1 if size.name == "tiny" else 3
    runs: dict = {n: [] for n in contenders}
    for round_no in range(rounds):
        for name, (cmd, src) in contenders.items():
            if src and round_no > 0:
                continue
            if src:
                os.environ["PAIMON_TAIL_BENCH_SRC"] = src
            try:
                r = run_one(cmd(), "arrow", total, timeout=1800)
            finally:
                os.environ.pop("PAIMON_TAIL_BENCH_SRC", None)
            runs[name].append(r)
            log(f"  {name}: {r['rows_per_s'] / 1e6:.2f}M rows/s  wall {r['wall_s']:.1f}s  peak RSS "
                f"{r['peak_rss_mib']:.0f} MiB  load {os.getloadavg()[0]:.1f}")
    med = {n: median([r["rows_per_s"] for r in rs]) for n, rs in runs.items()}
    peak = {n: max(r["peak_rss_mib"] for r in rs) for n, rs in runs.items()}
    ours, base = med["paimon-tail latest-full"], med["pyarrow, unmerged"]
    note = (f"{total:,} rows, {buckets} buckets x {files} files; median of {rounds} interleaved rounds; spread "
            + ", ".join(f"{n} {spread([r['rows_per_s'] for r in rs]) * 100:.0f}%" for n, rs in runs.items()
                        if spread([r['rows_per_s'] for r in rs]) is not None))
    rows = [
        Row("latest-full", "PK table, spawn to EOF", ours, None, "", "rows/s", True, ">= 1M rows/s",
            ours >= 1e6 if size.name != "tiny" else None, note=note),
        Row("latest-full", "merged read / unmerged pyarrow read", ours, base, "pyarrow, unmerged", "rows/s", True,
            ">= 0.5x", ours >= 0.5 * base),
        Row("latest-full", "peak RSS", peak["paimon-tail latest-full"], peak["pyarrow, unmerged"],
            "pyarrow, unmerged", "MiB", False, "<= 400 MB",
            peak["paimon-tail latest-full"] * 2 ** 20 <= 400e6 if size.name != "tiny" else None),
    ]
    if before:
        rows += [Row("latest-full", "after / before", ours, med["before"], os.path.basename(before.rstrip("/")),
                     "rows/s"),
                 Row("latest-full", "peak RSS, after / before", peak["paimon-tail latest-full"], peak["before"],
                     os.path.basename(before.rstrip("/")), "MiB", False)]
    return rows, {n: {"median_rows_per_s": med[n], "peak_rss_mib": peak[n], "runs": rs} for n, rs in runs.items()}


__all__ = ["run"]
