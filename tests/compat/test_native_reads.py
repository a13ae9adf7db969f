"""A follow's full read through pypaimon's Rust reader (compat/adapters/native_reads.py) hands out exactly what pypaimon's
Python merge read hands out: the same rows in the same order and batches' schemas, for every merge engine we write,
with deletes, sequence fields, partitions, projections, filters, row kinds and shards, and then the same changes."""
from __future__ import annotations

import os
import random
import subprocess
import sys

import pyarrow as pa
import pytest

import paimon_tail
from paimon_tail.compat.adapters import native_reads
from paimon_tail.compat.adapters.native_reads import OPTION, with_native_reads

pytestmark = pytest.mark.skipif(not native_reads.available(), reason="pypaimon-rust not installed")

TABLES = {
    # name: (schema, primary keys, partition keys, options)
    "dedup": (pa.schema([("id", pa.int64()), ("name", pa.string()), ("v", pa.float64()), ("ts", pa.timestamp("us")),
                         ("op", pa.string())]), ["id"], [], {"bucket": "3", "rowkind.field": "op"}),
    "partitioned": (pa.schema([("dt", pa.string()), ("id", pa.int32()), ("sub", pa.string()), ("name", pa.string()),
                               ("op", pa.string())]), ["dt", "id", "sub"], ["dt"],
                    {"bucket": "2", "rowkind.field": "op"}),
    "partial_update": (pa.schema([("id", pa.int64()), ("a", pa.string()), ("b", pa.int64())]), ["id"], [],
                       {"bucket": "2", "merge-engine": "partial-update"}),
    "aggregation": (pa.schema([("id", pa.int64()), ("total", pa.int64()), ("top", pa.float64()), ("last", pa.string())]),
                    ["id"], [], {"bucket": "2", "merge-engine": "aggregation", "fields.total.aggregate-function": "sum",
                                 "fields.top.aggregate-function": "max"}),
    "sequence_field": (pa.schema([("id", pa.int64()), ("name", pa.string()), ("seq", pa.int64())]), ["id"], [],
                       {"bucket": "2", "sequence.field": "seq"}),
}


def _rows(kind: str, rnd: random.Random, r: int, n: int) -> list:
    out = []
    for i in rnd.sample(range(n), n // 3):
        op = "-D" if rnd.random() < 0.15 else "+U"
        if kind == "dedup":
            out.append({"id": i, "name": f"r{r}-{i}", "v": i + r / 10, "ts": 1_780_000_000_000_000 + i * 7 + r,
                        "op": op})
        elif kind == "partitioned":
            out.append({"dt": f"2026-11-0{1 + i % 3}", "id": i // 3, "sub": "ab"[i % 2], "name": f"r{r}", "op": op})
        elif kind == "partial_update":
            out.append({"id": i, "a": f"r{r}" if rnd.random() < 0.5 else None, "b": r if rnd.random() < 0.5 else None})
        elif kind == "aggregation":
            out.append({"id": i, "total": rnd.randrange(100), "top": rnd.random(), "last": f"r{r}"})
        else:  # sequence_field: seq goes back and forth, the highest wins whatever the commit order
            out.append({"id": i, "name": f"r{r}", "seq": rnd.randrange(100)})
    return out


def _table(wh, kind: str, commits: int = 5, n: int = 600):
    schema, pk, parts, options = TABLES[kind]
    wh.create(kind, schema, primary_keys=pk, partition_keys=parts, options=options)
    rnd = random.Random(kind)
    for r in range(commits):
        rows = _rows(kind, rnd, r, n)
        if kind == "dedup":
            rows = [dict(row, ts=pa.scalar(row["ts"], pa.timestamp("us")).as_py()) for row in rows]
        wh.commit(kind, rows, schema)
    return wh.table(kind)


@pytest.fixture
def native_calls(monkeypatch):
    """How many times pypaimon's Rust read ran (its own entry point, called through: nothing is replaced)."""
    import pypaimon.read.native_plan as native_plan

    calls = []
    real = native_plan.native_read

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(native_plan, "native_read", counting)
    return calls


def _follow(table, **options):
    items = list(paimon_tail.follow_sync(table, exit_at_end=True, **options))
    return [(i.snapshot_id, i.kind, i.bucket, i.partition, i.last_in_snapshot, i.batch) for i in items]


def _same(a, b) -> None:
    assert [x[:5] for x in a] == [x[:5] for x in b]
    for x, y in zip(a, b):
        assert x[5].schema == y[5].schema
        assert x[5].equals(y[5])


OPTIONS = {
    "plain": {},
    "row_kind": {"row_kind": True},
    "select_where": {"select": None, "where": None},  # filled per table below
    "shard": {"shard": (1, 2)},
    "meta": {"meta": True},
}


@pytest.mark.parametrize("kind", list(TABLES))
@pytest.mark.parametrize("variant", list(OPTIONS))
def test_full_read_is_pypaimons_python_merge_read(wh, kind, variant, native_calls):
    table = _table(wh, kind)
    options = dict(OPTIONS[variant])
    if variant == "select_where":
        names = [f.name for f in table.fields]
        key = TABLES[kind][1][-1]
        options = {"select": [names[-1], key], "where": f"{key} > 40"}
    python = table.copy({OPTION: "false"})
    assert with_native_reads(python) is python  # the user decided
    fallbacks = native_reads.fallbacks.count
    expected = _follow(python, start="latest-full", **options)
    assert not native_calls
    got = _follow(table, start="latest-full", **options)
    assert native_calls, "the Rust reader did not run"
    assert native_reads.fallbacks.count == fallbacks, native_reads.fallbacks.last_reason
    assert sum(x[5].num_rows for x in got) > 0
    _same(got, expected)


@pytest.mark.parametrize("kind", ["dedup", "partial_update"])
def test_changes_after_the_full_read_are_the_same(wh, kind, native_calls):
    """A full read, then deltas and a diff catch-up (both through the Python reader)."""
    table = _table(wh, kind, commits=3)
    schema = TABLES[kind][0]
    rnd = random.Random(1)
    for r in range(3, 6):
        rows = _rows(kind, rnd, r, 600)
        if kind == "dedup":
            rows = [dict(row, ts=pa.scalar(row["ts"], pa.timestamp("us")).as_py()) for row in rows]
        wh.commit(kind, rows, schema)
    python = table.copy({OPTION: "false"})
    for options in ({"start": "snapshot-full:3", "row_kind": True},
                    {"start": "snapshot:2", "row_kind": True, "catch_up": "diff"}):
        expected = _follow(python, **options)
        got = _follow(wh.table(kind), **options)
        _same(got, expected)
        assert {x[1] for x in got} >= ({"full", "delta"} if "catch_up" not in options else {"diff"})
    assert native_calls


def test_what_keeps_the_python_reader(wh, tmp_path, monkeypatch):
    """A table given by a relative path (the Rust reader takes absolute ones) and a table with CHAR columns (ORC's
    padding is trimmed by our shim in the Python reader)."""
    table = _table(wh, "sequence_field", commits=1)
    assert native_reads.native(with_native_reads(table))
    monkeypatch.chdir(os.path.dirname(wh.path))
    relative = paimon_tail.open_table("db.sequence_field", warehouse=os.path.basename(wh.path))
    assert with_native_reads(relative) is relative
    from pypaimon import Schema
    from pypaimon.schema.data_types import AtomicType, DataField

    fields = [DataField(0, "id", AtomicType("BIGINT", nullable=False)), DataField(1, "c", AtomicType("CHAR(4)"))]
    wh.catalog.create_table("db.chars", Schema(fields, primary_keys=["id"], options={"bucket": "1"}), False)
    chars = wh.table("chars")
    assert with_native_reads(chars) is chars


def test_a_fallback_is_counted_not_printed(wh, monkeypatch, capfd):
    """pypaimon warns on stderr for every split it falls back on; a follow's stderr stays clean."""
    table = _table(wh, "dedup", commits=2)
    monkeypatch.chdir(os.path.dirname(wh.path))
    relative = paimon_tail.open_table("db.dedup", warehouse=os.path.basename(wh.path))
    forced = relative.copy({OPTION: "true"})  # the Rust side cannot open a relative path: pypaimon falls back
    native_reads._watch_fallbacks()
    before = native_reads.fallbacks.count
    got = _follow(forced, start="latest-full")
    assert native_reads.fallbacks.count > before
    assert "neither a valid url nor path" in native_reads.fallbacks.last_reason
    assert "falling back" not in capfd.readouterr().err
    _same(got, _follow(table.copy({OPTION: "false"}), start="latest-full"))


def test_a_relative_warehouse_is_read_natively(wh, monkeypatch):
    """``follow -w RELATIVE`` (``follower_for``): the warehouse is made absolute, so the Rust reader can open it."""
    from paimon_tail.catalog import CatalogConfig
    from paimon_tail.stream import FollowOptions
    from paimon_tail.stream.multi import follower_for

    _table(wh, "dedup", commits=1)
    monkeypatch.chdir(os.path.dirname(wh.path))
    follower = follower_for(CatalogConfig({"warehouse": os.path.basename(wh.path)}), ["db.dedup"], FollowOptions())
    assert native_reads.native(follower.schedule.reads.full_read.table)
    assert not native_reads.native(follower.schedule.reads.read.inner.table)  # deltas: the Python reader


def test_cli_prints_what_the_python_reader_prints(wh):
    """The real command on a relative warehouse: byte for byte the Python reader's rows, and a clean stderr."""
    _table(wh, "dedup")
    env = dict(os.environ)
    env.pop("PAIMON_WAREHOUSE", None)
    args = ["follow", "db.dedup", "-w", os.path.basename(wh.path), "--from", "latest-full", "-e", "--row-kind"]
    out = subprocess.run([sys.executable, "-m", "paimon_tail", *args], cwd=os.path.dirname(wh.path),
                         capture_output=True, env=env, timeout=120)
    assert out.returncode == 0 and out.stderr == b"", out.stderr
    import io

    from paimon_tail.output.renderers import make_renderer

    sink = io.BytesIO()
    renderer = make_renderer("jsonl", sink)
    for item in paimon_tail.follow_sync(wh.table("dedup").copy({OPTION: "false"}), start="latest-full",
                                        exit_at_end=True, row_kind=True):
        renderer.write_item(item)
    renderer.close()
    assert out.stdout == sink.getvalue() and out.stdout.count(b"\n") > 100
