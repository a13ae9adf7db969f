"""The store inside a real ``serve``, at every stage: loading (rows read on demand), evicted and written again
(budgets far below the table), after commits — a miss-heavy workload, every answer compared with pypaimon's merge
read at the snapshot the answer reports."""
from __future__ import annotations

import os
import random

import pyarrow as pa

from paimon_tail.catalog import catalog_config
from paimon_tail.service.client import LookupClient

from tests.service.conftest import ServeProcess

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string()), ("n", pa.int64()), ("op", pa.string())])


def _truth_at(warehouse, name: str, snapshot_id: int) -> dict:
    table = warehouse.table(name).copy({"scan.snapshot-id": str(snapshot_id)})
    rb = table.new_read_builder()
    splits = rb.new_scan().plan().splits()
    for split in splits:  # Paimon's semantics (see test_store._truth)
        split.raw_convertible = False
    return {r["k"]: r for r in rb.new_read().to_arrow(splits).to_pylist()}


def _check(warehouse, client, keys, min_snapshot=None, name: str = "stages") -> int:
    r = client.lookup_sync(keys, min_snapshot=min_snapshot)
    (snap,) = set(r.snapshot_ids.values())
    truth = _truth_at(warehouse, name, snap)
    got = {row["k"]: row for row in r.rows.to_pylist()}
    assert got == {k: truth[k] for k in keys if k in truth}, f"at snapshot {snap}"
    assert sorted(r.missing) == sorted(i for i, k in enumerate(keys) if k not in truth)
    return snap


def test_every_stage_answers_the_batch_read_of_its_snapshot(warehouse, tmp_path):
    warehouse.create("stages", SCHEMA, primary_keys=["k"], bucket=4)
    rnd = random.Random(18)
    for c in range(8):  # 8 files per bucket
        warehouse.write("stages", [{"k": k, "v": f"c{c}-{k}", "n": c, "op": "+I"} for k in range(c * 5000, (c + 1) * 5000)])
    local = tmp_path / "local"
    svc = ServeProcess(warehouse.path, ["db.stages"], "--local-dir", str(local), "--max-disk", "48K",
                       "--max-memory", "256K").wait_ready()
    try:
        with LookupClient("db.stages", catalog_config(warehouse.path), timeout=60) as client:
            def miss_heavy():  # nine misses for every hit
                return [rnd.randrange(40_000) if rnd.random() < 0.1 else rnd.randrange(10 ** 6, 10 ** 7)
                        for _ in range(1500)]

            _check(warehouse, client, miss_heavy())  # loading: rows read on demand
            for c in range(6):
                rows = [{"k": k, "v": f"u{c}-{k}", "n": 100 + c, "op": "-D" if rnd.random() < 0.2 else "+U"}
                        for k in rnd.sample(range(40_000), 3000)]
                sid = warehouse.write("stages", rows)
                assert _check(warehouse, client, miss_heavy() + [r["k"] for r in rows[:200]], sid) >= sid
            st = client.status_sync()
        assert all(e.files_loaded <= e.files for e in st.executors)
        frames = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(local) for f in fs
                     if f.endswith(".frames"))
        assert frames <= 2 * (48 << 10) + 2 * 64 << 10, "the disk budget holds (one file above it per executor)"
        assert sum(e.memory_bytes for e in st.executors) <= 2 * (256 << 10)
    finally:
        svc.stop()


def _settled(client, snapshot_id: int = 0, timeout: float = 60.0) -> bool:
    """Until every executor's heartbeat says it serves ``snapshot_id`` (or later) and is settled."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        executors = list(client.status_sync().executors)
        if executors and all(e.settled and e.info.snapshot_id >= snapshot_id for e in executors):
            return True
        time.sleep(0.2)
    return False


def test_settled_background_and_sheets_answer_the_batch_read(warehouse, tmp_path):
    """No budgets: the background writes every row file, fills the cache and puts each bucket's runs (6 files a
    bucket) into a sheet, then says so (``settled``); answers before, at and after that, and after commits that
    add runs beside the sheets, are pypaimon's."""
    warehouse.create("sheets", SCHEMA, primary_keys=["k"], bucket=2)
    rnd = random.Random(19)
    for c in range(6):
        warehouse.write("sheets", [{"k": k, "v": f"c{c}-{k}", "n": c, "op": "+I"} for k in range(c * 3000, (c + 1) * 3000)])
    svc = ServeProcess(warehouse.path, ["db.sheets"], "--local-dir", str(tmp_path / "local")).wait_ready()
    try:
        with LookupClient("db.sheets", catalog_config(warehouse.path), timeout=60) as client:
            keys = [rnd.randrange(20_000) for _ in range(2000)]
            _check(warehouse, client, keys, name="sheets")
            assert _settled(client), "the background finished with the served snapshot"
            _check(warehouse, client, keys, name="sheets")
            for c in range(5):
                rows = [{"k": k, "v": f"u{c}-{k}", "n": 100 + c, "op": "-D" if rnd.random() < 0.2 else "+U"}
                        for k in rnd.sample(range(18_000), 2000)]
                sid = warehouse.write("sheets", rows)
                assert _check(warehouse, client, keys + [r["k"] for r in rows[:200]], sid, "sheets") >= sid
            assert _settled(client, sid)
            assert _check(warehouse, client, keys, name="sheets") == sid
    finally:
        svc.stop()
