"""Paimon/Arrow values → JSON and text, one mapping for every format.

JSON mapping (documented in docs/follow.md):
  DECIMAL            string with exact digits ("12.50"): a JSON number would go through a float in jq
  TIMESTAMP          ISO-8601 local date-time ("2026-11-01T12:00:00.123456")
  TIMESTAMP_LTZ      ISO-8601 with offset ("2026-11-01T12:00:00.123+00:00")
  DATE / TIME        "2026-11-01" / "12:00:00"
  BINARY/VARBINARY   base64 string
  FLOAT/DOUBLE       number; NaN and ±Infinity become null (JSON has no such numbers)
  ARRAY / ROW        JSON array / object;  MAP  JSON object (keys as strings)
  BIGINT             number (exact: JSON numbers are arbitrary precision; jq may round past 2^53)

The fast path hands the batch to polars (Arrow in, NDJSON out, no Python objects per row); schemas it cannot
write faithfully (maps, or decimals/binary/timestamps nested inside lists and rows) take the Python path.
Timestamps (naive or UTC, years 1-9999: every TIMESTAMP and TIMESTAMP_LTZ pypaimon reads) become text through
Arrow's cast to string, 6x cheaper than polars' ``dt.to_string`` and byte-identical to it (``timestamp_text``).
"""
from __future__ import annotations

import base64
import datetime as _dt
import decimal
import json
import math
from typing import Any, Optional

import numpy as np
import pyarrow as pa

_NEEDS_FIXING = (pa.types.is_decimal, pa.types.is_binary, pa.types.is_large_binary, pa.types.is_fixed_size_binary,
                 pa.types.is_timestamp, pa.types.is_floating)


def _nested_ok(t: pa.DataType) -> bool:
    """Can polars write this nested type's children as they are?"""
    if pa.types.is_map(t):
        return False
    if pa.types.is_struct(t):
        return all(_nested_ok(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _nested_ok(t.value_type)
    return not any(check(t) for check in _NEEDS_FIXING)


def polars_can_write(schema: pa.Schema) -> bool:
    for f in schema:
        t = f.type
        if pa.types.is_map(t):
            return False
        if pa.types.is_struct(t) or pa.types.is_list(t) or pa.types.is_large_list(t) \
                or pa.types.is_fixed_size_list(t):
            if not _nested_ok(t):
                return False
    return True


def _all_finite(column) -> bool:
    import pyarrow.compute as pc

    try:
        return bool(pc.all(pc.is_finite(column)).as_py() is not False)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        return False


#: per second, by Arrow time unit; Arrow's cast writes 0, 3, 6 or 9 fraction digits by unit
_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
_DIGITS = {"s": 0, "ms": 3, "us": 6, "ns": 9}
_FIRST_SECOND, _END_SECOND = -62_135_596_800, 253_402_300_800  # 0001-01-01T00:00:00 and 10000-01-01T00:00:00
_T, _SPACE_AT = ord("T"), 10


def timestamp_text(column: pa.Array) -> Optional[pa.Array]:
    """``column`` as the text polars' ``dt.to_string("%Y-%m-%dT%H:%M:%S%.f")`` writes (``%:z`` appended for a zone),
    or None when polars has to write it (a zone other than UTC, a year outside 1..9999).

    polars writes the fewest of 0, 3, 6 or 9 fraction digits that hold the value exactly (chrono's ``%.f``); Arrow's
    cast writes every digit of the unit and a space for the ``T``. So: Arrow's cast (one C++ pass), ``T`` set in the
    bytes, and each row's length cut to polars' digits by a string *view* onto those bytes (no second copy).
    """
    import pyarrow.compute as pc

    t = column.type
    if t.tz not in (None, "UTC") or len(column) == 0:
        return None
    unit, per = t.unit, _PER_SECOND[t.unit]
    values = column.cast(pa.int64())
    if column.null_count:
        values = values.fill_null(0)
    ints = values.to_numpy(zero_copy_only=True)
    low, high = int(ints.min()), int(ints.max())
    if low < _FIRST_SECOND * per or high >= _END_SECOND * per:
        return None
    naive = values.cast(pa.timestamp(unit))
    arrow_text = naive.cast(pa.string())
    n, width = len(column), 19 + (_DIGITS[unit] + 1 if _DIGITS[unit] else 0)
    suffix = b"+00:00" if t.tz else b""
    raw = np.frombuffer(arrow_text.buffers()[2], np.uint8, count=n * width).reshape(n, width)
    data = np.empty((n, width + len(suffix)), np.uint8)
    data[:, :width] = raw
    data[:, _SPACE_AT] = _T
    lengths = np.full(n, width, np.int32)
    if unit != "s":
        frac = ints % per
        for digits in range(_DIGITS[unit] - 3, -1, -3):  # fewer digits where the value allows
            exact = frac % (per // 10 ** digits) == 0
            lengths[exact] = 19 + (digits + 1 if digits else 0)
    if suffix:
        tail = np.frombuffer(suffix, np.uint8)
        for length in np.unique(lengths):
            data[lengths == length, length:length + len(suffix)] = tail
        lengths += len(suffix)
    stride = data.shape[1]
    views = np.empty((n, 4), np.int32)  # Arrow's string view: length, first 4 bytes, buffer 0, offset
    views[:, 0] = lengths
    views[:, 1] = data[:, :4].copy().view(np.int32)[:, 0]
    views[:, 2] = 0
    views[:, 3] = np.arange(0, n * stride, stride, dtype=np.int32)
    validity = pc.is_valid(column).buffers()[1] if column.null_count else None
    return pa.Array.from_buffers(pa.string_view(), n, [validity, pa.py_buffer(views), pa.py_buffer(data)],
                                 null_count=column.null_count)


def _with_timestamp_text(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Top-level timestamp columns as their JSON text where ``timestamp_text`` can write them."""
    columns, fields, changed = list(batch.columns), list(batch.schema), False
    for i, f in enumerate(batch.schema):
        if pa.types.is_timestamp(f.type):
            as_text = timestamp_text(batch.column(i))
            if as_text is not None:
                columns[i], fields[i], changed = as_text, pa.field(f.name, pa.string_view(), f.nullable), True
    return pa.RecordBatch.from_arrays(columns, schema=pa.schema(fields)) if changed else batch


def to_polars(batch: pa.RecordBatch, nested_as_json: bool = False):
    """A polars frame whose values are already in their JSON/text form (see the module docstring)."""
    import polars as pl

    df = pl.from_arrow(_with_timestamp_text(batch))
    if not isinstance(df, pl.DataFrame):
        df = df.to_frame()
    exprs = []
    for name, dtype in df.schema.items():
        col = pl.col(name)
        if isinstance(dtype, pl.Decimal):
            exprs.append(col.cast(pl.String))
        elif dtype == pl.Binary:
            exprs.append(col.bin.encode("base64"))
        elif isinstance(dtype, pl.Datetime):
            fmt = "%Y-%m-%dT%H:%M:%S%.f" + ("%:z" if dtype.time_zone else "")
            exprs.append(col.dt.to_string(fmt))
        elif dtype in (pl.Float32, pl.Float64):
            if not _all_finite(batch.column(name)):  # the usual case skips a pass over the column
                exprs.append(pl.when(col.is_finite()).then(col).otherwise(None).alias(name))
        elif nested_as_json and isinstance(dtype, (pl.Struct, pl.List, pl.Array)):
            exprs.append(pl.Series(name, [None if v is None else dumps(v) for v in batch.column(name).to_pylist()]))
    return df.with_columns(exprs) if exprs else df


def _plain(value: Any) -> Any:
    """A Python value from Arrow's to_pylist → something json can write, per the mapping above."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, _dt.datetime):
        return value.isoformat()
    if isinstance(value, (_dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
            return {str(k): _plain(v) for k, v in value}  # Arrow maps come back as lists of pairs
        return [_plain(v) for v in value]
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return str(value)


def plain_rows(batch: pa.RecordBatch) -> list[dict]:
    """Rows as dicts of JSON-ready values (for the slow path and small outputs such as the live table)."""
    names = batch.schema.names
    columns = []
    for i, f in enumerate(batch.schema):
        values = batch.column(i).to_pylist()
        if pa.types.is_map(f.type):
            values = [None if v is None else {str(k): _plain(x) for k, x in v} for v in values]
        else:
            values = [_plain(v) for v in values]
        columns.append(values)
    return [dict(zip(names, row)) for row in zip(*columns)]


def dumps(value: Any) -> str:
    return json.dumps(_plain(value), ensure_ascii=False, separators=(",", ":"))
