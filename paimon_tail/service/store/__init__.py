"""The executor's store: what lookups are answered from (``docs/query-service.md#the-store``).

``key_hashes`` a key's index hashes, ``index`` the layered key index (``packed``: locations, and a base packed to 8
bytes a key), ``frames`` the compressed row files, ``runs`` rows per data file (or per merged bucket), ``budget``
memory and disk, ``bucket`` one bucket's store and how snapshots change it, ``router`` which store holds a key.
"""
from .budget import DiskBudget, MemoryCache
from .bucket import BucketBuilder, BucketStore
from .targets import Target

__all__ = ["BucketBuilder", "BucketStore", "DiskBudget", "MemoryCache", "Target"]
