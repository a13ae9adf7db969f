"""Rows of Python values as text without pyarrow or polars, for the few rows of a one-key lookup.

``json_line`` writes the bytes the JSON-lines renderer writes (polars' NDJSON writer over ``values.to_polars``)
for the flat types ``service/ipc_py.py`` reads: polars prints a float with its shortest round-trip digits, in
positional notation from 1e-5 up to 1e16 and as ``1.5e-6``/``1e+16`` outside; a float32 with float32's shortest
digits, positional from 1e-6 up to 1e13 (polars' own limits, found by tests/output/test_plain_output.py); timestamps with 0, 3 or 6 fraction digits; decimals with all their scale digits. ``text`` is the live
table's cell text. ``tests/output/test_plain_output.py`` compares both with the real renderers on random values.
"""
from __future__ import annotations

import base64
import datetime as _dt
import json
import math
import struct
from decimal import Decimal
from typing import Any, Sequence


def text(value: Any) -> str:
    """A value as a person reads it in a table cell."""
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def cell(value: Any) -> str:
    """A value in a terminal table's cell: ``text``, but a timestamp to the millisecond and without its zone, in
    ``follow``'s and ``lookup``'s tables alike (JSON lines keep every digit)."""
    if isinstance(value, _dt.datetime):
        return short_time(_datetime_text(value))
    return text(value)


def short_time(value: Any) -> str:
    """'2026-11-22T05:59:43.214123+00:00' → '2026-11-22 05:59:43.214' (the cell, not the data)."""
    if not isinstance(value, str) or len(value) < 19:
        return text(value)
    head, frac = value[:19].replace("T", " "), value[19:]
    digits = frac[1:].split("+")[0].split("-")[0] if frac.startswith(".") else ""
    return head + (f".{digits[:3]}" if digits else "")


def size_text(n: float) -> str:
    """Bytes as a person reads them: ``512 B``, ``41.2 KiB``, ``3.0 GiB``."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def _shortest(value: float, bits: int) -> Decimal:
    """The shortest decimal that reads back as ``value`` (as a float32 when ``bits`` is 32)."""
    if bits == 64:
        return Decimal(repr(value))
    for digits in range(1, 10):
        candidate = f"{value:.{digits - 1}e}"
        if struct.unpack("<f", struct.pack("<f", float(candidate)))[0] == value:
            return Decimal(candidate)
    return Decimal(repr(value))  # pragma: no cover - 9 digits always round-trip a float32


def float_text(value: float, bits: int = 64) -> str:
    """A float as polars writes it in JSON (non-finite values are null, as ``values.to_polars`` makes them)."""
    if not math.isfinite(value):
        return "null"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + "0.0"
    d = _shortest(abs(value), bits).normalize()
    digits = "".join(map(str, d.as_tuple().digits))
    exp = d.adjusted()  # value = digits[0].digits[1:] × 10^exp
    low, high = (-6, 13) if bits == 32 else (-5, 16)
    if low <= exp < high:
        if exp >= 0:
            whole, frac = digits[:exp + 1].ljust(exp + 1, "0"), digits[exp + 1:] or "0"
        else:
            whole, frac = "0", "0" * (-exp - 1) + digits
        return f"{sign}{whole}.{frac}"
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{mantissa}e{'+' if exp > 0 else ''}{exp}"


def _datetime_text(t: _dt.datetime) -> str:
    micro = t.microsecond
    frac = "" if not micro else f".{micro // 1000:03d}" if micro % 1000 == 0 else f".{micro:06d}"
    zone = "" if t.tzinfo is None else "+00:00"
    return (f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
            f"{frac}{zone}")


def json_value(value: Any, kind) -> str:
    """One value as JSON text; ``kind`` is its ``ipc_py.Kind``."""
    if value is None:
        return "null"
    name = kind.name
    if name == "bool":
        return "true" if value else "false"
    if name == "int":
        return str(value)
    if name == "float":
        return float_text(value, kind.bits)
    if name == "utf8":
        return json.dumps(value, ensure_ascii=False)
    if name == "binary":
        return '"' + base64.b64encode(value).decode("ascii") + '"'
    if name == "date":
        return f'"{value.year:04d}-{value.month:02d}-{value.day:02d}"'
    if name == "timestamp":
        if value.tzinfo is not None and value.utcoffset():
            value = value.astimezone(_dt.timezone.utc)
        return '"' + _datetime_text(value) + '"'
    if name == "decimal":
        return '"' + format(value, f".{kind.scale}f") + '"'
    raise ValueError(f"no JSON text for {name}")


def json_line(columns: Sequence[tuple], row: Sequence[Any]) -> str:
    """``{"name":value,...}`` for (name, kind) columns and one row of values."""
    return "{" + ",".join(json.dumps(name, ensure_ascii=False) + ":" + json_value(v, kind)
                          for (name, kind), v in zip(columns, row)) + "}"


__all__ = ["cell", "float_text", "json_line", "json_value", "short_time", "size_text", "text"]
