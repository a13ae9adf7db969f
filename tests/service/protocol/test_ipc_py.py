"""The pure-Python Arrow IPC subset (service/ipc_py.py) against pyarrow, both ways, type by type."""
from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

import pyarrow as pa
import pytest

from paimon_tail.service.protocol import ipc_py
from paimon_tail.service.protocol.ipc_py import Kind, Unsupported
from paimon_tail.service.protocol.wire import ipc_stream

KEY_KINDS = [
    (Kind("int", 8), pa.int8(), lambda r: r.randint(-128, 127)),
    (Kind("int", 16), pa.int16(), lambda r: r.randint(-2 ** 15, 2 ** 15 - 1)),
    (Kind("int", 32), pa.int32(), lambda r: r.randint(-2 ** 31, 2 ** 31 - 1)),
    (Kind("int", 64), pa.int64(), lambda r: r.randint(-2 ** 63, 2 ** 63 - 1)),
    (Kind("utf8"), pa.string(), lambda r: "".join(r.choice("ab€𝄞 \"\\\n") for _ in range(r.randint(0, 20)))),
    (Kind("bool"), pa.bool_(), lambda r: r.random() < 0.5),
    (Kind("date"), pa.date32(), lambda r: dt.date(1970, 1, 1) + dt.timedelta(days=r.randint(-30000, 30000))),
]


@pytest.mark.parametrize("kind, arrow, gen", KEY_KINDS, ids=lambda k: getattr(k, "name", ""))
@pytest.mark.parametrize("n", [1, 3, 9])
def test_keys_written_here_read_by_pyarrow(kind, arrow, gen, n):
    rnd = random.Random(n)
    values = [gen(rnd) for _ in range(n)]
    other = [rnd.randint(0, 9) for _ in range(n)]
    data = ipc_py.encode([("k", kind, values), ("id", Kind("int", 64), other)])
    table = pa.ipc.open_stream(data).read_all()
    assert table.schema == pa.schema([pa.field("k", arrow, nullable=False), pa.field("id", pa.int64(), nullable=False)])
    assert table.column("k").to_pylist() == values and table.column("id").to_pylist() == other
    names, rows = ipc_py.decode(data)
    assert [n for n, _ in names] == ["k", "id"] and rows == [list(r) for r in zip(values, other)]


ROW_TYPES = [
    (pa.int64(), [1, None, -2 ** 63]), (pa.uint32(), [0, 2 ** 32 - 1, None]), (pa.float64(), [0.1, None, -1e-7]),
    (pa.float32(), [0.1, 3.4e38, None]), (pa.string(), ["a", None, "€𝄞"]), (pa.large_string(), ["x", "", None]),
    (pa.binary(), [b"\x00\xff", None, b""]), (pa.bool_(), [True, None, False]),
    (pa.date32(), [dt.date(2026, 11, 1), None, dt.date(1, 1, 1)]),
    (pa.timestamp("us"), [dt.datetime(2026, 11, 1, 12, 0, 0, 5), None, dt.datetime(1960, 1, 1)]),
    (pa.timestamp("ms", tz="UTC"), [dt.datetime(2026, 11, 1, 12, 0, 0, 123000, tzinfo=dt.timezone.utc), None,
                                    dt.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=dt.timezone.utc)]),
    (pa.timestamp("s"), [dt.datetime(2026, 1, 1), None, dt.datetime(1900, 1, 1)]),
    (pa.decimal128(20, 4), [Decimal("12.5000"), None, Decimal("-0.0001")]),
    (pa.decimal128(38, 0), [Decimal(10 ** 37), Decimal(-(10 ** 37)), None]),
    (pa.null(), [None, None, None]),
]


@pytest.mark.parametrize("arrow, values", ROW_TYPES, ids=lambda t: str(t) if isinstance(t, pa.DataType) else "")
def test_rows_written_by_pyarrow_read_here(arrow, values):
    table = pa.table({"c": pa.array(values, arrow), "i": pa.array([1, 2, 3], pa.int32())})
    for data in (ipc_stream(table), ipc_stream(table.slice(1, 2)), ipc_stream(table.slice(0, 0))):
        expected = pa.ipc.open_stream(data).read_all()
        names, rows = ipc_py.decode(data)
        assert [n for n, _ in names] == ["c", "i"]
        assert rows == [list(r.values()) for r in expected.to_pylist()]


@pytest.mark.parametrize("arrow", [pa.list_(pa.int64()), pa.struct([("a", pa.int64())]), pa.timestamp("ns"),
                                   pa.timestamp("us", tz="Asia/Shanghai"), pa.dictionary(pa.int32(), pa.string()),
                                   pa.decimal256(40, 2), pa.time64("us")])
def test_other_types_are_refused(arrow):
    table = pa.table({"c": pa.array([None], arrow)})
    with pytest.raises(Unsupported):
        ipc_py.decode(ipc_stream(table))


def test_compressed_bodies_are_refused():
    table = pa.table({"c": pa.array(range(100))})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=pa.ipc.IpcWriteOptions(compression="zstd")) as w:
        w.write_table(table)
    with pytest.raises(Unsupported):
        ipc_py.decode(sink.getvalue().to_pybytes())
