"""Where a key lives: Paimon's bucket hash and Paimon's channel assignment, bit for bit.

* bucket: what pypaimon's ``FixedBucketRowKeyExtractor`` computes (murmur3 over the bucket-key ``BinaryRow``,
  Java's ``Math.abs(hash % n)``), the function writers use, so a key is looked up where it was written: one key in
  ``binary_row.py``, many in ``bucket_hash.py``, pypaimon itself for the types neither lays out.
* channel: Paimon's ``ChannelComputer.select(partition, bucket, n)`` =
  ``(Math.abs(partition.hashCode()) % n + bucket) % n`` with Java ``int`` arithmetic over the service's channel
  count, where ``BinaryRow.hashCode()`` is ``MurmurHashUtils.hashBytesByWords`` over the row's bytes (seed 42).
  The coordinator assigns channels to executors (``coordinator/assignment.py``); the assignment travels to
  clients (``ExecutorsResponse.owners``) and executors (``Assignment``).

The client, the coordinator and the executors use this module, so they always agree.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

from ...table_meta import TableMeta, table_meta
from ...errors import UsageError
from . import binary_row, kinds
from .kinds import KEY_SLOTS, bucket_mode  # noqa: F401  (re-exported)
from .binary_row import channel  # noqa: F401  (re-exported: the channel of a key lives here)


def partition_path(partition_keys: Sequence[str], values: Sequence) -> str:
    """``k1=v1/k2=v2``: how Paimon names a partition's directory (what ``service status`` shows)."""
    parts = []
    for k, v in zip(partition_keys, values):
        text = "__DEFAULT_PARTITION__" if v is None or str(v).strip() == "" else str(v)
        parts.append(f"{k}={text}")
    return "/".join(parts)


def binary_row_hash(values: Sequence[Any], fields: Sequence) -> int:
    """``BinaryRow.hashCode()`` (signed int) of a row of ``values`` typed by pypaimon ``fields``."""
    try:
        return binary_row.row_hash(values, [str(f.type) for f in fields])
    except binary_row.Unsupported:
        from ...compat.adapters.row_hash import binary_row_hash_code

        return binary_row.to_int32(binary_row_hash_code(values, fields))


#: a request's bucket when the caller did not compute it: the executor does (``LookupRequest.buckets``)
ANY_BUCKET = -1


@dataclass
class TableRouting:
    """Key layout and hashing of one primary-key table: where a key lives.

    With fixed buckets and Paimon's default bucket function a key's bucket follows from the key (Paimon's hash of
    the bucket key), and the bucket's channel names the executor that holds it. Otherwise (``slotted``: dynamic
    buckets, where the writer's assigner decides and only the table's hash index remembers; postpone buckets,
    where each partition has its own count; cross-partition keys, where the partition is not part of the key; a
    custom bucket function) a key is routed by its *slot*: Paimon's hash of the trimmed primary key modulo
    ``KEY_SLOTS``, in place of the bucket. The slot's channel names the executor that holds the key, whichever
    bucket it is in: executors of such a table keep every bucket, each indexing the keys of its own channels
    (docs/query-service.md, "Keys whose bucket is not theirs to compute"). ``bucket``/``buckets_of`` answer the
    routing bucket: the bucket, or the slot.
    """

    identifier: str
    primary_keys: List[str]
    partition_keys: List[str]
    bucket_keys: List[str]
    num_buckets: int
    meta: TableMeta = field(repr=False, default=None)
    _partition_hash_cache: Dict[Tuple, int] = field(repr=False, default_factory=dict)

    @classmethod
    def of(cls, table) -> "TableRouting":
        meta = table_meta(table)
        check_supported(meta)
        return cls(identifier=meta.name, primary_keys=list(meta.primary_keys),
                   partition_keys=list(meta.partition_keys), bucket_keys=meta.bucket_keys,
                   num_buckets=meta.num_buckets, meta=meta)

    @functools.cached_property
    def kind(self) -> str:
        """``fixed``, ``dynamic``, ``cross-partition`` or ``postpone`` (Paimon's bucket modes of primary-key
        tables)."""
        return kinds.bucket_mode(self.meta)

    @functools.cached_property
    def slotted(self) -> bool:
        """True when a key's bucket does not follow from the key: it is routed by its slot."""
        return kinds.slotted(self.meta)

    @functools.cached_property
    def route_keys(self) -> List[str]:
        """The columns a key is routed by: the bucket key, or (slotted) the trimmed primary key."""
        return kinds.routing_columns(self.meta)

    @functools.cached_property
    def routes(self) -> int:
        """How many routing buckets there are: the table's buckets, or ``KEY_SLOTS``."""
        return kinds.routes(self.meta)

    @functools.cached_property
    def key_partition_keys(self) -> List[str]:
        """The partition columns that are part of a lookup key (none on cross-partition tables)."""
        return kinds.key_partition_keys(self.meta)

    @functools.cached_property
    def _route_fields(self) -> list:
        return self.meta.data_fields(self.route_keys)

    @functools.cached_property
    def _partition_fields(self) -> list:
        return self.meta.data_fields(self.partition_keys)

    @functools.cached_property
    def _route_types(self) -> List[str]:
        return [str(f.type) for f in self._route_fields]

    @functools.cached_property
    def _one_int_route_key(self) -> str:
        """The base type of a routing key of one integer column (``BIGINT`` ...), or "" (``int_row_hash``)."""
        if len(self._route_types) != 1:
            return ""
        base = binary_row.base_type(self._route_types[0])
        return base if base in binary_row.INT_BASES else ""

    def bucket(self, key: Dict[str, Any]) -> int:
        """The routing bucket of a key given as {column: value}: its bucket, or its slot (``slotted``)."""
        base = self._one_int_route_key
        if base:
            value = key[self.route_keys[0]]
            if type(value) is int:
                return binary_row.bucket(binary_row.int_row_hash(value, base), self.routes)
        values = [key[k] for k in self.route_keys]
        try:
            hash_code = binary_row.row_hash(values, self._route_types)
        except binary_row.Unsupported:
            hash_code = binary_row_hash(values, self._route_fields)
        return binary_row.bucket(hash_code, self.routes)

    def buckets_of(self, keys) -> np.ndarray:
        """The routing bucket of every row of an Arrow table of keys (vectorised; one key at a time for a few)."""
        from .bucket_hash import binary_row_hashes, buckets_of

        n = keys.num_rows
        if n < 8:
            rows = keys.select(self.route_keys).to_pylist()
            return np.asarray([self.bucket(r) for r in rows], dtype=np.int32)
        hashes = binary_row_hashes([keys.column(k) for k in self.route_keys], self._route_fields)
        return buckets_of(hashes, self.routes)

    def partition_hashes_of(self, keys) -> np.ndarray:
        """``BinaryRow.hashCode()`` of every row's partition (one hash per distinct partition)."""
        import pyarrow as pa

        n = keys.num_rows
        if not self.key_partition_keys:
            return np.full(n, self.partition_hash(()), dtype=np.int64)
        if n < 8:
            rows = keys.select(self.partition_keys).to_pylist()
            return np.asarray([self.partition_hash(tuple(r[k] for k in self.partition_keys)) for r in rows],
                              dtype=np.int64)
        dicts, codes = [], []
        for k in self.partition_keys:
            col = keys.column(k)
            enc = (col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col).dictionary_encode()
            dicts.append(enc.dictionary.to_pylist())
            codes.append(np.asarray(enc.indices.to_numpy(), dtype=np.int64))
        uniq, inverse = np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)
        hashes = np.asarray([self.partition_hash(tuple(dicts[j][int(u[j])] for j in range(len(dicts))))
                             for u in uniq], dtype=np.int64)
        return hashes[inverse.reshape(-1)]

    def partition_of(self, key: Dict[str, Any]) -> Tuple:
        return tuple(key[k] for k in self.key_partition_keys)

    def partition_hash(self, partition: Tuple) -> int:
        if not partition:
            return _EMPTY_ROW_HASH
        cached = self._partition_hash_cache.get(partition)
        if cached is None:
            cached = binary_row_hash(partition, self._partition_fields)
            if len(self._partition_hash_cache) < 100_000:
                self._partition_hash_cache[partition] = cached
        return cached

    def channel_of(self, partition: Tuple, bucket: int, channels: int) -> int:
        """The channel of a (partition, bucket) among ``channels``: Paimon's ``ChannelComputer.select``."""
        return channel(self.partition_hash(partition), bucket, channels)

    def route(self, key: Dict[str, Any], channels: int) -> Tuple[int, int]:
        """(bucket, channel) of a key given as {column: value} for every primary-key column."""
        bucket = self.bucket(key)
        return bucket, self.channel_of(self.partition_of(key), bucket, channels)


_EMPTY_ROW_HASH = binary_row.row_hash((), [])


@dataclass(frozen=True, eq=False)
class KeySlice:
    """The keys of a slotted table (``TableRouting.slotted``) one executor indexes: those whose slot's channel is
    among ``owned`` (its channels, of ``channels``). Two slices are equal when they take the same keys."""

    routing: TableRouting = field(repr=False)
    channels: int
    owned: frozenset

    def __eq__(self, other) -> bool:
        return isinstance(other, KeySlice) and (self.channels, self.owned) == (other.channels, other.owned)

    def __hash__(self) -> int:
        return hash((self.channels, self.owned))

    def mask(self, partition: Tuple, keys) -> np.ndarray:
        """Which rows of ``keys`` (an Arrow table with the routing columns) of ``partition`` are in the slice."""
        from .bucket_hash import channels_of

        routing = self.routing
        n = keys.num_rows
        part = partition if routing.key_partition_keys else ()
        hashes = np.full(n, routing.partition_hash(part), dtype=np.int64)
        channels = channels_of(hashes, routing.buckets_of(keys), self.channels)
        return np.isin(channels, np.fromiter(self.owned, dtype=np.int64, count=len(self.owned)))


def table_kind(table) -> str:
    """A short description of what kind of table this is, for messages and ``service status``."""
    meta = table_meta(table)
    if not meta.primary_keys:
        return "an append-only table (no primary key)"
    mode = bucket_mode(meta)
    if mode == "fixed":
        return f"a primary-key table with {meta.num_buckets} fixed buckets"
    return {"dynamic": "a dynamic-bucket primary-key table (bucket = -1)",
            "cross-partition": "a cross-partition primary-key table (bucket = -1, keys without the partition)",
            "postpone": "a postpone-bucket primary-key table (bucket = -2)"}[mode]


def check_supported(table) -> None:
    """Every primary-key table a batch read can read is served; append-only tables have no key to look up."""
    meta = table_meta(table)
    if not meta.primary_keys:
        raise UsageError(f"table {meta.name} is {table_kind(meta)}: the query service serves primary-key tables",
                         hint="follow it instead: paimon-tail follow " + meta.name)
