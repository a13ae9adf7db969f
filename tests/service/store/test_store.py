"""The executor's store on its own, against pypaimon: real tables written by pypaimon, stores built and changed
snapshot by snapshot exactly as an executor does (the scanner's ``full_buckets`` / ``delta_changes``), and every
key (plus misses) compared with pypaimon's batch read at the same snapshot."""
from __future__ import annotations

import os
import random

import numpy as np
import pyarrow as pa
import pytest

from paimon_tail.compat.adapters.kv_files import FileRef
from paimon_tail.compat.adapters.native_reads import available as native_available
from paimon_tail.compat.adapters.native_reads import with_native_reads
from paimon_tail.service.coordinator.scanner import delta_changes, full_buckets
from paimon_tail.service.keys.routing import TableRouting
from paimon_tail.service.protocol.changes import BucketFiles, table_mode
from paimon_tail.service.store import BucketBuilder, DiskBudget, MemoryCache, Target
from paimon_tail.service.store.frames import write_frames
from paimon_tail.service.store.index import MMAP_MIN_KEYS, NONE, KeyIndex, Layer, resolve
from paimon_tail.service.store.packed import PackedKeys, PackedLocations, location
from paimon_tail.service.store.runs import positions_by_code, sheet_of
from paimon_tail.stream.planner import SnapshotPlanner


def test_positions_by_code_keeps_each_codes_positions_in_order():
    codes = np.array([3, 1, 3, 0, 1, 3])
    got = [(c, grp.tolist()) for c, grp in positions_by_code(codes)]
    assert got == [(0, [3]), (1, [1, 4]), (3, [0, 2, 5])]


def test_frames_round_trip(tmp_path):
    schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
    batches = [pa.record_batch([pa.array(range(i, i + n), pa.int64()), pa.array([f"v{k}" * 3 for k in range(i, i + n)])],
                               schema=schema) for i, n in ((0, 7), (7, 1000), (1007, 70_000), (71_007, 3))]
    f = write_frames(str(tmp_path / "r.frames"), schema, batches)
    assert f.num_rows == 71_010 and f.num_chunks >= 2
    whole = pa.Table.from_batches([f.frame(i) for i in range(f.num_frames)])
    assert whole.column("k").to_pylist() == list(range(71_010))
    assert f.chunk(1).column("k")[0].as_py() == f.chunk_start(1)
    assert os.path.getsize(f.path) == f.disk_bytes


def test_index_layers_newest_wins_and_folds(tmp_path):
    u = np.uint64
    base = Layer.of(np.array([1, 5, 9], u), None, location(0, np.array([0, 1, 2])))
    index = KeyIndex(base)
    index = index.upserted(Layer.of(np.array([5, 7], u), None, location(1, np.array([0, 1])),
                                    np.array([True, False])))  # 5 deleted, 7 new
    index = index.upserted(Layer.of(np.array([9], u), None, location(2, np.array([4]))))
    q = np.array([1, 5, 7, 9, 11], u)
    want = [int(location(0, np.array([0]))[0]), int(NONE), int(location(1, np.array([1]))[0]),
            int(location(2, np.array([4]))[0]), int(NONE)]
    assert index.lookup(q, None).tolist() == want
    folded = index.folded(str(tmp_path))
    assert not folded.overlays and folded.lookup(q, None).tolist() == want
    assert index.lookup_one(u(7)) == want[2] and index.lookup_one(u(5)) is None
    # a compaction replaced runs 0 and 1 by run 3, which has 1 and 7 but not 9's older version's run (2 stays)
    moved = folded.repointed(str(tmp_path), [0, 1], Layer.of(np.array([1, 7], u), None, location(3, np.array([10, 11]))))
    assert moved.lookup(q, None).tolist() == [int(location(3, np.array([10]))[0]), int(NONE),
                                              int(location(3, np.array([11]))[0]), want[3], int(NONE)]
    gone = moved.without_locations(str(tmp_path), slots=[2], rows=[(3, np.array([11]))])
    assert gone.lookup(q, None).tolist() == [int(location(3, np.array([10]))[0])] + [int(NONE)] * 4


def test_index_tells_keys_with_one_first_hash_apart_by_the_second():
    u = np.uint64
    layer = resolve(np.array([4, 4, 4, 2], u), np.array([10, 20, 10, 1], u), np.array([1, 2, 3, 4]),
                    location(0, np.arange(4)), np.zeros(4, bool))
    assert len(layer) == 3  # (4, 10) twice: the newer record wins
    got = KeyIndex(layer, hashed=True).lookup(np.array([4, 4, 4, 2], u), np.array([10, 20, 30, 1], u))
    assert got.tolist() == [int(location(0, np.array([2]))[0]), int(location(0, np.array([1]))[0]), int(NONE),
                            int(location(0, np.array([3]))[0])]


def test_packed_keys_search_as_the_plain_array_does():
    u = np.uint64
    keys = np.array([10, 11, 11, 500, 2**32 + 9], u)  # spans 2^32 - 1: just packable
    packed = PackedKeys.pack(keys)
    assert packed is not None and packed.nbytes == 4 * len(keys)
    probes = np.array([0, 9, 10, 11, 12, 499, 500, 501, 2**32 + 8, 2**32 + 9, 2**32 + 10, 2**63, 2**64 - 1], u)
    for side in ("left", "right"):
        assert packed.searchsorted(probes, side=side).tolist() == np.searchsorted(keys, probes, side=side).tolist()
        assert packed.searchsorted(probes[1:4], side=side).tolist() == \
            np.searchsorted(keys, probes[1:4], side=side).tolist()  # all inside the span
        for p in probes:
            assert packed.searchsorted(p, side=side) == int(np.searchsorted(keys, p, side=side))
    assert np.asarray(packed).tolist() == keys.tolist() and packed[[0, 4]].tolist() == [10, 2**32 + 9]
    assert PackedKeys.pack(np.array([10, 2**32 + 10], u)) is None  # spans 2^32


def test_packed_locations_decode_what_they_encode():
    rows = np.array([0, 7, 2**20 - 1, 3, 0])
    slots = np.array([4, 9, 4, 1000, 9])
    loc = np.concatenate([location(int(s), np.array([r])) for s, r in zip(slots, rows)])
    packed = PackedLocations.pack(loc)
    assert packed is not None and packed.nbytes == 4 * len(loc)
    assert np.asarray(packed).tolist() == loc.tolist() and packed[np.array([3, 1])].tolist() == [loc[3], loc[1]]
    assert [packed[i] for i in range(len(loc))] == loc.tolist()
    # rows below 2^31 need 31 bits: two slots fit in the 32nd, three do not
    assert PackedLocations.pack(np.concatenate([location(s, np.array([2**31 - 1])) for s in (0, 5)])) is not None
    assert PackedLocations.pack(np.concatenate([location(s, np.array([2**31 - 1])) for s in (0, 1, 2)])) is None


@pytest.mark.parametrize("span", ["packable", "wide", "hashed"])
def test_persisted_base_answers_as_the_layer_it_was(span, tmp_path):
    """An index whose base is on disk (packed where it can be) answers, folds, re-points and drops keys exactly
    as the same index in memory."""
    rng = np.random.default_rng(7)
    n = MMAP_MIN_KEYS * 2
    hi = 3_000_000_000 if span == "packable" else 2**62
    h = np.unique(rng.integers(0, hi, n * 2, dtype=np.int64).astype(np.uint64) ^ np.uint64(1 << 63))[:n]
    rng.shuffle(h)
    h2 = rng.integers(0, 2**63, n, dtype=np.int64).astype(np.uint64) if span == "hashed" else None
    loc = location(0, np.zeros(n, np.int64)) | (rng.integers(0, 6, n).astype(np.uint64) << np.uint64(32)) | \
        rng.integers(0, 40_000, n).astype(np.uint64)
    plain = Layer.of(h, h2, loc)
    disk = plain.persisted(str(tmp_path))
    assert disk.files and isinstance(disk.loc, PackedLocations)
    assert isinstance(disk.h, PackedKeys) == (span == "packable")
    assert disk.nbytes() == n * (8 if span == "packable" else 12 if span == "wide" else 20)
    over = Layer.of(h[:500], h2[:500] if h2 is not None else None, location(9, np.arange(500)),
                    np.arange(500) % 3 == 0)
    a, b = KeyIndex(plain, hashed=h2 is not None), KeyIndex(disk, hashed=h2 is not None)
    a, b = a.upserted(over), b.upserted(over)
    probe = np.concatenate([h[rng.integers(0, n, 3000)], rng.integers(0, 2**63, 1000, dtype=np.int64).astype(u64),
                            np.array([0, 2**64 - 1], u64)])
    probe2 = None
    if h2 is not None:  # each probe's own second hash (5 for the misses)
        second = dict(zip(h.tolist(), h2.tolist()))
        probe2 = np.array([second.get(int(x), 5) for x in probe], u64)
    assert a.lookup(probe, probe2).tolist() == b.lookup(probe, probe2).tolist()
    if h2 is None:  # one key at a time, in plain integers (0 and 2^64 - 1 outside every span included)
        picks = np.concatenate([probe[:300], probe[-2:]])
        want = [None if v == int(NONE) else v for v in a.lookup(picks, None).tolist()]
        assert [a.lookup_one(int(x)) for x in picks] == [b.lookup_one(int(x)) for x in picks] == want
    fa, fb = a.folded(str(tmp_path / "a")), b.folded(str(tmp_path / "b"))
    assert fa.lookup(probe, probe2).tolist() == fb.lookup(probe, probe2).tolist() == a.lookup(probe, probe2).tolist()
    added = Layer.of(h[1000:3000], h2[1000:3000] if h2 is not None else None, location(10, np.arange(2000)))
    ra, rb = fa.repointed(str(tmp_path / "a"), [1, 2], added), fb.repointed(str(tmp_path / "b"), [1, 2], added)
    assert ra.lookup(probe, probe2).tolist() == rb.lookup(probe, probe2).tolist()
    rows = [(10, np.arange(0, 2000, 5)), (3, np.arange(0, 40_000, 7))]
    wa = ra.without_locations(str(tmp_path / "a"), [4], rows)
    wb = rb.without_locations(str(tmp_path / "b"), [4], rows)
    assert wa.lookup(probe, probe2).tolist() == wb.lookup(probe, probe2).tolist()
    assert (wa.lookup(probe, probe2) != NONE).sum() > 1000


u64 = np.uint64


# -- stores against pypaimon ---------------------------------------------------------------------------------
class Replica:
    """One executor's stores of a whole table, changed snapshot by snapshot."""

    def __init__(self, table, root, max_memory=1 << 30, max_disk=None):
        from pypaimon.schema.data_types import PyarrowFieldParser

        self.table = table
        self.root = root
        self.cache, self.disk = MemoryCache(max_memory), DiskBudget(max_disk)
        self.builder = BucketBuilder(table, table_mode(table), self.cache, self.disk, lambda fn: fn())
        self.planner = SnapshotPlanner(table.new_stream_read_builder().new_streaming_scan())
        self.routing = TableRouting.of(table)
        self.schema = PyarrowFieldParser.from_paimon_schema(table.fields)
        self.target = Target(table.table_schema.id, table.fields, self.schema, None)
        self.stores, self.files = {}, {}

    def dir(self, key):
        return os.path.join(self.root, f"{key[0]}-{key[1]}")

    def full(self, snapshot_id):
        snap = self.planner.snapshot(snapshot_id)
        self.files = full_buckets(self.planner, snap)
        self.stores = {k: s for k, f in self.files.items()
                       if (s := self.builder.full(k, f, self.dir(k), None, snapshot_id)) is not None}

    def apply(self, snapshot_id):
        snap = self.planner.snapshot(snapshot_id)
        for key, change in delta_changes(self.table, snap).items():
            after = self.files.get(key, BucketFiles()).apply(change.adds, change.deletes)
            self.files[key] = after
            new = self.builder.apply(self.stores.get(key), key, change, str(snap.commit_kind), after, self.dir(key),
                                     snapshot_id)
            if new is None:
                self.stores.pop(key, None)
            else:
                self.stores[key] = new

    def fold(self):
        self.stores = {k: s.with_index(s.index.folded(self.dir(k))) for k, s in self.stores.items()}

    def sheets(self) -> int:
        """Every run's frame file written, then each bucket's runs put into one sheet, as the executor's
        background does; returns how many runs a sheet holds."""
        for store in self.stores.values():
            for run in store.runs.values():
                run.write()
            sheet_of(list(store.runs.values()), self.cache)
        return sum(1 for s in self.stores.values() for r in s.runs.values() if r.sheet_rows() is not None)

    def one(self, key: tuple):
        """One key of an integer-keyed table by the one-key path (``find_one``, then the row's values)."""
        store = self.stores.get(((), int(self.routing.buckets_of(pa.table({"id": pa.array([key[0]], pa.int64())}))[0])))
        hit = store.find_one(store.hasher.one(key[0])) if store is not None else None
        if hit is None:
            return None
        return dict(zip(self.target.columns, hit[0].values(hit[1], self.target)))

    def lookup(self, keys: pa.Table):
        """{key tuple: row dict} of the keys found (each bucket's keys in one batch, as an executor gets them)."""
        buckets = np.asarray(self.routing.buckets_of(keys))
        pk = self.routing.primary_keys
        parts = [keys.column(k).to_pylist() for k in self.routing.partition_keys]
        groups = {}
        for i, b in enumerate(buckets.tolist()):
            groups.setdefault((tuple(p[i] for p in parts), b), []).append(i)
        out = {}
        for key, sel in groups.items():
            store = self.stores.get(key)
            if store is None:
                continue
            sub = keys.take(pa.array(sel))
            h, h2 = store.hasher.hashes(sub)
            req, rows = store.lookup(sub, h, h2, self.target)
            if rows is None:
                continue
            for i, row in zip(req.tolist(), rows.to_pylist()):
                out[tuple(sub.column(k)[i].as_py() for k in pk)] = row
        return out


def _write(table, rows, schema):
    wb = table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.Table.from_pylist(rows, schema=schema))
    c.commit(w.prepare_commit())
    w.close()
    c.close()


def _truth(table, pk):
    """pypaimon's batch read, merging every split: pypaimon 2.1 writes ``delete_row_count = 0`` for files that
    hold deletes, and then reads a bucket's only file raw, deletes as rows (docs/compatibility.md); the store
    answers Paimon's semantics, as the merge read does."""
    rb = table.new_read_builder()
    splits = rb.new_scan().plan().splits()
    for split in splits:
        split.raw_convertible = False
    t = rb.new_read().to_arrow(splits)
    return {tuple(r[k] for k in pk): r for r in t.to_pylist()}


def _check(replica, table, pk, keys):
    truth = _truth(table, pk)
    got = replica.lookup(keys)
    assert got == {k: truth[k] for k in got}, "a row that is not pypaimon's"
    asked = {tuple(keys.column(k)[i].as_py() for k in pk) for i in range(keys.num_rows)}
    assert set(got) == {k for k in asked if k in truth}, "a row missing"
    return truth


TABLES = {
    # name: (schema, primary keys, partition keys, options, make key columns)
    "dedup": (pa.schema([("id", pa.int64()), ("name", pa.string()), ("v", pa.float64()), ("op", pa.string())]),
              ["id"], [], {"bucket": "3", "rowkind.field": "op"}),
    "string_key": (pa.schema([("sku", pa.string()), ("name", pa.string()), ("op", pa.string())]),
                   ["sku"], [], {"bucket": "2", "rowkind.field": "op"}),
    "composite_partitioned": (pa.schema([("dt", pa.string()), ("id", pa.int32()), ("sub", pa.string()),
                                         ("name", pa.string()), ("op", pa.string())]),
                              ["dt", "id", "sub"], ["dt"], {"bucket": "2", "rowkind.field": "op"}),
    "partial_update": (pa.schema([("id", pa.int64()), ("a", pa.string()), ("b", pa.int64())]),
                       ["id"], [], {"bucket": "2", "merge-engine": "partial-update"}),
    "sequence_field": (pa.schema([("id", pa.int64()), ("name", pa.string()), ("ts", pa.int64())]),
                       ["id"], [], {"bucket": "2", "sequence.field": "ts"}),
}


def _rows(kind, rnd, r, n):
    out = []
    for i in rnd.sample(range(n), n // 3):
        if kind == "dedup":
            out.append({"id": i, "name": f"r{r}-{i}", "v": i + r / 10, "op": "-D" if rnd.random() < 0.15 else "+U"})
        elif kind == "string_key":
            out.append({"sku": f"sku-{i:05d}", "name": f"r{r}", "op": "-D" if rnd.random() < 0.15 else "+U"})
        elif kind == "composite_partitioned":
            out.append({"dt": f"2026-11-0{1 + i % 3}", "id": i // 3, "sub": "ab"[i % 2], "name": f"r{r}",
                        "op": "-D" if rnd.random() < 0.15 else "+U"})
        elif kind == "partial_update":
            out.append({"id": i, "a": f"r{r}" if rnd.random() < 0.5 else None,
                        "b": r if rnd.random() < 0.5 else None})
        else:  # sequence_field: ts goes back and forth, the highest wins whatever the commit order
            out.append({"id": i, "name": f"r{r}", "ts": rnd.randrange(100)})
    return out


def _all_keys(kind, n):
    if kind == "string_key":
        return pa.table({"sku": pa.array([f"sku-{i:05d}" for i in range(n + 20)])})
    if kind == "composite_partitioned":
        rows = [{"dt": f"2026-11-0{1 + i % 3}", "id": i // 3, "sub": "ab"[i % 2]} for i in range(n + 20)]
        return pa.Table.from_pylist(rows, schema=pa.schema([("dt", pa.string()), ("id", pa.int32()),
                                                            ("sub", pa.string())]))
    return pa.table({"id": pa.array(range(-5, n + 20), pa.int64())})


@pytest.mark.parametrize("kind", list(TABLES))
def test_store_equals_batch_read_at_every_snapshot(kind, tmp_path):
    from pypaimon import CatalogFactory, Schema

    schema, pk, parts, options = TABLES[kind]
    cat = CatalogFactory.create({"warehouse": str(tmp_path / "wh")})
    cat.create_database("db", True)
    cat.create_table(f"db.{kind}", Schema.from_pyarrow_schema(schema, primary_keys=pk, partition_keys=parts or None,
                                                              options=options), False)
    table = cat.get_table(f"db.{kind}")
    rnd = random.Random(kind)
    n = 600
    _write(table, _rows(kind, rnd, 0, n), schema)
    replica = Replica(table, str(tmp_path / "local"))
    replica.full(1)
    keys = _all_keys(kind, n)
    _check(replica, table, pk, keys)
    sheeted = 0
    for r in range(1, 9):
        _write(table, _rows(kind, rnd, r, n), schema)
        sid = table.snapshot_manager().get_latest_snapshot().id
        replica.apply(sid)
        if r == 4:
            replica.fold()
        if r in (3, 6):  # rows in sheets from here on (runs of later commits beside them, per run)
            sheeted = max(sheeted, replica.sheets())
        truth = _check(replica, table, pk, keys)
        if kind in ("dedup", "sequence_field"):
            for k in list(truth)[:40] + [(-3,), (n + 5,)]:
                assert replica.one(k) == truth.get(k)
    if kind in ("dedup", "string_key", "composite_partitioned"):
        assert sheeted >= 4, "sheets held the runs of several commits"
    assert sum(s.rows for s in replica.stores.values()) == len(truth)
    # the key columns read by pyarrow directly are pypaimon's
    for key, files in replica.files.items():
        for meta in files.files:
            ref = FileRef(meta, key[0], key[1])
            fast, slow = replica.builder.files.keys(ref), replica.builder.files.read(ref, replica.builder.key_names)
            assert fast.to_pydict() == slow.to_pydict()
    if kind in ("dedup", "string_key", "composite_partitioned"):
        assert any(s.index.overlays for s in replica.stores.values()), "commits became overlays, not rebuilds"
    # a fresh replica at the latest snapshot answers the same
    fresh = Replica(table, str(tmp_path / "fresh"))
    fresh.full(table.snapshot_manager().get_latest_snapshot().id)
    assert fresh.lookup(keys) == replica.lookup(keys)


def test_budgets_evict_and_answers_stay_right(tmp_path):
    from pypaimon import CatalogFactory, Schema

    schema, pk, parts, options = TABLES["dedup"]
    cat = CatalogFactory.create({"warehouse": str(tmp_path / "wh")})
    cat.create_database("db", True)
    cat.create_table("db.t", Schema.from_pyarrow_schema(schema, primary_keys=pk, options=options), False)
    table = cat.get_table("db.t")
    rnd = random.Random(3)
    for r in range(6):
        _write(table, _rows("dedup", rnd, r, 3000), schema)
    replica = Replica(table, str(tmp_path / "local"), max_memory=64 << 10, max_disk=40 << 10)
    replica.full(table.snapshot_manager().get_latest_snapshot().id)
    keys = _all_keys("dedup", 3000)
    runs = [r for s in replica.stores.values() for r in s.runs.values()]
    for _ in range(3):
        _check(replica, table, pk, keys.take(pa.array(rnd.sample(range(keys.num_rows), 500))))
        for run in runs:  # what the background does between lookups
            run.write()
    assert replica.disk.evictions > 0, "nothing was evicted"
    assert any(r.decodes > 1 for r in runs), "no data file was read again"
    assert any(r.writes > 1 for r in runs), "no frame file was written again"
    assert replica.disk.bytes <= (40 << 10) + max(r.disk_bytes() for r in runs)
    assert replica.cache.bytes <= 64 << 10
    on_disk = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(tmp_path / "local") for f in fs
                  if f.endswith(".frames"))
    assert on_disk == replica.disk.bytes


@pytest.mark.skipif(not native_available(), reason="pypaimon-rust not installed")
@pytest.mark.parametrize("kind", ["partial_update", "sequence_field", "dedup"])
def test_native_merge_read_equals_pypaimon(kind, tmp_path):
    from pypaimon import CatalogFactory, Schema

    schema, pk, parts, options = TABLES[kind]
    cat = CatalogFactory.create({"warehouse": str(tmp_path / "wh")})
    cat.create_database("db", True)
    cat.create_table("db.t", Schema.from_pyarrow_schema(schema, primary_keys=pk, options=options), False)
    table = cat.get_table("db.t")
    rnd = random.Random(kind)
    for r in range(5):
        _write(table, _rows(kind, rnd, r, 800), schema)
    native = with_native_reads(table)
    assert native is not table
    reads = []
    for t in (table, native):
        rb = t.new_read_builder()
        reads.append(rb.new_read().to_arrow(rb.new_scan().plan().splits()).sort_by(pk[0]))
    assert reads[0].equals(reads[1])


def test_executors_allocate_from_an_allocator_that_returns_memory():
    """An executor's cache churns at its budget: pyarrow's jemalloc returns freed pages, its mimalloc kept them
    (store/budget.py has the measurement)."""
    import subprocess
    import sys

    code = ("import pyarrow as pa; from paimon_tail.service.store.budget import use_returning_allocator; "
            "print(use_returning_allocator(), pa.default_memory_pool().backend_name)")
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.split() == ["jemalloc", "jemalloc"]
    chosen = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env={**env, "ARROW_DEFAULT_MEMORY_POOL": "system"})
    assert chosen.stdout.split() == ["system", "system"]  # the operator's choice is kept


def test_value_reader_gives_what_to_pylist_gives():
    """A one-key answer reads values through ``value_reader`` (numpy views, string offsets): the same values and
    Python types as ``to_pylist``, for sliced arrays, nulls, empty strings and the types it leaves to pyarrow."""
    import datetime
    import decimal

    from paimon_tail.service.store.targets import value_reader

    arrays = [pa.array([1, 2, 3], pa.int8()), pa.array([1, -2, 3], pa.int64()), pa.array([2 ** 63 + 5], pa.uint64()),
              pa.array([0.5, 1.5], pa.float32()), pa.array([1.25, None]), pa.array(["a", "héllo", ""]),
              pa.array(["x", None]), pa.array(["ab", "cd", "ef"], pa.large_string()), pa.array(["", ""]),
              pa.array([True, False]), pa.array([b"x"]), pa.array([datetime.datetime(2020, 1, 1)]),
              pa.array([decimal.Decimal("1.20")]), pa.array([None, None], pa.int64()),
              pa.array(list(range(100)))[37:60], pa.array([f"s{i}" for i in range(100)])[41:77]]
    for array in arrays:
        read = value_reader(array)
        got = [read(i) for i in range(len(array))]
        assert got == array.to_pylist(), array.type
        assert [type(v) for v in got] == [type(v) for v in array.to_pylist()], array.type
