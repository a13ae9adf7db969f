"""One table on one executor: its bucket stores, the snapshot and schema they reflect, the channels it answers for.

Everything a lookup reads is one immutable ``View``, replaced as a whole: a change message builds new stores off
the event loop (``prepare_full`` / ``prepare_delta``, in a worker thread) and ``swap`` installs them together with
their snapshot id, schema id and channels, so an answer always reflects exactly the snapshot it reports.

* A full state (``TableFull``) keeps the stores of buckets whose files did not change (a rebalance or a rejoin
  costs only the buckets that moved) and builds the others.
* A delta applies one snapshot: dedup tables upsert new level-0 files into an overlay; other engines re-merge the
  changed bucket; COMPACT snapshots keep the content.
* A new schema id (a writer added or widened a column) re-reads every bucket with that schema: pypaimon reads the
  older files evolved, as a batch read would.
* An assignment that takes channels away drops them from the view at once, with their buckets' stores and local
  files; channels it adds are answered after the full state that loads them.
"""
from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field, replace
from typing import Dict, FrozenSet, List, Optional, Sequence

import pyarrow as pa

from ..keys.routing import TableRouting
from ..protocol.changes import BucketChange, BucketFiles, BucketKey, RowCodec, table_mode
from ..protocol.wire import ipc_stream, schema_bytes
from .mirror import LocalMirror, partition_path
from .store import BucketStore

OVERLAY_LIMIT = 200_000  # re-merge a bucket once its overlays hold this many rows (or a quarter of the base)


def key_kind(arrow_type: pa.DataType) -> Optional[str]:
    """The ``Value`` field a key column travels in when one key is sent without Arrow (``lookup.proto``)."""
    if pa.types.is_integer(arrow_type):
        return "int"
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "text"
    return None


def bucket_error(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".strip()


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
    # the buckets this view answers for (served channel, not broken) → their store (None: no rows): one dict
    # lookup decides a one-key request; filled by ``TableState.open``
    answering: Dict[BucketKey, Optional[BucketStore]] = field(default_factory=dict)

    def keys_held(self) -> int:
        return sum(s.rows for s in self.stores.values())


@dataclass
class Prepared:
    """New stores for a view, built in a worker thread; ``old`` are dropped after the swap."""

    stores: Dict[BucketKey, BucketStore]
    files: Dict[BucketKey, BucketFiles]
    broken: Dict[BucketKey, str]
    old: List[BucketStore]


class TableState:
    def __init__(self, name: str, table, root: str) -> None:
        self.name = name
        self.root = root
        self.routing = TableRouting.of(table)
        self.key_names = list(self.routing.primary_keys)
        self.partition_positions = [self.key_names.index(k) for k in self.routing.partition_keys]
        self._empty: Dict[tuple, bytes] = {}
        self._messages: Dict[tuple, bytes] = {}
        self.mirror = LocalMirror(table, os.path.join(root, "files"))
        self._use(table)
        self.view = View(schema=self.schema, schema_id=self.table.table_schema.id)
        self.changed = asyncio.Condition()
        self.owned: FrozenSet[int] = frozenset()  # channels the latest assignment gives this executor
        self.channels = 1  # the service's channel count

    def _use(self, table) -> None:
        from pypaimon.schema.data_types import PyarrowFieldParser

        self.table = table
        self.mode = table_mode(table)
        self.codec = RowCodec(table)
        self.schema = PyarrowFieldParser.from_paimon_schema(table.fields)
        self.key_schema = pa.schema([self.schema.field(k) for k in self.key_names])
        self.key_types = [f.type for f in self.key_schema]
        # the Value kind of each key column in a one-key request (None: that key takes the Arrow path)
        self.key_kinds = [key_kind(t) for t in self.key_types]
        self.mirror.use(table)

    def _out_schema(self, view: View, columns: Optional[Sequence[str]]) -> pa.Schema:
        return view.schema if not columns else pa.schema([view.schema.field(c) for c in columns])

    def empty_rows(self, view: View, columns: Optional[Sequence[str]]) -> bytes:
        """An Arrow IPC stream of no rows with the view's schema (cached: every miss answers it)."""
        cache_key = (view.schema_id, tuple(columns) if columns else None)
        data = self._empty.get(cache_key)
        if data is None:
            data = self._empty[cache_key] = ipc_stream(self._out_schema(view, columns).empty_table())
        return data

    def schema_message(self, view: View, columns: Optional[Sequence[str]]) -> bytes:
        """The Arrow IPC schema message of the rows answered (cached: no schema hashing per answer)."""
        cache_key = (view.schema_id, tuple(columns) if columns else None)
        data = self._messages.get(cache_key)
        if data is None:
            data = self._messages[cache_key] = schema_bytes(self._out_schema(view, columns))
        return data

    def at_schema(self, schema_id: int) -> bool:
        """Read with schema ``schema_id`` from now on; True when that is a change (every bucket is re-read)."""
        if schema_id == self.table.table_schema.id:
            return False
        from pypaimon.schema.schema_manager import SchemaManager

        t = self.table
        schema = SchemaManager(t.file_io, t.table_path).get_schema(schema_id)
        if schema is None:
            raise ValueError(f"schema {schema_id} of {self.name} not found")
        self._use(type(t)(t.file_io, t.identifier, t.table_path, schema, t.catalog_environment))
        return True

    def channel_of(self, key: BucketKey) -> int:
        return self.routing.channel_of(key[0], key[1], self.channels)

    def store_dir(self, key: BucketKey) -> str:
        return os.path.join(self.root, "stores", partition_path(self.routing.partition_keys, key[0]),
                            f"bucket-{key[1]}")

    # -- building (worker thread) -------------------------------------------------------------------------
    def _build(self, key: BucketKey, files: BucketFiles) -> Optional[BucketStore]:
        if not files.files:
            return None
        # As a batch read: level-0 files are invisible on first-row and deletion-vector tables until compacted.
        batches = self.mirror.merged_batches(key[0], key[1], files,
                                             skip_level0=self.table.options.batch_scan_skip_level0())
        return BucketStore.build(self.store_dir(key), self.key_names, self.schema, batches)

    def prepare_full(self, buckets: Dict[BucketKey, BucketFiles], schema_changed: bool) -> Prepared:
        current = self.view
        stores, files, broken, kept = {}, {}, {}, set()
        for key, bf in buckets.items():
            files[key] = bf
            store = current.stores.get(key)
            if not schema_changed and store is not None and key not in current.broken and \
                    current.files.get(key, BucketFiles()).same(bf):
                stores[key] = store  # the same files: the same rows
                kept.add(id(store))
                continue
            try:
                store = self._build(key, bf)
            except Exception as e:  # a missing or corrupt file: this bucket reports it, the others serve
                broken[key] = bucket_error(e)
                continue
            if store is not None:
                stores[key] = store
        old = [s for s in current.stores.values() if id(s) not in kept]
        return Prepared(stores, files, broken, old)

    def prepare_delta(self, commit_kind: str, changes: Dict[BucketKey, BucketChange], schema_changed: bool) -> Prepared:
        current = self.view
        if schema_changed:  # every bucket re-read with the new schema
            files = dict(current.files)
            for key, change in changes.items():
                files[key] = change.replace if change.replace is not None else \
                    files.get(key, BucketFiles()).apply(change.adds, change.deletes)
                self.mirror.release(key[0], key[1], change.deletes)
            return self.prepare_full({k: v for k, v in files.items() if v.files}, True)
        stores, files, old = dict(current.stores), dict(current.files), []
        broken = dict(current.broken)
        for key, change in changes.items():
            try:
                self._apply_change(key, change, commit_kind, stores, files, old)
                broken.pop(key, None)
            except Exception as e:  # a missing or corrupt file: this bucket reports it, the others serve
                store = stores.pop(key, None)
                if store is not None:
                    old.append(store)
                broken[key] = bucket_error(e)
        return Prepared(stores, files, broken, old)

    def _apply_change(self, key: BucketKey, change: BucketChange, commit_kind: str, stores: Dict, files: Dict,
                      old: List) -> None:
        before = files.get(key, BucketFiles())
        after = change.replace if change.replace is not None else before.apply(change.adds, change.deletes)
        files[key] = after
        current = stores.get(key)
        incremental = (
            self.mode == "dedup" and commit_kind == "APPEND" and current is not None and not change.deletes
            and change.replace is None and all(m.level == 0 for m in change.adds)
        )
        content_kept = commit_kind == "COMPACT" and self.mode in ("dedup", "merge") and change.replace is None
        if incremental:
            new = current.with_changes(self.mirror.change_batches(key[0], key[1], change.adds))
            if new.overlay_rows > max(OVERLAY_LIMIT, current.base.num_rows // 4):
                new = self._build(key, after)
                old.append(current)
        elif content_kept and (current is not None or not after.files):
            new = current
            # Keep the local mirror small: copy the compacted files now, drop the replaced ones.
            self.mirror.localize(key[0], key[1], BucketFiles(list(change.adds)))
        else:
            new = self._build(key, after)
            if current is not None:
                old.append(current)
        if new is None:
            stores.pop(key, None)
        else:
            stores[key] = new
        if change.deletes:
            self.mirror.release(key[0], key[1], change.deletes)
        if not after.files:
            files.pop(key, None)

    # -- swapping (event loop) ----------------------------------------------------------------------------
    async def swap(self, prepared: Optional[Prepared], snapshot_id: int, commit_ms: int, full: bool) -> None:
        """Install a snapshot: new stores (or the same, for a delta without changes) and what they reflect."""
        v = self.view
        if prepared is None:
            new = replace(v, snapshot_id=snapshot_id, commit_ms=commit_ms)
        else:
            new = View(snapshot_id=snapshot_id, schema_id=self.table.table_schema.id, commit_ms=commit_ms,
                       ready=True, stores=prepared.stores, files=prepared.files, broken=prepared.broken,
                       served=self.owned if full else v.served, schema=self.schema)
        new = self._opened(new)
        async with self.changed:
            self.view = new
            self.changed.notify_all()
        if prepared is not None:
            live = {id(s.base) for s in prepared.stores.values()}
            for s in prepared.old:
                if id(s.base) not in live:
                    s.drop()

    def assign(self, channels: int, owned: Sequence[int]) -> None:
        """A new assignment: channels taken away stop being answered now, and their buckets' stores and local
        files are dropped (the coordinator sends them no more changes); new ones wait for a full state."""
        v = self.view
        served = v.served & frozenset(owned) if channels == self.channels else frozenset()
        self.channels = channels
        self.owned = frozenset(owned)
        gone = {k for k in (*v.stores, *v.files, *v.broken) if self.channel_of(k) not in self.owned}
        if served == v.served and not gone:
            return
        self.view = self._opened(replace(
            v, served=served, stores={k: s for k, s in v.stores.items() if k not in gone},
            files={k: f for k, f in v.files.items() if k not in gone},
            broken={k: e for k, e in v.broken.items() if k not in gone}))
        for key in gone:
            store, files = v.stores.get(key), v.files.get(key)
            if store is not None:
                store.drop()
            if files is not None:
                self.mirror.release(key[0], key[1], files.files)

    def _opened(self, view: View) -> View:
        """``view`` with ``answering`` filled: every bucket of a served channel that is not broken."""
        answering = {key: store for key, store in view.stores.items()
                     if key not in view.broken and self.channel_of(key) in view.served}
        return replace(view, answering=answering)
