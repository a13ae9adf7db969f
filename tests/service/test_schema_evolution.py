"""Schema evolution while serving: a writer adds a column and widens another; the running service answers with
them (no restart), every answer says the schema it was read at, and answers equal pypaimon's batch read."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

from paimon_tail.catalog import catalog_config
from paimon_tail.service.client import LookupClient

from tests.service.conftest import ServeProcess, Warehouse, run_cli

SCHEMA = pa.schema([("k", pa.int32()), ("v", pa.string()), ("n", pa.int32()), ("op", pa.string())])


@pytest.fixture
def evolving(tmp_path):
    wh = Warehouse(str(tmp_path / "wh"))
    wh.create("ev", SCHEMA, primary_keys=["k"], bucket=2)
    wh.write("ev", [{"k": k, "v": f"v{k}", "n": k, "op": "+I"} for k in range(100)])
    svc = ServeProcess(wh.path, ["db.ev"]).wait_ready()
    yield wh
    assert svc.stop() == 0, svc.lines


def _alter(wh):
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange

    wh.catalog.alter_table("db.ev", [SchemaChange.add_column("extra", AtomicType("BIGINT")),
                                     SchemaChange.update_column_type("n", AtomicType("BIGINT"))])
    return wh.table("ev").table_schema.id


def test_a_column_added_and_widened_while_serving(evolving):
    wh = evolving
    keys = list(range(-3, 103))
    with LookupClient("db.ev", catalog_config(wh.path), timeout=20) as c:  # opened before the change
        before = c.lookup_sync(keys)
        assert set(before.schema_ids.values()) == {0} and before.schema_id == 0
        assert before.rows.schema.names == ["k", "v", "n", "op"] and before.rows.schema.field("n").type == pa.int32()

        schema_id = _alter(wh)
        assert schema_id > 0
        sid = wh.write("ev", [{"k": k, "v": f"w{k}", "n": 10 ** 12 + k, "extra": 7 * k, "op": "+U"}
                              for k in range(0, 100, 3)])
        after = c.lookup_sync(keys, min_snapshot=sid)
        assert set(after.snapshot_ids.values()) == {sid}
        assert set(after.schema_ids.values()) == {schema_id} and after.schema_id == schema_id
        assert after.rows.schema.field("n").type == pa.int64() and "extra" in after.rows.schema.names
        oracle = wh.batch_read("ev")  # pypaimon's batch read at the latest snapshot (= sid), latest schema
        assert {(r["k"],): r for r in after.rows.to_pylist()} == oracle
        assert sorted(after.missing) == [0, 1, 2, 103, 104, 105]
        assert oracle[(3,)]["extra"] == 21 and oracle[(4,)]["extra"] is None and oracle[(3,)]["n"] == 10 ** 12 + 3

        # the new column by name, from the client that read the schema before it existed
        assert c.lookup_sync([3, 4], select=["k", "extra"]).rows.to_pylist() == \
            [{"k": 3, "extra": 21}, {"k": 4, "extra": None}]
        assert c.get_sync(3, select=["extra", "n"]) == {"extra": 21, "n": 10 ** 12 + 3}
        assert c.get_sync(4) == oracle[(4,)]

    r = run_cli("lookup", "db.ev", "3", "4", "--select", "k,extra,n", "--warehouse", wh.path)
    assert r.returncode == 0, r.stderr
    assert [json.loads(line) for line in r.stdout.splitlines()] == \
        [{"k": 3, "extra": 21, "n": 10 ** 12 + 3}, {"k": 4, "extra": None, "n": 4}]
    r = run_cli("service", "status", "db.ev", "--json", "--warehouse", wh.path)
    st = json.loads(r.stdout)
    assert st["schema_id"] == schema_id and all(e["schema_id"] == schema_id for e in st["executor"])
