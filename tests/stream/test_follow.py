"""``paimon_tail.follow`` on real tables written by pypaimon while we follow them."""
from __future__ import annotations

import asyncio
import collections
import decimal
import time

import pyarrow as pa
import pytest

import paimon_tail
from paimon_tail.errors import SnapshotExpired, SnapshotGap, UsageError

from tests.conftest import ORDERS, BackgroundWriter, append_rows


def collect(table, timeout: float = 60, until_rows: int | None = None, **options) -> list:
    """Rows (as dicts, with snapshot id under _sid) the follower yields; stops at ``until_rows`` or the end."""
    async def go():
        rows = []
        async for item in paimon_tail.follow(table, **options):
            for r in item.batch.to_pylist():
                r["_sid"] = item.snapshot_id
                rows.append(r)
            if until_rows is not None and len(rows) >= until_rows:
                break
        return rows

    return asyncio.run(asyncio.wait_for(go(), timeout))


def test_every_row_of_50_concurrent_commits_exactly_once(wh):
    wh.create("log")
    writer = BackgroundWriter(wh, "db.log".split(".")[1], commits=50, size=20)
    table = paimon_tail.open_table("db.log", warehouse=wh.path)
    writer.start()
    rows = collect(table, until_rows=50 * 20, start="earliest")
    writer.join()
    assert writer.error is None
    ids = collections.Counter(r["id"] for r in rows)
    assert set(ids) == set(writer.ids)
    assert all(c == 1 for c in ids.values()), "a row was delivered twice"
    assert sorted({r["_sid"] for r in rows}) == list(range(1, 51))


def test_exit_at_end_after_concurrent_writer(wh):
    wh.create("log")
    for c in range(50):
        wh.commit("log", append_rows(c, 5))
    table = paimon_tail.open_table("db.log", warehouse=wh.path)
    rows = collect(table, start="earliest", exit_at_end=True)
    assert sorted(r["id"] for r in rows) == sorted(r["id"] for c in range(50) for r in append_rows(c, 5))
    # per-snapshot replay by default: each row carries the snapshot that committed it
    assert {r["_sid"] for r in rows} == set(range(1, 51))


@pytest.fixture
def five_snapshots(wh):
    wh.create("log")
    times = []
    for c in range(5):
        wh.commit("log", append_rows(c, 3))
        times.append(wh.table("log").snapshot_manager().get_latest_snapshot().time_millis)
        time.sleep(0.02)
    return paimon_tail.open_table("db.log", warehouse=wh.path), times


@pytest.mark.parametrize("start, expected_commits, expected_sids", [
    ("earliest", [0, 1, 2, 3, 4], {1, 2, 3, 4, 5}),
    ("latest-full", [0, 1, 2, 3, 4], {5}),
    ("latest", [], set()),
    ("snapshot:3", [2, 3, 4], {3, 4, 5}),
    ("snapshot-full:3", [0, 1, 2, 3, 4], {3, 4, 5}),
])
def test_start_positions(five_snapshots, start, expected_commits, expected_sids):
    table, _ = five_snapshots
    rows = collect(table, start=start, exit_at_end=True)
    assert sorted(r["n"] for r in rows) == sorted(c for c in expected_commits for _ in range(3))
    assert {r["_sid"] for r in rows} == expected_sids


def test_timestamp_start_and_until(five_snapshots):
    table, times = five_snapshots
    rows = collect(table, start=f"timestamp:{times[2]}", exit_at_end=True)
    assert sorted({r["n"] for r in rows}) == [2, 3, 4]  # snapshots committed at or after T, as in Paimon Java
    rows = collect(table, start="earliest", until="snapshot:2", exit_at_end=False)
    assert sorted({r["n"] for r in rows}) == [0, 1]
    rows = collect(table, start="earliest", until=f"timestamp:{times[3]}")
    assert sorted({r["n"] for r in rows}) == [0, 1, 2, 3]
    rows = collect(table, start="-1h", exit_at_end=True)
    assert len(rows) == 15


def test_latest_sees_new_commits(wh):
    wh.create("log")
    wh.commit("log", append_rows(0))
    table = paimon_tail.open_table("db.log", warehouse=wh.path)
    writer = BackgroundWriter(wh, "log", commits=3, first=1, pause=0.05)

    async def go():
        rows = []
        follower = paimon_tail.follow(table, start="latest")
        agen = follower.__aiter__()
        first = asyncio.ensure_future(agen.__anext__())
        while follower.stats.start_id is None:  # "latest" is resolved when following starts
            await asyncio.sleep(0.01)
        writer.start()
        rows += (await first).batch.to_pylist()
        async for item in agen:
            rows += item.batch.to_pylist()
            if len(rows) >= 30:
                break
        return rows

    rows = asyncio.run(asyncio.wait_for(go(), 30))
    assert sorted({r["n"] for r in rows}) == [1, 2, 3]


def test_empty_table_is_waited_on(wh):
    wh.create("log")
    table = paimon_tail.open_table("db.log", warehouse=wh.path)
    writer = BackgroundWriter(wh, "log", commits=2, pause=0.2)

    async def go():
        rows = []
        follower = paimon_tail.follow(table)  # latest-full on an empty table
        agen = follower.__aiter__()
        task = asyncio.ensure_future(agen.__anext__())
        await asyncio.sleep(0.5)
        assert not task.done() and follower.stats.waiting_for_first_snapshot
        writer.start()
        item = await task
        rows += item.batch.to_pylist()
        async for item in agen:
            rows += item.batch.to_pylist()
            if len(rows) >= 20:
                break
        return rows

    rows = asyncio.run(asyncio.wait_for(go(), 30))
    assert sorted(r["n"] for r in rows) == [0] * 10 + [1] * 10
    assert collect(table, exit_at_end=True, start="latest") == []


def test_primary_key_row_kinds_and_meta(wh):
    wh.create("orders", ORDERS, primary_keys=["id"], options={"bucket": "2"})
    wh.commit("orders", [{"id": 1, "status": "new", "amount": decimal.Decimal("1.50"), "op": "+I"},
                         {"id": 2, "status": "new", "amount": decimal.Decimal("2"), "op": "+I"}])
    wh.commit("orders", [{"id": 1, "status": "paid", "amount": decimal.Decimal("1.50"), "op": "+U"}])
    wh.commit("orders", [{"id": 2, "status": None, "amount": None, "op": "-D"}])
    table = paimon_tail.open_table("db.orders", warehouse=wh.path)
    rows = collect(table, start="earliest", exit_at_end=True, row_kind=True, meta=True)
    kinds = [(r["_row_kind"], r["id"], r["_snapshot_id"]) for r in rows]
    assert sorted(kinds) == [("+I", 1, 1), ("+I", 2, 1), ("+U", 1, 2), ("-D", 2, 3)]
    assert {r["_bucket"] for r in rows} <= {0, 1}
    assert all(r["_commit_time"] is not None and r["_partition"] == "" for r in rows)
    # latest-full: the merged table, all inserts
    full = collect(table, exit_at_end=True, row_kind=True)
    assert [(r["_row_kind"], r["id"], r["status"]) for r in full] == [("+I", 1, "paid")]


def test_select_and_where_are_exact(wh):
    wh.create("log")
    for c in range(4):
        wh.commit("log", append_rows(c, 50))
    table = paimon_tail.open_table("db.log", warehouse=wh.path)
    rows = collect(table, start="earliest", exit_at_end=True, select=["id", "n"], where="n >= 2 AND id < 2010")
    assert rows and all(set(r) == {"id", "n", "_sid"} for r in rows)
    assert sorted(r["id"] for r in rows) == [2000 + i for i in range(10)] + [3000 + i for i in range(0)]
    with pytest.raises(UsageError):
        paimon_tail.follow(table, select=["nope"])
    with pytest.raises(UsageError):
        paimon_tail.follow(table, where="n >>> 1")


def test_shards_together_are_the_whole_table(wh):
    wh.create("log", options={"bucket": "4", "bucket-key": "id"})
    for c in range(6):
        wh.commit("log", append_rows(c, 40))
    table = paimon_tail.open_table("db.log", warehouse=wh.path)
    for start in ("earliest", "latest-full"):
        parts = [collect(table, start=start, exit_at_end=True, shard=(i, 2), meta=True) for i in range(2)]
        assert parts[0] and parts[1]
        ids = [r["id"] for p in parts for r in p]
        assert sorted(ids) == sorted(r["id"] for c in range(6) for r in append_rows(c, 40))
        assert {r["_bucket"] % 2 for r in parts[0]} == {0} and {r["_bucket"] % 2 for r in parts[1]} == {1}
    only = collect(table, start="earliest", exit_at_end=True, buckets=[3], meta=True)
    assert only and {r["_bucket"] for r in only} == {3}


def test_consumer_position_advances_after_each_snapshot(wh):
    wh.create("log")
    for c in range(3):
        wh.commit("log", append_rows(c, 5))
    table = paimon_tail.open_table("db.log", warehouse=wh.path)
    store = paimon_tail.stream.ConsumerStore(table)

    async def go():
        positions = []
        async for item in paimon_tail.follow(table, start="earliest", exit_at_end=True, consumer_id="job"):
            positions.append((item.snapshot_id, store.get("job")))
        return positions

    positions = asyncio.run(go())
    # while snapshot N is being handed out, the stored position is still N (not yet written)
    assert positions and all(stored == (sid if sid > 1 else None) for sid, stored in positions)
    assert store.get("job") == 4
    with open(f"{table.table_path}/consumer/consumer-job") as f:
        assert f.read() == '{"nextSnapshot": 4}'
    wh.commit("log", append_rows(3, 5))
    rows = collect(table, start="earliest", exit_at_end=True, consumer_id="job")
    assert {r["n"] for r in rows} == {3}, "a restarted consumer resumes where it stopped"


def test_expired_start_and_gap(wh):
    wh.create("log")
    for c in range(6):
        wh.commit("log", append_rows(c, 2))
    table = paimon_tail.open_table("db.log", warehouse=wh.path)
    store = paimon_tail.stream.ConsumerStore(table)
    store.set("slow", 2)
    _expire(table, keep_from=4)
    with pytest.raises(SnapshotExpired, match="snapshot 2 has expired"):
        collect(table, start="snapshot:2", exit_at_end=True)
    with pytest.raises(SnapshotExpired, match="consumer slow"):
        collect(table, start="earliest", exit_at_end=True, consumer_id="slow")
    rows = collect(table, start="earliest", exit_at_end=True)  # full read of snapshot 4, then 5, 6
    assert sorted({r["n"] for r in rows}) == [0, 1, 2, 3, 4, 5]


def test_gap_while_following(wh):
    wh.create("log")
    wh.commit("log", append_rows(0, 2))
    table = paimon_tail.open_table("db.log", warehouse=wh.path)

    async def go(on_gap):
        follower = paimon_tail.follow(table, start="earliest", on_gap=on_gap)
        rows = []
        async for item in follower:
            rows += item.batch.to_pylist()
            if item.snapshot_id == 1:
                for c in range(1, 5):
                    wh.commit("log", append_rows(c, 2))
                _expire(table, keep_from=4)
            if item.snapshot_id == 5:
                break
        return rows, follower.stats.gaps

    with pytest.raises(SnapshotGap, match="snapshots 2..3 expired"):
        asyncio.run(asyncio.wait_for(go("error"), 30))


def test_gap_skip(wh):
    wh.create("log")
    wh.commit("log", append_rows(0, 2))
    table = paimon_tail.open_table("db.log", warehouse=wh.path)

    async def go():
        follower = paimon_tail.follow(table, start="earliest", on_gap="skip")
        seen = []
        async for item in follower:
            seen.append(item.snapshot_id)
            if item.snapshot_id == 1:
                for c in range(1, 5):
                    wh.commit("log", append_rows(c, 2))
                _expire(table, keep_from=4)
            if item.snapshot_id == 5:
                break
        return seen, follower.stats.gaps

    seen, gaps = asyncio.run(asyncio.wait_for(go(), 30))
    assert seen == [1, 4, 5] and gaps == [(2, 4)]


def test_schema_evolution_while_following(wh):
    wh.create("log")
    wh.commit("log", append_rows(0, 2))
    table = paimon_tail.open_table("db.log", warehouse=wh.path)

    async def go():
        follower = paimon_tail.follow(table, start="earliest")
        batches = []
        async for item in follower:
            batches.append(item.batch)
            if item.snapshot_id == 1:
                from pypaimon.schema.schema_change import SchemaChange
                from pypaimon.schema.data_types import AtomicType

                wh.catalog.alter_table("db.log", [SchemaChange.add_column("extra", AtomicType("STRING"))], False)
                wh.commit("log", [{"id": 9, "writer": "w", "n": 1, "extra": "hello"}],
                          schema=pa.schema(list(pa.schema([("id", pa.int64()), ("writer", pa.string()),
                                                           ("n", pa.int32())])) + [pa.field("extra", pa.string())]))
            if item.snapshot_id >= 3 or (item.snapshot_id == 2 and "extra" in item.batch.schema.names):
                break
        return batches, follower.stats.schema_changes

    batches, changes = asyncio.run(asyncio.wait_for(go(), 30))
    assert "extra" not in batches[0].schema.names
    assert batches[-1].to_pylist() == [{"id": 9, "writer": "w", "n": 1, "extra": "hello"}]
    assert changes and changes[0][1:] == (0, 1)


def test_planned_snapshots_keep_the_reads_of_their_schema(wh):
    """A schema change planned ahead of reading sets up new reads for the snapshots after it and leaves the reads
    of the snapshots before it alone: they are read after planning has moved on, through their own schema."""
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange

    from paimon_tail.stream.schedule import END, Planned

    wh.create("log")
    wh.commit("log", append_rows(0, 2))
    wh.commit("log", append_rows(1, 2))
    table = paimon_tail.open_table("db.log", warehouse=wh.path)  # at schema 0
    wh.catalog.alter_table("db.log", [SchemaChange.add_column("extra", AtomicType("STRING"))], False)
    wh.commit("log", [{"id": 9, "writer": "w", "n": 1, "extra": "hello"}],
              schema=pa.schema([("id", pa.int64()), ("writer", pa.string()), ("n", pa.int32()),
                                ("extra", pa.string())]))
    follower = paimon_tail.follow(table, start="earliest", exit_at_end=True)

    async def go():
        schedule = follower.schedule
        schedule.start()
        planned = []
        try:
            while (item := await schedule.take()) is not END:
                assert isinstance(item, Planned), item
                planned.append(item)
                schedule.release(item)
                schedule.done()
            read = []  # planning is over (past the schema change): now read what it planned before it
            for item in planned:
                async for _, batch in follower.reader.open(item.splits, item.table_read):
                    read.append((item.snapshot_id, batch.schema.names, batch.num_rows))
            return planned, read
        finally:
            await schedule.stop()
            follower.close()

    planned, read = asyncio.run(asyncio.wait_for(go(), 30))
    assert [(p.snapshot_id, p.reads.schema_id) for p in planned] == [(1, 0), (2, 0), (3, 1)]
    assert planned[0].reads is planned[1].reads and planned[1].reads is not planned[2].reads
    assert [(sid, "extra" in names, rows) for sid, names, rows in read] == [(1, False, 2), (2, False, 2),
                                                                             (3, True, 1)]
    assert follower.stats.schema_changes == [(3, 0, 1)]


def test_sync_wrapper_and_diff_catch_up(wh):
    wh.create("log")
    for c in range(15):
        wh.commit("log", append_rows(c, 2))
    table = paimon_tail.open_table("db.log", warehouse=wh.path)
    items = list(paimon_tail.follow_sync(table, start="snapshot:2", exit_at_end=True, catch_up="diff"))
    assert {i.kind for i in items} == {"diff"} and {i.snapshot_id for i in items} == {15}
    assert sorted(r["n"] for i in items for r in i.batch.to_pylist()) == sorted(list(range(1, 15)) * 2)


def _expire(table, keep_from: int) -> None:
    """Expire snapshots before ``keep_from`` the way Paimon does: delete their files, move EARLIEST."""
    import os

    snapdir = f"{table.table_path}/snapshot"
    for name in os.listdir(snapdir):
        if name.startswith("snapshot-") and int(name.split("-")[1]) < keep_from:
            os.remove(f"{snapdir}/{name}")
    with open(f"{snapdir}/EARLIEST", "w") as f:
        f.write(str(keep_from))


@pytest.mark.parametrize("prefetch", [True, False])
def test_prefetch_plans_ahead_and_no_prefetch_does_not(wh, prefetch):
    wh.create("log")
    for c in range(5):
        wh.commit("log", append_rows(c, 2))
    table = paimon_tail.open_table("db.log", warehouse=wh.path)
    follower = paimon_tail.follow(table, start="earliest", exit_at_end=True, prefetch=prefetch)
    planned = []
    delta_plan = follower.schedule.planner.delta_plan
    follower.schedule.planner.delta_plan = lambda snap: (planned.append(snap.id), delta_plan(snap))[1]

    async def go():
        ahead = []
        async for item in follower:
            await asyncio.sleep(0.1)  # time for the planner to run ahead, if it may
            ahead.append(max(planned) - item.snapshot_id)
        return ahead

    ahead = asyncio.run(asyncio.wait_for(go(), 30))
    assert len(ahead) == 5
    assert (max(ahead) >= 1) if prefetch else (max(ahead) == 0), ahead
