"""The programs paimon-tail is measured against, and the latency benchmark's writer; each runs as its own process.

    python -m benchmarks.baselines pypaimon-stream -w WH -t db.t [--poll-ms N] [--from-earliest] [--expect N] [--orjson]
    python -m benchmarks.baselines parquet-jsonl DIR      # the limit: pyarrow reads the files, polars writes NDJSON
    python -m benchmarks.baselines parquet-arrow DIR      # the limit for Arrow: the same batches as an IPC stream
    python -m benchmarks.baselines writer -w WH -t db.t --commits N ...
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time


def pypaimon_stream(args) -> int:
    """The naive loop a pypaimon user writes: StreamReadBuilder at its defaults, to_arrow, to_pylist, json.dumps."""
    from pypaimon import CatalogFactory

    dumps = json.dumps
    if args.orjson:
        import orjson

        def dumps(row):  # noqa: E306
            return orjson.dumps(row).decode()
    table = CatalogFactory.create({"warehouse": args.warehouse}).get_table(args.table)
    builder = table.new_stream_read_builder()
    if args.poll_ms:
        builder.with_poll_interval_ms(args.poll_ms)
    scan = builder.new_streaming_scan()
    read = builder.new_read()
    if args.from_earliest:  # replay snapshot by snapshot, as `follow --from earliest` does
        scan.next_snapshot_id = 1
        scan._diff_threshold = 1 << 62
    out = sys.stdout
    seen = 0
    for plan in scan.stream_sync():
        splits = plan.splits()
        if not splits:
            continue
        for row in read.to_arrow(splits).to_pylist():
            out.write(dumps(row) + "\n")
            seen += 1
        out.flush()
        if args.expect and seen >= args.expect:
            break
    return 0


def _parquet_files(directory: str) -> list:
    files = []
    for root, _, names in os.walk(directory):
        files += [os.path.join(root, n) for n in names if n.endswith(".parquet")]
    return sorted(files, key=os.path.getmtime)


def parquet_jsonl(args) -> int:
    import polars as pl
    import pyarrow.parquet as pq

    out = sys.stdout.buffer
    for path in _parquet_files(args.dir):
        pl.from_arrow(pq.read_table(path)).write_ndjson(out)
    out.flush()
    return 0


def parquet_arrow(args) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = sys.stdout.buffer
    writer = None
    for path in _parquet_files(args.dir):
        t = pq.read_table(path)
        if writer is None:
            writer = pa.ipc.new_stream(out, t.schema)
        for batch in t.to_batches(max_chunksize=65536):
            writer.write_batch(batch)
    if writer is not None:
        writer.close()
    out.flush()
    return 0


def writer(args) -> int:
    """Commit ``--commits`` small batches at random intervals; print each batch's commit time (after commit())."""
    import pyarrow as pa
    from pypaimon import CatalogFactory

    table = CatalogFactory.create({"warehouse": args.warehouse}).get_table(args.table)
    schema = pa.schema([("batch", pa.int32()), ("i", pa.int32()), ("ts_ns", pa.int64()), ("payload", pa.string())])
    rng = random.Random(args.seed)
    wb = table.new_batch_write_builder()
    sys.stdin.readline()  # go
    for b in range(args.commits):
        time.sleep(rng.uniform(args.min_gap, args.max_gap))
        t0 = time.time_ns()
        data = pa.table({"batch": [b] * args.rows, "i": list(range(args.rows)), "ts_ns": [t0] * args.rows,
                         "payload": ["x" * 32] * args.rows}, schema=schema)
        w, c = wb.new_write(), wb.new_commit()
        w.write_arrow(data)
        c.commit(w.prepare_commit())
        done = time.time_ns()
        w.close()
        c.close()
        print(json.dumps({"batch": b, "start_ns": t0, "commit_ns": done}), flush=True)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.baselines")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pypaimon-stream")
    p.add_argument("-w", "--warehouse", required=True)
    p.add_argument("-t", "--table", required=True)
    p.add_argument("--poll-ms", type=int, default=0, help="0 = pypaimon's default (1000 ms)")
    p.add_argument("--from-earliest", action="store_true")
    p.add_argument("--expect", type=int, default=0)
    p.add_argument("--orjson", action="store_true")
    p.set_defaults(func=pypaimon_stream)
    for name, func in (("parquet-jsonl", parquet_jsonl), ("parquet-arrow", parquet_arrow)):
        p = sub.add_parser(name)
        p.add_argument("dir")
        p.set_defaults(func=func)
    p = sub.add_parser("writer")
    p.add_argument("-w", "--warehouse", required=True)
    p.add_argument("-t", "--table", required=True)
    p.add_argument("--commits", type=int, default=50)
    p.add_argument("--rows", type=int, default=5)
    p.add_argument("--min-gap", type=float, default=0.02)
    p.add_argument("--max-gap", type=float, default=0.2)
    p.add_argument("--seed", type=int, default=7)
    p.set_defaults(func=writer)
    args = ap.parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
