"""Start-up: each command as a whole process against the bare imports it cannot do without, in the same run.

    python -m benchmarks startup [--size tiny|full]

| command | yardstick | target |
| --- | --- | --- |
| ``paimon-tail --help``, ``paimon-tail follow --help`` | ``python -c "import click"`` | ≤ 2x |
| ``paimon-tail lookup db.kv KEY``, a service running | ``python -c "import grpc"`` | ≤ 2x |
| ``paimon-tail follow db.small --from earliest -e`` (10 rows) | ``python -c "import pyarrow"`` | ≤ 3x |
| ``paimon-tail follow db.kv --from latest -e``, nothing to read (20k rows; ``--size full``: also the 20M-row table of ``benchmarks/tables.py`` when built) | ``python -c "import pyarrow, polars"`` | ≤ 1.5x |

The command and its yardstick run in turn (A B A B ...), and each figure is the median over the pairs of A's wall
time divided by B's, so a machine that slows down during the run moves both. Wall time is spawn → exit; the
output is drained and checked (a command that fails or prints the wrong thing fails the benchmark).
"""
from __future__ import annotations

import sys
from typing import List

from .common import DATA, Row, Service, Size, kv_warehouse, median, paimon_tail_cmd, spread, time_process


def _pairs(cmd: List[str], yardstick: List[str], rounds: int, check) -> dict:
    a, b, ratios = [], [], []
    for _ in range(rounds + 1):  # the first pair warms the page cache and is not counted
        wall_a, code, out, err = time_process(cmd)
        if not check(code, out):
            raise RuntimeError(f"{cmd}: exit {code}: {err.decode()[-1000:]} {out[:200]!r}")
        wall_b, code_b, _, err_b = time_process(yardstick)
        if code_b != 0:
            raise RuntimeError(f"{yardstick}: exit {code_b}: {err_b.decode()[-1000:]}")
        a.append(wall_a)
        b.append(wall_b)
        ratios.append(wall_a / wall_b)
    a, b, ratios = a[1:], b[1:], ratios[1:]
    return {"wall_s": median(a), "yardstick_wall_s": median(b), "ratio": median(ratios), "ratios": ratios,
            "spread": spread(ratios), "cmd": cmd, "yardstick": yardstick}


def run(size: Size, log) -> tuple:
    rounds = 15 if size.name == "full" else 3
    wh = kv_warehouse(20_000, log)
    py = sys.executable
    pt = paimon_tail_cmd()
    click_, grpc_, pyarrow_, polars_ = ([py, "-c", f"import {m}"]
                                        for m in ("click", "grpc", "pyarrow", "pyarrow, polars"))
    cases = [
        ("--help", pt + ["--help"], click_, 2.0, lambda c, o: c == 0 and b"follow" in o),
        ("follow --help", pt + ["follow", "--help"], click_, 2.0, lambda c, o: c == 0 and b"--from" in o),
        ("follow 10 rows -e", pt + ["follow", "db.small", "-w", wh, "--from", "earliest", "-e"], pyarrow_, 3.0,
         lambda c, o: c == 0 and o.count(b"\n") == 10),
        ("lookup KEY", pt + ["lookup", "db.kv", "4242", "-w", wh], grpc_, 2.0,
         lambda c, o: c == 0 and o == b'{"id":4242,"name":"name-4242","amount":2121.0}\n'),
        ("follow -e, nothing to read", pt + ["follow", "db.kv", "-w", wh, "--from", "latest", "-e"], polars_, 1.5,
         lambda c, o: c == 0 and o == b""),
    ]
    big = DATA / "ts-pk-20000000-16-20" / "warehouse"
    if size.name == "full" and (big.parent / "done.json").exists():  # built by `python -m benchmarks fullread`
        cases.append(("follow -e, nothing to read, 20M rows",
                      pt + ["follow", "db.t", "-w", str(big), "--from", "latest", "-e"], polars_, 1.5,
                      lambda c, o: c == 0 and o == b""))
    service = Service(wh, "db.kv")
    rows, details = [], {}
    try:
        for name, cmd, yardstick, target, check in cases:
            r = _pairs(cmd, yardstick, rounds, check)
            details[name] = r
            base = " ".join(yardstick[1:])
            log(f"  {name}: {r['wall_s'] * 1000:.0f} ms, {base}: {r['yardstick_wall_s'] * 1000:.0f} ms, "
                f"ratio {r['ratio']:.2f}x (pairs {', '.join(f'{x:.2f}' for x in r['ratios'])})")
            rows.append(Row("startup", f"{name} wall / `{base}` wall", r["ratio"], None, base, "x", False,
                            f"<= {target:g}x", r["ratio"] <= target,
                            note=f"{r['wall_s'] * 1000:.0f} ms vs {r['yardstick_wall_s'] * 1000:.0f} ms; median of "
                                 f"{rounds} paired runs" + (f", spread {r['spread'] * 100:.0f}%" if r["spread"]
                                                              is not None else "")))
    finally:
        service.stop()
    return rows, details
