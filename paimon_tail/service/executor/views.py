"""What a lookup reads, immutable: a table's ``View`` (all of one snapshot, replaced as a whole by ``state.py``),
its key columns (``TableKeys``, replaced when the schema changes), and ``Reading``: what one call reads, taken once
per call (``TableState.reading``) and handed to the answer — the view, the keys, the answer's schema, whether every
row is on local disk, and who owns which channel. Nothing here changes after it is made."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, NamedTuple, Optional, Tuple

import pyarrow as pa

from ..keys.routing import TableRouting
from ..protocol.changes import BucketFiles, BucketKey
from ..store import BucketStore, Target
from ..store.key_hashes import KeyHasher
from ..store.router import Router


def key_kind(arrow_type: pa.DataType) -> Optional[str]:
    """The ``Value`` field a key column travels in when one key is sent without Arrow (``lookup.proto``)."""
    if pa.types.is_integer(arrow_type):
        return "int"
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "text"
    return None



@dataclass(frozen=True)
class View:
    """What lookups of one table read, all of one snapshot."""

    snapshot_id: int = 0
    schema_id: int = 0
    commit_ms: int = 0
    ready: bool = False
    stores: Dict[BucketKey, BucketStore] = field(default_factory=dict)
    files: Dict[BucketKey, BucketFiles] = field(default_factory=dict)
    broken: Dict[BucketKey, str] = field(default_factory=dict)  # buckets that cannot be served, and why
    served: FrozenSet[int] = frozenset()  # channels loaded and owned
    schema: Optional[pa.Schema] = None  # the rows' schema (the table's at schema_id)
    fields: tuple = ()  # the table's fields at schema_id (field ids: rows of older schemas are matched by them)
    # the buckets this view answers for (served channel, not broken) → their store (None: no rows): one dict
    # lookup decides a one-key request; filled by ``TableState._opened``
    answering: Dict[BucketKey, Optional[BucketStore]] = field(default_factory=dict)
    # a slotted table's stores (``routing.slotted``: each indexes the keys of this executor's channels) by the
    # partition of a key (every partition's, under (), on cross-partition tables); filled by ``_opened``
    by_partition: Dict[tuple, Dict[BucketKey, BucketStore]] = field(default_factory=dict)
    # which of them holds a key, by partition (built by the background for the stores of some earlier view)
    routers: Dict[tuple, Router] = field(default_factory=dict)

    def broken_in(self, partition: tuple, cross: bool) -> Optional[Tuple[BucketKey, str]]:
        """A bucket of ``partition`` (of any partition when ``cross``) that cannot be served, and why."""
        for key, error in self.broken.items():
            if cross or key[0] == partition:
                return key, error
        return None

    def keys_held(self) -> int:
        return sum(s.rows for s in self.stores.values())


class TableKeys(NamedTuple):
    """A table's primary-key columns as lookups decode and hash them (at the table's current schema)."""

    names: List[str]
    schema: pa.Schema  # the key columns' Arrow types
    types: List[pa.DataType]
    kinds: List[Optional[str]]  # each column's Value field in a typed request (None: that key takes the Arrow path)
    partition_positions: List[int]  # where the partition's columns are among the keys
    exact_position: int  # where an exact store's key (one integer column) is among the keys, else -1
    hasher: KeyHasher
    routing: TableRouting
    slotted: bool  # routed by slot (``routing.slotted``): every store of a partition indexes this executor's keys
    cross_partition: bool


class AnswerSchema(NamedTuple):
    """The schema answers from one view are in, with the two messages every answer of it may send (cached per
    schema and projection by ``TableState``)."""

    target: Target
    empty_rows: bytes  # an Arrow IPC stream of no rows (every miss answers it)
    schema_message: bytes  # the Arrow IPC schema message of the rows answered (no schema hashing per answer)


class Reading(NamedTuple):
    """What one lookup reads of one table, taken once per call (``TableState.reading``)."""

    name: str  # the table's
    index: int  # the executor's
    view: View
    keys: TableKeys
    answer: AnswerSchema
    warm: bool  # every row of the view is on local disk: a small lookup may be answered on the event loop
    channels: int  # the service's channel count
    owned: FrozenSet[int]  # channels the latest assignment gives this executor
    owners: tuple  # owners[channel] = executor index


__all__ = ["AnswerSchema", "Reading", "TableKeys", "View", "key_kind"]
