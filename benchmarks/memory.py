"""Memory: peak RSS of `follow --from earliest -e` to a pipe as the backlog grows (10% → 100% of the data set),
and of one large snapshot (``--from latest-full``). Bounded means the 100% figure stays near the 10% one.
Baseline: the naive pypaimon loop (replaying the same snapshots) over the whole backlog."""
from __future__ import annotations

from .catchup import run_one
from .common import Row, Size, baseline_cmd, catchup_dataset, paimon_tail_cmd


def _arrow_mib(table_dir: str) -> float:
    """The table's size in memory as Arrow (what reading it whole would hold)."""
    import os

    import pyarrow.parquet as pq

    total = 0
    for root, _, names in os.walk(table_dir):
        for n in names:
            if n.endswith(".parquet"):
                total += pq.read_table(os.path.join(root, n)).nbytes
    return total / 2**20


def run(size: Size, log, naive: dict = None) -> tuple:
    ds = catchup_dataset(size, log)
    pt = paimon_tail_cmd() + ["follow", ds.table, "-w", ds.warehouse, "-e", "--nl"]
    tenth = max(1, ds.commits // 10)
    per = ds.rows // ds.commits
    results = {
        "10% backlog": run_one(pt + ["--from", "earliest", "--until", f"snapshot:{tenth}"], "jsonl", per * tenth),
        "100% backlog": run_one(pt + ["--from", "earliest"], "jsonl", ds.rows),
        "one full snapshot": run_one(pt + ["--from", "latest-full"], "jsonl", ds.rows),
    }
    if naive is None:
        naive = run_one(baseline_cmd("pypaimon-stream", "-w", ds.warehouse, "-t", ds.table, "--from-earliest",
                                     "--expect", str(ds.rows)), "jsonl", ds.rows)
    results["naive pypaimon loop, 100% backlog"] = naive
    for name, r in results.items():
        log(f"  {name}: peak RSS {r['peak_rss_mib']:.0f} MiB ({r['rows']:,} rows)")
    arrow_mib = _arrow_mib(ds.table_dir)
    small, big = results["10% backlog"]["peak_rss_mib"], results["100% backlog"]["peak_rss_mib"]
    rows = [
        Row("memory", "peak RSS, 100% backlog", big, small, "paimon-tail, 10% backlog", "MiB", False,
            "<= 1.25x the 10% backlog", big <= 1.25 * small,
            note=f"backlog {ds.rows:,} rows / {ds.commits} snapshots; naive loop peaks at "
                 f"{naive['peak_rss_mib']:.0f} MiB"),
        Row("memory", "peak RSS, one full snapshot", results["one full snapshot"]["peak_rss_mib"], small,
            "paimon-tail, 10% backlog", "MiB", False, "bounded by read threads x queue, not by the snapshot",
            note=f"one snapshot of {ds.rows:,} rows ({arrow_mib:.0f} MiB as Arrow): at most read threads x 4 "
                 "batches are in flight"),
    ]
    return rows, results
