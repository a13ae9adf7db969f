"""Paimon's bucket hash for whole Arrow columns at once: ``BinaryRow.hashCode()`` vectorised with numpy.

``pypaimon.write.row_key_extractor`` serialises each key into a ``BinaryRow`` (``GenericRowSerializer``) and runs
``MurmurHashUtils.hashBytesByWords`` (murmur3 x86_32, seed 42) over it, one Python call per key (~20 µs). Here the
rows are laid out for many keys at once:

* fixed part: a null-bit/header word (all zero: INSERT, primary-key values are never null), then one 8-byte slot per
  field — integers as their own width little-endian (no sign extension), floats/doubles as IEEE bits, dates as
  days, compact decimals (precision ≤ 18) as the unscaled long, compact timestamps (precision ≤ 3) as epoch
  millis, strings/binary of ≤ 7 bytes inline with ``0x80 | len`` in the last byte;
* variable part: longer strings/binary (padded to 8 bytes, slot = ``offset << 32 | len``) and non-compact
  timestamps (millis; slot = ``offset << 32 | nanoOfMilli``).

Rows are grouped by their total length and hashed column-of-words by column-of-words in ``uint32`` arithmetic.
Types this does not cover (high-precision decimals, nulls, …) fall back to pypaimon per row, so the answer is
always pypaimon's. ``tests/service/keys/test_bucket_hash.py`` checks equality on thousands of keys.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..protocol.wire import indices

_C1 = np.uint32(0xCC9E2D51)
_C2 = np.uint32(0x1B873593)
_SEED = 42


class Unsupported(Exception):
    """A column this module does not lay out; callers fall back to pypaimon per row."""


def _precision(data_type) -> Tuple[int, int]:
    from .binary_row import precision_scale

    return precision_scale(str(data_type))


def _type_name(field) -> str:
    t = field.type
    return str(getattr(t, "type", t)).upper()


def _numpy(array: pa.Array) -> np.ndarray:
    """A null-free integer/float column as numpy, straight from its buffer: pyarrow's ``to_numpy`` imports pandas
    (0.3 s) the first time it runs, which a lookup never needs."""
    t = array.type
    if array.null_count == 0 and (pa.types.is_integer(t) or pa.types.is_floating(t)):
        kind = "f" if pa.types.is_floating(t) else "i" if pa.types.is_signed_integer(t) else "u"
        dtype = np.dtype(f"<{kind}{t.bit_width // 8}")
        return np.frombuffer(array.buffers()[1], dtype=dtype)[array.offset:array.offset + len(array)]
    return array.to_numpy(zero_copy_only=False)


def _round8(n: np.ndarray) -> np.ndarray:
    return (n + 7) & ~np.int64(7)


class _Column:
    """One field of the row: its 8-byte slot for every key and, for variable-length values, the bytes after."""

    def __init__(self, array: pa.Array, field) -> None:
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        if array.null_count:
            raise Unsupported("nulls")
        self.n = len(array)
        self.slot: Optional[np.ndarray] = None  # uint64, fixed slots (None for var columns: depends on offsets)
        self.var_len = np.zeros(self.n, dtype=np.int64)  # padded variable-part length per row
        self.kind = "fixed"
        name = _type_name(field)
        t = array.type
        if name.startswith(("CHAR", "VARCHAR", "STRING", "BINARY", "VARBINARY", "BYTES")) and (
                pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t)
                or pa.types.is_large_binary(t)):
            self._init_bytes(array)
        elif name in ("BOOLEAN", "BOOL") and pa.types.is_boolean(t):
            self.slot = np.asarray(_numpy(array), dtype=np.uint64)
        elif name in ("TINYINT", "BYTE", "SMALLINT", "SHORT", "INT", "INTEGER", "BIGINT", "LONG") and \
                pa.types.is_integer(t):
            width = {"TINYINT": 8, "BYTE": 8, "SMALLINT": 16, "SHORT": 16, "INT": 32, "INTEGER": 32}.get(name, 64)
            v = np.asarray(_numpy(array)).astype(np.int64, copy=False).view(np.uint64)
            self.slot = v if width == 64 else v & np.uint64((1 << width) - 1)
        elif name in ("FLOAT", "REAL") and pa.types.is_floating(t):
            v = np.asarray(_numpy(array)).astype(np.float32)
            if np.isnan(v).any():
                raise Unsupported("NaN")  # struct.pack canonicalises NaN payloads
            self.slot = v.view(np.uint32).astype(np.uint64)
        elif name == "DOUBLE" and pa.types.is_floating(t):
            v = np.asarray(_numpy(array)).astype(np.float64)
            if np.isnan(v).any():
                raise Unsupported("NaN")
            self.slot = v.view(np.uint64)
        elif name == "DATE" and pa.types.is_date32(t):
            v = np.asarray(_numpy(array.cast(pa.int32()))).astype(np.int64)
            self.slot = v.view(np.uint64) & np.uint64(0xFFFFFFFF)
        elif name.startswith(("DECIMAL", "NUMERIC")) and pa.types.is_decimal(t):
            precision, scale = _precision(field.type)
            if precision > 18 or t.scale != scale or t.bit_width != 128:
                raise Unsupported("decimal")
            raw = np.frombuffer(array.buffers()[1], dtype="<i8")[2 * array.offset:2 * (array.offset + self.n)]
            self.slot = raw[0::2].astype(np.int64).view(np.uint64)
        elif name.startswith("TIMESTAMP") and pa.types.is_timestamp(t):
            precision, _ = _precision(field.type)
            v = np.asarray(_numpy(array.cast(pa.int64())), dtype=np.int64)
            unit = t.unit
            if unit == "s":
                micros = v * 1_000_000
            elif unit == "ms":
                micros = v * 1000
            elif unit == "us":
                micros = v
            else:
                micros = np.floor_divide(v, 1000)  # Python datetimes carry microseconds
            millis = np.floor_divide(micros, 1000)
            if precision <= 3:
                self.slot = millis.view(np.uint64)
            else:
                self.kind = "timestamp"
                self.millis = millis
                self.nanos = (np.mod(micros, 1000) * 1000).astype(np.uint64)
                self.var_len[:] = 8
        else:
            raise Unsupported(name)

    def _init_bytes(self, array: pa.Array) -> None:
        large = pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type)
        bufs = array.buffers()
        offsets = np.frombuffer(bufs[1], dtype=np.int64 if large else np.int32)[array.offset:array.offset + self.n + 1]
        self.starts = offsets[:-1].astype(np.int64)
        self.lengths = (offsets[1:] - offsets[:-1]).astype(np.int64)
        self.data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None and bufs[2].size else \
            np.zeros(8, dtype=np.uint8)
        self.kind = "bytes"
        self.var_len = np.where(self.lengths > 7, _round8(self.lengths), 0)
        compact = self.lengths <= 7
        self.slot = np.zeros(self.n, dtype=np.uint64)
        if compact.any():
            idx = np.nonzero(compact)[0]
            b = self._gather(idx, 8)
            b[:, 7] = (0x80 | self.lengths[idx]).astype(np.uint8)
            self.slot[idx] = b.view("<u8")[:, 0]

    def _gather(self, idx: np.ndarray, width: int) -> np.ndarray:
        """Bytes of rows ``idx``, zero-padded to ``width`` columns."""
        j = np.arange(width, dtype=np.int64)
        pos = self.starts[idx, None] + j[None, :]
        mask = j[None, :] < self.lengths[idx, None]
        pos = np.where(mask, pos, 0)
        pos = np.minimum(pos, len(self.data) - 1)
        out = self.data[pos]
        out[~mask] = 0
        return np.ascontiguousarray(out, dtype=np.uint8)


def _murmur_words(words: np.ndarray, length: int) -> np.ndarray:
    """``MurmurHashUtils.hashBytesByWords`` for each row of a ``(rows, length/4)`` uint32 matrix."""
    h = np.full(words.shape[0], _SEED, dtype=np.uint32)
    with np.errstate(over="ignore"):
        for c in range(words.shape[1]):
            k = words[:, c] * _C1
            k = (k << np.uint32(15)) | (k >> np.uint32(17))
            k *= _C2
            h ^= k
            h = (h << np.uint32(13)) | (h >> np.uint32(19))
            h = h * np.uint32(5) + np.uint32(0xE6546B64)
        h ^= np.uint32(length)
        h ^= h >> np.uint32(16)
        h *= np.uint32(0x85EBCA6B)
        h ^= h >> np.uint32(13)
        h *= np.uint32(0xC2B2AE35)
        h ^= h >> np.uint32(16)
    return h


def _vector_hashes(columns: Sequence[pa.Array], fields: Sequence) -> np.ndarray:
    arity = len(fields)
    null_bytes = ((arity + 63 + 8) // 64) * 8
    fixed = null_bytes + 8 * arity
    cols = [_Column(a, f) for a, f in zip(columns, fields)]
    n = cols[0].n if cols else 0
    var_total = np.zeros(n, dtype=np.int64)
    var_offsets = []
    for col in cols:
        var_offsets.append(fixed + var_total)  # absolute offset of this column's variable bytes
        var_total = var_total + col.var_len
    out = np.empty(n, dtype=np.uint32)
    totals = fixed + var_total
    uniq = np.unique(totals)
    for total in uniq.tolist():
        idx = np.nonzero(totals == total)[0] if len(uniq) > 1 else np.arange(n)
        g = len(idx)
        row = np.zeros((g, total), dtype=np.uint8)
        for i, col in enumerate(cols):
            at = null_bytes + 8 * i
            off = var_offsets[i][idx]
            if col.kind == "fixed":
                slot = col.slot[idx]
            elif col.kind == "timestamp":
                slot = (off.astype(np.uint64) << np.uint64(32)) | col.nanos[idx]
                # the millis go to the variable part: the same 8-byte position for every row of a group
                pos = int(off[0])
                row[:, pos:pos + 8] = col.millis[idx].view(np.uint64).astype("<u8").view(np.uint8).reshape(g, 8)
            else:  # bytes
                slot = col.slot[idx].copy()
                long = np.nonzero(col.var_len[idx] > 0)[0]
                if len(long):
                    lidx = idx[long]
                    lens = col.lengths[lidx]
                    slot[long] = (off[long].astype(np.uint64) << np.uint64(32)) | lens.astype(np.uint64)
                    width = int(col.var_len[lidx].max())
                    pos = int(off[long][0])  # same offset for all rows of the group (same lengths before)
                    if np.all(off[long] == pos) and np.all(col.var_len[lidx] == width):
                        row[long, pos:pos + width] = col._gather(lidx, width)
                    else:  # pragma: no cover - defensive: group by exact layout instead
                        for r, lr in zip(long.tolist(), lidx.tolist()):
                            p, w = int(var_offsets[i][lr]), int(col.var_len[lr])
                            row[r, p:p + w] = col._gather(np.asarray([lr]), w)[0]
            row[:, at:at + 8] = slot.astype("<u8").view(np.uint8).reshape(g, 8)
        out[idx] = _murmur_words(row.view("<u4"), total)
    return out


def _layout_key(cols_var: List[np.ndarray]) -> np.ndarray:
    return np.stack(cols_var, axis=1) if cols_var else np.zeros((0, 0))


def binary_row_hashes(columns: Sequence[pa.Array], fields: Sequence) -> np.ndarray:
    """``BinaryRow.hashCode()`` (signed int32) of each row made of ``columns`` typed by pypaimon ``fields``."""
    columns = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns]
    n = len(columns[0]) if columns else 0
    if n == 0:
        return np.empty(0, dtype=np.int32)
    try:
        return _grouped(columns, fields).view(np.int32)
    except Unsupported:
        return _python_hashes(columns, fields)


def _grouped(columns, fields) -> np.ndarray:
    # Rows whose variable parts have different lengths per column but the same total would get different
    # offsets inside one group: group by the exact per-column layout when there are several var columns.
    cols_var = []
    for a, f in zip(columns, fields):
        name = _type_name(f)
        if name.startswith(("CHAR", "VARCHAR", "STRING", "BINARY", "VARBINARY", "BYTES")):
            lens = np.asarray(_numpy(pc.binary_length(a)), dtype=np.int64)
            cols_var.append(np.where(lens > 7, _round8(lens), 0))
    if len(cols_var) <= 1:
        return _vector_hashes(columns, fields)
    layout = _layout_key(cols_var)
    uniq, inverse = np.unique(layout, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    if len(uniq) == 1:
        return _vector_hashes(columns, fields)
    out = np.empty(len(inverse), dtype=np.uint32)
    for g in range(len(uniq)):
        idx = np.nonzero(inverse == g)[0]
        sel = indices(idx)
        out[idx] = _vector_hashes([c.take(sel) for c in columns], fields)
    return out


def _python_hashes(columns, fields) -> np.ndarray:
    from ...compat.adapters.row_hash import binary_row_hash_code

    pylists = [c.to_pylist() for c in columns]
    fields = list(fields)
    out = np.empty(len(pylists[0]), dtype=np.int64)
    for i, values in enumerate(zip(*pylists)):
        out[i] = binary_row_hash_code(values, fields)
    return (out & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def buckets_of(hashes: np.ndarray, num_buckets: int) -> np.ndarray:
    """``Math.abs(hash % n)`` (Java remainder) for signed int32 hashes."""
    return np.abs(np.fmod(hashes.astype(np.int64), num_buckets)).astype(np.int32)


def channels_of(partition_hashes: np.ndarray, buckets: np.ndarray, num_channels: int) -> np.ndarray:
    """``ChannelComputer.select`` vectorised: ``(Math.abs(partHash) % n + bucket) % n`` in Java int arithmetic."""
    p = partition_hashes.astype(np.int64)
    p = np.where(p == -(1 << 31), p, np.abs(p))  # Math.abs(Integer.MIN_VALUE) stays negative
    start = np.fmod(p, num_channels)
    s = start + buckets.astype(np.int64)
    s = ((s + (1 << 31)) % (1 << 32)) - (1 << 31)  # int overflow wraps
    return np.fmod(s, num_channels).astype(np.int64)


__all__ = ["binary_row_hashes", "buckets_of", "channels_of", "Unsupported"]
