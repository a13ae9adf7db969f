"""The issue-21 tables: rows shaped like an orders feed (``id, name, v, ts, qty, cat``), with a microsecond timestamp.

* ``ts_append(rows, commits)``: an append table of ``rows`` rows in ``commits`` commits (JSON catch-up with
  timestamps);
* ``pk_table(rows, buckets, files)``: a primary-key table (``id``), ``buckets`` buckets, ``files`` commits of
  sequential ids, so ``files`` data files per bucket (the latest-full read, the Spark reads).

Built once under ``benchmarks/results/data/`` and reused; values are deterministic (seeded by commit).
"""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa

from .common import DATA, commit_arrow

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("v", pa.float64()), ("ts", pa.timestamp("us")),
                    ("qty", pa.int32()), ("cat", pa.string())])
CATEGORIES = ["books", "garden", "toys", "music", "kitchen", "sports", "shoes", "tools", "office", "baby"]
_LETTERS = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
NAME_CHARS = 12
TS_BASE_US = 1_780_000_000_000_000  # 2026-05-28


def rows(ids: np.ndarray, seed: int) -> pa.Table:
    """Rows for ``ids``: random 12-letter names, values, timestamps with microseconds, quantities, categories."""
    n = len(ids)
    rng = np.random.default_rng(seed)
    raw = _LETTERS[rng.integers(0, len(_LETTERS), size=(n, NAME_CHARS))]
    offsets = pa.py_buffer(np.arange(0, (n + 1) * NAME_CHARS, NAME_CHARS, dtype=np.int32).tobytes())
    names = pa.StringArray.from_buffers(n, offsets, pa.py_buffer(raw.tobytes()))
    ts = TS_BASE_US + ids * 1_000_003 + rng.integers(0, 1_000_000, n)
    cats = pa.array(np.array(CATEGORIES, dtype=object)[rng.integers(0, len(CATEGORIES), n)], pa.string())
    return pa.table({"id": pa.array(ids, pa.int64()), "name": names, "v": pa.array(np.round(rng.random(n) * 1e4, 2)),
                     "ts": pa.array(ts, pa.timestamp("us")), "qty": pa.array(rng.integers(1, 100, n, dtype=np.int32)),
                     "cat": cats}, schema=SCHEMA)


def _build(base: Path, create: Callable, commits: int, total: int, log) -> str:
    from pypaimon import CatalogFactory

    wh = base / "warehouse"
    if (base / "done.json").exists():
        return str(wh)
    if base.exists():
        shutil.rmtree(base)
    wh.mkdir(parents=True)
    log(f"building {base.name} (once)")
    cat = CatalogFactory.create({"warehouse": str(wh)})
    cat.create_database("db", True)
    create(cat)
    table = cat.get_table("db.t")
    per = total // commits
    t0 = time.perf_counter()
    for c in range(commits):
        ids = np.arange(c * per, total if c == commits - 1 else (c + 1) * per, dtype=np.int64)
        commit_arrow(table, rows(ids, c))
        if commits >= 10 and (c + 1) % max(1, commits // 10) == 0:
            log(f"  commit {c + 1}/{commits} ({time.perf_counter() - t0:.0f}s)")
    (base / "done.json").write_text(json.dumps({"rows": total, "commits": commits}))
    return str(wh)


def ts_append(total: int, commits: int, log) -> str:
    """A warehouse with ``db.t``, an append table (bucket -1) of ``total`` rows in ``commits`` commits."""
    from pypaimon import Schema

    def create(cat) -> None:
        cat.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, options={"bucket": "-1"}), False)

    return _build(DATA / f"ts-append-{total}-{commits}", create, commits, total, log)


def pk_table(total: int, buckets: int, files: int, log) -> str:
    """A warehouse with ``db.t``: primary key ``id``, ``buckets`` buckets, ``files`` commits (files per bucket)."""
    from pypaimon import Schema

    def create(cat) -> None:
        cat.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"],
                                                            options={"bucket": str(buckets)}), False)

    return _build(DATA / f"ts-pk-{total}-{buckets}-{files}", create, files, total, log)


def table_dir(warehouse: str) -> str:
    return str(Path(warehouse) / "db.db" / "t")


def data_files(warehouse: str) -> list:
    return sorted(str(p) for p in Path(table_dir(warehouse)).rglob("*.parquet"))


__all__ = ["SCHEMA", "data_files", "pk_table", "rows", "table_dir", "ts_append"]
