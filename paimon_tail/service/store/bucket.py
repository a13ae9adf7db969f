"""One bucket of one table on one executor: its runs and its key index, and how a snapshot changes them.

A ``BucketStore`` is immutable: applying a change returns a new one that shares what did not change, and the
executor swaps the new stores in together with their snapshot id, so an answer always reflects one snapshot.
``BucketBuilder`` (one per table) builds and changes them, by the table's mode (``protocol/changes.table_mode``):

* ``dedup`` — the key index is built from the data files' key columns alone (``_SEQUENCE_NUMBER`` decides, as a
  merge read does); a commit's new files become an overlay of the index (newest wins, deletes as tombstones); a
  compaction re-points the keys of the files it replaced to its output, file by file. Rows are read from a data
  file only when a lookup needs them (``runs.FileRun``). Nothing is ever re-merged.
* ``dv`` — deletion vectors: the live rows of level-1+ files hold each key once; a change removes the keys of
  files gone and of rows newly deleted, and adds the live rows of new files.
* ``skip0`` — batch reads ignore level 0 (first-row, the lookup changelog producer): a change that touches the
  level-1+ files rebuilds the index from their key columns (first-row: the oldest record wins).
* ``merge`` — partial-update, aggregation, a sequence field, ignore-delete: the bucket's rows merged by pypaimon's
  merge read (Rust when pypaimon-rust is installed) into one pinned ``MergedRun``, again when the bucket changes.

Why one module (~430 lines): ``BucketBuilder`` makes every ``BucketStore`` (its index, runs and slots) and the store
has no other maker; the four modes share the builder's key reading.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
import pyarrow as pa

from ...compat.adapters.kv_files import KIND, RETRACT_KINDS, SEQUENCE, FileRef, KeyValueFiles
from ..keys.routing import KeySlice
from ..protocol.changes import BucketChange, BucketFiles, BucketKey
from .budget import DiskBudget, MemoryCache
from .index import NONE, KeyIndex, Layer, resolve
from .packed import location, rows_of, slots_of
from .key_hashes import KeyHasher, keys_equal
from .runs import FileRun, MergedRun, Run
from .targets import Target

FOLD_LAYERS = 8  # fold the overlays into the base once there are this many ...
FOLD_KEYS = 1 << 18  # ... or they hold this many keys (or an eighth of the base)


@dataclass(frozen=True)
class BucketStore:
    key: BucketKey
    directory: str
    hasher: KeyHasher
    index: KeyIndex
    runs: Dict[int, Run] = field(default_factory=dict)  # slot → run
    slots: Dict[str, int] = field(default_factory=dict)  # data file name → slot (file runs)
    dvs: Dict[str, tuple] = field(default_factory=dict)  # data file name → its deletion vector (dv mode)
    rows: int = 0  # live keys
    next_slot: int = 0
    # the keys it indexes: every key (None), or those of a slice (``KeySlice``: a table routed by key slot, whose
    # executors each index the keys of their channels in every bucket)
    keys_of: Optional[KeySlice] = None

    @property
    def exact(self) -> bool:
        return self.hasher.exact

    def needs_fold(self) -> bool:
        n = len(self.index.overlays)
        return n >= FOLD_LAYERS or (n > 0 and self.index.overlay_keys >= max(FOLD_KEYS, len(self.index.base) // 8))

    def with_index(self, index: KeyIndex) -> "BucketStore":
        return replace(self, index=index)

    def garbage(self, newer: Optional["BucketStore"]) -> Tuple[List[Run], List[str]]:
        """What of this store ``newer`` no longer uses: runs and index files (deleted once ``newer`` is in)."""
        keep_runs = {id(r) for r in newer.runs.values()} if newer is not None else set()
        keep_files = set(newer.index.files()) if newer is not None else set()
        return ([r for r in self.runs.values() if id(r) not in keep_runs],
                [f for f in self.index.files() if f not in keep_files])

    # -- lookups ------------------------------------------------------------------------------------------
    def lookup(self, keys: pa.Table, h: np.ndarray, h2: Optional[np.ndarray], target: Target
               ) -> Tuple[np.ndarray, Optional[pa.Table]]:
        """(positions in ``keys`` found, their rows, aligned) — in the order the rows lie on disk, not the keys'
        (the servicer puts a whole batch in order once); deleted keys are not found."""
        locs = self.index.lookup(h, h2)
        found = np.nonzero(locs != NONE)[0]
        if len(found) == 0:
            return found, None
        locs = locs[found]
        check = not self.exact
        names = target.columns
        if check and any(k not in names for k in self.hasher.names):  # the key columns, to compare
            target = Target(target.schema_id, target.fields, _schema_of(target),
                            [*names, *[k for k in self.hasher.names if k not in names]])
        order, table = self._rows(locs, target)
        found = found[order]
        if check:
            ok = keys_equal(table, keys.take(pa.array(found)), self.hasher.names)
            if not ok.all():
                found, table = found[ok], table.filter(pa.array(ok))
            if table.column_names != names:
                table = table.select(names)
        return found, table

    def _sheet(self, schema_id: int) -> Optional[Tuple[pa.RecordBatch, np.ndarray]]:
        """(the sheet holding every run of this store, each slot's first row in it) while there is one, with the
        rows read in ``schema_id``; else None."""
        runs = self.runs
        if not runs:
            return None
        uid = None
        starts = np.zeros(max(runs) + 1, np.int64)
        for slot, run in runs.items():
            ref = run.sheet
            if ref is None or ref.schema_id != schema_id or (uid is not None and ref.uid != uid):
                return None
            uid = ref.uid
            starts[slot] = ref.start
        sheet = next(iter(runs.values())).sheet_rows(schema_id)
        return None if sheet is None else (sheet[0], starts)

    def _rows(self, locs: np.ndarray, target: Target) -> Tuple[np.ndarray, pa.Table]:
        """(order, rows): the rows at ``locs[order]``. A store whose runs are all in one sheet takes them in one
        call, in the locations' order. Otherwise one sort groups the locations by run and orders each run's rows
        (a location is ``slot << 32 | row``), and each run gathers its rows in one pass; runs held in a sheet
        (``runs.sheet_of``) are taken together, one take a sheet."""
        whole = self._sheet(target.schema_id)
        if whole is not None:
            sheet, starts = whole
            at = starts[slots_of(locs)] + rows_of(locs)
            return np.arange(len(locs)), pa.Table.from_batches([sheet.select(target.columns).take(pa.array(at))])
        order = np.argsort(locs, kind="stable") if len(locs) > 1 else np.zeros(1, np.int64)
        ordered = locs[order]
        slots, rows = slots_of(ordered), rows_of(ordered)
        cuts = np.flatnonzero(np.diff(slots)) + 1
        batches: List[pa.RecordBatch] = []
        sheets: Dict[int, Tuple[pa.RecordBatch, List[np.ndarray], List[Tuple[int, int]]]] = {}
        spans: List[Tuple[int, int]] = []  # (first, end) in ``ordered`` of each part of ``batches``, in order
        for a, b in zip([0, *cuts.tolist()], [*cuts.tolist(), len(ordered)]):
            run = self.runs[int(slots[a])]
            sheet = run.sheet_rows(target.schema_id)
            if sheet is not None:
                entry = sheets.setdefault(id(sheet[0]), (sheet[0], [], []))  # one take per sheet, below
                entry[1].append(rows[a:b] + sheet[1])
                entry[2].append((a, b))
                continue
            batches += run.gather(rows[a:b], target)
            spans.append((a, b))
        if sheets:  # the rows come sheet by sheet after the others: ``order`` follows them
            for sheet, at, taken in sheets.values():
                batches.append(sheet.select(target.columns).take(pa.array(np.concatenate(at))))
                spans += taken
            order = order[np.concatenate([np.arange(a, b) for a, b in spans])]
        table = pa.Table.from_batches(batches, target.schema) if batches else target.schema.empty_table()
        return order, table

    def find_one(self, h: int) -> Optional[Tuple[Run, int]]:
        """(run, row) of one key of an ``exact`` store, or None."""
        loc = self.index.lookup_one(h)
        if loc is None:
            return None
        return self.runs[loc >> 32], loc & 0xFFFF_FFFF

    def disk_bytes(self) -> int:
        return sum(r.disk_bytes() for r in self.runs.values()) + self.index.nbytes()[0]

    def drop(self) -> None:
        """Everything of this store on disk goes (when its bucket leaves the executor)."""
        for run in self.runs.values():
            run.drop()
        for path in self.index.files():
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass


def _schema_of(target: Target) -> pa.Schema:
    from pypaimon.schema.data_types import PyarrowFieldParser

    return PyarrowFieldParser.from_paimon_schema(target.fields)


@dataclass
class _Keys:
    """Key hashes of some records, with their sequence numbers, locations and retract flags."""

    h: np.ndarray
    h2: Optional[np.ndarray]
    seq: np.ndarray
    loc: np.ndarray
    dead: np.ndarray

    @classmethod
    def concat(cls, parts: List["_Keys"], hashed: bool) -> "_Keys":
        if not parts:
            e = np.empty(0, np.uint64)
            return cls(e, e if hashed else None, np.empty(0, np.int64), e, np.empty(0, bool))
        return cls(np.concatenate([p.h for p in parts]),
                   np.concatenate([p.h2 for p in parts]) if hashed else None,
                   np.concatenate([p.seq for p in parts]), np.concatenate([p.loc for p in parts]),
                   np.concatenate([p.dead for p in parts]))

    def resolved(self, newest: bool) -> Layer:
        if len(self.h) > 1 and self.h2 is None and np.all(self.h[1:] > self.h[:-1]):
            return Layer.of(self.h, None, self.loc, self.dead, presorted=True)  # one file: sorted, unique
        return resolve(self.h, self.h2, self.seq, self.loc, self.dead, newest)


class BucketBuilder:
    """Builds and changes one table's bucket stores (see the module docstring); safe to use from several threads
    for different buckets."""

    def __init__(self, table, mode: str, cache: MemoryCache, disk: DiskBudget,
                 call: Callable[[Callable], object]) -> None:
        self.mode = mode
        self.cache = cache
        self.disk = disk
        self._call = call  # runs storage reads under the service's retry policy
        self.on_decoded: Optional[Callable[[Run], None]] = None  # told when a lookup read a data file's rows
        self.use(table)
        engine = str(table.options.merge_engine()).lower()
        self.newest = "first" not in engine  # first-row: the oldest record wins
        self.skip_level0 = mode in ("skip0", "dv")

    def use(self, table) -> None:
        """Read with ``table``'s schema from now on (older files come evolved)."""
        self.table = table
        self.files = KeyValueFiles(table)
        self.key_names = self.files.key_names
        from pypaimon.schema.data_types import PyarrowFieldParser

        full = PyarrowFieldParser.from_paimon_schema(table.fields)
        self.hasher = KeyHasher(pa.schema([full.field(k) for k in self.key_names]))

    def source(self) -> KeyValueFiles:
        return self.files

    # -- reading keys -------------------------------------------------------------------------------------
    def _run(self, directory: str, key: BucketKey, meta) -> FileRun:
        return FileRun(directory, self.cache, self.disk, self.source, FileRef(meta, key[0], key[1]), self._call,
                       self._decoded)

    def _decoded(self, run: Run) -> None:
        if self.on_decoded is not None:
            self.on_decoded(run)

    def _keys(self, key: BucketKey, meta, slot: int, dv=None, keys_of: Optional[KeySlice] = None) -> _Keys:
        t = self._call(lambda: self.files.keys(FileRef(meta, key[0], key[1])))
        h, h2 = self.hasher.hashes(t)
        rows = np.arange(t.num_rows, dtype=np.int64)
        seq = np.asarray(t.column(SEQUENCE).to_numpy(zero_copy_only=False), dtype=np.int64)
        dead = np.isin(np.asarray(t.column(KIND).to_numpy(zero_copy_only=False)), RETRACT_KINDS)
        k = _Keys(h, h2, seq, location(slot, rows), dead)
        keep = keys_of.mask(key[0], t) if keys_of is not None else None
        if dv is not None:
            gone = self._call(lambda: self.files.deleted_positions(dv))
            if len(gone):
                keep = np.ones(len(rows), bool) if keep is None else keep
                keep[gone[gone < len(rows)]] = False
        if keep is not None:
            k = _Keys(h[keep], h2[keep] if h2 is not None else None, seq[keep], k.loc[keep], dead[keep])
        return k

    def _visible(self, files: BucketFiles) -> List[Tuple[object, object]]:
        dvs = files.deletion_files or [None] * len(files.files)
        return [(m, d) for m, d in zip(files.files, dvs) if not (self.skip_level0 and m.level == 0)]

    # -- building -----------------------------------------------------------------------------------------
    def full(self, key: BucketKey, files: BucketFiles, directory: str, reuse: Optional[BucketStore] = None,
             snapshot_id: int = 1, keys_of: Optional[KeySlice] = None) -> Optional[BucketStore]:
        """A store of the bucket's ``files`` at ``snapshot_id`` (None: no rows), indexing every key or those of
        ``keys_of``; file runs of ``reuse`` with the same files are kept."""
        if self.mode == "merge":
            return self._merged(key, files, directory, reuse, snapshot_id, keys_of)
        visible = self._visible(files)
        if not visible:
            return None
        runs: Dict[int, Run] = {}
        slots: Dict[str, int] = {}
        dvs: Dict[str, tuple] = {}
        parts: List[_Keys] = []
        old = dict(reuse.slots) if reuse is not None else {}
        for slot, (meta, dv) in enumerate(visible):
            prev = old.pop(meta.file_name, None)
            run = reuse.runs[prev] if prev is not None else self._run(directory, key, meta)
            runs[slot] = run
            slots[meta.file_name] = slot
            dvs[meta.file_name] = _dv_sig(dv)
            parts.append(self._keys(key, meta, slot, dv, keys_of))
        layer = _Keys.concat(parts, not self.hasher.exact).resolved(self.newest)
        base = layer.alive().persisted(directory)
        return BucketStore(key, directory, self.hasher, KeyIndex(base, (), not self.hasher.exact), runs, slots, dvs,
                           len(base), len(visible), keys_of)

    def _merged(self, key: BucketKey, files: BucketFiles, directory: str, reuse: Optional[BucketStore],
                snapshot_id: int, keys_of: Optional[KeySlice] = None) -> Optional[BucketStore]:
        from pypaimon.read.split import DataSplit
        from pypaimon.table.row.generic_row import GenericRow

        from ...compat.adapters.native_reads import with_native_reads
        from ...stream.reader import split_batches

        visible = self._visible(files)
        if not visible:
            return None
        metas = [m for m, _ in visible]
        dvs = [d for _, d in visible] if files.deletion_files is not None else None
        by_name = {f.name: f for f in self.table.fields}
        raw = len(metas) == 1 and not metas[0].delete_row_count and not (dvs and any(dvs))
        split = DataSplit(metas, GenericRow(list(key[0]), [by_name[k] for k in self.table.partition_keys]), key[1],
                          raw_convertible=raw, data_deletion_files=dvs, snapshot_id=max(1, snapshot_id))
        read = with_native_reads(self.table).new_read_builder().new_read()
        from pypaimon.schema.data_types import PyarrowFieldParser

        schema = PyarrowFieldParser.from_paimon_schema(self.table.fields)
        hashes: List[Tuple[np.ndarray, Optional[np.ndarray]]] = []

        kept: List[np.ndarray] = []

        def batches():
            for batch in split_batches(read, [split]):
                rows = pa.Table.from_batches([batch])
                hashes.append(self.hasher.hashes(rows))
                if keys_of is not None:
                    kept.append(keys_of.mask(key[0], rows))
                yield batch

        run = self._call(lambda: MergedRun(directory, self.cache, self.disk, self.table.table_schema.id,
                                           self.table.fields, schema, _fresh(batches, hashes)))
        h = np.concatenate([x[0] for x in hashes]) if hashes else np.empty(0, np.uint64)
        h2 = np.concatenate([x[1] for x in hashes]) if hashes and not self.hasher.exact else \
            (None if self.hasher.exact else np.empty(0, np.uint64))
        loc = location(0, np.arange(len(h)))
        if keys_of is not None and kept:
            keep = np.concatenate(kept)
            h, h2, loc = h[keep], h2[keep] if h2 is not None else None, loc[keep]
        base = Layer.of(h, h2, loc).persisted(directory)
        return BucketStore(key, directory, self.hasher, KeyIndex(base, (), not self.hasher.exact), {0: run}, {}, {},
                           len(base), 1, keys_of)

    # -- changing -----------------------------------------------------------------------------------------
    def apply(self, store: Optional[BucketStore], key: BucketKey, change: BucketChange, commit_kind: str,
              after: BucketFiles, directory: str, snapshot_id: int, keys_of: Optional[KeySlice] = None
              ) -> Optional[BucketStore]:
        """The store after snapshot ``snapshot_id``'s ``change`` (``after``: the bucket's files then); a new
        store indexes the keys of ``keys_of``, a changed one the keys it indexed."""
        if store is not None:
            keys_of = store.keys_of
        if store is None or self.mode == "merge":
            if self.mode == "merge" and store is not None and commit_kind == "COMPACT" and change.replace is None:
                return store  # a compaction keeps the merged rows
            return self.full(key, after, directory, store, snapshot_id, keys_of)
        if self.mode == "dv":
            return self._apply_dv(store, key, after, directory)
        if self.mode == "skip0":
            if {m.file_name for m, _ in self._visible(after)} == set(store.slots):
                return store  # level 0 only: invisible to a batch read
            return self.full(key, after, directory, store, snapshot_id, keys_of)
        # dedup
        if change.replace is not None or (change.deletes and commit_kind != "COMPACT"):
            return self.full(key, after, directory, store, snapshot_id, keys_of)  # an overwrite: from the files
        new_runs = dict(store.runs)
        slots = dict(store.slots)
        parts = []
        slot = store.next_slot
        for meta in change.adds:
            if meta.file_name in slots:
                continue
            new_runs[slot] = self._run(directory, key, meta)
            slots[meta.file_name] = slot
            parts.append(self._keys(key, meta, slot, keys_of=keys_of))
            slot += 1
        added = _Keys.concat(parts, not self.hasher.exact).resolved(self.newest)
        if not change.deletes:
            present = store.index.lookup(added.h, added.h2) != NONE
            dead = added.dead if added.dead is not None else np.zeros(len(added), bool)
            rows = store.rows + int(np.sum(~dead & ~present)) - int(np.sum(dead & present))
            index = store.index.upserted(added)
        else:
            removed = [slots.pop(m.file_name) for m in change.deletes if m.file_name in slots]
            for s in removed:
                new_runs.pop(s)
            index = store.index.repointed(directory, removed, added)
            rows = len(index.base)
        return replace(store, index=index, runs=new_runs, slots=slots, rows=rows, next_slot=slot)

    def _apply_dv(self, store: BucketStore, key: BucketKey, after: BucketFiles, directory: str
                  ) -> Optional[BucketStore]:
        visible = {m.file_name: (m, d) for m, d in self._visible(after)}
        if not visible:
            return None
        removed = [n for n in store.slots if n not in visible]
        changed = [n for n, (_, d) in visible.items() if n in store.slots and store.dvs.get(n) != _dv_sig(d)]
        added = [n for n in visible if n not in store.slots]
        if not removed and not changed and not added:
            return store
        runs, slots, dvs = dict(store.runs), dict(store.slots), dict(store.dvs)
        deleted_rows = []
        for name in changed:
            dv = visible[name][1]
            deleted_rows.append((slots[name], self._call(lambda dv=dv: self.files.deleted_positions(dv))))
            dvs[name] = _dv_sig(dv)
        removed_slots = [slots.pop(n) for n in removed]
        for s in removed_slots:
            runs.pop(s)
        for n in removed:
            dvs.pop(n, None)
        index = store.index.without_locations(directory, removed_slots, deleted_rows)
        slot = store.next_slot
        parts = []
        for name in added:
            meta, dv = visible[name]
            runs[slot] = self._run(directory, key, meta)
            slots[name] = slot
            dvs[name] = _dv_sig(dv)
            parts.append(self._keys(key, meta, slot, dv, store.keys_of))
            slot += 1
        layer = _Keys.concat(parts, not self.hasher.exact).resolved(True).alive()
        index = index.upserted(layer).folded(directory) if len(layer) else index
        return replace(store, index=index, runs=runs, slots=slots, dvs=dvs, rows=len(index.base), next_slot=slot)


def _dv_sig(dv) -> tuple:
    return () if dv is None else (dv.dv_index_path, dv.offset, dv.length)


def _fresh(gen, sink):
    """``gen()``, with ``sink`` emptied first (a retried write starts its key hashes over)."""
    sink.clear()
    return gen()


__all__ = ["BucketBuilder", "BucketStore"]
