"""Keys in, ready to route: mappings, scalars (one-column keys), tuples in key order, or an Arrow table / record
batch, parsed by the key columns' Paimon types (``keys/parse.py``) and given their routing bucket and partition hash
(``keys/routing.py``: Paimon's hash, bit for bit). ``KeyPreparer`` is where a key meets the table's routing, once: a
batch becomes ``Prepared`` (the batch operation, ``many_keys.py``), one key a ``OneKey`` with its request. No I/O.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np
import pyarrow as pa

from ...errors import UsageError
from ..keys.parse import KeyParser
from ..keys.routing import TableRouting
from ..protocol.wire import ipc_stream
from .deadline import Deadline
from .lookup_requests import lookup_request, typed_key
from .one_key import OneKey

_INT_TYPES = ("TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT")
_TEXT_TYPES = ("STRING", "VARCHAR", "CHAR")


class Prepared:
    """Keys ready to send: each key's bucket and partition hash; the Arrow table of the keys built when needed."""

    __slots__ = ("n", "keys", "buckets", "part_hashes", "_table", "_to_arrow", "one")

    def __init__(self, buckets: np.ndarray, part_hashes: np.ndarray, keys: Optional[List[Dict[str, Any]]],
                 table: Optional[pa.Table], to_arrow: Callable, one: Optional[List[Any]] = None) -> None:
        self.buckets = buckets
        self.part_hashes = part_hashes
        self.keys = keys
        self._table = table
        self._to_arrow = to_arrow
        self.n = table.num_rows if table is not None else len(keys)
        self.one = one  # one key's values in key order, when it can travel without Arrow

    @property
    def key_table(self) -> pa.Table:
        if self._table is None:
            self._table = self._to_arrow(self.keys)
        return self._table


class KeyPreparer:
    """One table's keys → their routing: ``many`` for a batch, ``one_key`` for ``get``. A key whose columns are all
    integers or strings travels typed (``typed``), without Arrow."""

    def __init__(self, name: str, parser: KeyParser, routing: TableRouting) -> None:
        self.name = name
        self.parser = parser
        self.routing = routing
        self.typed = all(parser.types[k].split("(")[0].strip().upper() in _INT_TYPES + _TEXT_TYPES
                         for k in parser.names)
        self._no_partition = routing.partition_hash(())

    def parse(self, keys: Sequence[Any]) -> List[Dict[str, Any]]:
        return [self.parser.coerce(k, i) for i, k in enumerate(keys)]

    def _fast_table(self, keys: Sequence[Any]) -> Optional[pa.Table]:
        """Plain ints/strs for a one-column integer/string key: one Arrow array, no per-key dicts."""
        if len(self.parser.names) != 1 or len(keys) < 2:
            return None
        field = self.parser.arrow_schema.field(0)
        t = field.type
        if pa.types.is_integer(t):
            want = int
        elif pa.types.is_string(t) or pa.types.is_large_string(t):
            want = str
        else:
            return None
        if any(type(k) is not want for k in keys):
            return None
        try:
            arr = pa.array(keys, type=t)
        except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError):
            return None  # the per-key path names the key that does not fit
        return pa.Table.from_arrays([arr], schema=self.parser.arrow_schema)

    def _arrow_keys(self, keys: Any) -> pa.Table:
        if isinstance(keys, pa.RecordBatch):
            keys = pa.Table.from_batches([keys])
        missing = [k for k in self.parser.names if k not in keys.column_names]
        if missing:
            raise UsageError(f"the key table lacks column{'s' if len(missing) > 1 else ''} {', '.join(missing)}",
                             hint=f"the primary key is ({', '.join(self.parser.names)})")
        table = keys.select(self.parser.names)
        if any(table.column(k).null_count for k in self.parser.names):
            raise UsageError("primary-key values cannot be null")
        try:
            return table.cast(self.parser.arrow_schema)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise UsageError(f"the key table does not fit the key columns: {e}") from None

    def many(self, keys: Any, parsed: bool = False) -> Prepared:
        """Parse keys (mappings, scalars, tuples, or an Arrow table/record batch of the key columns) and route them."""
        routing = self.routing
        to_arrow = self.parser.to_arrow
        if isinstance(keys, (pa.Table, pa.RecordBatch)):
            table = self._arrow_keys(keys)
            return Prepared(routing.buckets_of(table), routing.partition_hashes_of(table), None, table, to_arrow)
        if len(keys) == 1:  # one key: Paimon's hash in plain Python, no Arrow unless the key needs it
            key = keys[0] if parsed else self.parser.coerce(keys[0], 0)
            one = None
            if self.typed:
                one = typed_key([key[k] for k in self.parser.names])
            return Prepared(np.asarray([routing.bucket(key)], dtype=np.int32),
                            np.asarray([routing.partition_hash(routing.partition_of(key))], dtype=np.int64),
                            [key], None, to_arrow, one)
        table = None if parsed else self._fast_table(keys)
        parsed_keys = None
        if table is None:
            parsed_keys = list(keys) if parsed else self.parse(keys)
            table = self.parser.to_arrow(parsed_keys)
        return Prepared(routing.buckets_of(table), routing.partition_hashes_of(table), parsed_keys, table, to_arrow)

    def one_key(self, key: Any, select: Optional[Sequence[str]], min_snapshot: Optional[int], deadline: Deadline,
                call_timeout: float, first_row: Callable, check: Callable[[List[str]], None]) -> OneKey:
        """``get``'s operation for ``key``; ``check(select)`` refuses unknown columns (after the key parsed)."""
        key = self.parser.coerce(key, 0)
        routing = self.routing
        bucket = routing.bucket(key)
        select = list(select or ())
        if select:
            check(select)
        if self.typed:  # the row comes back as values where the executor can (protocol 3)
            request = lookup_request(self.name, (bucket,), key=typed_key([key[k] for k in self.parser.names]),
                                     select=select, min_snapshot=min_snapshot or 0, row_values=True)
        else:
            request = lookup_request(self.name, (bucket,), keys_ipc=ipc_stream(self.parser.to_arrow([key])),
                                     select=select, min_snapshot=min_snapshot or 0, row_values=True)
        part_hash = routing.partition_hash(routing.partition_of(key)) if routing.key_partition_keys else \
            self._no_partition
        return OneKey(self.name, request, bucket, part_hash, min_snapshot, deadline, call_timeout, first_row)


def check_select(select: Optional[Sequence[str]], columns, refresh: Callable[[], Sequence[str]]) -> None:
    """Refuse unknown ``--select`` columns; a column the client does not know yet may have been added since it
    read the schema, so it reads the schema again before refusing."""
    if not select:
        return
    unknown = [c for c in select if c not in columns]
    if unknown:
        columns = refresh()
        unknown = [c for c in select if c not in columns]
    if unknown:
        raise UsageError(f"unknown column{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} in --select",
                         hint=f"columns are {', '.join(columns)}")


__all__ = ["KeyPreparer", "Prepared", "check_select"]
