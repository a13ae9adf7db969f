"""The schema an answer is in (``Target``: the table's fields at the view's schema, the columns asked for), rows
read with an older schema of the table answered in it (columns matched by field id: added columns come as nulls,
renamed ones under their new name, widened ones cast), and a row's values read without pyarrow's scalars."""
from __future__ import annotations

import weakref
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa


class Target:
    """The schema an answer is in: the table's fields at the view's schema, and the columns asked for."""

    def __init__(self, schema_id: int, fields: Sequence, schema: pa.Schema, columns: Optional[Sequence[str]]) -> None:
        self.schema_id = schema_id
        self.fields = list(fields)
        self.columns = list(columns) if columns else list(schema.names)
        self.names = tuple(self.columns)  # hashable: the value readers' positions are cached by it
        self.schema = pa.schema([schema.field(c) for c in self.columns])
        by_name = {f.name: f for f in self.fields}
        self.ids = [by_name[c].id for c in self.columns]


_READERS: Dict[int, tuple] = {}  # id(batch) → (a value reader per column, {columns: positions}), while it lives


def readers_of(batch: pa.RecordBatch, names: Tuple[str, ...]) -> Tuple[list, List[int]]:
    """A cached batch's value readers (``value_reader``) and the positions of ``names`` among them. Kept as long
    as the batch object lives (the memory cache holds it): the readers share its buffers, nothing is copied."""
    key = id(batch)
    entry = _READERS.get(key)
    if entry is None:
        entry = _READERS[key] = ([value_reader(c) for c in batch.columns], {})
        weakref.finalize(batch, _READERS.pop, key, None)
    readers, positions = entry
    at = positions.get(names)
    if at is None:
        index = {n: j for j, n in enumerate(batch.schema.names)}
        at = positions[names] = [index[n] for n in names]
    return readers, at


def value_reader(array: pa.Array) -> Callable[[int], Any]:
    """``i`` → the value at ``i`` as ``to_pylist`` gives it. A one-key answer reads a few values of a batch that
    the gRPC call before it pushed out of the CPU's caches: numbers through a numpy view (``ndarray.item``) and
    text through its offsets and bytes cost ~3x less there than pyarrow's scalars (``array[i].as_py()``), which
    stay the way for every other type and for columns with nulls."""
    t = array.type
    if array.null_count == 0 and (pa.types.is_integer(t) or pa.types.is_floating(t)) and not pa.types.is_float16(t):
        return array.to_numpy(zero_copy_only=True).item
    if array.null_count == 0 and (pa.types.is_string(t) or pa.types.is_large_string(t)):
        _, offsets_buffer, data_buffer = array.buffers()
        offsets = np.frombuffer(offsets_buffer, dtype=np.int64 if pa.types.is_large_string(t) else np.int32,
                                count=array.offset + len(array) + 1)
        data = memoryview(data_buffer) if data_buffer is not None else memoryview(b"")
        at = array.offset
        return lambda i: str(data[offsets[at + i]:offsets[at + i + 1]], "utf-8")
    return lambda i: array[i].as_py()


def source_names(content, target: Target) -> List[str]:
    """The columns of a run's rows (``content``: a ``runs.Content``) that hold ``target``'s, in its order."""
    if content.schema_id == target.schema_id:
        return target.columns
    by_id = {f.id: f.name for f in content.fields}
    return [by_id[i] for i in target.ids if i in by_id]


def evolved(content, table: pa.Table, target: Target) -> pa.Table:
    """Rows read with an older schema of the table, in ``target``'s (matched by field id)."""
    if content.schema_id == target.schema_id:
        return table
    by_id = {f.id: f.name for f in content.fields}
    arrays = []
    for i, field in zip(target.ids, target.schema):
        name = by_id.get(i)
        if name is None:
            arrays.append(pa.nulls(table.num_rows, field.type))
        else:
            col = table.column(name)
            arrays.append(col.cast(field.type) if col.type != field.type else col)
    return pa.Table.from_arrays(arrays, schema=target.schema)


__all__ = ["Target", "evolved", "readers_of", "source_names", "value_reader"]
