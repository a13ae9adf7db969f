"""JSON catch-up of a table with a timestamp column (issue 21): `follow --from earliest -e --nl` against the limit.

    python -m benchmarks timestamps [--size tiny|medium] [--before PATH]

The table is ``benchmarks/tables.py``'s ``id, name, v, ts, qty, cat`` (``ts`` TIMESTAMP(6) with microseconds), 2M
rows in 40 commits (medium; tiny: 50k in 10). Contenders run as processes writing to a pipe drained here, rounds
interleaved: paimon-tail JSON lines and Arrow; the limit, the same Parquet files read with pyarrow and written with
polars ``write_ndjson`` (no Paimon logic, and polars' own datetime text); and, with ``--before PATH``, the tree at
PATH as "before" in the same rounds. Target: JSON lines >= 0.9x the limit.
"""
from __future__ import annotations

import os

from . import tables
from .catchup import run_one
from .common import Row, Size, baseline_cmd, median, paimon_tail_cmd, spread

SHAPES = {"tiny": (50_000, 10), "medium": (2_000_000, 40), "full": (2_000_000, 40)}


def run(size: Size, log, before: str = "") -> tuple:
    total, commits = SHAPES.get(size.name, SHAPES["medium"])
    wh = tables.ts_append(total, commits, log)
    follow = ["follow", "db.t", "-w", wh, "--from", "earliest", "-e"]

    def pt(*args: str):
        return lambda: paimon_tail_cmd() + follow + list(args)

    contenders = {
        "paimon-tail jsonl": (pt("--nl"), "jsonl", None),
        "paimon-tail arrow": (pt("-f", "arrow"), "arrow", None),
        "limit: pyarrow + polars ndjson": (lambda: baseline_cmd("parquet-jsonl", tables.table_dir(wh)), "jsonl", None),
    }
    if before:
        contenders["before jsonl"] = (pt("--nl"), "jsonl", before)
    rounds = 1 if size.name == "tiny" else 5
    runs: dict = {n: [] for n in contenders}
    for _ in range(rounds):
        for name, (cmd, fmt, src) in contenders.items():
            if src:
                os.environ["PAIMON_TAIL_BENCH_SRC"] = src
            try:
                r = run_one(cmd(), fmt, total)  # the command and its environment name the tree to run
            finally:
                os.environ.pop("PAIMON_TAIL_BENCH_SRC", None)
            runs[name].append(r)
            log(f"  {name}: {r['rows_per_s'] / 1e6:.2f}M rows/s  wall {r['wall_s']:.2f}s  first byte "
                f"{r['first_byte_s']:.2f}s  load {os.getloadavg()[0]:.1f}")
    med = {n: median([r["rows_per_s"] for r in rs]) for n, rs in runs.items()}
    note = (f"{total:,} rows / {commits} commits, TIMESTAMP(6); median of {rounds} interleaved rounds; spread "
            + ", ".join(f"{n} {spread([r['rows_per_s'] for r in rs]) * 100:.0f}%" for n, rs in runs.items()
                        if spread([r['rows_per_s'] for r in rs]) is not None))
    limit = med["limit: pyarrow + polars ndjson"]
    rows = [
        Row("timestamps", "jsonl catch-up, spawn to EOF", med["paimon-tail jsonl"], limit, "pyarrow+polars ndjson",
            "rows/s", True, ">= 0.9x limit", med["paimon-tail jsonl"] >= 0.9 * limit, note=note),
        Row("timestamps", "arrow catch-up, spawn to EOF", med["paimon-tail arrow"], limit, "pyarrow+polars ndjson",
            "rows/s"),
    ]
    if before:
        rows.append(Row("timestamps", "jsonl catch-up, after / before", med["paimon-tail jsonl"], med["before jsonl"],
                        os.path.basename(before.rstrip("/")), "rows/s"))
    return rows, {n: {"median_rows_per_s": med[n], "runs": rs} for n, rs in runs.items()}


__all__ = ["run"]
