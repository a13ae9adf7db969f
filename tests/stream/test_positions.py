"""Every position Paimon has: ``--from tag:NAME`` / ``--until tag:NAME``, ``compacted-full``,
``file-creation-time:T``, ``creation-timestamp:T``; branches (``'db.t$branch_NAME'``) for ``follow`` and
``consumers`` with consumer positions kept per branch as Paimon keeps them; a missing tag or branch named.
(Against Paimon Java's streaming reads: tests/stream/test_commit_kinds_java.py.)"""
from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pytest

import paimon_tail
from paimon_tail.stream.positions import parse_start, resolve_start

from tests.conftest import run_cli

KV = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


@pytest.fixture
def kv(wh):
    """db.kv (primary key, 1 bucket): 0..4 (snapshot 1), update 1 (2), delete 3 (3... as a rowkind-free upsert of
    others), tag t1 on 2; 10..11 (3); branch b1 from t1, written with 50 (branch snapshot 3)."""
    wh.create("kv", KV, primary_keys=["id"], options={"bucket": "1"})
    wh.commit("kv", [{"id": i, "v": f"a{i}"} for i in range(5)])
    wh.commit("kv", [{"id": 1, "v": "b1"}])
    table = wh.table("kv")
    table.create_tag("t1", 2)
    wh.commit("kv", [{"id": i, "v": f"c{i}"} for i in (10, 11)])
    table.branch_manager().create_branch("b1", "t1")
    wh.commit("kv$branch_b1", [{"id": 50, "v": "br50"}])
    return wh


def rows(wh, name="db.kv", *args, code=0):
    out = run_cli(["follow", name, "-w", wh.path, "--row-kind", "-e", *args])
    assert out.returncode == code, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()] if code == 0 else out.stderr.decode()


def test_from_tag_reads_the_tag_then_what_came_after(kv):
    got = rows(kv, "db.kv", "--from", "tag:t1")
    assert [(r["id"], r["v"]) for r in got] == [(0, "a0"), (1, "b1"), (2, "a2"), (3, "a3"), (4, "a4"),
                                               (10, "c10"), (11, "c11")]
    assert [(r["id"], r["v"]) for r in rows(kv, "db.kv", "--from", "earliest", "--until", "tag:t1")] == \
        [(i, f"a{i}") for i in range(5)] + [(1, "b1")]
    said = rows(kv, "db.kv", "--from", "tag:t2", code=1)
    assert said == "paimon-tail: tag t2 does not exist (tags: t1)\n"
    assert "--until tag:t1 (snapshot 2) is before snapshot 3" in rows(
        kv, "db.kv", "--from", "snapshot:3", "--until", "tag:t1", code=2)


def test_from_tag_after_its_snapshot_expired(kv):
    """A tag keeps its snapshot's files: following from it works when the snapshot itself is gone."""
    from paimon_tail.expire import expire_snapshots

    for i in range(3):
        kv.commit("kv", [{"id": 20 + i, "v": "x"}])
    expire_snapshots(kv.table("kv"), 2)
    table = kv.table("kv")
    assert table.snapshot_manager().get_snapshot_by_id(2) is None  # what this test is about
    out = run_cli(["follow", "db.kv", "-w", kv.path, "-e", "--from", "tag:t1", "--on-gap", "skip"])
    got = [json.loads(line) for line in out.stdout.splitlines()]
    assert [(r["id"], r["v"]) for r in got] == [(0, "a0"), (1, "b1"), (2, "a2"), (3, "a3"), (4, "a4"),
                                               (21, "x"), (22, "x")]
    assert b"snapshots 3..4 expired before they were read; skipped to 5" in out.stderr
    said = rows(kv, "db.kv", "--from", "tag:t1", code=1)
    assert "snapshots 3..4 expired before they were read" in said  # after the tag, the gap is said as ever


def test_branch_follow_and_its_own_consumer_positions(kv):
    got = rows(kv, "db.kv$branch_b1", "--from", "earliest")
    assert [(r["id"], r["v"]) for r in got] == [(0, "a0"), (1, "b1"), (2, "a2"), (3, "a3"), (4, "a4"),
                                               (50, "br50")]
    out = run_cli(["follow", "db.kv$branch_b1", "-w", kv.path, "-e", "--consumer-id", "app"])
    assert out.returncode == 0, out.stderr
    table = os.path.join(kv.path, "db.db", "kv")
    assert json.load(open(os.path.join(table, "branch", "branch-b1", "consumer", "consumer-app"))) == \
        {"nextSnapshot": 4}  # where Paimon keeps a branch's consumers
    assert not os.path.exists(os.path.join(table, "consumer", "consumer-app"))
    listed = run_cli(["consumers", "db.kv$branch_b1", "-w", kv.path, "--json"])
    assert [json.loads(line) for line in listed.stdout.splitlines()] == \
        [{"consumer": "app", "next_snapshot": 4, "behind": 0, "holds_back_expiry": False}]
    assert run_cli(["consumers", "db.kv", "-w", kv.path, "--json"]).stdout == b""
    # the quick exit (nothing new on the branch) reads the branch's snapshots too
    again = run_cli(["follow", "db.kv$branch_b1", "-w", kv.path, "-e", "--from", "latest"])
    assert again.returncode == 0 and again.stdout == b""
    kv.commit("kv$branch_b1", [{"id": 51, "v": "br51"}])
    resumed = run_cli(["follow", "db.kv$branch_b1", "-w", kv.path, "-e", "--consumer-id", "app"])
    assert [json.loads(line)["id"] for line in resumed.stdout.splitlines()] == [51]


def test_missing_branch_is_named(kv):
    said = rows(kv, "db.kv$branch_nope", code=1)
    assert said == "paimon-tail: branch nope of db.kv does not exist (branches: b1)\n"
    said = rows(kv, "db.nope$branch_b1", code=1)
    assert said.startswith("paimon-tail: table db.nope does not exist")


def test_compacted_full_starts_at_the_latest_compaction(kv):
    from paimon_tail.demo import compact

    assert rows(kv, "db.kv", "--from", "compacted-full") == rows(kv, "db.kv", "--from", "latest-full")  # none yet
    assert compact(kv.table("kv"))
    kv.commit("kv", [{"id": 99, "v": "after"}])
    table = paimon_tail.open_table("db.kv", warehouse=kv.path)
    items = list(paimon_tail.follow_sync(table, start="compacted-full", exit_at_end=True))
    assert [(i.kind, i.snapshot_id) for i in items] == [("full", 4), ("delta", 5)]
    assert items[0].batch.num_rows == 7 and items[1].batch.to_pylist() == [{"id": 99, "v": "after"}]


def test_file_creation_time_reads_the_files_created_since(kv):
    time.sleep(0.05)
    since = int(time.time() * 1000)
    time.sleep(0.05)
    kv.commit("kv", [{"id": 30, "v": "new"}])
    got = rows(kv, "db.kv", "--from", f"file-creation-time:{since}")
    assert [(r["id"], r["v"]) for r in got] == [(30, "new")]  # Paimon's from-file-creation-time: those files only
    assert [(r["id"], r["v"]) for r in rows(kv, "db.kv", "--from", f"creation-timestamp:{since}")] == [(30, "new")]


def test_creation_timestamp_is_from_timestamp_while_a_snapshot_after_it_is_kept(kv):
    files = paimon_tail.open_table("db.kv", warehouse=kv.path).snapshot_manager()
    from paimon_tail.storage.snapshots import SnapshotFiles

    snaps = SnapshotFiles(files)
    t2 = files.get_snapshot_by_id(2).time_millis
    assert resolve_start(parse_start(f"creation-timestamp:{t2}"), snaps) == \
        resolve_start(parse_start(f"timestamp:{t2}"), snaps)
    later = resolve_start(parse_start(f"creation-timestamp:{files.get_latest_snapshot().time_millis + 1}"), snaps)
    assert later.full_snapshot_id == 3 and later.created_after_ms is not None
