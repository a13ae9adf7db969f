"""What kind of primary-key table a table is, and what its keys are routed by: plain Python over the table's schema
(``TableMeta``), so the command line's few-keys path (``client/few_keys.py``) decides without numpy or pyarrow."""
from __future__ import annotations

from typing import List

from ...table_meta import TableMeta, table_meta

#: key slots of a table whose bucket does not follow from the key (``slotted``)
KEY_SLOTS = 1 << 15


def bucket_mode(table) -> str:
    """A primary-key table's bucket mode, as Paimon decides it (``FileStoreTable.bucketMode``): ``fixed``
    (``bucket`` = N > 0), ``postpone`` (-2), ``cross-partition`` (-1, and the primary key lacks a partition
    column: a key may move between partitions) or ``dynamic`` (-1: buckets are added as they fill, the hash index
    says which bucket holds a key)."""
    meta = table_meta(table)
    bucket = meta.num_buckets
    if bucket > 0:
        return "fixed"
    if bucket == -2:
        return "postpone"
    if any(k not in meta.primary_keys for k in meta.partition_keys):
        return "cross-partition"
    return "dynamic"


def slotted(meta: TableMeta) -> bool:
    """True when a key's bucket does not follow from the key (any kind but fixed buckets with Paimon's default
    bucket function): the key is routed by its slot, Paimon's hash of the trimmed primary key modulo
    ``KEY_SLOTS``."""
    custom = str(meta.options.get("bucket-function.type", "default")).lower() != "default"
    return bucket_mode(meta) != "fixed" or custom


def routing_columns(meta: TableMeta) -> List[str]:
    """The columns a key is routed by: the bucket key, or (slotted) the trimmed primary key."""
    if not slotted(meta):
        return meta.bucket_keys
    return [k for k in meta.primary_keys if k not in meta.partition_keys]


def routes(meta: TableMeta) -> int:
    """How many routing buckets there are: the table's buckets, or ``KEY_SLOTS``."""
    return KEY_SLOTS if slotted(meta) else meta.num_buckets


def key_partition_keys(meta: TableMeta) -> List[str]:
    """The partition columns that are part of a lookup key: all of them, except on cross-partition tables (their
    key alone names a row, in whichever partition holds it)."""
    return [] if bucket_mode(meta) == "cross-partition" else list(meta.partition_keys)


__all__ = ["KEY_SLOTS", "bucket_mode", "key_partition_keys", "routes", "routing_columns", "slotted"]
