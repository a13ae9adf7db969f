"""Where a key lives: Paimon's bucket hash and Paimon's executor assignment, bit for bit.

* bucket: pypaimon's ``FixedBucketRowKeyExtractor`` (murmur3 over the bucket-key ``BinaryRow``, Java's
  ``Math.abs(hash % n)``), the function writers use, so a key is looked up where it was written.
* executor: Paimon's ``ChannelComputer.select(partition, bucket, n)`` =
  ``(Math.abs(partition.hashCode()) % n + bucket) % n`` with Java ``int`` arithmetic, where
  ``BinaryRow.hashCode()`` is ``MurmurHashUtils.hashBytesByWords`` over the row's bytes (seed 42).

Both the client and the executors use this module, so they always agree.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

from ..errors import UsageError


def _to_int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - 0x100000000 if value >= 0x80000000 else value


def _java_rem(a: int, b: int) -> int:
    """Java's ``a % b`` for ints (the sign follows the dividend)."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def java_abs(value: int) -> int:
    """``Math.abs(int)``: abs(Integer.MIN_VALUE) stays Integer.MIN_VALUE."""
    value = _to_int32(value)
    return value if value == -0x80000000 else abs(value)


def channel(partition_hash: int, bucket: int, num_channels: int) -> int:
    """``ChannelComputer.select(partition, bucket, numChannels)``."""
    start = _java_rem(java_abs(partition_hash), num_channels)
    return _java_rem(_to_int32(start + bucket), num_channels)


def binary_row_hash(values: Sequence[Any], fields: Sequence) -> int:
    """``BinaryRow.hashCode()`` (signed int) of a row of ``values`` typed by pypaimon ``fields``."""
    from pypaimon.write.row_key_extractor import RowKeyExtractor

    return _to_int32(RowKeyExtractor._binary_row_hash_code(tuple(values), list(fields)))


@dataclass
class TableRouting:
    """Key layout and hashing of one primary-key table with fixed buckets."""

    identifier: str
    primary_keys: List[str]
    partition_keys: List[str]
    bucket_keys: List[str]
    num_buckets: int
    _extractor: Any = None
    _partition_fields: Any = None
    _partition_hash_cache: Dict[Tuple, int] = None

    @classmethod
    def of(cls, table) -> "TableRouting":
        check_supported(table)
        from pypaimon.write.row_key_extractor import FixedBucketRowKeyExtractor

        schema = table.table_schema
        routing = cls(
            identifier=str(table.identifier) if not hasattr(table.identifier, "get_full_name")
            else table.identifier.get_full_name(),
            primary_keys=list(schema.primary_keys),
            partition_keys=list(schema.partition_keys),
            bucket_keys=list(schema.bucket_keys),
            num_buckets=int(table.options.bucket()),
        )
        routing._extractor = FixedBucketRowKeyExtractor(schema)
        by_name = {f.name: f for f in schema.fields}
        routing._partition_fields = [by_name[k] for k in schema.partition_keys]
        routing._partition_hash_cache = {}
        return routing

    def bucket(self, key: Dict[str, Any]) -> int:
        return self._extractor._extract_bucket_row(key)

    def buckets_of(self, keys) -> np.ndarray:
        """Bucket of every row of an Arrow table of keys (vectorised; pypaimon per row for a few keys)."""
        from .bucket_hash import binary_row_hashes, buckets_of

        n = keys.num_rows
        if n < 8:
            rows = keys.select(self.bucket_keys).to_pylist()
            return np.asarray([self._extractor._extract_bucket_row(r) for r in rows], dtype=np.int32)
        hashes = binary_row_hashes([keys.column(k) for k in self.bucket_keys], self._extractor._bucket_key_fields)
        return buckets_of(hashes, self.num_buckets)

    def partition_hashes_of(self, keys) -> np.ndarray:
        """``BinaryRow.hashCode()`` of every row's partition (one hash per distinct partition)."""
        import pyarrow as pa

        n = keys.num_rows
        if not self.partition_keys:
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
            codes.append(np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64))
        uniq, inverse = np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)
        hashes = np.asarray([self.partition_hash(tuple(dicts[j][int(u[j])] for j in range(len(dicts))))
                             for u in uniq], dtype=np.int64)
        return hashes[inverse.reshape(-1)]

    def partition_of(self, key: Dict[str, Any]) -> Tuple:
        return tuple(key[k] for k in self.partition_keys)

    def partition_hash(self, partition: Tuple) -> int:
        cached = self._partition_hash_cache.get(partition)
        if cached is None:
            cached = binary_row_hash(partition, self._partition_fields)
            if len(self._partition_hash_cache) < 100_000:
                self._partition_hash_cache[partition] = cached
        return cached

    def executor_of(self, partition: Tuple, bucket: int, num_executors: int) -> int:
        return channel(self.partition_hash(partition), bucket, num_executors)

    def route(self, key: Dict[str, Any], num_executors: int) -> Tuple[int, int]:
        """(bucket, executor index) of a key given as {column: value} for every primary-key column."""
        bucket = self.bucket(key)
        return bucket, self.executor_of(self.partition_of(key), bucket, num_executors)


def table_kind(table) -> str:
    """A short description of what kind of table this is, for error messages."""
    schema = table.table_schema
    if not schema.primary_keys:
        return "an append-only table (no primary key)"
    bucket = int(table.options.bucket())
    if bucket == -1:
        return "a dynamic-bucket primary-key table (bucket = -1)"
    if bucket == -2:
        return "a postpone-bucket primary-key table (bucket = -2)"
    return f"a primary-key table with {bucket} fixed buckets"


def check_supported(table) -> None:
    """Only primary-key tables with fixed buckets can be served (keys must map to a bucket without an index)."""
    schema = table.table_schema
    name = getattr(table.identifier, "get_full_name", lambda: str(table.identifier))()
    if not schema.primary_keys or int(table.options.bucket()) < 1:
        raise UsageError(
            f"table {name} is {table_kind(table)}: the query service serves primary-key tables with fixed "
            "buckets ('bucket' = N > 0)"
        )
    if str(schema.options.get("bucket-function.type", "default")).lower() != "default":
        raise UsageError(f"table {name} uses a custom bucket-function.type: not supported by the query service")
