"""The executor's store: what lookups are answered from (``docs/query-service.md#the-store``).

``keys`` hashing, ``index`` the layered key index, ``frames`` the compressed row files, ``runs`` rows per data file
(or per merged bucket), ``budget`` memory and disk, ``bucket`` one bucket's store and how snapshots change it.
"""
from .budget import DiskBudget, MemoryCache
from .bucket import BucketBuilder, BucketStore
from .runs import Target

__all__ = ["BucketBuilder", "BucketStore", "DiskBudget", "MemoryCache", "Target"]
