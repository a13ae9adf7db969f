"""Timestamps as text through Arrow's cast (``values.timestamp_text``) are byte for byte what polars'
``dt.to_string`` wrote before, in every format that writes text: each renderer is run twice on the same batches,
once as it is and once with the Arrow path turned off (every timestamp through polars, the code before)."""
from __future__ import annotations

import io
import random

import numpy as np
import pyarrow as pa
import pytest

from paimon_tail.catalog import TableRef
from paimon_tail.output import values
from paimon_tail.output.renderers import make_renderer
from paimon_tail.stream.follower import FollowBatch

from tests.conftest import run_cli

UNITS = {"s": 1, "ms": 10 ** 3, "us": 10 ** 6, "ns": 10 ** 9}
FIRST, END = -62_135_596_800, 253_402_300_800  # seconds of 0001-01-01 and 10000-01-01


def _values(unit: str, n: int, seed: int) -> list:
    """Random instants over the unit's whole range, many of them whole seconds, milliseconds or microseconds (where
    polars writes fewer fraction digits), the ends of the range, the epoch and its neighbours."""
    per = UNITS[unit]
    lo, hi = (FIRST * per, END * per) if unit != "ns" else (-(2 ** 63) + 1, 2 ** 63 - 1)
    rng = np.random.default_rng(seed)
    v = rng.integers(lo, hi, n)
    for step in (per, per // 1000, per // 10 ** 6):
        v = np.where(rng.random(n) < 0.25, v - v % max(1, step), v)
    return [int(x) for x in v] + [lo, hi - 1, 0, -1, 1, per, -per]


def _batch(unit: str, tz, nulls: bool, seed: int) -> pa.RecordBatch:
    ts = _values(unit, 3000, seed)
    if nulls:
        ts = [None if i % 5 == 0 else x for i, x in enumerate(ts)]
    n = len(ts)
    return pa.record_batch([pa.array(range(n), pa.int64()), pa.array(ts, pa.timestamp(unit, tz=tz)),
                            pa.array([f"r{i}" for i in range(n)]),
                            pa.array(ts[::-1], pa.timestamp(unit, tz=tz))],
                           names=["id", "ts", "name", "ts2"])


def _render(fmt: str, batches, fast: bool, monkeypatch) -> bytes:
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(values, "timestamp_text", lambda column: None)
        out = io.BytesIO()
        renderer = make_renderer(fmt, out)
        for i, batch in enumerate(batches):
            if fmt in ("debezium", "canal", "maxwell"):
                kinds = pa.array(["+I", "-U", "+U", "-D"] * (batch.num_rows // 4) + ["+I"] * (batch.num_rows % 4))
                batch = pa.RecordBatch.from_arrays([kinds, *batch.columns],
                                                   names=["_row_kind", *batch.schema.names])
            renderer.write_item(FollowBatch(batch, i + 1, 1_780_000_000_000, "delta", 0, "", last_in_snapshot=True,
                                            table=TableRef("db", "t", ("id",))))
        renderer.close()
        return out.getvalue()


@pytest.mark.parametrize("unit", list(UNITS))
@pytest.mark.parametrize("tz", [None, "UTC"])
@pytest.mark.parametrize("fmt", ["jsonl", "csv", "tsv", "debezium", "canal", "maxwell"])
def test_every_format_writes_the_bytes_polars_wrote(unit, tz, fmt, monkeypatch):
    batches = [_batch(unit, tz, nulls, seed) for seed, nulls in ((1, False), (2, True))]
    batches.append(batches[1].slice(7, 900))  # an offset into the arrays
    fast = _render(fmt, batches, True, monkeypatch)
    assert fast == _render(fmt, batches, False, monkeypatch)
    assert len(fast) > 1000


@pytest.mark.parametrize("unit", list(UNITS))
def test_the_arrow_path_takes_every_in_range_column(unit):
    """The comparison above is only worth something if the fast path ran: it does for naive and UTC columns."""
    for tz in (None, "UTC"):
        column = _batch(unit, tz, True, 3).column(1)
        text = values.timestamp_text(column)
        assert text is not None and text.null_count == column.null_count and len(text) == len(column)


def test_what_polars_has_to_write_goes_to_polars(monkeypatch):
    """Other zones (polars writes their offset), years past 9999 (polars writes ``+10000``) stay with polars, and
    still come out as polars writes them."""
    other_zone = pa.array([0, 1_780_000_000_123_456], pa.timestamp("us", tz="Asia/Shanghai"))
    far = pa.array([END * 10 ** 6 + 5], pa.timestamp("us"))
    assert values.timestamp_text(other_zone) is None
    assert values.timestamp_text(far) is None
    batch = pa.record_batch([other_zone, pa.array([0, END * 10 ** 6 + 5], pa.timestamp("us"))], names=["a", "b"])
    assert _render("jsonl", [batch], True, monkeypatch) == (
        b'{"a":"1970-01-01T08:00:00+08:00","b":"1970-01-01T00:00:00"}\n'
        b'{"a":"2026-05-29T04:26:40.123456+08:00","b":"+10000-01-01T00:00:00.000005"}\n')


def test_fraction_digits_are_the_fewest_that_are_exact(monkeypatch):
    us = [0, 1, 1_000, 120_000, 123_456, 1_000_000, -1]
    batch = pa.record_batch([pa.array(us, pa.timestamp("us")), pa.array(us, pa.timestamp("us", tz="UTC"))],
                            names=["t", "u"])
    lines = _render("jsonl", [batch], True, monkeypatch).decode().splitlines()
    assert lines == [
        '{"t":"1970-01-01T00:00:00","u":"1970-01-01T00:00:00+00:00"}',
        '{"t":"1970-01-01T00:00:00.000001","u":"1970-01-01T00:00:00.000001+00:00"}',
        '{"t":"1970-01-01T00:00:00.001","u":"1970-01-01T00:00:00.001+00:00"}',
        '{"t":"1970-01-01T00:00:00.120","u":"1970-01-01T00:00:00.120+00:00"}',
        '{"t":"1970-01-01T00:00:00.123456","u":"1970-01-01T00:00:00.123456+00:00"}',
        '{"t":"1970-01-01T00:00:01","u":"1970-01-01T00:00:01+00:00"}',
        '{"t":"1969-12-31T23:59:59.999999","u":"1969-12-31T23:59:59.999999+00:00"}',
    ]


def test_a_followed_table_with_timestamps_prints_the_same_in_every_format(wh, monkeypatch):
    """End to end through ``follow``: a real table's TIMESTAMP(3), TIMESTAMP(6) and TIMESTAMP_LTZ columns."""
    schema = pa.schema([("id", pa.int64()), ("t3", pa.timestamp("ms")), ("t6", pa.timestamp("us")),
                        ("ltz", pa.timestamp("us", tz="UTC"))])
    wh.create("ts", schema)
    rnd = random.Random(7)
    for _ in range(3):
        rows = []
        for i in range(200):
            us = rnd.choice([0, 1, 1000, rnd.randint(-10 ** 15, 4 * 10 ** 15)])
            rows.append({"id": i, "t3": None if i % 9 == 0 else us // 1000, "t6": us, "ltz": us - us % 1000})
        wh.commit("ts", [{k: (pa.scalar(v, schema.field(k).type).as_py() if v is not None and k != "id" else v)
                          for k, v in r.items()} for r in rows], schema)
    table = wh.table("ts")
    from paimon_tail import follow_sync

    batches = [item.batch for item in follow_sync(table, start="earliest", exit_at_end=True)]
    assert sum(b.num_rows for b in batches) == 600
    for fmt in ("jsonl", "csv", "tsv"):
        fast = _render(fmt, batches, True, monkeypatch)
        assert fast == _render(fmt, batches, False, monkeypatch)
        out = run_cli(["follow", "db.ts", *wh.cli_args(), "--from", "earliest", "-e", "-f", fmt])
        assert out.returncode == 0, out.stderr
        assert out.stdout == fast, fmt
