"""A follow with an end on a terminal (``follow -e`` with the table format): every row printed, against the same
follow as JSON lines, in the same run.

    python -m benchmarks terminal [--size tiny|full]

| case | yardstick | target |
| --- | --- | --- |
| ``follow db.kv --from earliest -e --table``, 200 columns (a table in pieces) | the same, ``--nl`` | ≤ 3x |
| the same at 24 columns (a record per row, psql's expanded display) | the same, ``--nl`` | ≤ 4x |

``--table`` takes the terminal view's path with stdout drained by the benchmark (rich draws no live footer when
stdout is not a terminal; the rows are laid out and written as on one). Pairs run in turn (A B A B ...); each
figure is the median over the pairs of A's wall time divided by B's, spawn → exit, output drained and checked.
"""
from __future__ import annotations

import os

from .common import Row, Size, kv_warehouse, median, paimon_tail_cmd, spread, time_process


def _pairs(cmd, yardstick, columns: int, rounds: int, rows: int) -> dict:
    walls, bases, ratios = [], [], []
    for _ in range(rounds + 1):  # the first pair warms the page cache and is not counted
        os.environ["COLUMNS"] = str(columns)
        try:
            wall, code, out, err = time_process(cmd)
        finally:
            os.environ.pop("COLUMNS", None)
        lines = out.count(b"\n")
        if code != 0 or lines < rows:
            raise RuntimeError(f"{cmd}: exit {code}, {lines} lines: {err.decode()[-1000:]}")
        base, code, out, err = time_process(yardstick)
        if code != 0 or out.count(b"\n") != rows:
            raise RuntimeError(f"{yardstick}: exit {code}: {err.decode()[-1000:]}")
        walls.append(wall)
        bases.append(base)
        ratios.append(wall / base)
    walls, bases, ratios = walls[1:], bases[1:], ratios[1:]
    return {"wall_s": median(walls), "yardstick_wall_s": median(bases), "ratio": median(ratios), "ratios": ratios,
            "spread": spread(ratios)}


def run(size: Size, log) -> tuple:
    n = 200_000 if size.name == "full" else 20_000
    rounds = 5 if size.name == "full" else 3
    wh = kv_warehouse(n, log)
    follow = paimon_tail_cmd() + ["follow", "db.kv", "-w", wh, "--from", "earliest", "-e"]
    rows, details = [], {}
    for name, columns, target in (("table, 200 columns", 200, 3.0), ("records, 24 columns", 24, 4.0)):
        r = _pairs(follow + ["--table"], follow + ["--nl"], columns, rounds, n)
        details[name] = r
        log(f"  -e --table, {name}: {r['wall_s']:.2f}s, --nl: {r['yardstick_wall_s']:.2f}s, ratio {r['ratio']:.2f}x "
            f"(pairs {', '.join(f'{x:.2f}' for x in r['ratios'])})")
        rows.append(Row("terminal", f"-e --table {n:,} rows, {name}: wall / --nl wall", r["ratio"], None, "--nl", "x",
                        False, f"<= {target:g}x", r["ratio"] <= target,
                        note=f"{n / r['wall_s']:,.0f} rows/s vs {n / r['yardstick_wall_s']:,.0f}; median of {rounds} "
                             "paired runs" + (f", spread {r['spread'] * 100:.0f}%" if r["spread"] is not None else "")))
    return rows, details
