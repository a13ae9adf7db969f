"""Snapshot expiration (``paimon_tail/expire.py``, used by the demo): what kept snapshots, tags and consumers need
stays and reads back whole with pypaimon; everything else goes, so the warehouse is bounded by what is kept."""
from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from paimon_tail.demo import DemoWriter
from paimon_tail.expire import _Expiration, expire_snapshots


def _rows(table, snapshot_id=None) -> list:
    """pypaimon's batch read of ``table`` (at ``snapshot_id``), as sorted tuples."""
    if snapshot_id is not None:
        table = table.copy({"scan.snapshot-id": str(snapshot_id)})
    read = table.new_read_builder()
    data = read.new_read().to_arrow(read.new_scan().plan().splits())
    return sorted(tuple(r.values()) for r in data.to_pylist())


def _files_on_disk(table) -> tuple:
    """(data files under the bucket directories, files in manifest/) of ``table``."""
    data, manifests = set(), set()
    for root, _, names in os.walk(table.table_path):
        rel = os.path.relpath(root, table.table_path)
        for name in names:
            if rel == "manifest":
                manifests.add(name)
            elif os.path.basename(root).startswith("bucket-") and not name.startswith("."):
                data.add((os.path.basename(root), name))
    return data, manifests


def _needed(table, snapshots) -> tuple:
    """What ``snapshots`` reference: (bucket dir, data file) of every file live in one, and their manifest lists,
    manifests and index manifests."""
    exp = _Expiration(table, table.snapshot_manager())
    data = {(f"bucket-{bucket}", name) for s in snapshots for _, bucket, name in exp._live_files(s)}
    return data, exp._referenced_by(snapshots)


def _kept(table) -> list:
    snapshots = table.snapshot_manager()
    earliest = snapshots.try_get_earliest_snapshot().id
    latest = snapshots.get_latest_snapshot().id
    return [snapshots.get_snapshot_by_id(i) for i in range(earliest, latest + 1)]


def test_kept_snapshots_and_tags_read_back_whole_and_nothing_else_stays(tmp_path):
    """The demo's writer (inserts, updates, deletes; compaction every 7 rounds) with 10 snapshots kept, a tag on an
    early snapshot: every kept snapshot and the tag read back as they read when they were the latest, and on disk
    are exactly the data files and manifests they reference."""
    writer = DemoWriter(str(tmp_path / "wh"), interval=0, seed=5, compact_every=7, retain=10)
    seen = {"orders": {}, "events": {}}
    for step in range(45):
        writer.step()
        for name in seen:
            table = getattr(writer, name)
            seen[name][table.snapshot_manager().get_latest_snapshot().id] = _rows(table)
        if step == 4:
            writer.orders.create_tag("early")
    tag = writer.orders.tag_manager().get("early").trim_to_snapshot()

    for name in seen:
        table = getattr(writer, name)
        kept = _kept(table)
        assert 10 <= len(kept) <= 10 + 7 and kept[0].id > 30, [s.id for s in kept]  # (expired as it compacts)
        for snapshot in kept:
            if snapshot.id in seen[name]:  # (a compaction's snapshot is read as the one before it)
                assert _rows(table, snapshot.id) == seen[name][snapshot.id], (name, snapshot.id)
        tags = [tag] if name == "orders" else []
        assert _files_on_disk(table) == _needed(table, kept + tags), name
    assert _rows(writer.orders.copy({"scan.tag-name": "early"})) == seen["orders"][tag.id]


def test_expiring_again_is_a_no_op_and_a_crash_midway_is_finished_later(tmp_path):
    """A second call with the same retention removes nothing; snapshot files an interrupted expiration left (the
    EARLIEST hint had moved) are expired with the files only they needed by the next call."""
    writer = DemoWriter(str(tmp_path / "wh"), interval=0, seed=6, compact_every=5, retain=1000)
    for _ in range(20):
        writer.step()
    table = writer.orders
    snapshots = table.snapshot_manager()
    # an expiration that stopped right after moving the hint: every file is still there
    with open(f"{snapshots.snapshot_dir}/EARLIEST", "w") as f:
        f.write("15")
    done = expire_snapshots(table, 4)
    assert snapshots.get_latest_snapshot().id == 24  # 20 commits, 4 compactions
    assert (done.snapshots, done.earliest) == (20, 21) and done.data_files > 0
    assert sorted(os.listdir(snapshots.snapshot_dir)) == sorted(
        ["EARLIEST", "LATEST"] + [f"snapshot-{i}" for i in range(done.earliest, done.earliest + 4)])
    assert _files_on_disk(table) == _needed(table, _kept(table))
    assert not expire_snapshots(table, 4) and _files_on_disk(table) == _needed(table, _kept(table))


def _follow(wh: str, *args: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "PAIMON_WAREHOUSE"}
    return subprocess.Popen([sys.executable, "-m", "paimon_tail", "follow", "shop.events", "-w", wh, "--nl", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


@pytest.mark.slow
def test_a_follower_with_a_consumer_id_gets_every_row_while_files_expire(tmp_path):
    """A follower with --consumer-id stalls (nobody reads its output) while the writer commits, compacts and
    expires with 2 snapshots kept: expiry stops at the consumer's position, so when the follower goes on it reads
    every event exactly once; once it has caught up, expiry removes what it read."""
    wh = str(tmp_path / "wh")
    writer = DemoWriter(wh, interval=0, seed=7, compact_every=3, retain=2)
    for _ in range(5):
        writer.step()
    events = writer.events
    proc = _follow(wh, "--from", "earliest", "--consumer-id", "slow")
    fcntl.fcntl(proc.stdout.fileno(), 1031, 4096)  # F_SETPIPE_SZ: the smallest pipe
    consumer = f"{events.table_path}/consumer/consumer-slow"
    try:
        deadline = time.monotonic() + 60
        while not os.path.exists(consumer):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            time.sleep(0.05)
        # stall it: its pipe (made one page long) fills within a few commits, then it waits in a write
        for _ in range(60):
            writer.step()
        position = json.load(open(consumer))["nextSnapshot"]
        snapshots = events.snapshot_manager()
        latest = snapshots.get_latest_snapshot().id
        written = {r[0] for r in _rows(events)}  # every event committed up to `latest`
        assert position < latest - 10, (position, latest)  # stalled far behind, and nothing it needs went:
        assert snapshots.try_get_earliest_snapshot().id == position
        lines: list = []
        reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
        reader.start()
        deadline = time.monotonic() + 60
        while json.load(open(consumer))["nextSnapshot"] <= latest:
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            time.sleep(0.1)
        writer.step()
        writer.compact()
        assert snapshots.try_get_earliest_snapshot().id > position
    finally:
        proc.terminate()
        proc.wait(10)
    reader.join(10)
    ids = [json.loads(line)["event_id"] for line in lines]
    assert len(ids) == len(set(ids))  # nothing twice
    assert written <= set(ids) <= {r[0] for r in _rows(events)}, sorted(written - set(ids))[:10]  # nothing lost
    assert _files_on_disk(events) == _needed(events, _kept(events))
