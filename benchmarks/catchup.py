"""Catch-up throughput: a long backlog to a pipe, `follow --from earliest -e` against the naive loop and the limit.

Every contender is a process whose stdout is a pipe drained here; wall time runs from spawn to exit (startup and
planning included, as a user sees it). JSON lines are counted by newline; Arrow streams are decoded here and
their rows counted, so a wrong or short output fails the run. Peak RSS of each process comes from wait4.
"""
from __future__ import annotations

import os
import subprocess
import time
from typing import List

import pyarrow as pa

from .common import (DataSet, PeakRss, Row, Size, baseline_cmd, catchup_dataset, child_env, drain_stderr, median,
                     paimon_tail_cmd, spread, wait_rusage)


class _Counting:
    """A file-like reader over the pipe that counts bytes (for Arrow streams decoded by pyarrow)."""

    def __init__(self, f) -> None:
        self.f, self.n, self.first = f, 0, None
        self.closed = False

    def read(self, n=-1):
        if n is None or n < 0:
            b = self.f.read()
        else:  # a pipe gives short reads; pyarrow wants exactly n bytes unless at EOF
            parts, got = [], 0
            while got < n:
                part = self.f.read(n - got)
                if not part:
                    break
                parts.append(part)
                got += len(part)
            b = b"".join(parts)
        if b and self.first is None:
            self.first = time.perf_counter()
        self.n += len(b)
        return b

    def readable(self):
        return True


def run_one(cmd: List[str], fmt: str, expect_rows: int, timeout: float = 900) -> dict:
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env(), bufsize=0)
    err = drain_stderr(proc)
    peak = PeakRss(proc.pid)
    rows = nbytes = 0
    first = None
    if fmt == "arrow":
        src = _Counting(proc.stdout)
        try:
            reader = pa.ipc.open_stream(pa.PythonFile(src, mode="r"))
            for batch in reader:
                rows += batch.num_rows
        except pa.ArrowInvalid:
            pass
        while src.read(1 << 20):
            pass
        nbytes, first = src.n, src.first
    else:
        fd = proc.stdout.fileno()
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            if first is None:
                first = time.perf_counter()
            nbytes += len(chunk)
            rows += chunk.count(b"\n")
    end = time.perf_counter()
    code, rss = wait_rusage(proc, timeout, peak)
    wall = time.perf_counter() - t0
    if code != 0 or rows != expect_rows:
        raise RuntimeError(f"{cmd}: exit {code}, {rows} rows of {expect_rows}: {b''.join(err).decode()[-2000:]}")
    first = first or end
    return {"wall_s": wall, "rows": rows, "bytes": nbytes, "rows_per_s": rows / wall, "mb_per_s": nbytes / wall / 1e6,
            "first_byte_s": first - t0, "stream_rows_per_s": rows / max(end - first, 1e-9), "peak_rss_mib": rss}


def contenders(ds: DataSet, size: Size) -> dict:
    pt = paimon_tail_cmd() + ["follow", ds.table, "-w", ds.warehouse, "--from", "earliest", "-e"]
    naive = ["pypaimon-stream", "-w", ds.warehouse, "-t", ds.table, "--from-earliest", "--expect", str(ds.rows)]
    return {
        "paimon-tail jsonl": (pt + ["--nl"], "jsonl", size.repeat),
        "paimon-tail arrow": (pt + ["-f", "arrow"], "arrow", size.repeat),
        "naive pypaimon loop": (baseline_cmd(*naive), "jsonl", 1),
        "naive pypaimon loop + orjson": (baseline_cmd(*naive, "--orjson"), "jsonl", 1),
        "limit: pyarrow + polars ndjson": (baseline_cmd("parquet-jsonl", ds.table_dir), "jsonl", size.repeat),
        "limit: pyarrow + Arrow IPC": (baseline_cmd("parquet-arrow", ds.table_dir), "arrow", size.repeat),
    }


def run(size: Size, log, only=None) -> tuple:
    ds = catchup_dataset(size, log)
    chosen = {n: c for n, c in contenders(ds, size).items() if not only or n in only}
    runs: dict = {n: [] for n in chosen}
    # Rounds (A B C, A B C, ...) rather than A A A, B B B: on a shared machine noise then hits every contender.
    for round_no in range(max(c[2] for c in chosen.values())):
        for name, (cmd, fmt, repeat) in chosen.items():
            if round_no >= repeat:
                continue
            r = run_one(cmd, fmt, ds.rows)
            runs[name].append(r)
            log(f"  {name}: {r['rows_per_s'] / 1e6:.3f}M rows/s  {r['mb_per_s']:.0f} MB/s  wall {r['wall_s']:.2f}s "
                f"first byte {r['first_byte_s']:.2f}s  peak RSS {r['peak_rss_mib']:.0f} MiB  "
                f"load {os.getloadavg()[0]:.1f}")
    results = {}
    for name, (cmd, fmt, repeat) in chosen.items():
        rates = [r["rows_per_s"] for r in runs[name]]
        mid = sorted(runs[name], key=lambda r: r["rows_per_s"])[len(rates) // 2]  # the median run
        results[name] = dict(mid, cmd=cmd, runs=runs[name], spread=spread(rates), rows_per_s=median(rates),
                             best_rows_per_s=max(rates))
    if only:
        return [], results
    j, a = results["paimon-tail jsonl"], results["paimon-tail arrow"]
    naive, limit_j, limit_a = (results["naive pypaimon loop"], results["limit: pyarrow + polars ndjson"],
                               results["limit: pyarrow + Arrow IPC"])
    sp = ", ".join(f"{n} {results[n]['spread'] * 100:.0f}%" for n in results if results[n]["spread"] is not None)
    note = (f"{ds.rows:,} rows in {ds.commits} commits; median of {size.repeat} interleaved runs"
            + (f"; spread (max-min)/median: {sp}" if sp else ""))
    rows = [
        Row("catch-up", "jsonl", j["rows_per_s"], limit_j["rows_per_s"], "pyarrow+polars ndjson", "rows/s", True,
            ">= 0.8x limit", j["rows_per_s"] >= 0.8 * limit_j["rows_per_s"] if size.name == "full" else None,
            note=note),
        Row("catch-up", "jsonl vs naive", j["rows_per_s"], naive["rows_per_s"], "naive pypaimon loop", "rows/s"),
        Row("catch-up", "jsonl", j["mb_per_s"], limit_j["mb_per_s"], "pyarrow+polars ndjson", "MB/s"),
        Row("catch-up", "arrow", a["rows_per_s"], limit_a["rows_per_s"], "pyarrow Arrow IPC", "rows/s", True,
            ">= 3M rows/s" if size.name == "full" else ">= 3M rows/s (full)",
            a["rows_per_s"] >= 3e6 if size.name == "full" else None),
        Row("catch-up", "arrow", a["mb_per_s"], limit_a["mb_per_s"], "pyarrow Arrow IPC", "MB/s"),
        Row("catch-up", "jsonl, first byte to EOF", j["stream_rows_per_s"], limit_j["stream_rows_per_s"],
            "pyarrow+polars ndjson", "rows/s", note="start-up excluded: the rate once rows flow"),
        Row("catch-up", "arrow, first byte to EOF", a["stream_rows_per_s"], limit_a["stream_rows_per_s"],
            "pyarrow Arrow IPC", "rows/s"),
        Row("catch-up", "start-up (spawn to first byte)", j["first_byte_s"], limit_j["first_byte_s"],
            "pyarrow+polars ndjson", "s", False,
            note="mostly imports: pypaimon pulls in pyarrow.dataset (which imports pandas) and polars"),
        Row("memory", "peak RSS jsonl catch-up", j["peak_rss_mib"], naive["peak_rss_mib"], "naive pypaimon loop",
            "MiB", False),
    ]
    return rows, results


def ab(size: Size, log, other: str, rounds: int = 5) -> tuple:
    """This tree against the paimon-tail source at ``other``, alternating run by run (``python -m benchmarks ab``)."""
    ds = catchup_dataset(size, log)
    runs: dict = {}
    for _ in range(rounds):
        for product in ("this", "other"):
            if product == "other":
                os.environ["PAIMON_TAIL_BENCH_SRC"] = other
            else:
                os.environ.pop("PAIMON_TAIL_BENCH_SRC", None)
            try:
                for fmt, flag in (("jsonl", ["--nl"]), ("arrow", ["-f", "arrow"])):
                    cmd = paimon_tail_cmd() + ["follow", ds.table, "-w", ds.warehouse, "--from", "earliest", "-e", *flag]
                    r = run_one(cmd, fmt, ds.rows)
                    runs.setdefault(f"{product} {fmt}", []).append(r)
                    log(f"  {product} {fmt}: {r['rows_per_s'] / 1e6:.3f}M rows/s (first byte {r['first_byte_s']:.2f}s)")
            finally:
                os.environ.pop("PAIMON_TAIL_BENCH_SRC", None)
    med = {k: median([r["rows_per_s"] for r in v]) for k, v in runs.items()}
    rows = [Row("a/b", f"{fmt}, {rounds} alternating runs", med[f"this {fmt}"], med[f"other {fmt}"],
                os.path.basename(other.rstrip("/")), "rows/s") for fmt in ("jsonl", "arrow")]
    return rows, {k: {"median_rows_per_s": med[k], "runs": v} for k, v in runs.items()}
