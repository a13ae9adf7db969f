"""The vectorised bucket hash equals pypaimon's per-row ``BinaryRow`` hash, bit for bit."""
from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from pypaimon.schema.data_types import AtomicType, DataField, PyarrowFieldParser
from pypaimon.write.row_key_extractor import RowKeyExtractor, _bucket_from_hash

from paimon_tail.service.keys.binary_row import Unsupported, bucket, int_row_hash, row_hash
from paimon_tail.service.keys.bucket_hash import binary_row_hashes, buckets_of, channels_of
from paimon_tail.service.keys.routing import channel

N = 3000


def _fields(types):
    return [DataField(i, f"c{i}", AtomicType(t)) for i, t in enumerate(types)]


def _expected(rows, fields):
    out = []
    for r in rows:
        h = RowKeyExtractor._binary_row_hash_code(tuple(r), fields) & 0xFFFFFFFF
        out.append(h - (1 << 32) if h >= 1 << 31 else h)
    return np.asarray(out, dtype=np.int64)


def _strings(rnd, n):
    alphabet = "abcxyz0123456789-_é€𝄞"
    out = []
    for _ in range(n):
        k = rnd.choice([0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 64])
        out.append("".join(rnd.choice(alphabet) for _ in range(k)))
    return out


def _values(t, rnd, n):
    base = t.split("(")[0].upper()
    if base == "BIGINT":
        return [rnd.choice([0, -1, 1, 2 ** 63 - 1, -2 ** 63]) if rnd.random() < 0.05 else rnd.randint(-2 ** 63, 2 ** 63 - 1) for _ in range(n)]
    if base == "INT":
        return [rnd.randint(-2 ** 31, 2 ** 31 - 1) for _ in range(n)]
    if base == "SMALLINT":
        return [rnd.randint(-2 ** 15, 2 ** 15 - 1) for _ in range(n)]
    if base == "TINYINT":
        return [rnd.randint(-128, 127) for _ in range(n)]
    if base == "BOOLEAN":
        return [rnd.random() < 0.5 for _ in range(n)]
    if base in ("STRING", "VARCHAR", "CHAR"):
        return _strings(rnd, n)
    if base in ("BYTES", "VARBINARY", "BINARY"):
        return [s.encode() for s in _strings(rnd, n)]
    if base == "DOUBLE":
        return [rnd.uniform(-1e9, 1e9) for _ in range(n)]
    if base == "FLOAT":
        return [float(np.float32(rnd.uniform(-1e6, 1e6))) for _ in range(n)]
    if base == "DATE":
        return [dt.date(1970, 1, 1) + dt.timedelta(days=rnd.randint(-30000, 30000)) for _ in range(n)]
    if base == "DECIMAL":
        return [Decimal(rnd.randint(-10 ** 9, 10 ** 9)).scaleb(-2) for _ in range(n)]
    if base == "TIMESTAMP":
        prec = int(t.split("(")[1].split(")")[0])
        out = []
        for _ in range(n):
            v = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=rnd.randint(-2 * 10 ** 15, 4 * 10 ** 15))
            if prec <= 3:
                v = v.replace(microsecond=v.microsecond // 1000 * 1000)
            out.append(v)
        return out
    raise AssertionError(t)


TYPES = [
    ["BIGINT"], ["INT"], ["SMALLINT"], ["TINYINT"], ["BOOLEAN"], ["STRING"], ["VARCHAR(20)"], ["BYTES"],
    ["DOUBLE"], ["FLOAT"], ["DATE"], ["DECIMAL(12, 2)"], ["TIMESTAMP(3)"], ["TIMESTAMP(6)"],
    ["BIGINT", "STRING"], ["STRING", "STRING"], ["STRING", "INT", "STRING"], ["DATE", "BIGINT", "TIMESTAMP(6)"],
    ["STRING", "TIMESTAMP(6)", "BYTES", "DECIMAL(18, 4)"],
    ["DECIMAL(30, 2)"],  # not vectorised: falls back to pypaimon, still equal
]


@pytest.mark.parametrize("types", TYPES, ids=lambda t: "+".join(t))
def test_hash_equals_pypaimon(types):
    rnd = random.Random(hash(tuple(types)) & 0xFFFF)
    fields = _fields(types)
    cols = [_values(t, rnd, N) for t in types]
    arrays = [pa.array(c, type=PyarrowFieldParser.from_paimon_type(f.type)) for c, f in zip(cols, fields)]
    got = binary_row_hashes(arrays, fields).astype(np.int64)
    want = _expected(list(zip(*cols)), fields)
    assert np.array_equal(got, want)
    for n in (1, 3, 4, 7, 128):
        b = buckets_of(got.astype(np.int32), n)
        assert b.tolist() == [_bucket_from_hash(int(h) & 0xFFFFFFFF, n) for h in want]


@pytest.mark.parametrize("types", TYPES[:-1], ids=lambda t: "+".join(t))
def test_scalar_hash_equals_pypaimon(types):
    """binary_row.row_hash (one key, plain Python: the single-key lookup's path) is pypaimon's hash too."""
    rnd = random.Random(hash(tuple(types)) & 0xFFFF)
    fields = _fields(types)
    rows = list(zip(*[_values(t, rnd, 400) for t in types]))
    want = _expected(rows, fields)
    assert [row_hash(r, types) for r in rows] == want.tolist()
    for n in (1, 3, 4, 7, 128):
        assert [bucket(row_hash(r, types), n) for r in rows] == [_bucket_from_hash(int(h) & 0xFFFFFFFF, n)
                                                                  for h in want]


@pytest.mark.parametrize("base", ["BIGINT", "INT", "SMALLINT", "TINYINT"])
def test_one_integer_key_hash_equals_pypaimon(base):
    """binary_row.int_row_hash (a one-integer-column key without building its row) is pypaimon's hash, at the
    ends of the type's range too."""
    rnd = random.Random(len(base))
    values = _values(base, rnd, 2000)
    bits = {"BIGINT": 64, "INT": 32, "SMALLINT": 16, "TINYINT": 8}[base]
    values += [-(1 << (bits - 1)), (1 << (bits - 1)) - 1, 0, -1, 1]
    want = _expected([(v,) for v in values], _fields([base]))
    assert [int_row_hash(v, base) for v in values] == want.tolist()


def test_scalar_hash_refuses_what_it_does_not_lay_out():
    for types, row in ((["DECIMAL(30, 2)"], (Decimal("1.5"),)), (["BIGINT"], (None,)),
                       (["TIMESTAMP(6) WITH LOCAL TIME ZONE"], (dt.datetime(2026, 1, 1),)), (["TIME"], (dt.time(1),))):
        with pytest.raises(Unsupported):
            row_hash(row, types)


def test_sliced_and_chunked_arrays():
    fields = _fields(["STRING", "BIGINT"])
    rnd = random.Random(5)
    s, i = _strings(rnd, 500), [rnd.randint(-10 ** 12, 10 ** 12) for _ in range(500)]
    table = pa.table({"s": s, "i": i})
    sliced = table.slice(17, 300)
    chunked = pa.concat_tables([table.slice(0, 100), table.slice(100)])
    want = _expected(list(zip(s, i)), fields)
    assert np.array_equal(binary_row_hashes([sliced["s"], sliced["i"]], fields), want[17:317])
    assert np.array_equal(binary_row_hashes([chunked["s"], chunked["i"]], fields), want)


def test_channels_match_scalar():
    rnd = random.Random(9)
    ph = np.asarray([rnd.choice([-2 ** 31, 2 ** 31 - 1, 0]) if rnd.random() < 0.1 else rnd.randint(-2 ** 31, 2 ** 31 - 1)
                     for _ in range(2000)], dtype=np.int64)
    b = np.asarray([rnd.randint(0, 1000) for _ in range(2000)], dtype=np.int32)
    for n in (1, 2, 3, 7):
        assert channels_of(ph, b, n).tolist() == [channel(int(p), int(x), n) for p, x in zip(ph, b)]


def test_table_routing_vectorised_matches_per_key(warehouse):
    from paimon_tail.service.keys.parse import KeyParser
    from paimon_tail.service.keys.routing import TableRouting

    from tests.service.conftest import PK_SCHEMA

    table = warehouse.create("routed", PK_SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], bucket=5)
    routing, parser = TableRouting.of(table), KeyParser(table)
    rnd = random.Random(3)
    keys = [{"id": rnd.randint(-2 ** 40, 2 ** 40), "dt": f"2026-11-{rnd.randint(1, 28):02d}"} for _ in range(2000)]
    arrow = parser.to_arrow(keys)
    buckets = routing.buckets_of(arrow)
    phash = routing.partition_hashes_of(arrow)
    for n in (1, 2, 3):
        owners = channels_of(phash, buckets, n)
        assert [routing.route(k, n) for k in keys] == list(zip(buckets.tolist(), owners.tolist()))
