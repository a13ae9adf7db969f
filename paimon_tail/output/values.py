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
"""
from __future__ import annotations

import base64
import datetime as _dt
import decimal
import json
import math
from typing import Any

import pyarrow as pa

from .plain import text  # noqa: F401  (the live table's cell text lives with the plain-Python text)

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


def to_polars(batch: pa.RecordBatch, nested_as_json: bool = False):
    """A polars frame whose values are already in their JSON/text form (see the module docstring)."""
    import polars as pl

    df = pl.from_arrow(batch)
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
