"""A bucket's key index: each live key → where its row is (run slot, row in that run).

Layers, newest first: small in-memory *overlays* (one per commit that added files: newest wins, tombstones
included) over one sorted *base* (memory-mapped from disk once it is large). A lookup probes the overlays, then the
base: one vectorised binary search per layer. ``folded`` merges the overlays into a new base off the lookup path
(the executor's background work); nothing else ever rewrites the base while a commit waits, except the rare
operations that need the whole index at once (a compaction re-pointing keys to its output, deletion vectors),
which cost one pass over the index (tens of milliseconds per million keys).

A location is ``slot << 32 | row`` (``packed.py``): ``slot`` names a run of the bucket (``runs.py``), ``row`` the row
in it. On disk a base is packed to 8 bytes a key where it can be (``packed.py``).
"""
from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np

from .packed import PackedKeys, PackedLocations, rows_of, slots_of

NONE = np.uint64(0xFFFF_FFFF_FFFF_FFFF)
MMAP_MIN_KEYS = 1 << 16  # a base with more keys lives in files under the bucket directory, memory-mapped


@dataclass(frozen=True)
class Layer:
    """Keys sorted by ``h``, their locations, and (overlays) which of them are tombstones."""

    h: "np.ndarray | PackedKeys"
    h2: Optional[np.ndarray]
    loc: "np.ndarray | PackedLocations"
    dead: Optional[np.ndarray] = None
    files: Tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.h)

    @classmethod
    def empty(cls, hashed: bool) -> "Layer":
        return cls(np.empty(0, np.uint64), np.empty(0, np.uint64) if hashed else None, np.empty(0, np.uint64))

    @classmethod
    def of(cls, h: np.ndarray, h2: Optional[np.ndarray], loc: np.ndarray, dead: Optional[np.ndarray] = None,
           presorted: bool = False) -> "Layer":
        """A layer of unique keys, in any order (sorted here unless ``presorted``)."""
        if not presorted and len(h) > 1:
            if np.any(h[1:] < h[:-1]):
                order = np.argsort(h, kind="stable")
                h, loc = h[order], loc[order]
                h2 = h2[order] if h2 is not None else None
                dead = dead[order] if dead is not None else None
        if dead is not None and not dead.any():
            dead = None
        return cls(h, h2, loc, dead)

    def position(self, h: int) -> int:
        """Position in this layer of one key of an ``exact`` index (its hash as a Python int), or -1: a one-key
        lookup's path, in plain integers (numpy scalars cost more than the search itself there)."""
        hs = self.h
        if isinstance(hs, PackedKeys):
            return hs.position(h)
        i = int(hs.searchsorted(np.uint64(h)))
        return i if i < len(hs) and int(hs[i]) == h else -1

    def search(self, h: np.ndarray, h2: Optional[np.ndarray]) -> np.ndarray:
        """Position in this layer of each key, or -1."""
        n = len(self.h)
        if n == 0 or len(h) == 0:
            return np.full(len(h), -1, dtype=np.int64)
        if len(h) > 64:  # sorted probes share cache lines and pages
            order = np.argsort(h, kind="stable")
            pos = np.empty(len(h), dtype=np.int64)
            pos[order] = self.h.searchsorted(h[order], side="left")
        else:
            pos = np.asarray(self.h.searchsorted(h, side="left"), dtype=np.int64)
        at = np.minimum(pos, n - 1)
        hit = (pos < n) & (self.h[at] == h)
        if h2 is not None and self.h2 is not None:
            ok = hit & (self.h2[at] == h2)
            for i in np.nonzero(hit & ~ok)[0]:  # equal first hash, other key: look along the run of equal hashes
                j = int(pos[i]) + 1
                while j < n and self.h[j] == h[i]:
                    if self.h2[j] == h2[i]:
                        ok[i], at[i] = True, j
                        break
                    j += 1
            hit = ok
        return np.where(hit, at, -1)

    def without(self, drop: np.ndarray) -> "Layer":
        keep = ~drop
        return Layer(self.h[keep], self.h2[keep] if self.h2 is not None else None, self.loc[keep],
                     self.dead[keep] if self.dead is not None else None)

    def alive(self) -> "Layer":
        return self if self.dead is None else self.without(self.dead)

    def persisted(self, directory: str) -> "Layer":
        """This layer in files under ``directory``, memory-mapped (small layers stay in memory)."""
        if len(self.h) < MMAP_MIN_KEYS:
            return self
        os.makedirs(directory, mode=0o700, exist_ok=True)
        stem = os.path.join(directory, f"index-{uuid.uuid4().hex[:12]}")
        h = np.asarray(self.h)
        keys = PackedKeys.pack(h) if self.h2 is None else None
        locs = PackedLocations.pack(np.asarray(self.loc))
        arrays = {"h": keys.offsets if keys else h, "loc": locs.words if locs else np.asarray(self.loc)}
        if self.h2 is not None:
            arrays["h2"] = np.asarray(self.h2)
        files, maps = [], {}
        for name, arr in arrays.items():
            path = f"{stem}.{name}.npy"
            np.save(path, np.ascontiguousarray(arr))
            os.chmod(path, 0o600)
            files.append(path)
            maps[name] = np.asarray(np.load(path, mmap_mode="r"))
        return Layer(PackedKeys(maps["h"], int(keys.first)) if keys else maps["h"], maps.get("h2"),
                     PackedLocations(maps["loc"], locs.slots, int(locs.row_bits)) if locs
                     else maps["loc"], None, tuple(files))

    def nbytes(self) -> int:
        return int(self.h.nbytes + self.loc.nbytes + (self.h2.nbytes if self.h2 is not None else 0))


def resolve(h: np.ndarray, h2: Optional[np.ndarray], seq: np.ndarray, loc: np.ndarray, dead: np.ndarray,
            newest: bool = True) -> Layer:
    """The winning record of each key among records of several files: the highest sequence number (``newest``,
    deduplicate) or the lowest (first-row); tombstones stay (the caller decides)."""
    if len(h) == 0:
        return Layer.empty(h2 is not None)
    keys = (seq, h2, h) if h2 is not None else (seq, h)
    order = np.lexsort(keys)
    hs = h[order]
    h2s = h2[order] if h2 is not None else None
    if newest:
        last = np.ones(len(hs), dtype=bool)
        same = hs[1:] == hs[:-1]
        if h2s is not None:
            same &= h2s[1:] == h2s[:-1]
        last[:-1] = ~same
        pick = order[last]
    else:
        first = np.ones(len(hs), dtype=bool)
        same = hs[1:] == hs[:-1]
        if h2s is not None:
            same &= h2s[1:] == h2s[:-1]
        first[1:] = ~same
        pick = order[first]
    return Layer.of(h[pick], h2[pick] if h2 is not None else None, loc[pick], dead[pick], presorted=True)


def merge_sorted(base: Layer, extra: Layer) -> Layer:
    """Two layers of distinct keys (and no tombstones) as one sorted layer."""
    if len(extra) == 0:
        return base
    if len(base) == 0:
        return extra
    at = np.searchsorted(base.h, extra.h, side="left")
    h = np.insert(np.asarray(base.h), at, extra.h)
    loc = np.insert(np.asarray(base.loc), at, extra.loc)
    h2 = np.insert(np.asarray(base.h2), at, extra.h2) if base.h2 is not None else None
    return Layer(h, h2, loc)


@dataclass(frozen=True)
class KeyIndex:
    """Immutable: every change returns a new index (lookups in flight keep the one they started with)."""

    base: Layer
    overlays: Tuple[Layer, ...] = ()  # oldest first
    hashed: bool = False

    @classmethod
    def empty(cls, hashed: bool) -> "KeyIndex":
        return cls(Layer.empty(hashed), (), hashed)

    @property
    def overlay_keys(self) -> int:
        return sum(len(o) for o in self.overlays)

    def lookup(self, h: np.ndarray, h2: Optional[np.ndarray]) -> np.ndarray:
        """The location of each key, ``NONE`` where it is absent or deleted."""
        out = np.full(len(h), NONE, dtype=np.uint64)
        remaining = np.arange(len(h))
        for layer in (*reversed(self.overlays), self.base):
            if len(remaining) == 0:
                break
            pos = layer.search(h[remaining], h2[remaining] if h2 is not None else None)
            hit = pos >= 0
            if not hit.any():
                continue
            idx, at = remaining[hit], pos[hit]
            locs = layer.loc[at]
            if layer.dead is not None:
                locs = np.where(layer.dead[at], NONE, locs)
            out[idx] = locs
            remaining = remaining[~hit]
        return out

    def lookup_one(self, h: int) -> Optional[int]:
        """One key of an ``exact`` index (``KeyHasher.one``): its location, or None."""
        h = int(h)
        for layer in (*reversed(self.overlays), self.base) if self.overlays else (self.base,):
            i = layer.position(h)
            if i >= 0:
                if layer.dead is not None and layer.dead[i]:
                    return None
                return int(layer.loc[i])
        return None

    # -- changes --------------------------------------------------------------------------------------------
    def upserted(self, layer: Layer) -> "KeyIndex":
        """``layer``'s keys win over everything below (a commit's new files)."""
        if len(layer) == 0:
            return self
        return KeyIndex(self.base, (*self.overlays, layer), self.hashed)

    def flat(self) -> Layer:
        """Every live key in one sorted layer (overlays applied, tombstones gone)."""
        if not self.overlays:
            return self.base
        top = self.overlays[-1]
        for older in reversed(self.overlays[:-1]):  # fold the overlays newest first: small
            pos = older.search(top.h, top.h2)
            shadowed = np.zeros(len(older), dtype=bool)
            shadowed[pos[pos >= 0]] = True
            rest = older.without(shadowed)
            top = _union(top, rest)
        pos = self.base.search(top.h, top.h2)
        shadowed = np.zeros(len(self.base), dtype=bool)
        shadowed[pos[pos >= 0]] = True
        base = self.base.without(shadowed) if shadowed.any() else self.base
        return merge_sorted(base, top.alive())

    def folded(self, directory: str) -> "KeyIndex":
        """The same keys with the overlays merged into a new base (persisted under ``directory``)."""
        if not self.overlays:
            return self
        return self._with_base(self.flat().persisted(directory))

    def after_fold(self, before: "KeyIndex", folded: "KeyIndex") -> Optional["KeyIndex"]:
        """This index with ``folded`` (``before`` folded in the background) in place of what it shares with
        ``before``; None when this index no longer starts with ``before`` (its base was rebuilt meanwhile)."""
        k = len(before.overlays)
        if self.base is not before.base or len(self.overlays) < k or \
                any(a is not b for a, b in zip(self.overlays[:k], before.overlays)):
            return None
        return KeyIndex(folded.base, self.overlays[k:], self.hashed)

    def repointed(self, directory: str, removed_slots: Sequence[int], added: Layer) -> "KeyIndex":
        """A compaction replaced the runs ``removed_slots`` by runs whose keys are ``added`` (with tombstones):
        each key now in a removed run moves to its record in ``added``, or goes if ``added`` has none or a
        tombstone. Keys elsewhere stay (their record is newer than anything the compaction merged)."""
        flat = self.flat()
        moving = np.isin(slots_of(flat.loc), np.asarray(list(removed_slots), dtype=np.int64))
        if not moving.any():
            return self._with_base(flat.persisted(directory))
        idx = np.nonzero(moving)[0]
        pos = added.search(flat.h[idx], flat.h2[idx] if flat.h2 is not None else None)
        found = pos >= 0
        if added.dead is not None:
            found &= ~added.dead[np.maximum(pos, 0)]
        loc = np.array(flat.loc, dtype=np.uint64, copy=True)
        loc[idx[found]] = added.loc[pos[found]]
        drop = np.zeros(len(flat), dtype=bool)
        drop[idx[~found]] = True
        out = Layer(flat.h, flat.h2, loc).without(drop) if drop.any() else Layer(flat.h, flat.h2, loc)
        return self._with_base(out.persisted(directory))

    def without_locations(self, directory: str, slots: Sequence[int] = (),
                          rows: Optional[Sequence[Tuple[int, np.ndarray]]] = None) -> "KeyIndex":
        """Keys whose record is in one of ``slots``, or at one of ``rows`` ((slot, rows) pairs), removed
        (deletion vectors: files gone, rows deleted)."""
        flat = self.flat()
        s = slots_of(flat.loc)
        drop = np.isin(s, np.asarray(list(slots), dtype=np.int64)) if slots else np.zeros(len(flat), bool)
        for slot, deleted in rows or ():
            if len(deleted) == 0:
                continue
            mine = np.nonzero(s == slot)[0]
            if len(mine):
                drop[mine[np.isin(rows_of(flat.loc[mine]), deleted)]] = True
        out = flat.without(drop) if drop.any() else flat
        return self._with_base(out.persisted(directory))

    def _with_base(self, base: Layer) -> "KeyIndex":
        return KeyIndex(base, (), self.hashed)

    def files(self) -> List[str]:
        return list(self.base.files)

    def nbytes(self) -> Tuple[int, int]:
        """(bytes on disk, bytes in memory)."""
        disk = self.base.nbytes() if self.base.files else 0
        memory = sum(o.nbytes() for o in self.overlays) + (0 if self.base.files else self.base.nbytes())
        return disk, memory


def _union(newer: Layer, older: Layer) -> Layer:
    """Two layers with no key in common (tombstones kept) as one sorted layer."""
    if len(older) == 0:
        return newer
    h = np.concatenate([newer.h, older.h])
    h2 = np.concatenate([newer.h2, older.h2]) if newer.h2 is not None else None
    loc = np.concatenate([newer.loc, older.loc])
    dead = None
    if newer.dead is not None or older.dead is not None:
        dead = np.concatenate([newer.dead if newer.dead is not None else np.zeros(len(newer), bool),
                               older.dead if older.dead is not None else np.zeros(len(older), bool)])
    return Layer.of(h, h2, loc, dead)


def remove_files(paths: Sequence[str]) -> None:
    for path in paths:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


__all__ = ["KeyIndex", "Layer", "NONE", "remove_files", "resolve"]
