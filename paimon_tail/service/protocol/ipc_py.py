"""Arrow IPC streams of a few rows of flat columns, in plain Python: a one-key lookup without importing pyarrow.

``import pyarrow`` costs more than the rest of a single-key ``paimon-tail lookup`` together (it loads numpy and
Arrow's C++ libraries). The protocol's keys and rows are Arrow IPC streams (``lookup.proto``); for one key and
its row, the stream is a schema message and one record-batch message of a few flat columns, which this module
writes and reads (the Flatbuffers tables of Arrow's ``Schema.fbs``/``Message.fbs``, little-endian, no
compression). Anything else (nested types, dictionaries, compressed bodies, nanosecond or zoned timestamps)
raises ``Unsupported`` and the caller uses pyarrow. ``tests/service/protocol/test_ipc_py.py`` reads what this writes with
pyarrow and reads what pyarrow writes, type by type.
"""
from __future__ import annotations

import base64
import datetime as _dt
import struct
from decimal import Decimal
from typing import Any, List, NamedTuple, Optional, Sequence, Tuple

EOS = b"\xff\xff\xff\xff\x00\x00\x00\x00"
_EPOCH_DAY = _dt.date(1970, 1, 1)
_EPOCH = _dt.datetime(1970, 1, 1)
_UNITS = ("s", "ms", "us", "ns")
_PER_SECOND = {"s": 1, "ms": 1000, "us": 1_000_000}


class Unsupported(Exception):
    """A type or message layout outside this module's subset."""


class Kind(NamedTuple):  # a NamedTuple, not a dataclass: this module is on the one-key lookup's start-up path
    """A flat Arrow type: ``name`` is int, float, bool, utf8, binary, date, timestamp, decimal or null."""

    name: str
    bits: int = 0  # int/float width
    signed: bool = True
    unit: str = ""  # timestamp
    tz: Optional[str] = None
    precision: int = 0  # decimal
    scale: int = 0
    large: bool = False  # 64-bit offsets (large_utf8/large_binary)


def kind_of_paimon(type_name: str) -> Kind:
    """The Arrow type pypaimon gives a Paimon key type (``PyarrowFieldParser``), for the types keys use."""
    base = (type_name.strip().upper().split("(", 1)[0].split() or [""])[0]  # "DECIMAL(10, 2) NOT NULL" → DECIMAL
    ints = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "INTEGER": 32, "BIGINT": 64}
    if base in ints:
        return Kind("int", ints[base])
    if base in ("STRING", "VARCHAR", "CHAR"):
        return Kind("utf8")
    if base == "BOOLEAN":
        return Kind("bool")
    if base == "DATE":
        return Kind("date")
    raise Unsupported(f"{type_name} keys")


# -- Flatbuffers, the little we need ----------------------------------------------------------------------------
class _Reader:
    def __init__(self, buf: bytes) -> None:
        self.buf = buf

    def root(self) -> int:
        return struct.unpack_from("<I", self.buf, 0)[0]

    def _field(self, table: int, index: int) -> int:
        vtable = table - struct.unpack_from("<i", self.buf, table)[0]
        vt_size = struct.unpack_from("<H", self.buf, vtable)[0]
        at = 4 + 2 * index
        return struct.unpack_from("<H", self.buf, vtable + at)[0] if at < vt_size else 0

    def scalar(self, table: int, index: int, fmt: str, default: Any = 0) -> Any:
        off = self._field(table, index)
        return struct.unpack_from("<" + fmt, self.buf, table + off)[0] if off else default

    def ref(self, table: int, index: int) -> Optional[int]:
        off = self._field(table, index)
        if not off:
            return None
        at = table + off
        return at + struct.unpack_from("<I", self.buf, at)[0]

    def string(self, table: int, index: int) -> Optional[str]:
        at = self.ref(table, index)
        if at is None:
            return None
        n = struct.unpack_from("<I", self.buf, at)[0]
        return self.buf[at + 4:at + 4 + n].decode("utf-8")

    def tables(self, table: int, index: int) -> List[int]:
        at = self.ref(table, index)
        if at is None:
            return []
        n = struct.unpack_from("<I", self.buf, at)[0]
        return [at + 4 + 4 * i + struct.unpack_from("<I", self.buf, at + 4 + 4 * i)[0] for i in range(n)]

    def structs(self, table: int, index: int, fmt: str) -> List[tuple]:
        at = self.ref(table, index)
        if at is None:
            return []
        n = struct.unpack_from("<I", self.buf, at)[0]
        size = struct.calcsize("<" + fmt)
        return [struct.unpack_from("<" + fmt, self.buf, at + 4 + size * i) for i in range(n)]


def _build(fields: Sequence[Optional[tuple]]) -> bytes:
    """A Flatbuffer whose root table has ``fields`` (index → ``(kind, value)`` or None), laid out front to back:
    root offset, then each table's vtable and table, then its children (every offset points forward)."""
    buf = bytearray(8)  # root uoffset, padding
    struct.pack_into("<I", buf, 0, _table(buf, fields))
    return bytes(buf)


def _pad(buf: bytearray, align: int, extra: int = 0) -> None:
    buf += bytes(-(len(buf) + extra) % align)


_SCALARS = {"u8": "B", "bool": "B", "i16": "h", "i32": "i", "i64": "q"}


def _table(buf: bytearray, fields: Sequence[Optional[tuple]]) -> int:
    present = [(i, f) for i, f in enumerate(fields) if f is not None]
    n = max((i for i, _ in present), default=-1) + 1
    # table body: soffset, then fields (8-byte scalars first keeps the alignment simple)
    layout, size = {}, 4
    for i, (kind, _) in sorted(present, key=lambda p: -struct.calcsize(_SCALARS.get(p[1][0], "I"))):
        width = struct.calcsize(_SCALARS.get(kind, "I"))
        size += -size % width
        layout[i] = size
        size += width
    vtable = bytes(struct.pack("<HH", 4 + 2 * n, size) + b"".join(
        struct.pack("<H", layout.get(i, 0)) for i in range(n)))
    _pad(buf, 8, len(vtable))
    vt_at = len(buf)
    buf += vtable
    _pad(buf, 8)  # the table starts 8-aligned, so its 8-byte fields are too
    at = len(buf)
    buf += bytes(size)
    struct.pack_into("<i", buf, at, at - vt_at)
    children = []
    for i, (kind, value) in present:
        if kind in _SCALARS:
            struct.pack_into("<" + _SCALARS[kind], buf, at + layout[i], value)
        else:
            children.append((at + layout[i], kind, value))
    for slot, kind, value in children:
        if kind == "table":
            target = _table(buf, value)
        elif kind == "str":
            data = value.encode("utf-8")
            _pad(buf, 4)
            target = len(buf)
            buf += struct.pack("<I", len(data)) + data + b"\x00"
        elif kind == "tables":
            _pad(buf, 4)
            target = len(buf)
            buf += struct.pack("<I", len(value)) + bytes(4 * len(value))
            for j, t in enumerate(value):
                struct.pack_into("<I", buf, target + 4 + 4 * j, _table(buf, t) - (target + 4 + 4 * j))
        else:  # "structs": raw bytes of 8-byte aligned structs
            count, data = value
            _pad(buf, 8, 4)
            target = len(buf)
            buf += struct.pack("<I", count) + data
        struct.pack_into("<I", buf, slot, target - slot)
    return at


# -- messages -----------------------------------------------------------------------------------------------
_V5 = 4
_TYPE_IDS = {"null": 1, "int": 2, "float": 3, "binary": 4, "utf8": 5, "bool": 6, "decimal": 7, "date": 8,
             "timestamp": 10, "large_binary": 19, "large_utf8": 20}


def _type_table(kind: Kind) -> Tuple[int, list]:
    if kind.name == "int":
        return _TYPE_IDS["int"], [("i32", kind.bits), ("bool", 1 if kind.signed else 0)]
    if kind.name == "float":
        return _TYPE_IDS["float"], [("i16", {16: 0, 32: 1, 64: 2}[kind.bits])]
    if kind.name == "date":
        return _TYPE_IDS["date"], [("i16", 0)]  # DAY
    if kind.name == "timestamp":
        return _TYPE_IDS["timestamp"], [("i16", _UNITS.index(kind.unit)), ("str", kind.tz) if kind.tz else None]
    if kind.name == "decimal":
        return _TYPE_IDS["decimal"], [("i32", kind.precision), ("i32", kind.scale), ("i32", 128)]
    if kind.name in ("utf8", "binary", "bool", "null"):
        return _TYPE_IDS[("large_" if kind.large else "") + kind.name], []
    raise Unsupported(kind.name)


def _message(header_type: int, header: list, body_length: int) -> bytes:
    meta = _build([("i16", _V5), ("u8", header_type), ("table", header), ("i64", body_length)])
    meta += bytes(-len(meta) % 8)
    return struct.pack("<Ii", 0xFFFFFFFF, len(meta)) + meta


def encode(columns: Sequence[Tuple[str, Kind, Sequence[Any]]]) -> bytes:
    """An Arrow IPC stream of one record batch: ``columns`` = (name, kind, values), values never null."""
    fields = []
    for name, kind, _ in columns:
        type_id, type_fields = _type_table(kind)
        fields.append([("str", name), ("bool", 0), ("u8", type_id), ("table", type_fields), None,
                       ("tables", [])])
    schema = _message(1, [None, ("tables", fields)], 0)
    n = len(columns[0][2]) if columns else 0
    nodes, buffers, body = bytearray(), bytearray(), bytearray()

    def add(data: bytes) -> None:
        buffers.extend(struct.pack("<qq", len(body), len(data)))
        body.extend(data + bytes(-len(data) % 8))

    for _, kind, values in columns:
        if len(values) != n or any(v is None for v in values):
            raise Unsupported("null or ragged key columns")
        nodes.extend(struct.pack("<qq", n, 0))
        add(b"")  # validity: none (no nulls)
        if kind.name == "int":
            add(struct.pack(f"<{n}{'bhiq'[(kind.bits // 8).bit_length() - 1]}", *values))
        elif kind.name == "date":
            add(struct.pack(f"<{n}i", *[(v - _EPOCH_DAY).days for v in values]))
        elif kind.name == "bool":
            bits = bytearray((n + 7) // 8)
            for i, v in enumerate(values):
                if v:
                    bits[i // 8] |= 1 << (i % 8)
            add(bytes(bits))
        elif kind.name in ("utf8", "binary"):
            data = [v.encode("utf-8") if kind.name == "utf8" else bytes(v) for v in values]
            offsets = [0]
            for d in data:
                offsets.append(offsets[-1] + len(d))
            add(struct.pack(f"<{n + 1}i", *offsets))
            add(b"".join(data))
        else:
            raise Unsupported(kind.name)
    batch = _message(3, [("i64", n), ("structs", (len(columns), bytes(nodes))),
                         ("structs", (len(buffers) // 16, bytes(buffers)))], len(body))
    return schema + batch + bytes(body) + EOS


def _messages(data: bytes):
    at = 0
    while at + 8 <= len(data):
        marker, length = struct.unpack_from("<Ii", data, at)
        if marker != 0xFFFFFFFF:
            raise Unsupported("a stream without continuation markers")
        if length == 0:
            return
        meta = _Reader(data[at + 8:at + 8 + length])
        msg = meta.root()
        body_length = meta.scalar(msg, 3, "q")
        start = at + 8 + length
        yield meta, msg, data[start:start + body_length]
        at = start + body_length


def _kind(r: _Reader, field: int) -> Kind:
    if r.ref(field, 4) is not None:
        raise Unsupported("dictionary-encoded columns")
    type_id, t = r.scalar(field, 2, "B"), r.ref(field, 3)
    if type_id == _TYPE_IDS["int"]:
        return Kind("int", r.scalar(t, 0, "i"), bool(r.scalar(t, 1, "B")))
    if type_id == _TYPE_IDS["float"]:
        bits = {1: 32, 2: 64}.get(r.scalar(t, 0, "h"))
        if bits is None:
            raise Unsupported("half floats")
        return Kind("float", bits)
    if type_id == _TYPE_IDS["date"]:
        if r.scalar(t, 0, "h", 1) != 0:
            raise Unsupported("date64")
        return Kind("date")
    if type_id == _TYPE_IDS["timestamp"]:
        unit, tz = _UNITS[r.scalar(t, 0, "h")], r.string(t, 1)
        if unit == "ns" or tz not in (None, "UTC", "+00:00"):
            raise Unsupported("nanosecond or zoned timestamps")
        return Kind("timestamp", unit=unit, tz=tz)
    if type_id == _TYPE_IDS["decimal"]:
        if r.scalar(t, 2, "i", 128) != 128:
            raise Unsupported("decimal256")
        return Kind("decimal", precision=r.scalar(t, 0, "i"), scale=r.scalar(t, 1, "i"))
    names = {v: k for k, v in _TYPE_IDS.items()}
    name = names.get(type_id)
    if name in ("utf8", "binary", "bool", "null"):
        return Kind(name)
    if name in ("large_utf8", "large_binary"):
        return Kind(name[6:], large=True)
    raise Unsupported(f"Arrow type {type_id}")


def decode(data: bytes) -> Tuple[List[Tuple[str, Kind]], List[List[Any]]]:
    """(columns as (name, kind), rows as lists of Python values, the values pyarrow's ``to_pylist`` gives)."""
    columns: Optional[List[Tuple[str, Kind]]] = None
    rows: List[List[Any]] = []
    for r, msg, body in _messages(data):
        header_type, header = r.scalar(msg, 1, "B"), r.ref(msg, 2)
        if header_type == 1:
            columns = []
            for f in r.tables(header, 1):
                if r.tables(f, 5):
                    raise Unsupported("nested columns")
                columns.append((r.string(f, 0) or "", _kind(r, f)))
        elif header_type == 3 and columns is not None:
            if r.ref(header, 3) is not None:
                raise Unsupported("compressed record batches")
            n = r.scalar(header, 0, "q")
            nodes = r.structs(header, 1, "qq")
            buffers = [body[off:off + size] for off, size in r.structs(header, 2, "qq")]
            values = []
            for (name, kind), (length, nulls) in zip(columns, nodes):
                count = 0 if kind.name == "null" else 3 if kind.name in ("utf8", "binary") else 2
                column, buffers = buffers[:count], buffers[count:]
                values.append(_column(kind, length, nulls, column))
            rows.extend([list(row) for row in zip(*values)] if values else [[] for _ in range(n)])
        else:
            raise Unsupported(f"message type {header_type}")
    if columns is None:
        raise Unsupported("a stream without a schema")
    return columns, rows


def _column(kind: Kind, n: int, nulls: int, buffers: List[bytes]) -> List[Any]:
    if kind.name == "null":
        return [None] * n
    valid = buffers[0]
    is_valid = (lambda i: True) if not nulls or not valid else (lambda i: bool(valid[i // 8] >> (i % 8) & 1))
    data = buffers[1]
    if kind.name in ("utf8", "binary"):
        offsets = struct.unpack_from(f"<{n + 1}{'q' if kind.large else 'i'}", data)
        raw = buffers[2]
        out = [raw[offsets[i]:offsets[i + 1]] for i in range(n)]
        if kind.name == "utf8":
            out = [b.decode("utf-8") for b in out]
    elif kind.name == "bool":
        out = [bool(data[i // 8] >> (i % 8) & 1) for i in range(n)]
    elif kind.name == "int":
        out = list(struct.unpack_from(f"<{n}{('bhiq' if kind.signed else 'BHIQ')[(kind.bits // 8).bit_length() - 1]}",
                                      data))
    elif kind.name == "float":
        out = list(struct.unpack_from(f"<{n}{'f' if kind.bits == 32 else 'd'}", data))
    elif kind.name == "date":
        out = [_EPOCH_DAY + _dt.timedelta(days=d) for d in struct.unpack_from(f"<{n}i", data)]
    elif kind.name == "timestamp":
        per = _PER_SECOND[kind.unit]
        tz = _dt.timezone.utc if kind.tz else None
        out = []
        for v in struct.unpack_from(f"<{n}q", data):
            t = _EPOCH + _dt.timedelta(seconds=v // per, microseconds=(v % per) * (1_000_000 // per))
            out.append(t.replace(tzinfo=tz) if tz else t)
    elif kind.name == "decimal":
        out = []
        for i in range(n):
            lo, hi = struct.unpack_from("<Qq", data, 16 * i)
            out.append(Decimal((hi << 64) | lo).scaleb(-kind.scale))
    else:  # pragma: no cover - _kind admits no other
        raise Unsupported(kind.name)
    return [v if is_valid(i) else None for i, v in enumerate(out)] if nulls else out


def b64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


__all__ = ["Kind", "Unsupported", "decode", "encode", "kind_of_paimon"]
