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
from typing import Any, BinaryIO, Dict, Iterable, Iterator, List, Mapping, Sequence

from ...errors import UsageError

_INT_RANGES = {
    "TINYINT": (-(1 << 7), (1 << 7) - 1),
    "SMALLINT": (-(1 << 15), (1 << 15) - 1),
    "INT": (-(1 << 31), (1 << 31) - 1),
    "INTEGER": (-(1 << 31), (1 << 31) - 1),
    "BIGINT": (-(1 << 63), (1 << 63) - 1),
}


_NON_BLANK_LINE = re.compile(rb"(?m)^[ \t\r]*[^ \t\r\n]")


@functools.lru_cache(maxsize=256)
def _base(type_name: str) -> str:
    return re.split(r"[\s(]", type_name.strip().upper(), maxsplit=1)[0]


class KeyParser:
    """Keys of one table (a pypaimon table or a ``TableMeta``); pure Python until Arrow is asked for."""

    def __init__(self, table) -> None:
        from ...table_meta import table_meta

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

    def from_json_lines(self, lines: Iterable[str], source: str = "stdin", first_line: int = 1
                        ) -> Iterator[Dict[str, Any]]:
        for n, line in enumerate(lines, first_line):
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

    # -- many keys at once ---------------------------------------------------------------------------------
    def json_batches(self, stream: BinaryIO, source: str = "stdin", chunk_bytes: int = 4 << 20) -> Iterator[Any]:
        """Arrow tables of keys from JSON lines, ``chunk_bytes`` of input at a time (the CLI's ``--keys-from``).

        Each chunk is parsed by pyarrow's JSON reader against the key columns' types when they are integers or
        strings; a chunk that reader refuses or reads differently from ``from_json_lines`` (nulls, numbers as
        strings, scalars instead of objects, blank-only lines, several objects on a line, other key types) is
        parsed line by line with ``from_json_lines``: the same keys, or its one-line error naming the line.
        """
        first_line = 1
        rest = b""
        while True:
            block = stream.read(chunk_bytes)
            data = rest + block
            if not block:
                rest = b""
            else:
                cut = data.rfind(b"\n") + 1
                data, rest = data[:cut], data[cut:]
            if data:
                yield self._json_chunk(data, source, first_line)
                first_line += data.count(b"\n")
            if not block:
                return

    def _json_chunk(self, data: bytes, source: str, first_line: int):
        table = self._fast_json(data) if self._fast_json_ok else None
        if table is not None:
            return table
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            line = first_line + data.count(b"\n", 0, e.start)
            raise UsageError(f"{source} line {line} is not UTF-8 text") from None
        keys = list(self.from_json_lines(text.split("\n"), source, first_line))  # not splitlines: JSON allows U+2028
        return self.to_arrow(keys) if keys else self.arrow_schema.empty_table()

    @functools.cached_property
    def _fast_json_ok(self) -> bool:
        return all(_base(self.types[k]) in _INT_RANGES or _base(self.types[k]) in ("STRING", "VARCHAR", "CHAR")
                   for k in self.names)

    def _fast_json(self, data: bytes):
        """The chunk through pyarrow's JSON reader, or None when ``from_json_lines`` must decide."""
        import pyarrow as pa
        import pyarrow.json as pj

        schema = pa.schema([pa.field(f.name, f.type) for f in self.arrow_schema])  # nullable: nulls are checked
        try:
            table = pj.read_json(pa.BufferReader(data), read_options=pj.ReadOptions(block_size=len(data) + 1),
                                 parse_options=pj.ParseOptions(explicit_schema=schema,
                                                               unexpected_field_behavior="ignore"))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return None
        lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
        if table.num_rows != lines and table.num_rows != len(_NON_BLANK_LINE.findall(data)):
            return None  # two objects on one line (the line-by-line parser refuses that)
        if any(table.column(k).null_count for k in self.names):
            return None
        return table.select(self.names).cast(self.arrow_schema)

    def arrow_batches(self, stream: BinaryIO, source: str = "stdin", min_rows: int = 65536) -> Iterator[Any]:
        """Arrow tables of keys (any columns; the client takes the key columns) from Arrow IPC streams, one after
        another until EOF (``follow -f arrow`` starts a new stream when the schema changes)."""
        import pyarrow as pa

        first = True
        while first or stream.peek(1):
            try:
                reader = pa.ipc.open_stream(stream)
            except pa.ArrowInvalid as e:
                raise UsageError(f"{source} is not an Arrow IPC stream: {e}") from None
            first = False
            pending: List[Any] = []
            rows = 0
            for batch in reader:
                pending.append(batch)
                rows += batch.num_rows
                if rows >= min_rows:
                    yield pa.Table.from_batches(pending)
                    pending, rows = [], 0
            if pending:
                yield pa.Table.from_batches(pending)

    def to_arrow(self, keys: Sequence[Dict[str, Any]]):
        import pyarrow as pa

        return pa.table({k: pa.array([key[k] for key in keys], type=self.arrow_schema.field(k).type)
                         for k in self.names})
