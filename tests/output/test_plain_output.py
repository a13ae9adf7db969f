"""The plain-Python text of a one-key lookup (output/plain.py over service/ipc_py.py) is byte for byte what the
JSON-lines renderer (polars) writes, and the table cells are what the live table shows, on random values."""
from __future__ import annotations

import datetime as dt
import io
import math
import random
import struct
from decimal import Decimal

import pyarrow as pa
import pytest

from paimon_tail.output.plain import json_line, text
from paimon_tail.output.renderers import JsonLinesRenderer
from paimon_tail.output.plain import text as live_table_text
from paimon_tail.service.protocol import ipc_py
from paimon_tail.service.protocol.wire import ipc_stream


def _floats(rnd, n, bits):
    out = [0.0, -0.0, 1e-5, 1e-6, 2.5e-5, 1e16, 9.999e15, 1e22, 5e-324, 100.0, 0.1, float("nan"), float("inf")]
    while len(out) < n:
        raw = struct.unpack("<d", struct.pack("<Q", rnd.getrandbits(64)))[0]
        v = rnd.choice([raw, rnd.uniform(-1e6, 1e6), rnd.uniform(-1e-3, 1e-3) * 10 ** rnd.randint(-8, 0),
                        float(rnd.randint(-10 ** 18, 10 ** 18))])
        if bits == 32:
            v = struct.unpack("<f", struct.pack("<f", v))[0] if abs(v) < 3e38 else 1.5
        out.append(v)
    return out


def _strings(rnd, n):
    alphabet = ["a", "Z", " ", '"', "\\", "/", "\n", "\t", "\r", "\b", "\f", "\x00", "\x1f", "\x7f", "é", "€", "𝄞",
                "\u2028", "\u2029", "\ufeff"]
    return ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 12))) for _ in range(n)]


def _micros(rnd):
    return rnd.choice([0, 123000, 5, 999999, rnd.randint(0, 999999)])


COLUMNS = {
    "f64": (pa.float64(), lambda rnd, n: _floats(rnd, n, 64)),
    "f32": (pa.float32(), lambda rnd, n: _floats(rnd, n, 32)),
    "i64": (pa.int64(), lambda rnd, n: [rnd.randint(-2 ** 63, 2 ** 63 - 1) for _ in range(n)]),
    "i8": (pa.int8(), lambda rnd, n: [rnd.randint(-128, 127) for _ in range(n)]),
    "s": (pa.string(), _strings),
    "b": (pa.binary(), lambda rnd, n: [bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 9))) for _ in range(n)]),
    "bool": (pa.bool_(), lambda rnd, n: [rnd.random() < 0.5 for _ in range(n)]),
    "d": (pa.date32(), lambda rnd, n: [dt.date(1, 1, 1) + dt.timedelta(days=rnd.randint(0, 3_000_000))
                                       for _ in range(n)]),
    "ts_us": (pa.timestamp("us"), lambda rnd, n: [dt.datetime(1, 1, 1) + dt.timedelta(
        seconds=rnd.randint(0, 300_000_000_000), microseconds=_micros(rnd)) for _ in range(n)]),
    "ts_ms_utc": (pa.timestamp("ms", tz="UTC"), lambda rnd, n: [dt.datetime(1900, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(
        seconds=rnd.randint(0, 6_000_000_000), milliseconds=rnd.choice([0, 1, 999])) for _ in range(n)]),
    "ts_s": (pa.timestamp("s"), lambda rnd, n: [dt.datetime(1970, 1, 1) + dt.timedelta(seconds=rnd.randint(-10 ** 10, 10 ** 10))
                                                for _ in range(n)]),
    "dec": (pa.decimal128(20, 4), lambda rnd, n: [Decimal(rnd.randint(-10 ** 19, 10 ** 19)).scaleb(-4) for _ in range(n)]),
    "dec0": (pa.decimal128(12, 0), lambda rnd, n: [Decimal(rnd.randint(-10 ** 11, 10 ** 11)) for _ in range(n)]),
}


@pytest.mark.parametrize("name", list(COLUMNS))
def test_json_lines_equal_the_renderer(name):
    arrow, gen = COLUMNS[name]
    rnd = random.Random(name)
    values = gen(rnd, 2000)
    values[7] = None
    table = pa.table({name: pa.array(values, arrow), "id": pa.array(range(len(values)), pa.int32())})
    buf = io.BytesIO()
    JsonLinesRenderer(buf).write(table.combine_chunks().to_batches()[0])
    columns, rows = ipc_py.decode(ipc_stream(table))
    mine = "".join(json_line(columns, row) + "\n" for row in rows)
    for want, got in zip(buf.getvalue().decode().split("\n"), mine.split("\n")):
        assert got == want
    assert mine.encode() == buf.getvalue()


def test_all_finite_floats_take_the_same_path():
    """values.to_polars skips its NaN pass for an all-finite column; the text must not depend on that."""
    table = pa.table({"x": pa.array([1e-5, 2.0], pa.float64())})
    buf = io.BytesIO()
    JsonLinesRenderer(buf).write(table.to_batches()[0])
    columns, rows = ipc_py.decode(ipc_stream(table))
    assert "".join(json_line(columns, r) + "\n" for r in rows).encode() == buf.getvalue()


def test_table_cells_are_the_live_tables():
    assert text is live_table_text
    assert [text(v) for v in (None, 1.5, "x", Decimal("1.50"), {"a": [1]})] == ["", "1.5", "x", "1.50", '{"a":[1]}']
    assert math.isnan(float("nan"))
