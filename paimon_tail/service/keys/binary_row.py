"""Paimon's key hashing for one key in plain Python: ``BinaryRow.hashCode()``, the bucket and the channel.

The same bytes as pypaimon's ``GenericRowSerializer`` (``BinaryRow`` layout: a header word, one 8-byte slot per
field, a variable part) hashed with ``MurmurHashUtils.hashBytesByWords`` (murmur3 x86_32, seed 42), for the key
types a primary key usually has. It imports neither pyarrow nor numpy nor pypaimon's writer (0.5 s), so a
single-key ``lookup`` starts in the time of ``import grpc``. ``bucket_hash.py`` is the vectorised twin for many
keys; ``tests/service/keys/test_bucket_hash.py`` checks both against pypaimon. Types not covered here raise
``Unsupported`` and callers take pypaimon's path.
"""
from __future__ import annotations

import calendar
import datetime as _dt
import functools
import re
import struct
from decimal import Decimal
from typing import Any, Sequence, Tuple

_SEED = 42
_M32 = 0xFFFFFFFF


class Unsupported(Exception):
    """A key type (or value) this module does not lay out."""


@functools.lru_cache(maxsize=256)
def base_type(type_name: str) -> str:
    """``DECIMAL(10, 2) NOT NULL`` → ``DECIMAL``."""
    return re.split(r"[\s(]", type_name.strip().upper(), maxsplit=1)[0]


def precision_scale(type_name: str) -> Tuple[int, int]:
    """(precision, scale) of a DECIMAL/TIMESTAMP type string, with Paimon's defaults (10, 0) and (6, 0)."""
    m = re.search(r"\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)", type_name)
    if m:
        return int(m.group(1)), int(m.group(2) or 0)
    return (10, 0) if base_type(type_name) in ("DECIMAL", "NUMERIC", "DEC") else (6, 0)


def hash_bytes_by_words(data: bytes) -> int:
    """``MurmurHashUtils.hashBytesByWords`` (unsigned 32-bit). (Rotations inlined: a lookup of one key hashes on
    its path.)"""
    h = _SEED
    for k in struct.unpack_from(f"<{len(data) >> 2}I", data):
        k = (k * 0xCC9E2D51) & _M32
        k = (((k << 15) | (k >> 17)) & _M32) * 0x1B873593 & _M32
        h ^= k
        h = ((((h << 13) | (h >> 19)) & _M32) * 5 + 0xE6546B64) & _M32
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    return h ^ (h >> 16)


def _slot(value: Any, type_name: str) -> Tuple[bytes, bytes]:
    """(8-byte fixed slot or b"" when the slot points into the variable part, variable-part bytes)."""
    base = base_type(type_name)
    if base in ("CHAR", "VARCHAR", "STRING", "BINARY", "VARBINARY", "BYTES"):
        data = str(value).encode("utf-8") if base in ("CHAR", "VARCHAR", "STRING") else bytes(value)
        if len(data) <= 7:
            return data + bytes(7 - len(data)) + bytes([0x80 | len(data)]), b""
        return b"", data + bytes(-len(data) % 8)
    if base in ("BOOLEAN", "BOOL"):
        return struct.pack("<b", 1 if value else 0) + bytes(7), b""
    if base in ("TINYINT", "BYTE"):
        return struct.pack("<b", value) + bytes(7), b""
    if base in ("SMALLINT", "SHORT"):
        return struct.pack("<h", value) + bytes(6), b""
    if base in ("INT", "INTEGER"):
        return struct.pack("<i", value) + bytes(4), b""
    if base in ("BIGINT", "LONG"):
        return struct.pack("<q", value), b""
    if base in ("FLOAT", "REAL"):
        return struct.pack("<f", value) + bytes(4), b""
    if base == "DOUBLE":
        return struct.pack("<d", value), b""
    if base == "DATE" and isinstance(value, _dt.date) and not isinstance(value, _dt.datetime):
        return struct.pack("<i", (value - _dt.date(1970, 1, 1)).days) + bytes(4), b""
    if base in ("DECIMAL", "NUMERIC") and isinstance(value, Decimal):
        precision, scale = precision_scale(type_name)
        if precision > 18:
            raise Unsupported("a decimal of more than 18 digits")
        q = value.quantize(Decimal(1).scaleb(-scale))
        if q != value or (q != 0 and len(q.as_tuple().digits) > precision):
            raise Unsupported("a decimal that does not fit its column")  # pypaimon writes such a value as null
        return struct.pack("<q", int(q.scaleb(scale))), b""
    if base == "TIMESTAMP" and isinstance(value, _dt.datetime) and "LOCAL TIME ZONE" not in type_name.upper() \
            and value.tzinfo is None:
        millis = calendar.timegm(value.timetuple()) * 1000 + value.microsecond // 1000
        if precision_scale(type_name)[0] <= 3:
            return struct.pack("<q", millis), b""
        return struct.pack("<q", (value.microsecond % 1000) * 1000), struct.pack("<q", millis)
    raise Unsupported(f"{type_name} keys")


def row_hash(values: Sequence[Any], types: Sequence[str]) -> int:
    """``BinaryRow.hashCode()`` (signed int) of a row of non-null ``values`` typed by Paimon type strings."""
    arity = len(types)
    null_bytes = ((arity + 63 + 8) // 64) * 8
    fixed = bytearray(null_bytes + 8 * arity)
    variable = bytearray()
    for i, (value, type_name) in enumerate(zip(values, types)):
        if value is None:
            raise Unsupported("null key values")
        slot, var = _slot(value, type_name)
        at = null_bytes + 8 * i
        if var:
            offset = len(fixed) + len(variable)
            if base_type(type_name) == "TIMESTAMP":  # slot = offset << 32 | nano of milli
                slot = struct.pack("<q", (offset << 32) | struct.unpack("<q", slot)[0])
            else:  # slot = offset << 32 | length
                length = len(str(value).encode("utf-8")) if base_type(type_name) in ("CHAR", "VARCHAR", "STRING") \
                    else len(bytes(value))
                slot = struct.pack("<q", (offset << 32) | length)
            variable += var
        fixed[at:at + 8] = slot
    return to_int32(hash_bytes_by_words(bytes(fixed) + bytes(variable)))


def _mix(h: int, k: int) -> int:
    k = (k * 0xCC9E2D51) & _M32
    k = (((k << 15) | (k >> 17)) & _M32) * 0x1B873593 & _M32
    h ^= k
    return ((((h << 13) | (h >> 19)) & _M32) * 5 + 0xE6546B64) & _M32


_AFTER_HEADER = _mix(_mix(_SEED, 0), 0)  # a one-field row's first two words: its null bits, all zero
_INT_MASKS = {"TINYINT": 0xFF, "BYTE": 0xFF, "SMALLINT": 0xFFFF, "SHORT": 0xFFFF, "INT": _M32, "INTEGER": _M32}
INT_BASES = frozenset(_INT_MASKS) | {"BIGINT", "LONG"}  # what ``int_row_hash`` takes


def int_row_hash(value: int, base: str) -> int:
    """``row_hash([value], [base])`` for one integer column (``base``: ``BIGINT``, ``INT`` ...), without building
    the row's bytes: its 16 bytes are a zero header word pair and the value's slot, so the murmur state after the
    header is a constant. A one-key lookup hashes on its path; ``tests/service/keys/test_bucket_hash.py`` checks it
    against ``row_hash``."""
    if base in ("BIGINT", "LONG"):
        low, high = value & _M32, (value >> 32) & _M32
    else:
        low, high = value & _INT_MASKS[base], 0
    h = _mix(_mix(_AFTER_HEADER, low), high) ^ 16
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    return to_int32(h ^ (h >> 16))


def to_int32(value: int) -> int:
    value &= _M32
    return value - 0x100000000 if value >= 0x80000000 else value


def _java_rem(a: int, b: int) -> int:
    """Java's ``a % b`` for ints (the sign follows the dividend)."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def java_abs(value: int) -> int:
    """``Math.abs(int)``: abs(Integer.MIN_VALUE) stays Integer.MIN_VALUE."""
    value = to_int32(value)
    return value if value == -0x80000000 else abs(value)


def bucket(hash_code: int, num_buckets: int) -> int:
    """``Math.abs(hash % numBuckets)``, the writers' bucket of a key."""
    return abs(_java_rem(to_int32(hash_code), num_buckets))


def channel(partition_hash: int, bucket: int, num_channels: int) -> int:
    """``ChannelComputer.select(partition, bucket, numChannels)``."""
    start = _java_rem(java_abs(partition_hash), num_channels)
    return _java_rem(to_int32(start + bucket), num_channels)


__all__ = ["INT_BASES", "Unsupported", "base_type", "bucket", "channel", "hash_bytes_by_words", "int_row_hash",
           "java_abs", "precision_scale", "row_hash", "to_int32"]
