"""System tables: ``follow 't$snapshots'`` watches commits, ``$audit_log``/``$binlog`` are the table's changes,
``$files``, ``$tags``, ``$consumers``, ``$options``, ``$schemas``, ``$partitions`` (and the others pypaimon builds)
are read once, any other is refused in one line; ``paimon-tail snapshots``. (Against Paimon Java's reads of the
same system tables: tests/stream/test_commit_kinds_java.py.)"""
from __future__ import annotations

import json
import time

import pyarrow as pa
import pytest

from paimon_tail.catalog import CatalogConfig
from paimon_tail.stream.multi import follower_for
from paimon_tail.stream.options import FollowOptions
from paimon_tail.stream.system import binlog_rows

from tests.conftest import TestWarehouse, append_rows, run_cli, start_cli


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """db.log (append, partitioned by writer) with 3 commits, a tag and a consumer, shared by the tests that only
    read it; db.live for those that commit."""
    wh = TestWarehouse(str(tmp_path_factory.mktemp("system") / "warehouse"))
    wh.create("live")
    for c in range(3):
        wh.commit("live", append_rows(c, 2))
    wh.create("log", partition_keys=["writer"])
    for c in range(3):
        wh.commit("log", append_rows(c, 4, writer=f"w{c % 2}"))
    wh.table("log").create_tag("t1", 2)
    assert run_cli(["follow", "db.log", "-w", wh.path, "-e", "--consumer-id", "app"]).returncode == 0
    return wh


def cli_rows(wh, name, *args):
    out = run_cli(["follow", name, "-w", wh.path, *args])
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def pypaimon_rows(wh, name):
    table = wh.catalog.get_table(name)
    rb = table.new_read_builder()
    return rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()


@pytest.mark.parametrize("system", ["files", "tags", "consumers", "options", "schemas", "partitions", "manifests",
                                    "buckets", "branches"])
def test_read_once_as_pypaimon_builds_them(tables, system):
    name = f"db.log${system}"
    if system == "tags":
        got = cli_rows(tables, name)  # the command: no -e needed, read once, then done
    else:
        follower = follower_for(CatalogConfig({"warehouse": tables.path}), [name], FollowOptions().normalized())
        got = [r for item in follower.iter_sync() for r in item.batch.to_pylist()]
    want = pypaimon_rows(tables, name)
    assert len(got) == len(want)
    key = next(iter(want[0])) if want else None
    assert [r[key] for r in got] == [r[key] for r in want]
    if system in ("tags", "consumers", "options", "partitions", "files"):
        assert got, "the fixture has what this table shows"
    if system == "tags":
        assert [(r["tag_name"], r["snapshot_id"]) for r in got] == [("t1", 2)]
    if system == "consumers":
        assert [(r["consumer_id"], r["next_snapshot_id"]) for r in got] == [("app", 4)]


def test_snapshots_rows_then_one_per_commit(tables):
    wh = tables
    listed = cli_rows(wh, "db.log$snapshots", "-e")
    assert [r["snapshot_id"] for r in listed] == [1, 2, 3]
    assert [r["commit_kind"] for r in listed] == ["APPEND"] * 3
    batch = pypaimon_rows(wh, "db.log$snapshots")
    assert [r["commit_user"] for r in listed] == [r["commit_user"] for r in batch]
    p = start_cli(["follow", "db.live$snapshots", "-w", wh.path, "--from", "snapshot:4"])  # the next one
    try:
        time.sleep(1.5)  # (started or not, it reads snapshot 4 on: nothing raced)
        wh.commit("live", append_rows(7, 2))
        wh.commit("live", append_rows(8, 2))
        lines = [json.loads(p.stdout.readline()) for _ in range(2)]
    finally:
        p.terminate()
        p.communicate(timeout=20)
    assert [(r["snapshot_id"], r["delta_record_count"]) for r in lines] == [(4, 2), (5, 2)]


def test_snapshots_command_lists_and_follows(tables):
    wh = tables
    out = run_cli(["snapshots", "db.log", "-w", wh.path, "--where", "snapshot_id >= 2"])
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["snapshot_id"] for r in rows] == [2, 3] and "commit_kind" in rows[0]
    assert "base_manifest_list" not in rows[0]  # the columns a person reads first; --select for others
    csv = run_cli(["snapshots", "db.log", "-w", wh.path, "--csv", "-s", "snapshot_id,commit_kind"])
    assert csv.stdout.decode().splitlines() == ["snapshot_id,commit_kind", "1,APPEND", "2,APPEND", "3,APPEND"]
    last = wh.latest("live")
    p = start_cli(["snapshots", "db.live", "-w", wh.path, "-f", "--from", f"snapshot:{last + 1}", "-s",
                   "snapshot_id"])
    try:
        time.sleep(1.5)
        wh.commit("live", append_rows(9, 1))
        assert json.loads(p.stdout.readline()) == {"snapshot_id": last + 1}
    finally:
        p.terminate()
        p.communicate(timeout=20)


def test_audit_log_is_the_changes_with_their_kinds(tables):
    wh = tables
    wh.create("kv", pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("op", pa.string())]),
              primary_keys=["id"], options={"bucket": "1"})
    wh.commit("kv", [{"id": i, "v": f"a{i}", "op": "+I"} for i in range(3)])
    wh.commit("kv", [{"id": 1, "v": "b1", "op": "+U"}, {"id": 2, "v": "a2", "op": "-D"}])
    rows = cli_rows(wh, "db.kv$audit_log", "--from", "earliest", "-e")
    assert [(r["rowkind"], r["id"], r["v"]) for r in rows] == [
        ("+I", 0, "a0"), ("+I", 1, "a1"), ("+I", 2, "a2"), ("+U", 1, "b1"), ("-D", 2, "a2")]
    assert list(rows[0]) == ["rowkind", "id", "v", "op"]
    picked = cli_rows(wh, "db.kv$audit_log", "--from", "earliest", "-e", "-s", "v,rowkind", "--where", "id = 1")
    assert picked == [{"v": "a1", "rowkind": "+I"}, {"v": "b1", "rowkind": "+U"}]
    binlog = cli_rows(wh, "db.kv$binlog", "--from", "earliest", "-e")
    assert binlog[-1] == {"rowkind": "-D", "id": [2], "v": ["a2"], "op": ["-D"]}


def test_binlog_packs_an_update_before_and_after_into_one_row():
    batch = pa.RecordBatch.from_pydict({"_row_kind": ["+I", "-U", "+U", "-D", "-U", "+U", "+U"],
                                        "id": [1, 2, 2, 3, 4, 4, 5], "v": ["a", "b", "c", "d", "e", "f", "g"],
                                        "_snapshot_id": [7] * 7})
    out = binlog_rows(batch, data_end=3).to_pylist()
    assert out == [
        {"_row_kind": "+I", "id": [1], "v": ["a"], "_snapshot_id": 7},
        {"_row_kind": "+U", "id": [2, 2], "v": ["b", "c"], "_snapshot_id": 7},
        {"_row_kind": "-D", "id": [3], "v": ["d"], "_snapshot_id": 7},
        {"_row_kind": "+U", "id": [4, 4], "v": ["e", "f"], "_snapshot_id": 7},
        {"_row_kind": "+U", "id": [5], "v": ["g"], "_snapshot_id": 7},  # no old image kept: +U alone
    ]


@pytest.mark.parametrize("args, says", [
    (["follow", "db.log$ro", "-e"], "pypaimon 2.1 cannot read the ro system table"),
    (["follow", "db.log$statistics", "-e"], "pypaimon 2.1 cannot read the statistics system table"),
    (["follow", "db.log$nope", "-e"], "Paimon has no system table nope"),
    (["follow", "db.log$snapshots", "-e", "--consumer-id", "x"], "--consumer-id does not apply to db.log$snapshots"),
    (["follow", "db.log$files", "--from", "earliest"], "--from does not apply to db.log$files"),
    (["follow", "db.log$audit_log", "-e", "-f", "debezium"], "--format debezium does not go with the system table"),
    (["follow", "db.*$snapshots", "-e"], "a glob matches tables, not branches or system tables"),
    (["consumers", "db.log$snapshots"], "db.log$snapshots keeps no consumer positions"),
    (["snapshots", "db.log$files"], "snapshots takes a table or TABLE$branch_NAME"),
])
def test_refused_in_one_line(tables, args, says):
    out = run_cli([*args, "-w", tables.path])
    err = out.stderr.decode()
    assert out.returncode == 2 and says in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
