"""Arrow IPC stream bytes without ``pa.ipc.new_stream`` per call.

A stream is the schema message, the record-batch messages and an end-of-stream marker. The schema message of a
schema is serialised once and cached; each call only serialises its batches (~4 µs for a small table instead of
~16 µs through a stream writer). The bytes are identical to ``new_stream`` + ``write_table``.
"""
from __future__ import annotations

import struct
from typing import Any, Dict, Optional

import pyarrow as pa

_EOS = b"\xff\xff\xff\xff\x00\x00\x00\x00"
_schemas: Dict[pa.Schema, bytes] = {}


def schema_bytes(schema: pa.Schema) -> bytes:
    b = _schemas.get(schema)
    if b is None:
        b = schema.serialize().to_pybytes()
        if len(_schemas) > 1024:
            _schemas.clear()
        _schemas[schema] = b
    return b


def indices(positions) -> pa.Array:
    """A numpy array of positions as an int64 Arrow array, zero-copy: ``pa.array(ndarray)`` goes through pyarrow's
    pandas-aware converter, which imports pandas (0.3 s) the first time."""
    import numpy as np

    positions = np.ascontiguousarray(positions, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(positions), [None, pa.py_buffer(positions)])


def ipc_stream(table) -> bytes:
    """Arrow IPC stream of a table or record batch."""
    batches = table.to_batches() if isinstance(table, pa.Table) else [table]
    parts = [schema_bytes(table.schema)]
    for batch in batches:
        if batch.num_rows:
            parts.append(batch.serialize().to_pybytes())
    parts.append(_EOS)
    return b"".join(parts)


def stream_of(schema_message: bytes, batch: pa.RecordBatch) -> bytes:
    """An IPC stream of one batch whose schema message the caller has (``schema_bytes``), without hashing the
    schema again."""
    return b"".join((schema_message, batch.serialize().to_pybytes(), _EOS))


class FirstRow:
    """The first row of an Arrow IPC stream as a dict (None for no rows), for one-key answers: the schema message
    is parsed once per distinct schema, and one row's values are read column by column (``to_pylist`` costs more
    for a single row). Values are those ``to_pylist`` gives."""

    def __init__(self) -> None:
        self._schemas: Dict[bytes, pa.Schema] = {}

    def __call__(self, data: bytes) -> Optional[Dict[str, Any]]:
        head = 8 + struct.unpack_from("<i", data, 4)[0]  # continuation marker, metadata length, metadata
        prefix = data[:head]
        schema = self._schemas.get(prefix)
        if schema is None:
            schema = pa.ipc.read_schema(pa.py_buffer(prefix))
            if len(self._schemas) > 64:
                self._schemas.clear()
            self._schemas[prefix] = schema
        if len(data) - head <= len(_EOS):
            return None
        batch = pa.ipc.read_record_batch(pa.py_buffer(data).slice(head), schema)
        if not batch.num_rows:
            return None
        return {name: column[0].as_py() for name, column in zip(schema.names, batch.columns)}

def value_kind(t: pa.DataType) -> Optional[str]:
    """The ``Value`` field a column's values travel in when rows are answered as values (None: Arrow only)."""
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_floating(t) and not pa.types.is_float16(t):
        return "real"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "text"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return "binary"
    return None
