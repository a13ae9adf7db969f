"""Keys from the command line or JSON, parsed by the primary-key columns' Paimon types.

* ``42`` — a one-column key;
* ``id=42,dt=2026-11-01`` — composite keys (partition keys included: they are part of the primary key);
* JSON objects ``{"id": 42, "dt": "2026-11-01"}`` (``--keys-from``), extra fields ignored so ``follow`` output
  can be piped in as it is.

A value that does not fit its column is a ``UsageError`` (exit 2) naming the key and the column.
"""
from __future__ import annotations

import base64
import datetime as dt
import functools
import json
import re
from decimal import Decimal, InvalidOperation
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Sequence

from ..errors import UsageError

_INT_RANGES = {
    "TINYINT": (-(1 << 7), (1 << 7) - 1),
    "SMALLINT": (-(1 << 15), (1 << 15) - 1),
    "INT": (-(1 << 31), (1 << 31) - 1),
    "INTEGER": (-(1 << 31), (1 << 31) - 1),
    "BIGINT": (-(1 << 63), (1 << 63) - 1),
}


def _base(type_name: str) -> str:
    return re.split(r"[\s(]", type_name.strip().upper(), maxsplit=1)[0]


class KeyParser:
    """Keys of one table (a pypaimon table or a ``TableMeta``); pure Python until Arrow is asked for."""

    def __init__(self, table) -> None:
        from ..compat.table_meta import table_meta

        self.meta = table_meta(table)
        self.names: List[str] = list(self.meta.primary_keys)
        self.types = {k: re.sub(r"\s+NOT\s+NULL\s*$", "", self.meta.type_name(k), flags=re.I) for k in self.names}

    @functools.cached_property
    def arrow_schema(self):
        """The key columns as Arrow types (imports pyarrow)."""
        import pyarrow as pa
        from pypaimon.schema.data_types import PyarrowFieldParser

        return pa.schema([pa.field(f.name, PyarrowFieldParser.from_paimon_type(f.type), nullable=False)
                          for f in self.meta.data_fields(self.names)])

    # -- one value ----------------------------------------------------------------------------------------
    def convert(self, name: str, value: Any, source: str) -> Any:
        type_name = self.types[name]
        base = _base(type_name)

        def bad(why: str = "") -> UsageError:
            shown = value if isinstance(value, str) else json.dumps(value, default=str)
            return UsageError(f"key {source}: {shown!r} does not fit column {name} ({type_name.lower()})"
                              + (f": {why}" if why else ""))

        if value is None:
            raise UsageError(f"key {source}: column {name} is null (primary-key columns are never null)")
        if base in _INT_RANGES:
            if isinstance(value, bool):
                raise bad()
            if isinstance(value, float):
                if not value.is_integer():
                    raise bad()
                value = int(value)
            if isinstance(value, str):
                if not re.fullmatch(r"[+-]?\d+", value.strip()):
                    raise bad()
                value = int(value.strip())
            if not isinstance(value, int):
                raise bad()
            lo, hi = _INT_RANGES[base]
            if not lo <= value <= hi:
                raise bad(f"out of range {lo}..{hi}")
            return value
        if base in ("FLOAT", "DOUBLE"):
            try:
                if isinstance(value, bool):
                    raise ValueError
                return float(value)
            except (TypeError, ValueError):
                raise bad() from None
        if base in ("DECIMAL", "NUMERIC", "DEC"):
            m = re.search(r"\((\d+)\s*(?:,\s*(\d+))?\)", type_name)
            precision, scale = (int(m.group(1)), int(m.group(2) or 0)) if m else (10, 0)
            try:
                d = Decimal(str(value).strip())
            except InvalidOperation:
                raise bad() from None
            if not d.is_finite():
                raise bad()
            q = d.quantize(Decimal(1).scaleb(-scale))
            if q != d or len(q.as_tuple().digits) > precision and q != 0:
                raise bad(f"needs at most {precision} digits with {scale} decimals")
            return q
        if base in ("STRING", "VARCHAR", "CHAR"):
            if isinstance(value, (dict, list)):
                raise bad()
            if isinstance(value, bool):
                return "true" if value else "false"
            return str(value)
        if base == "BOOLEAN":
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("true", "false"):
                return text == "true"
            raise bad()
        if base == "DATE":
            try:
                return dt.date.fromisoformat(str(value).strip())
            except ValueError:
                raise bad("use YYYY-MM-DD") from None
        if base == "TIMESTAMP":
            try:
                parsed = dt.datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
            except ValueError:
                raise bad("use ISO-8601 like 2026-11-01T12:00:00") from None
            if "LOCAL TIME ZONE" in type_name.upper():
                if parsed.tzinfo is None:
                    parsed = parsed.replace(tzinfo=dt.timezone.utc)
                return parsed
            return parsed.replace(tzinfo=None) if parsed.tzinfo is None else \
                parsed.astimezone(dt.timezone.utc).replace(tzinfo=None)
        if base in ("BYTES", "BINARY", "VARBINARY"):
            if isinstance(value, (bytes, bytearray)):
                return bytes(value)
            text = str(value)
            if text.startswith("base64:"):
                try:
                    return base64.b64decode(text[7:], validate=True)
                except ValueError:
                    raise bad("bad base64") from None
            return text.encode("utf-8")
        raise UsageError(f"lookups by a {type_name.lower()} key column ({name}) are not supported")

    # -- whole keys ---------------------------------------------------------------------------------------
    def from_mapping(self, obj: Mapping[str, Any], source: str) -> Dict[str, Any]:
        missing = [k for k in self.names if k not in obj]
        if missing:
            raise UsageError(
                f"key {source} lacks column{'s' if len(missing) > 1 else ''} {', '.join(missing)}",
                hint=f"the primary key is ({', '.join(self.names)})",
            )
        return {k: self.convert(k, obj[k], source) for k in self.names}

    def from_text(self, text: str) -> Dict[str, Any]:
        text = text.strip()
        if not text:
            raise UsageError("empty key")
        if "=" not in text:
            if len(self.names) != 1:
                raise UsageError(
                    f"key {text!r} gives one value but the primary key has {len(self.names)} columns",
                    hint=f"write it as {','.join(f'{k}=...' for k in self.names)}",
                )
            return {self.names[0]: self.convert(self.names[0], text, repr(text))}
        obj: Dict[str, str] = {}
        for part in text.split(","):
            name, sep, value = part.partition("=")
            name = name.strip()
            if not sep or not name:
                raise UsageError(f"key {text!r}: {part!r} is not column=value")
            if name not in self.types:
                raise UsageError(f"key {text!r}: {name} is not a primary-key column",
                                 hint=f"the primary key is ({', '.join(self.names)})")
            if name in obj:
                raise UsageError(f"key {text!r}: column {name} given twice")
            obj[name] = value
        return self.from_mapping(obj, repr(text))

    def from_json_lines(self, lines: Iterable[str], source: str = "stdin") -> Iterator[Dict[str, Any]]:
        for n, line in enumerate(lines, 1):
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise UsageError(f"{source} line {n} is not JSON: {e.msg}") from None
            if not isinstance(obj, dict):
                if len(self.names) == 1 and not isinstance(obj, (list, dict)):
                    obj = {self.names[0]: obj}
                else:
                    raise UsageError(f"{source} line {n}: expected a JSON object with the key columns")
            yield self.from_mapping(obj, f"at {source} line {n}")

    def coerce(self, key: Any, index: int) -> Dict[str, Any]:
        """A key given to the library: a mapping, a scalar (one-column keys) or a tuple in key order."""
        source = f"#{index}"
        if isinstance(key, Mapping):
            return self.from_mapping(key, source)
        if isinstance(key, (tuple, list)):
            if len(key) != len(self.names):
                raise UsageError(f"key {source} has {len(key)} values for {len(self.names)} key columns")
            return {k: self.convert(k, v, source) for k, v in zip(self.names, key)}
        if len(self.names) != 1:
            raise UsageError(f"key {source} is a single value but the primary key has {len(self.names)} columns")
        return {self.names[0]: self.convert(self.names[0], key, source)}

    def to_arrow(self, keys: Sequence[Dict[str, Any]]):
        import pyarrow as pa

        return pa.table({k: pa.array([key[k] for key in keys], type=self.arrow_schema.field(k).type)
                         for k in self.names})
