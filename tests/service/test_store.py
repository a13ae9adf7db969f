"""An executor's bucket store on its own: a base file of several record batches (what a bucket above
``BATCH_ROWS`` rows becomes), looked up in a shuffled order that spans the batches, with misses."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from paimon_tail.service.executor import store
from paimon_tail.service.executor.store import BucketStore, positions_by_code


def test_positions_by_code_keeps_each_codes_positions_in_order():
    codes = np.array([3, 1, 3, 0, 1, 3])
    got = [(c, grp.tolist()) for c, grp in positions_by_code(codes)]
    assert got == [(0, [3]), (1, [1, 4]), (3, [0, 2, 5])]


def test_lookup_takes_rows_from_several_batches_in_request_order(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "BATCH_ROWS", 1000)
    schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
    n = 5000
    batches = [pa.record_batch([pa.array(range(i, i + 1000), pa.int64()),
                                pa.array([f"v{k}" for k in range(i, i + 1000)])], schema=schema)
               for i in range(0, n, 1000)]
    s = BucketStore.build(str(tmp_path / "bucket-0"), ["k"], schema, batches)
    assert len(s.base.batches) == 5

    wanted = np.random.default_rng(7).permutation(np.arange(-50, n + 50))
    req, rows = s.lookup(pa.table({"k": pa.array(wanted, pa.int64())}))
    got = dict(zip(wanted[req].tolist(), rows.column("v").to_pylist()))
    assert got == {k: f"v{k}" for k in range(n)}
    assert rows.column("k").to_pylist() == wanted[req].tolist()  # each row next to the key that asked for it
