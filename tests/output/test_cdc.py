"""``follow --format debezium|canal|maxwell`` on tables written by pypaimon: inserts, updates, deletes and a full
start, each Debezium event checked against the envelope Debezium documents (tests/cdc_check.py), and round trips
where the events, applied as a replica would, rebuild the table equal to a batch read. Changelog producers
``input`` and ``lookup`` (real -U/+U pairs, written by Paimon Java): tests/output/test_cdc_java.py."""
from __future__ import annotations

import asyncio
import datetime
import decimal
import io
import json
import random

import pyarrow as pa
import pytest

from paimon_tail.catalog import TableRef
from paimon_tail.output.cdc import DebeziumRenderer
from paimon_tail.output.values import plain_rows
from paimon_tail.stream.follower import FollowBatch

from tests.cdc_check import debezium_events, fold
from tests.conftest import append_rows, run_cli, start_cli

CDC = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("price", pa.decimal128(10, 2)),
                 ("at", pa.timestamp("us")), ("day", pa.date32()), ("op", pa.string())])
PART = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int32(), nullable=False),
                  ("v", pa.int64()), ("op", pa.string())])


def row(i: int, version: int = 0, op: str = "+I") -> dict:
    return {"id": i, "name": f"n{i}_v{version}", "price": decimal.Decimal(f"{i}.{version:02d}"),
            "at": datetime.datetime(2026, 1, 1, 12, 0, 0, i * 1000 + version), "day": datetime.date(2026, 1, 1 + i % 28),
            "op": op}


def deleted(i: int) -> dict:
    return {"id": i, "name": None, "price": None, "at": None, "day": None, "op": "-D"}


def state_of(wh, name: str, keys) -> dict:
    """The table as a batch read sees it, in the JSON mapping every format uses."""
    table = wh.table(name)
    rb = table.new_read_builder()
    data = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    rows = plain_rows(data.combine_chunks().to_batches()[0]) if data.num_rows else []
    return same_times({tuple(r[k] for k in keys): r for r in rows})


def same_times(state: dict) -> dict:
    """ISO-8601 times as instants: the polars writer spells 12:00:00.012000 as 12:00:00.012 (one JSON mapping,
    two spellings of a fraction; see docs/follow.md)."""
    return {k: {c: datetime.datetime.fromisoformat(v) if c == "at" and v else v for c, v in r.items()}
            for k, r in state.items()}


def snapshot_times(wh, name: str) -> dict:
    sm = wh.table(name).snapshot_manager()
    return {i: sm.get_snapshot_by_id(i).time_millis for i in range(1, sm.get_latest_snapshot().id + 1)}


@pytest.fixture(params=["none", "input"], ids=["no-changelog-producer", "changelog-producer-input"])
def orders(wh, request):
    """(pypaimon's input changelog holds the buffer as merged per key: +U alone, like the data files.)"""
    wh.create("orders", CDC, primary_keys=["id"], options={"bucket": "2", "changelog-producer": request.param})
    wh.commit("orders", [row(i) for i in range(1, 21)])  # 1: inserts
    wh.commit("orders", [row(i, 1, "+U") for i in range(1, 6)])  # 2: updates (no changelog producer: +U only)
    wh.commit("orders", [deleted(i) for i in (6, 7, 8)])  # 3: deletes
    wh.commit("orders", [row(i) for i in range(21, 26)] + [row(9, 2, "+U"), deleted(10)])  # 4: all three
    return wh


def test_debezium_inserts_updates_deletes(orders):
    out = run_cli(["follow", "db.orders", "-w", orders.path, "--from", "earliest", "-e", "-f", "debezium"])
    assert out.returncode == 0, out.stderr
    events = debezium_events(out.stdout.splitlines())
    got = [(e["source"]["snapshot_id"], e["op"], (e["after"] or e["before"])["id"]) for e in events]
    expected = ([(1, "c", i) for i in range(1, 21)] + [(2, "u", i) for i in range(1, 6)]
                + [(3, "d", i) for i in (6, 7, 8)] + [(4, "c", i) for i in range(21, 26)] + [(4, "u", 9), (4, "d", 10)])
    assert sorted(got) == sorted(expected)
    times = snapshot_times(orders, "orders")
    columns = ["id", "name", "price", "at", "day", "op"]
    for e in events:
        source = e["source"]
        assert (source["db"], source["table"], source["connector"], source["snapshot"]) == \
            ("db", "orders", "paimon", "false")
        assert e["ts_ms"] == source["ts_ms"] == times[source["snapshot_id"]]
        assert list(e["after"] or e["before"]) == columns
    updated = {e["after"]["id"]: e for e in events if e["op"] == "u"}
    assert updated[3]["before"] is None  # no changelog producer: Paimon kept no before image
    assert updated[3]["after"] == {"id": 3, "name": "n3_v1", "price": "3.01", "at": "2026-01-01T12:00:00.003001",
                                   "day": "2026-01-04", "op": "+U"}
    assert same_times(fold("debezium", events, ["id"])) == state_of(orders, "orders", ["id"])


def test_debezium_full_start_reads_then_changes(orders):
    """latest-full: the table as `r` events (source.snapshot "true", "last" on the final one), then, live, every
    commit as changes; the replica equals a batch read at the end."""
    p = start_cli(["follow", "db.orders", "-w", orders.path, "-f", "debezium"])
    try:
        lines = [p.stdout.readline() for _ in range(21)]  # 25 ids - 4 deleted
        reads = debezium_events(lines)
        assert {e["op"] for e in reads} == {"r"}
        assert [e["source"]["snapshot"] for e in reads] == ["true"] * 20 + ["last"]
        assert {e["source"]["snapshot_id"] for e in reads} == {4}
        assert same_times(fold("debezium", reads, ["id"])) == state_of(orders, "orders", ["id"])
        orders.commit("orders", [row(30)] + [row(i, 3, "+U") for i in (1, 2)] + [deleted(11)])
        orders.commit("orders", [deleted(30), row(31)])
        changes = debezium_events(p.stdout.readline() for _ in range(6))
    finally:
        p.terminate()
        p.communicate(timeout=20)
    assert sorted((e["source"]["snapshot_id"], e["op"]) for e in changes) == \
        [(5, "c"), (5, "d"), (5, "u"), (5, "u"), (6, "c"), (6, "d")]
    assert same_times(fold("debezium", reads + changes, ["id"])) == state_of(orders, "orders", ["id"])


@pytest.mark.parametrize("fmt", ["debezium", "canal", "maxwell"])
def test_round_trip_of_random_changes_rebuilds_the_table(wh, fmt):
    """Random upserts and deletes over 12 commits into a partitioned 2-bucket table: the events of the whole
    history, applied in order, are the table."""
    wh.create("kv", PART, primary_keys=["dt", "id"], partition_keys=["dt"], options={"bucket": "2"})
    rng = random.Random(fmt)
    live = set()
    for c in range(12):
        rows = {}
        for _ in range(rng.randint(5, 40)):
            key = (f"2026-01-0{rng.randint(1, 3)}", rng.randint(0, 60))
            if key in live and rng.random() < 0.3:
                rows[key] = {"dt": key[0], "id": key[1], "v": None, "op": "-D"}
                live.discard(key)
            else:
                rows[key] = {"dt": key[0], "id": key[1], "v": c * 100 + key[1], "op": "+U" if key in live else "+I"}
                live.add(key)
        wh.commit("kv", list(rows.values()))
    out = run_cli(["follow", "db.kv", "-w", wh.path, "--from", "earliest", "-e", "-f", fmt])
    assert out.returncode == 0, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines()]
    if fmt == "debezium":
        debezium_events(out.stdout.splitlines())
    replica = fold(fmt, events, ["dt", "id"])
    assert replica == state_of(wh, "kv", ["dt", "id"])
    assert set(replica) == live
    if fmt == "canal":
        assert {e["pkNames"] == ["dt", "id"] and e["database"] == "db" and e["table"] == "kv" for e in events} == {True}
    if fmt == "maxwell":
        ends = [e for e in events if e.get("commit")]
        assert [e["xid"] for e in ends] == list(range(1, 13))  # one commit marker per snapshot, on its last row


def test_key_delimiter_gives_kcat_its_key(orders, wh):
    out = run_cli(["follow", "db.orders", "-w", orders.path, "--from", "earliest", "-e", "-f", "debezium",
                   "-K", "\\t"])
    assert out.returncode == 0, out.stderr
    for line in out.stdout.decode().splitlines():
        key, value = line.split("\t", 1)
        event = json.loads(value)
        assert json.loads(key) == {"id": (event["after"] or event["before"])["id"]}
    # an append table has no key: an empty one (kcat -Z makes it NULL)
    wh.create("log")
    wh.commit("log", append_rows(0, 2))
    out = run_cli(["follow", "db.log", "-w", wh.path, "-e", "-f", "maxwell", "-K", "|"])
    assert [line.split("|", 1)[0] for line in out.stdout.decode().splitlines()] == ["", ""]


def test_debezium_of_several_tables(orders, wh):
    wh.create("log")
    for c in range(3):
        wh.commit("log", append_rows(c, 2))
    out = run_cli(["follow", "db.*", "-w", wh.path, "--from", "earliest", "-e", "-f", "debezium"])
    assert out.returncode == 0, out.stderr
    events = debezium_events(out.stdout.splitlines())
    by_table = {}
    for e in events:
        by_table.setdefault(e["source"]["table"], []).append(e)
    assert {e["op"] for e in by_table["log"]} == {"c"} and len(by_table["log"]) == 6
    assert same_times(fold("debezium", by_table["orders"], ["id"])) == state_of(wh, "orders", ["id"])


def _item(kinds_ids, table="db.t", last=False, snapshot=7):
    ref = TableRef(*table.split("."), primary_keys=("id",))
    batch = pa.RecordBatch.from_pydict({"_row_kind": [k for k, _ in kinds_ids], "id": [i for _, i in kinds_ids],
                                        "v": [f"{k}{i}" for k, i in kinds_ids]})
    return FollowBatch(batch, snapshot, 1_800_000_000_000, "delta", 0, "", last_in_snapshot=last, table=ref)


def test_update_pairs_across_batches_and_tables():
    """A -U/+U pair split over two batches of a table, with another table's batch in between, is one `u`; a -U
    whose +U does not follow is a delete, and one left at a snapshot's end too; a stop inside a snapshot prints
    nothing for a -U still waiting (its snapshot is not committed and comes again)."""
    out = io.BytesIO()
    r = DebeziumRenderer(out)
    r.write_item(_item([("+I", 1), ("-U", 2)], "db.t"))
    r.write_item(_item([("-U", 5)], "db.other"))
    r.write_item(_item([("+U", 2), ("-U", 3), ("+U", 4), ("-U", 6)], "db.t", last=True))
    r.write_item(_item([("+U", 5)], "db.other", last=True))
    r.write_item(_item([("-U", 8)], "db.t", snapshot=8))
    r.close()
    events = debezium_events(out.getvalue().splitlines())
    got = [(e["source"]["table"], e["op"], e["before"] and e["before"]["v"], e["after"] and e["after"]["v"])
           for e in events]
    assert got == [
        ("t", "c", None, "+I1"),
        ("t", "u", "-U2", "+U2"),
        ("t", "d", "-U3", None),  # its +U (key 3) never came: +U4 is another key
        ("t", "u", None, "+U4"),
        ("t", "d", "-U6", None),  # left at the snapshot's end
        ("other", "u", "-U5", "+U5"),
    ]
    assert r.events == 6


@pytest.mark.parametrize("key_delimiter", [None, "\t"])
def test_polars_and_python_paths_write_the_same_events(orders, monkeypatch, key_delimiter):
    """Debezium lines come from polars when it writes the columns faithfully, else from Python objects: the same
    events either way (pairs across batches, a full start, keys)."""
    import paimon_tail
    from paimon_tail.output import cdc

    table = paimon_tail.open_table("db.orders", warehouse=orders.path)
    items = list(paimon_tail.follow_sync(table, start="earliest", exit_at_end=True, row_kind=True, batch_size=3))
    items += list(paimon_tail.follow_sync(table, exit_at_end=True, row_kind=True))  # the full start
    items += [_item([("+I", 1), ("-U", 2)]), _item([("+U", 2), ("-U", 3), ("+U", 3), ("-D", 4)], last=True)]

    def render() -> list:
        out = io.BytesIO()
        r = DebeziumRenderer(out, key_delimiter)
        for item in items:
            r.write_item(item)
        r.close()
        lines = out.getvalue().decode().splitlines()
        if key_delimiter:
            lines = [line.split(key_delimiter, 1) for line in lines]
            return [(json.loads(k), json.loads(v)) for k, v in lines]
        return [json.loads(line) for line in lines]

    fast = render()
    monkeypatch.setattr(cdc, "polars_can_write", lambda schema: False)
    general = render()
    assert len(fast) == len(general) > 40

    def times(obj):
        if isinstance(obj, dict):
            return {k: datetime.datetime.fromisoformat(v) if k == "at" and v else times(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [times(v) for v in obj]
        return obj

    assert times(fast) == times(general)


def test_a_snapshots_changes_come_in_the_order_they_were_committed(wh):
    """Two changelog files of one bucket in one snapshot whose key ranges overlap (the inserts, then an update of
    one of them) are read in the order committed, as Paimon Java reads them: one split per bucket, manifest
    order. pypaimon's planner sorted them by key range (the update's one-key file first); the
    ``streaming_split_order`` shim."""
    from paimon_tail.compat import patches

    wh.create("t", CDC, primary_keys=["id"], options={"bucket": "1", "changelog-producer": "input"})
    table = wh.table("t")
    schema = pa.schema([f for f in CDC])
    builder = table.new_batch_write_builder()
    inserts, update, commit = builder.new_write(), builder.new_write(), builder.new_commit()
    try:
        inserts.write_arrow(pa.Table.from_pylist([row(i) for i in range(1, 11)], schema=schema))
        update.write_arrow(pa.Table.from_pylist([row(3, 1, "+U")], schema=schema))
        commit.commit(inserts.prepare_commit() + update.prepare_commit())
    finally:
        for closing in (inserts, update, commit):
            closing.close()

    def events():
        import paimon_tail
        from paimon_tail.tail import tail

        out = io.BytesIO()
        table = paimon_tail.open_table("db.t", warehouse=wh.path)  # installs the shims
        follower = paimon_tail.follow(table, start="earliest", exit_at_end=True, row_kind=True)
        asyncio.run(tail(follower, DebeziumRenderer(out)))
        return debezium_events(out.getvalue().splitlines())

    got = events()
    assert [(e["op"], (e["before"] or e["after"])["id"]) for e in got] == [("c", i) for i in range(1, 11)] + [("u", 3)]
    replica = fold("debezium", got, ["id"], check_before=True)
    assert replica[(3,)]["name"] == "n3_v1" and len(replica) == 10
    # without the shim the update comes first (proves the test reaches the reordering)
    patches.uninstall()
    try:
        from paimon_tail.stream.follower import follow as follow_unpatched
        from paimon_tail.tail import tail

        out = io.BytesIO()
        asyncio.run(tail(follow_unpatched(wh.table("t"), start="earliest", exit_at_end=True, row_kind=True),
                         DebeziumRenderer(out)))
        assert debezium_events(out.getvalue().splitlines())[0]["op"] == "u"
    finally:
        patches.install()
