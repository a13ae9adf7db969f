"""Batch lookups through the CLI: ``paimon-tail lookup --keys-from -`` with keys on stdin, rows on stdout.

    python -m benchmarks cli-lookup [--size tiny|full]

1M keys (tiny: 20k) of ``db.kv`` (1M rows, 4 buckets, 2 executors) in a random order, as JSON lines in → JSON
lines out, and as an Arrow IPC stream in → an Arrow IPC stream out. Wall time is spawn → EOF (start-up included,
as a pipeline sees it), keys/s = keys / wall. The baseline, in the same run, is the library on the same keys:
a process that reads the Arrow keys and calls ``LookupClient.lookup`` on chunks of 64k keys without writing
anything (the service's own pace, which the CLI can at best match). The output is checked row by row count.
"""
from __future__ import annotations

import os
import sys

import pyarrow as pa

from .common import DATA, Row, Service, Size, kv_warehouse, median, paimon_tail_cmd, spread, time_process

LIBRARY = r"""
import sys, time
import pyarrow as pa
from paimon_tail.service.client import LookupClient
client = LookupClient("db.kv", warehouse=sys.argv[1], timeout=60)
keys = pa.ipc.open_stream(sys.argv[2]).read_all()
found = 0
for start in range(0, keys.num_rows, 65536):
    found += len(client.lookup_sync(keys.slice(start, 65536)).found)
client.close_sync()
print(found)
"""


def _keys(n: int, rows: int) -> tuple:
    """(JSON lines file, Arrow IPC file) of ``n`` keys, every one present, in a scattered order."""
    import numpy as np

    base = DATA / f"keys-{n}-{rows}"
    jsonl, arrow = base.with_suffix(".jsonl"), base.with_suffix(".arrows")
    if not jsonl.exists() or not arrow.exists():
        ids = (np.arange(n, dtype=np.int64) * 7919) % rows
        jsonl.write_text("".join(f'{{"id": {i}}}\n' for i in ids.tolist()))
        table = pa.table({"id": ids})
        with pa.OSFile(str(arrow), "wb") as f, pa.ipc.new_stream(f, table.schema) as w:
            w.write_table(table, max_chunksize=65536)
    return str(jsonl), str(arrow)


def run(size: Size, log) -> tuple:
    n, rows = (1_000_000, 1_000_000) if size.name == "full" else (20_000, 20_000)
    repeat = 3 if size.name == "full" else 1
    wh = kv_warehouse(rows, log)
    jsonl, arrow = _keys(n, rows)
    pt = paimon_tail_cmd() + ["lookup", "db.kv", "-w", wh, "--keys-from", "-"]
    cases = {
        "JSON lines in, JSON lines out": (pt, jsonl, lambda out: out.count(b"\n") == n),
        "Arrow IPC in, Arrow IPC out": (pt + ["-f", "arrow"], arrow,
                                        lambda out: pa.ipc.open_stream(out).read_all().num_rows == n),
        "library: LookupClient.lookup, 64k keys a call": ([sys.executable, "-c", LIBRARY, wh, arrow], None,
                                                          lambda out: int(out) == n),
    }
    service = Service(wh, "db.kv")
    runs = {name: [] for name in cases}
    try:
        for _ in range(repeat):  # rounds, so noise hits every contender alike
            for name, (cmd, stdin, check) in cases.items():
                wall, code, out, err = time_process(cmd, stdin)
                if code != 0 or not check(out):
                    raise RuntimeError(f"{name}: exit {code}: {err.decode()[-1500:]}")
                runs[name].append(n / wall)
                log(f"  {name}: {n / wall / 1e3:.0f}k keys/s (wall {wall:.2f}s, load {os.getloadavg()[0]:.1f})")
    finally:
        service.stop()
    lib = median(runs["library: LookupClient.lookup, 64k keys a call"])
    out_rows = []
    for name, target in (("JSON lines in, JSON lines out", 500_000), ("Arrow IPC in, Arrow IPC out", 1_000_000)):
        rate = median(runs[name])
        sp = spread(runs[name])
        out_rows.append(Row("cli lookup", f"{name}, spawn → EOF", rate, lib, "library, same keys", "rows/s", True,
                            f">= {target / 1e6:g}M keys/s", rate >= target if size.name == "full" else None,
                            note=f"{n:,} keys; median of {repeat}" + (f", spread {sp * 100:.0f}%" if sp else "")))
    return out_rows, {name: {"keys_per_s": r, "median": median(r)} for name, r in runs.items()}
