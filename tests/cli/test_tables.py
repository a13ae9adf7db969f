"""``paimon-tail tables`` and ``paimon-tail describe`` as a user runs them: piped JSON that says what the table
holds (checked against the files on disk), and reports that fit a terminal of 80×24 or 200×50."""
from __future__ import annotations

import datetime
import decimal
import json
import os
import re

import pyarrow as pa
import pytest

from tests.conftest import ORDERS, append_rows, run_cli
from tests.terminal import Terminal, widest_line

DATED = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                   ("status", pa.string()), ("amount", pa.decimal128(10, 2)), ("at", pa.timestamp("us")),
                   ("op", pa.string())])


@pytest.fixture
def shop(wh):
    """db.orders: primary key (id, dt), partitioned by dt, 3 buckets, rows by rowkind.field; db.log: an append
    table; db2.empty: no snapshot yet; a consumer of db.orders."""
    from pypaimon import Schema

    wh.catalog.create_table("db.orders", Schema.from_pyarrow_schema(
        DATED, primary_keys=["id", "dt"], partition_keys=["dt"], comment="orders by day",
        options={"bucket": "3", "rowkind.field": "op"}), False)
    at = datetime.datetime(2026, 11, 1, 12, 0)
    for c in range(3):
        wh.commit("orders", [{"id": c * 10 + i, "dt": f"2026-11-0{1 + i % 2}", "status": "paid",
                              "amount": decimal.Decimal("9.50"), "at": at, "op": "+I"} for i in range(8)])
    wh.create("log")
    wh.commit("log", append_rows(0, 4))
    wh.catalog.create_database("db2", True)
    wh.catalog.create_table("db2.empty", Schema.from_pyarrow_schema(ORDERS, primary_keys=["id"],
                                                                    options={"bucket": "2"}), False)
    assert run_cli(["follow", "db.orders", "-w", wh.path, "-e", "--consumer-id", "billing"]).returncode == 0
    return wh


def test_describe_says_what_the_table_holds(shop):
    out = run_cli(["describe", "db.orders", "-w", shop.path])
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["table"] == "db.orders" and info["comment"] == "orders by day"
    assert [(c["name"], c["type"], c["nullable"]) for c in info["columns"]] == [
        ("id", "BIGINT NOT NULL", False), ("dt", "STRING NOT NULL", False), ("status", "STRING", True),
        ("amount", "DECIMAL(10, 2)", True), ("at", "TIMESTAMP(6)", True), ("op", "STRING", True)]
    assert (info["primary_keys"], info["partition_keys"]) == (["id", "dt"], ["dt"])
    assert (info["bucket_mode"], info["buckets"]) == ("HASH_FIXED", 3)
    assert info["options"] == {"bucket": "3", "rowkind.field": "op"}
    latest = shop.table("orders").snapshot_manager().get_latest_snapshot()
    assert info["latest"] == {"id": 3, "time_ms": latest.time_millis, "commit_kind": "APPEND", "total_records": 24,
                              "time": info["latest"]["time"]}
    assert datetime.datetime.fromisoformat(info["latest"]["time"]).timestamp() * 1000 == \
        pytest.approx(latest.time_millis, abs=1)
    assert info["earliest"]["id"] == 1 and info["consumers"] == {"billing": 4}
    files = _data_files(shop)  # nothing compacted or expired: the latest snapshot's are every data file on disk
    assert info["files"] == len(files) > 6 and info["file_bytes"] == sum(map(os.path.getsize, files))
    assert info["file_records"] == 24

    empty = json.loads(run_cli(["describe", "db2.empty", "-w", shop.path]).stdout)
    assert empty["latest"] is None and empty["files"] == 0 and empty["buckets"] == 2


def _data_files(wh) -> list:
    return [os.path.join(d, n) for d, _, names in os.walk(os.path.join(wh.path, "db.db", "orders"))
            for n in names if n.startswith("data-")]


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
def test_describe_and_tables_fit_the_terminal(shop, size):
    columns, lines = size
    with Terminal(["describe", "db.orders", "-w", shop.path], columns, lines) as t:
        assert t.wait_exit() == 0
        screen = t.history()
    assert widest_line(screen) <= columns and len(screen.rstrip().splitlines()) <= lines, screen
    assert screen.startswith("db.orders: orders by day\n"), screen
    for row in (r"^ id +│ BIGINT NOT NULL +│ primary", r"^ dt +│ STRING NOT NULL +│ primary, partition",
                r"^ op +│ STRING +│ row kind", r"^primary key: id, dt · partitioned by: dt$",
                r"^buckets: 3 \(HASH_FIXED\) · schema 0$", r"^latest snapshot: 3 \(APPEND\), committed \d{4}-",
                r"^snapshots kept: 1\.\.3 \(3\)$",
                rf"^files: {len(_data_files(shop))} data files, [\d.]+ KiB, 24 records$",
                r"^consumers: billing \(next snapshot 4\)$", r"^options: bucket=3, rowkind\.field=op$"):
        assert re.search(row, screen, re.M), (row, screen)

    with Terminal(["tables", "-w", shop.path], columns, lines) as t:
        assert t.wait_exit() == 0
        screen = t.history()
    assert widest_line(screen) <= columns and "[ table" not in screen, screen  # a table, not records
    assert re.search(r"^ db\.orders +│ id,dt +│ dt +│ 3 +│ 3 +│ \d+ (s|min) ago", screen, re.M), screen
    assert re.search(r"^ db\.log +│ - +│ - +│ unaware +│ 1 +│", screen, re.M), screen
    assert re.search(r"^ db2\.empty +│ id +│ - +│ 2 +│ - +│ no commit yet", screen, re.M), screen


def test_tables_lists_a_database_a_glob_or_all(shop):
    from paimon_tail.table_info import table_names

    def names(pattern=None):
        return table_names(shop.catalog, pattern)

    assert names() == ["db.log", "db.orders", "db2.empty"]
    assert names("db") == ["db.log", "db.orders"] and names("db*") == names()
    assert names("*.orders") == ["db.orders"] and names("db.o*") == ["db.orders"] and names("db.x*") == []
    ls = run_cli(["ls", "db2", "-w", shop.path])  # the command: `tables`, also as `ls`
    assert [json.loads(line)["table"] for line in ls.stdout.splitlines()] == ["db2.empty"]
    typo = run_cli(["tables", "dv", "-w", shop.path])
    assert typo.returncode == 1
    assert typo.stderr.decode() == "paimon-tail: database dv does not exist (did you mean db?)\n"
    for args in (["describe", "orders"], ["follow", "log", "-e"]):  # every command names the tables of that name
        out = run_cli([*args, "-w", shop.path])
        assert out.returncode == 2 and out.stderr.decode() == f"paimon-tail: table {args[1]!r} is not of the form " \
            f"DATABASE.TABLE (did you mean db.{args[1]}?)\n", (args, out.stderr)
