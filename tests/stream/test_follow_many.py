"""Several tables followed together (``follow db.a db.b``, ``follow 'db.*'``): real tables, real writers, the real
CLI. Every row once and tagged with its table; globs that pick up tables created while following; the formats'
multiplexing. SIGKILL and consumer resume per table: tests/stream/test_follow_many_faults.py."""
from __future__ import annotations

import asyncio
import collections
import io
import json
import re
import time

import pyarrow as pa
import pytest

import paimon_tail
from paimon_tail.errors import TableNotFound, UsageError

from tests.conftest import ORDERS, BackgroundWriter, append_rows, run_cli, start_cli

OTHER = pa.schema([("key", pa.string()), ("score", pa.float64())])


def collect_many(warehouse, tables, until_rows=None, timeout=60, **options) -> list:
    """(table, row) pairs the multi-table follower yields, until ``until_rows`` or its end."""
    async def go():
        out = []
        async for item in paimon_tail.follow_many(warehouse, tables, **options):
            out += [(item.table.full_name, r) for r in item.batch.to_pylist()]
            if until_rows is not None and len(out) >= until_rows:
                break
        return out

    return asyncio.run(asyncio.wait_for(go(), timeout))


@pytest.mark.parametrize("count", [2, 3])
def test_tables_with_live_writers_every_row_once_and_tagged(wh, count):
    """A writer per table commits while one follower reads them all: each row exactly once, under its table."""
    names = [f"t{i}" for i in range(count)]
    writers = []
    for i, name in enumerate(names):
        wh.create(name)
        wh.commit(name, append_rows(0, 5, writer=name))  # a backlog before the follow starts
        writers.append(BackgroundWriter(wh, name, commits=15 + 5 * i, size=7, first=1, pause=0.01))
    for w in writers:
        w.start()
    expected = {f"db.{n}": [r["id"] for r in append_rows(0, 5)] for n in names}
    total = sum(5 + w.commits * 7 for w in writers)
    got = collect_many(wh.path, [f"db.{n}" for n in names], until_rows=total, start="earliest")
    for w in writers:
        w.join()
        assert w.error is None
    for name, w in zip(names, writers):
        expected[f"db.{name}"] += w.ids
    by_table = collections.defaultdict(list)
    for table, row in got:
        by_table[table].append(row["id"])
        if row["writer"] != "w":
            assert row["writer"] == table.split(".")[1], "a row tagged with the wrong table"
    assert set(by_table) == set(expected)
    for table, ids in expected.items():
        assert sorted(by_table[table]) == sorted(ids), f"{table}: rows lost or repeated"
    # interleaved, not one table after the other
    order = [t for t, _ in got]
    switches = sum(1 for a, b in zip(order, order[1:]) if a != b)
    assert switches >= count


def test_order_within_a_table_is_commit_order(wh):
    for name in ("a", "b"):
        wh.create(name)
    for c in range(6):
        wh.commit("a", append_rows(c, 3))
        wh.commit("b", append_rows(c, 2))
    got = []
    for item in paimon_tail.follow_many(wh.path, ["db.*"], start="earliest", exit_at_end=True).iter_sync():
        got.append((item.table.full_name, item.snapshot_id, item.commit_time_ms))
    assert len(got) == 12
    for table in ("db.a", "db.b"):
        sids = [s for t, s, _ in got if t == table]
        assert sids == list(range(1, 7))


def test_cli_three_tables_jsonl_csv_arrow(wh):
    """The same start positions as one table (latest-full here), rows tagged `_table` in every row format."""
    wh.create("a")
    wh.create("b")
    wh.create("orders", ORDERS, primary_keys=["id"], options={"bucket": "2"})
    wh.create("other", OTHER)
    for c in range(3):
        wh.commit("a", append_rows(c, 2))
        wh.commit("b", append_rows(c, 3))
    wh.commit("other", [{"key": "x", "score": 1.5}, {"key": "y", "score": 2.5}])
    wh.commit("orders", [{"id": 1, "status": "new", "amount": None, "op": "+I"}])
    wh.commit("orders", [{"id": 1, "status": "paid", "amount": None, "op": "+U"}])

    out = run_cli(["follow", "db.a", "db.b", "db.other", "-w", wh.path, "-e"])
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert collections.Counter(r["_table"] for r in rows) == {"db.a": 6, "db.b": 9, "db.other": 2}
    assert all(list(r)[0] == "_table" for r in rows)
    assert sorted(r["key"] for r in rows if r["_table"] == "db.other") == ["x", "y"]

    # a glob: the tables of the database, each once even when also named
    out = run_cli(["follow", "db.orders", "db.*", "-w", wh.path, "-e", "--row-kind"])
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert collections.Counter(r["_table"] for r in rows) == {"db.a": 6, "db.b": 9, "db.other": 2, "db.orders": 1}
    assert [(r["_row_kind"], r["status"]) for r in rows if r["_table"] == "db.orders"] == [("+I", "paid")]

    # CSV: a header line whenever the columns change; each row still says its table
    out = run_cli(["follow", "db.a", "db.other", "-w", wh.path, "-e", "--csv"])
    lines = out.stdout.decode().splitlines()
    data = [line for line in lines if not line.startswith("_table,")]
    assert len(data) == 8 and {line.split(",")[0] for line in data} == {"db.a", "db.other"}
    assert lines[0].startswith("_table,")

    # Arrow: a new IPC stream whenever the columns change; `_table` in every batch
    out = run_cli(["follow", "db.a", "db.b", "db.other", "-w", wh.path, "-e", "-f", "arrow"])
    source = pa.input_stream(io.BytesIO(out.stdout))
    tables = []
    while True:
        try:
            tables.append(pa.ipc.open_stream(source).read_all())
        except pa.ArrowInvalid:
            break
    assert len(tables) >= 2
    counts = collections.Counter()
    for t in tables:
        assert t.schema.names[0] == "_table"
        counts.update(t.column("_table").to_pylist())
    assert counts == {"db.a": 6, "db.b": 9, "db.other": 2}


def test_glob_follows_a_table_created_while_following(wh, tmp_path):
    """`follow 'db.*'` live: a table created afterwards is found and followed from its first snapshot, and an
    existing table's new commits keep coming."""
    wh.create("old")
    wh.commit("old", append_rows(0, 2))
    p = start_cli(["follow", "db.*", "-w", wh.path, "--from", "latest"])
    try:
        time.sleep(2.0)  # started, listed, waiting
        wh.create("fresh")
        wh.commit("fresh", append_rows(1, 3, writer="fresh"))
        wh.commit("fresh", append_rows(2, 3, writer="fresh"))
        wh.commit("old", append_rows(5, 2))
        lines = []
        deadline = time.monotonic() + 30
        while len(lines) < 8 and time.monotonic() < deadline:
            line = p.stdout.readline()
            if not line:
                break
            lines.append(json.loads(line))
    finally:
        p.terminate()
        _, err = p.communicate(timeout=20)
    got = collections.Counter((r["_table"], r["id"]) for r in lines)
    assert got == {**{("db.fresh", r["id"]): 1 for c in (1, 2) for r in append_rows(c, 3)},
                   **{("db.old", r["id"]): 1 for r in append_rows(5, 2)}}
    assert "following db.fresh (a new table matching the glob)" in err.decode()


def test_glob_table_dropped_is_left_named_table_dropped_is_an_error(wh):
    for name in ("a", "b", "c"):
        wh.create(name)
        wh.commit(name, append_rows(0, 1))
    events = []
    dropped = "table db.b was dropped while being followed; no longer followed"

    async def go(tables, drop, then_commit, done=lambda rows: False):
        follower = paimon_tail.follow_many(wh.path, tables, start="earliest", on_event=events.append)
        rows = []

        async def consume():
            async for item in follower:
                rows.append(item.table.full_name)
                if len(rows) == 2:
                    wh.catalog.drop_table(drop, False)
                    wh.commit(then_commit, append_rows(1, 1))

        task = asyncio.create_task(consume())
        while not done(rows):  # a drop is noticed while idle, within the notifier's re-check interval
            if task.done():
                task.result()  # raises what the follow raised
            await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return sorted(rows), follower

    rows, follower = asyncio.run(asyncio.wait_for(
        go(["db.a", "db.b*"], "db.b", "a", lambda rows: len(rows) == 3 and dropped in events), 30))
    assert rows == ["db.a", "db.a", "db.b"]
    assert "db.b" not in follower.stats.tables

    with pytest.raises(paimon_tail.PaimonTailError, match="table db.a was dropped while being followed"):
        asyncio.run(asyncio.wait_for(go(["db.a", "db.c"], "db.a", "c"), 30))


def test_multi_follow_errors(wh):
    wh.create("a")
    wh.create("orders", ORDERS, primary_keys=["id"])
    with pytest.raises(TableNotFound, match="no table matches db.x"):
        paimon_tail.follow_many(wh.path, ["db.x*"], exit_at_end=True)
    with pytest.raises(TableNotFound, match="table db.nope does not exist"):
        paimon_tail.follow_many(wh.path, ["db.a", "db.nope"])
    with pytest.raises(TableNotFound, match="database nodb does not exist"):
        paimon_tail.follow_many(wh.path, ["nodb.*"])
    with pytest.raises(UsageError, match="db.a: unknown column status in --select"):
        paimon_tail.follow_many(wh.path, ["db.*"], select=["id", "status"])
    # a live glob that matches nothing yet waits for a table instead of failing
    events = []
    follower = paimon_tail.follow_many(wh.path, ["db.later*"], on_event=events.append)
    assert follower.followers == {} and events == ["no table matches db.later* yet: waiting for one to be created"]


def test_live_view_has_a_section_per_table(wh):
    """On a terminal: one section per table with its own snapshot and lag, the totals in the footer."""
    import sys

    pexpect = pytest.importorskip("pexpect")
    for name in ("orders", "events"):
        wh.create(name)
        wh.commit(name, append_rows(1 if name == "orders" else 2, 2))
    child = pexpect.spawn(sys.executable, ["-m", "paimon_tail", "follow", "db.*", "-w", wh.path, "--from", "earliest"],
                          dimensions=(40, 120), timeout=30, encoding="utf-8",
                          env={"TERM": "xterm", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
    try:
        child.expect(r"2 tables · 2 live")
        wh.commit("events", append_rows(3, 2))
        child.expect(r"db\.events(\x1b\[[0-9;]*m)* · snapshot 2 · lag 0")
        screen = child.before + child.after
        child.expect(r"2 tables · 2 live")
        screen = re.sub(r"\x1b\[[0-9;]*[mK]", "", screen + child.before)
        assert "db.orders · snapshot 1" in screen and "3001" in screen and "1000" in screen
        child.sendintr()
        child.expect(pexpect.EOF, timeout=20)
    finally:
        child.close(force=True)


def test_a_listing_failure_is_said_once_and_the_follow_goes_on(wh):
    """The glob's database disappears for a while (moved away, an object store that errs): one event, not one per
    second; its tables stop being followed; when it is back, its tables are followed again."""
    import os

    wh.catalog.create_database("db2", True)
    wh.catalog.create_table("db2.t", __import__("pypaimon").Schema.from_pyarrow_schema(
        pa.schema([("id", pa.int64())]), options={"bucket": "-1"}), False)
    events = []
    follower = paimon_tail.follow_many(wh.path, ["db2.*"], start="earliest", discover_interval=0.1,
                                       on_event=events.append)
    path = os.path.join(wh.path, "db2.db")

    async def go():
        async def consume():
            async for _ in follower:
                pass

        task = asyncio.create_task(consume())
        try:
            await asyncio.sleep(0.5)
            os.rename(path, path + ".away")
            deadline = time.monotonic() + 10
            while not any("db2.t was dropped" in e for e in events):
                assert time.monotonic() < deadline, events
                await asyncio.sleep(0.1)
            await asyncio.sleep(1.0)  # ten listings while the database is away
            os.rename(path + ".away", path)
            while "following db2.t (a new table matching the glob)" not in events:
                assert time.monotonic() < deadline + 10, events
                await asyncio.sleep(0.1)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    asyncio.run(asyncio.wait_for(go(), 30))
    failures = [e for e in events if e.startswith("cannot list tables")]
    assert len(failures) == 1, events
    assert "db2" in failures[0]
