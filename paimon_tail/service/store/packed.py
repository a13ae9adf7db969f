"""Where a key's row is, and the same packed to 8 bytes a key for a key index's base on disk.

A location is ``slot << 32 | row``: ``slot`` names a run of the bucket (``runs.py``), ``row`` the row in it.

On disk a base is packed to 8 bytes a key where it can be (``PackedKeys``, ``PackedLocations``): keys as 32-bit
offsets from the smallest when they span less than 2^32 (integer keys of one table usually do), locations as one
32-bit word (the slot's rank among the layer's few slots, then the row). Where they cannot, it stays 16 (hashed keys
add 8 for their second hash). The packed arrays answer the same indexing and ``searchsorted`` as the plain ones.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

_ROW_MASK = np.uint64(0xFFFF_FFFF)


def location(slot: int, rows: np.ndarray) -> np.ndarray:
    return (np.uint64(slot) << np.uint64(32)) | rows.astype(np.uint64, copy=False)


def slots_of(locs: np.ndarray) -> np.ndarray:
    return (np.asarray(locs) >> np.uint64(32)).astype(np.int64)


def rows_of(locs: np.ndarray) -> np.ndarray:
    return (np.asarray(locs) & _ROW_MASK).astype(np.int64)


class PackedKeys:
    """Sorted 64-bit keys spanning less than 2^32, as 32-bit offsets from the first: half the bytes, same answers
    to ``len``, indexing and ``searchsorted`` (what ``Layer`` uses of its keys)."""

    def __init__(self, offsets: np.ndarray, first: int) -> None:
        self.offsets = offsets  # uint32, sorted
        self.first = np.uint64(first)
        self._first = int(first)

    @classmethod
    def pack(cls, h: np.ndarray) -> Optional["PackedKeys"]:
        """None when these (sorted) keys span 2^32 or more."""
        if len(h) == 0 or int(h[-1]) - int(h[0]) > 0xFFFF_FFFF:
            return None
        return cls((h - h[0]).astype(np.uint32), int(h[0]))

    def __len__(self) -> int:
        return len(self.offsets)

    def __getitem__(self, idx):
        return self.offsets[idx].astype(np.uint64) + self.first

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = self.offsets.astype(np.uint64) + self.first
        return out if dtype is None else out.astype(dtype, copy=False)

    def position(self, h: int) -> int:
        """Where one key is (a Python int), or -1: ``Layer.position``'s packed half."""
        d = h - self._first
        if not 0 <= d <= 0xFFFF_FFFF:
            return -1
        offsets = self.offsets
        i = int(offsets.searchsorted(np.uint32(d)))  # a Python int would make numpy search an int64 copy
        return i if i < len(offsets) and int(offsets[i]) == d else -1

    def searchsorted(self, v, side: str = "left", sorter=None):
        assert sorter is None
        v = np.asarray(v, dtype=np.uint64)
        d = v - self.first  # wraps below ``first``: those are as far up as keys above the span
        inside = (v >= self.first) & (d <= np.uint64(0xFFFF_FFFF))
        if inside.all():
            return np.searchsorted(self.offsets, d.astype(np.uint32), side=side).astype(np.int64)
        pos = np.where(v < self.first, 0, len(self.offsets)).astype(np.int64)
        if inside.any():
            pos[inside] = np.searchsorted(self.offsets, d[inside].astype(np.uint32), side=side)
        return pos

    @property
    def nbytes(self) -> int:
        return int(self.offsets.nbytes)


class PackedLocations:
    """Locations in 32 bits: ``rank << row_bits | row``, ``rank`` indexing the layer's distinct slots. A base
    points into a handful of runs, each of at most millions of rows, so this almost always fits."""

    def __init__(self, words: np.ndarray, slots: np.ndarray, row_bits: int) -> None:
        self.words = words  # uint32
        self.slots = slots  # rank -> slot
        self._high = slots.astype(np.uint64) << np.uint64(32)  # rank -> the slot's half of a location
        self.row_bits = np.uint32(row_bits)
        self.row_mask = np.uint32((1 << row_bits) - 1)

    @classmethod
    def pack(cls, loc: np.ndarray) -> Optional["PackedLocations"]:
        """None when the slots and rows do not fit 32 bits together."""
        if len(loc) == 0:
            return None
        slot, row = slots_of(loc), rows_of(loc)
        row_bits = max(1, int(row.max()).bit_length())
        distinct = np.unique(slot)
        if row_bits + max(1, (len(distinct) - 1).bit_length()) > 32:
            return None
        rank = np.searchsorted(distinct, slot).astype(np.uint32)
        return cls((rank << np.uint32(row_bits)) | row.astype(np.uint32), distinct, row_bits)

    def __len__(self) -> int:
        return len(self.words)

    def __getitem__(self, idx):
        w = self.words[idx]
        if isinstance(idx, (int, np.integer)):
            return int(self._high[w >> self.row_bits]) | int(w & self.row_mask)
        return self._high[w >> self.row_bits] | (w & self.row_mask).astype(np.uint64)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = self[:]
        return out if dtype is None else out.astype(dtype, copy=False)

    @property
    def nbytes(self) -> int:
        return int(self.words.nbytes)


__all__ = ["PackedKeys", "PackedLocations", "location", "rows_of", "slots_of"]
