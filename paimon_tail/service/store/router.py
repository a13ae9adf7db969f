"""Which store of a partition holds a key, on an executor of a table whose keys are routed by slot.

Such an executor keeps every bucket of the table, each store indexing the keys of its own channels
(``keys/routing.py``: ``KeySlice``), so a key could be in any store of its partition. Probing every store costs a
binary search per store for every key. A ``Router`` answers the question in one search: the low 32 bits of every
key's index hash (``store/key_hashes.py``), sorted, with the store each came from — 6 bytes a key.

It is built off the lookup path, for the stores as they were then, and stays right as they change: a key is either
in a store unchanged since the router was built (the router names it) or in one that changed since (those few are
searched for keys the router does not place), or nowhere. A key the router places in a store that no longer holds
it is searched for in the changed stores too. Equal low bits of two keys (32 bits) make a key ambiguous; such keys
are searched for in every store.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..protocol.changes import BucketKey
from .bucket import BucketStore

_LOW = np.uint64(0xFFFFFFFF)


@dataclass(frozen=True)
class Router:
    keys: Tuple[BucketKey, ...]  # ordinal → the bucket
    stores: Tuple[BucketStore, ...]  # ordinal → the store as it was when the router was built
    low: np.ndarray  # uint32, sorted: the low 32 bits of every key of those stores
    ordinal: np.ndarray  # uint16 (int32 beyond 65,535 stores), aligned with ``low``

    @classmethod
    def build(cls, stores: Sequence[BucketStore]) -> "Router":
        """Over ``stores`` (one partition's, as they are now): every key of each, live or a tombstone."""
        parts, owners = [], []
        for i, store in enumerate(stores):
            index = store.index
            for layer in (index.base, *index.overlays):
                if len(layer):
                    h = np.asarray(layer.h, dtype=np.uint64)
                    parts.append((h & _LOW).astype(np.uint32))
                    owners.append(np.full(len(h), i, dtype=np.uint16 if len(stores) < 1 << 16 else np.int32))
        low = np.concatenate(parts) if parts else np.empty(0, np.uint32)
        ordinal = np.concatenate(owners) if owners else np.empty(0, np.uint16)
        order = np.argsort(low, kind="stable")
        return cls(tuple(s.key for s in stores), tuple(stores), low[order], ordinal[order])

    @property
    def nbytes(self) -> int:
        return self.low.nbytes + self.ordinal.nbytes

    def changed(self, current: Dict[BucketKey, BucketStore]) -> List[BucketStore]:
        """The stores of ``current`` (one partition's, now) that are not as they were when this was built."""
        built = dict(zip(self.keys, self.stores))
        return [s for k, s in current.items() if built.get(k) is not s]

    def route(self, h: np.ndarray) -> np.ndarray:
        """For each key hash: the ordinal of the store that held it when this was built, -1 for none, -2 for more
        than one (equal low bits)."""
        low = (np.asarray(h, dtype=np.uint64) & _LOW).astype(np.uint32)
        out = np.full(len(low), -1, dtype=np.int64)
        n = len(self.low)
        if n == 0 or len(low) == 0:
            return out
        if len(low) > 64:  # sorted probes share cache lines and pages (as Layer.search)
            order = np.argsort(low, kind="stable")
            pos = np.empty(len(low), dtype=np.int64)
            pos[order] = self.low.searchsorted(low[order], side="left")
        else:
            pos = np.asarray(self.low.searchsorted(low, side="left"), dtype=np.int64)
        at = np.minimum(pos, n - 1)
        hit = (pos < n) & (self.low[at] == low)
        out[hit] = self.ordinal[at[hit]]
        nxt = np.minimum(at + 1, n - 1)
        twice = hit & (at + 1 < n) & (self.low[nxt] == low)
        for i in np.nonzero(twice)[0].tolist():  # rare: equal low bits (the same store twice is still one)
            j, owners = int(at[i]), set()
            while j < n and self.low[j] == low[i]:
                owners.add(int(self.ordinal[j]))
                j += 1
            if len(owners) > 1:
                out[i] = -2
        return out

    def current(self, ordinal: int, stores: Dict[BucketKey, BucketStore]) -> Optional[BucketStore]:
        """The store now of the bucket behind ``ordinal`` (None when the bucket is gone)."""
        return stores.get(self.keys[ordinal])


__all__ = ["Router"]
