"""OVERWRITE snapshots, never silent: skipped as Paimon skips them with one line on stderr each, or, with
``streaming-read-overwrite``, read as their net change (-D for each row removed, +I for each row added) in every
format, so that folding the output gives the table. pypaimon-written overwrites on append and primary-key tables,
partitioned and not (Paimon Java's: tests/stream/test_commit_kinds_java.py)."""
from __future__ import annotations

import collections
import io
import json
import logging
import os

import pyarrow as pa
import pytest

import paimon_tail
from paimon_tail.output.status import StatusLine

from tests.cdc_check import debezium_events, fold
from tests.conftest import run_cli

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                    ("v", pa.string())])
KINDS = {"append": [], "append_unpart": [], "pk": ["dt", "id"], "pk_unpart": ["dt", "id"]}


def write(wh, name: str, rows: list, overwrite: dict | None = None) -> int:
    """One commit of ``rows``; an INSERT OVERWRITE (of ``overwrite``'s partition, {} for the whole table)."""
    table = wh.table(name)
    builder = table.new_batch_write_builder()
    if overwrite is not None:
        builder = builder.overwrite(overwrite)
    w, c = builder.new_write(), builder.new_commit()
    try:
        w.write_arrow(pa.Table.from_pylist(rows, schema=SCHEMA))
        c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()
    return table.snapshot_manager().get_latest_snapshot().id


def rows(dt: str, ids, v: str = "a") -> list:
    return [{"dt": dt, "id": i, "v": f"{v}{i}"} for i in ids]


def make(wh, kind: str, options: dict | None = None) -> str:
    """The issue's table: d1 1..5 + d2 6..8 (a primary-key table then updates key 2, so the files the overwrite
    replaces hold two versions of it), an OVERWRITE of dt=d1 (of the whole table when unpartitioned) with 1 (a new
    value) and 100..102, then 9 appended to d2."""
    keys = KINDS[kind]
    partitioned = not kind.endswith("unpart")
    opts = dict(options or {})
    if keys:
        opts.setdefault("bucket", "2")
    wh.create(kind, SCHEMA, primary_keys=keys or None, partition_keys=["dt"] if partitioned else None, options=opts)
    write(wh, kind, rows("d1", range(1, 6)) + rows("d2", range(6, 9)))
    if keys:
        write(wh, kind, rows("d1", [2], "b"))  # an update: the replaced files hold two versions of key 2
    write(wh, kind, rows("d1", [1, 100, 101, 102], "o"), overwrite={"dt": "d1"} if partitioned else {})
    write(wh, kind, rows("d2", [9]))
    snapshots = [s.commit_kind for s in wh.table(kind).snapshot_manager().list_snapshots()]
    assert snapshots.count("OVERWRITE") == 1, snapshots  # the fixture holds what the test is about
    return kind


def table_rows(wh, name: str) -> collections.Counter:
    return collections.Counter(tuple(r[c] for c in ("dt", "id", "v")) for r in wh.batch_rows(name))


def folded(lines, keys) -> collections.Counter:
    """JSON lines with _row_kind folded: by key for primary-key tables, as a multiset of rows for append ones."""
    if keys:
        state = {}
        for r in lines:
            key = tuple(r[k] for k in keys)
            if r["_row_kind"] in ("+I", "+U"):
                state[key] = (r["dt"], r["id"], r["v"])
            else:
                state.pop(key, None)
        return collections.Counter(state.values())
    bag = collections.Counter()
    for r in lines:
        bag[(r["dt"], r["id"], r["v"])] += 1 if r["_row_kind"] in ("+I", "+U") else -1
    assert all(n >= 0 for n in bag.values()), "a row removed that was never there"
    return +bag


@pytest.mark.parametrize("kind", list(KINDS))
def test_default_skips_the_overwrite_as_paimon_and_says_so_once(wh, kind):
    make(wh, kind)
    out = run_cli(["follow", f"db.{kind}", "-w", wh.path, "--from", "earliest", "--row-kind", "-e"])
    assert out.returncode == 0, out.stderr
    got = [json.loads(line) for line in out.stdout.splitlines()]
    assert {r["id"] for r in got} == set(range(1, 10))  # as Paimon's streaming read: the overwrite's rows skipped
    assert all(r["_row_kind"] == "+I" for r in got)
    lines = out.stderr.decode().splitlines()
    said = [line for line in lines if "OVERWRITE" in line]
    assert len(said) == 1, lines
    sid = 3 if KINDS[kind] else 2
    where = "partition dt=d1" if not kind.endswith("unpart") else "the whole table"
    assert said[0].startswith(f"paimon-tail: snapshot {sid} is an OVERWRITE of {where}: ")
    assert "replaced by 4 rows in " in said[0] and "skipped" in said[0]
    assert "-O streaming-read-overwrite=true" in said[0]


@pytest.mark.parametrize("kind", list(KINDS))
def test_read_overwrite_folds_to_the_table(wh, kind):
    make(wh, kind)
    out = run_cli(["follow", f"db.{kind}", "-w", wh.path, "--from", "earliest", "--row-kind", "-e",
                   "-O", "streaming-read-overwrite=true"])
    assert out.returncode == 0, out.stderr
    assert b"OVERWRITE" not in out.stderr
    got = [json.loads(line) for line in out.stdout.splitlines()]
    removed = sorted((r["dt"], r["id"]) for r in got if r["_row_kind"] == "-D")
    if kind.endswith("unpart"):  # the whole table was replaced
        assert removed == [("d1", i) for i in range(1, 6)] + [("d2", i) for i in range(6, 9)]
    else:
        assert removed == [("d1", i) for i in range(1, 6)]
    if KINDS[kind]:  # merged: key 2 removed once, with the value it had
        assert [r["v"] for r in got if r["_row_kind"] == "-D" and r["id"] == 2] == ["b2"]
    assert folded(got, KINDS[kind]) == table_rows(wh, kind)


def test_the_tables_own_option_reads_overwrites_and_the_command_line_wins(wh):
    make(wh, "pk", options={"streaming-read-overwrite": "true"})
    table = paimon_tail.open_table("db.pk", warehouse=wh.path)
    kinds = [k for item in paimon_tail.follow_sync(table, start="earliest", exit_at_end=True, row_kind=True)
             for k in item.batch.column(0).to_pylist()]
    assert "-D" in kinds
    quiet = paimon_tail.follow(table, start="earliest", exit_at_end=True, row_kind=True, read_overwrite=False)
    kinds = [k for item in quiet.iter_sync() for k in item.batch.column(0).to_pylist()]
    assert "-D" not in kinds and quiet.stats.overwrites_skipped == 1
    bad = run_cli(["follow", "db.pk", "-w", wh.path, "-e", "-O", "streaming-read-overwrite=maybe"])
    assert bad.returncode == 2 and b"use true or false" in bad.stderr


@pytest.mark.parametrize("fmt", ["debezium", "canal", "maxwell"])
def test_change_events_of_an_overwrite_rebuild_the_table(wh, fmt):
    make(wh, "pk")
    out = run_cli(["follow", "db.pk", "-w", wh.path, "--from", "earliest", "-e", "-f", fmt,
                   "-O", "streaming-read-overwrite=true"])
    assert out.returncode == 0, out.stderr
    events = debezium_events(out.stdout.splitlines()) if fmt == "debezium" else \
        [json.loads(line) for line in out.stdout.splitlines()]
    state = fold(fmt, events, ["dt", "id"])
    assert collections.Counter((r["dt"], r["id"], r["v"]) for r in state.values()) == table_rows(wh, "pk")
    if fmt == "debezium":
        assert sum(e["op"] == "d" and e["source"]["snapshot_id"] == 3 for e in events) == 5


@pytest.mark.parametrize("fmt", ["csv", "arrow"])
def test_row_formats_carry_the_overwrites_kinds(wh, fmt):
    make(wh, "append")
    out = run_cli(["follow", "db.append", "-w", wh.path, "--from", "earliest", "--row-kind", "-e", "-f", fmt,
                   "-O", "streaming-read-overwrite=true"])
    assert out.returncode == 0, out.stderr
    if fmt == "arrow":
        got = pa.ipc.open_stream(io.BytesIO(out.stdout)).read_all().to_pylist()
    else:
        import csv

        got = [dict(r, id=int(r["id"])) for r in csv.DictReader(io.StringIO(out.stdout.decode()))]
    assert collections.Counter(r["_row_kind"] for r in got) == {"+I": 13, "-D": 5}
    assert folded(got, []) == table_rows(wh, "append")


def test_consumers_stats_and_the_order_of_the_line(wh):
    """A consumer's position passes a skipped overwrite; the stats count it; its line comes after the rows of the
    snapshots before it and before those after it."""
    make(wh, "append")
    table = paimon_tail.open_table("db.append", warehouse=wh.path)
    said = []
    follower = paimon_tail.follow(table, start="earliest", exit_at_end=True, consumer_id="c1")
    follower.on_notice = lambda message: said.append(("notice", message))
    for item in follower.iter_sync():
        if said[-1:] != [("rows", item.snapshot_id)]:  # a snapshot's batches (one per partition here) once
            said.append(("rows", item.snapshot_id))
    assert [s if s[0] == "rows" else "notice" for s in said] == [("rows", 1), "notice", ("rows", 3)]
    assert follower.stats.overwrites_skipped == 1 and follower.stats.notices == [said[1][1]]
    assert "overwrites skipped 1" in StatusLine(follower.stats)()
    from paimon_tail.stream import ConsumerStore

    assert ConsumerStore(table).get("c1") == 4  # past the overwrite
    read = paimon_tail.follow(table, start="earliest", exit_at_end=True, row_kind=True, read_overwrite=True)
    assert sum(item.batch.num_rows for item in read.iter_sync()) == 18
    assert read.stats.overwrites_read == 1 and "overwrites read 1" in StatusLine(read.stats)()


@pytest.mark.parametrize("kind", ["append", "pk"])
def test_diff_catch_up_with_overwrites(wh, kind):
    make(wh, kind)
    table = paimon_tail.open_table(f"db.{kind}", warehouse=wh.path)
    got = [r for item in paimon_tail.follow_sync(table, start="snapshot:2", exit_at_end=True, row_kind=True,
                                                   catch_up="diff", read_overwrite=True)
           for r in item.batch.to_pylist()]
    first = [r for item in paimon_tail.follow_sync(table, start="snapshot-full:1", until="snapshot:1",
                                                     exit_at_end=True, row_kind=True)
             for r in item.batch.to_pylist()]
    assert folded(first + got, KINDS[kind]) == table_rows(wh, kind)


def test_spark_source_reads_or_skips_overwrites_as_follow(wh, caplog):
    """The Spark source's planning and task reads (its driver and executor code, run here without Spark): the
    overwrite skipped with a warning in the driver's log, or read as -D/+I; the same rows as follow."""
    from paimon_tail.spark.source_options import parse_options
    from paimon_tail.spark.runtime import ReadSpec, output_arrow_schema, read_task
    from paimon_tail.spark.stream import StreamPlanner, limits_from

    make(wh, "pk")
    table = wh.table("pk")
    schema = output_arrow_schema(table, ["dt", "id", "v"], True)

    def stream(read_overwrite):
        options = parse_options({"warehouse": wh.path, "table": "db.pk", "scan.mode": "from-snapshot",
                                 "scan.snapshot-id": "1", "read.changelog": "true", "consumer-id": f"spark-{read_overwrite}",
                                 **({"streaming-read-overwrite": str(read_overwrite).lower()}
                                    if read_overwrite is not None else {})})
        spec = ReadSpec(("dt", "id", "v"), row_kind=True, streaming=True, read_overwrite=options.read_overwrite)
        planner = StreamPlanner(options, spec)
        start = planner.initial_offset()
        end = planner.latest_offset(start, limits_from(options))
        out = [r for task in planner.tasks(start, end) for b in read_task(task, schema) for r in b.to_pylist()]
        planner.commit(end)
        return out, planner.consumer_position()

    with caplog.at_level(logging.WARNING, logger="paimon_tail.spark"):
        skipped, position = stream(None)
    assert position == 5 and "-D" not in {r["_row_kind"] for r in skipped}
    assert any("snapshot 3 is an OVERWRITE of partition dt=d1" in m for m in caplog.messages)
    read, _ = stream(True)
    assert sum(r["_row_kind"] == "-D" for r in read) == 5
    assert folded(read, ["dt", "id"]) == table_rows(wh, "pk")


def test_on_a_terminal_the_line_sits_above_the_view(wh):
    """On a terminal the live view's footer is redrawn below its rows: the line is printed above it, whole (written
    to stderr meanwhile it landed in the middle of the footer's progress bar)."""
    from tests.terminal import Terminal

    make(wh, "append")
    with Terminal(["follow", "db.append", "-w", wh.path, "--from", "earliest", "--row-kind", "-e"], 120, 30,
                  env={"PYTHONPATH": os.environ.get("PYTHONPATH", os.getcwd())}) as t:
        assert t.wait_exit() == 0
        screen = [line.rstrip() for line in t.history().splitlines() if line.strip()]
    said = [i for i, line in enumerate(screen) if line.startswith("paimon-tail: snapshot 2 is an OVERWRITE")]
    assert len(said) == 1, screen
    rows = [i for i, line in enumerate(screen) if line.startswith("+I")]
    assert rows[7] < said[0] < rows[8]  # after snapshot 1's 8 rows, before snapshot 3's
    assert screen[-1].endswith("done: caught up") and "━" not in "".join(screen[said[0]:said[0] + 2])
