"""The query service on every kind of primary-key table pypaimon writes, not only fixed buckets: Paimon's default
(no ``bucket`` option: dynamic buckets, added as they fill), postpone buckets (each partition with its own bucket
count, and files waiting in ``bucket-postpone``), and fixed buckets asked without the bucket (a client that does
not compute Paimon's hash). Java-written kinds (cross-partition keys, Flink's bucket assigner, deletion vectors)
are in tests/service/test_table_kinds_java.py.

Every answer is compared with pypaimon's batch read at the snapshot the answer reports, also while commits
continue, with keys present, deleted and never written.
"""
from __future__ import annotations

import asyncio
import json
import os
import threading
from collections import defaultdict
from typing import Dict, List, Sequence

import grpc
import pyarrow as pa
import pytest

from paimon_tail.catalog import catalog_config
from paimon_tail.service.client import LookupClient
from paimon_tail.service.client.deadline import Deadline
from paimon_tail.service.protocol import PROTOCOL_VERSION
from paimon_tail.service.protocol import lookup_pb2 as pb
from paimon_tail.service.protocol import lookup_pb2_grpc as pbg

from tests.service.conftest import PK_SCHEMA, ServeProcess, Warehouse, run_cli, wait_until

N = 400  # keys written (some deleted); lookups ask 0..N+40 (never written beyond N)


def _rows(ids: Sequence[int], tag: str, dt=lambda i: f"d{i % 2}", op: str = "+I") -> List[dict]:
    return [{"id": i, "dt": dt(i), "name": None if op == "-D" else f"{tag}_{i}",
             "amount": None if op == "-D" else i % 97, "op": op} for i in ids]


def _postpone_write(wh: Warehouse, name: str, rows: List[dict], per_bucket: int) -> None:
    """A batch write into real buckets of a postpone table (pypaimon's fixed-bucket writer for postpone tables:
    each new partition gets ``rows / per_bucket`` buckets of its own)."""
    table = wh.table(name).copy({"postpone.target-row-num-per-bucket": str(per_bucket)})
    wb = table.new_postpone_fixed_bucket_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    try:
        w.write_arrow(pa.Table.from_pylist(rows, schema=PK_SCHEMA))
        c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()


@pytest.fixture(scope="module")
def kinds(tmp_path_factory):
    wh = Warehouse(str(tmp_path_factory.mktemp("kinds")))
    # Paimon's default primary-key table: no bucket option (pypaimon, Flink and Spark SQL make it dynamic)
    wh.create("plain", PK_SCHEMA, primary_keys=["id"])
    for c in range(5):  # 5 commits of upserts, then deletes
        wh.write("plain", _rows(range(c * 60, c * 60 + 120), f"c{c}"))
    wh.write("plain", _rows(range(0, 360, 7), "", op="-D"))  # (keys that exist: see _check)
    # dynamic buckets in partitions, small buckets: buckets are added as they fill
    wh.create("dyn", PK_SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
              **{"dynamic-bucket.target-row-num": 25})
    for c in range(3):
        wh.write("dyn", _rows(range(c * 100, c * 100 + 150), f"c{c}"))
    wh.write("dyn", _rows(range(5, 350, 11), "", op="-D"))
    # postpone buckets: partitions with their own bucket counts, and files not compacted into a bucket yet
    wh.create("post", PK_SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"], bucket=-2)
    _postpone_write(wh, "post", _rows(range(0, 200), "a"), per_bucket=40)  # d0, d1: 100 rows, 2-3 buckets
    _postpone_write(wh, "post", _rows(range(200, 400), "b", dt=lambda i: "d2"), per_bucket=25)  # d2: 8 buckets
    wh.write("post", _rows(range(390, 420), "late"))  # a plain batch write: bucket-postpone
    # fixed buckets, for keys sent without their bucket; and partitioned, for one-key lookups of a composite key
    wh.create("fixed", PK_SCHEMA, primary_keys=["id"], bucket=3)
    wh.write("fixed", _rows(range(N), "f"))
    wh.create("fixedp", PK_SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"], bucket=2)
    wh.write("fixedp", _rows(range(N), "f"))
    svc = ServeProcess(wh.path, ["db.plain", "db.dyn", "db.post", "db.fixed", "db.fixedp"], "--local-dir",
                       os.path.join(wh.path, "_local")).wait_ready()
    clients: Dict[str, LookupClient] = {}
    try:
        yield wh, svc, clients
    finally:
        for c in clients.values():
            c.close_sync()
        assert svc.stop() == 0, "\n".join(svc.lines)


def _client(kinds, name: str) -> LookupClient:
    wh, _, clients = kinds
    if name not in clients:
        clients[name] = LookupClient(f"db.{name}", catalog_config(wh.path), timeout=30)
    return clients[name]


def _batch_at(wh: Warehouse, name: str, snapshot: int) -> dict:
    """pypaimon's batch read at ``snapshot``: primary key tuple → row (the oracle)."""
    table = wh.table(name).copy({"scan.snapshot-id": str(snapshot)})
    rb = table.new_read_builder()
    rows = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    pk = table.table_schema.primary_keys
    return {tuple(r[k] for k in pk): r for r in rows}


def _keys(name: str, ids) -> List[dict]:
    if name in ("plain", "fixed"):
        return [{"id": i} for i in ids]
    return [{"id": i, "dt": dt} for i in ids for dt in ("d0", "d1", "d2")]


def _check(kinds, name: str, keys: List[dict], min_snapshot=None) -> Dict[str, int]:
    """Look ``keys`` up and compare each answer with the batch read at the snapshot it reports. (The fixtures
    delete only keys that exist: pypaimon's batch read returns the delete of a key never written as a row,
    where Paimon's merge read, and so the service, answers it deleted; docs/compatibility.md.)"""
    wh = kinds[0]
    pk = wh.table(name).table_schema.primary_keys
    r = _client(kinds, name).lookup_sync(keys, min_snapshot=min_snapshot)
    assert not r.failed, r.failed
    rows = r.aligned()
    by_snapshot = defaultdict(list)
    for pos in range(len(keys)):
        by_snapshot[r.snapshot_of(pos)].append(pos)
    found = wrong = 0
    for snap, positions in by_snapshot.items():
        assert snap > 0
        oracle = _batch_at(wh, name, snap)
        for pos in positions:
            want = oracle.get(tuple(keys[pos][k] for k in pk))
            wrong += rows[pos] != want
            found += want is not None
    assert wrong == 0, f"{wrong} of {len(keys)} answers differ from the batch read"
    return {"found": found, "keys": len(keys), "snapshots": len(by_snapshot)}


def _bucket_dirs(wh: Warehouse, name: str) -> Dict[str, List[str]]:
    root = os.path.join(wh.path, "db.db", name)
    out = {}
    for part in sorted(os.listdir(root)):
        if part.startswith("dt=") or part.startswith("bucket-"):
            if part.startswith("bucket-"):
                out.setdefault("", []).append(part)
            else:
                out[part] = sorted(os.listdir(os.path.join(root, part)))
    return out


def test_the_fixtures_are_the_kinds_they_claim(kinds):
    wh = kinds[0]
    assert wh.table("plain").bucket_mode().name == "HASH_DYNAMIC"
    assert wh.table("dyn").bucket_mode().name == "HASH_DYNAMIC"
    assert wh.table("post").bucket_mode().name == "POSTPONE_MODE"
    dyn = _bucket_dirs(wh, "dyn")
    assert all(len(buckets) >= 4 for buckets in dyn.values()), dyn  # buckets were added as they filled
    assert os.listdir(os.path.join(wh.path, "db.db", "dyn", "index")), "no HASH index files"
    post = _bucket_dirs(wh, "post")
    counts = {p: len([b for b in bs if b != "bucket-postpone"]) for p, bs in post.items()}
    assert len(set(counts.values())) > 1, counts  # each partition its own bucket count
    assert all("bucket-postpone" in post[p] for p in ("dt=d0", "dt=d1")), post
    # the deletes reached the tables: some keys written are gone
    assert (0,) not in wh.batch_read("plain") and (1,) in wh.batch_read("plain")


@pytest.mark.parametrize("name", ["plain", "dyn", "post", "fixed"])
def test_every_key_equals_the_batch_read(kinds, name):
    stats = _check(kinds, name, _keys(name, range(-3, N + 40)))
    assert stats["found"] > N // 3


def test_postponed_rows_are_invisible_and_counted(kinds):
    wh = kinds[0]
    late = [{"id": i, "dt": f"d{i % 2}"} for i in range(400, 420)]  # only in bucket-postpone
    r = _client(kinds, "post").lookup_sync(late)
    assert not r.failed and r.rows.num_rows == 0 and len(r.missing) == len(late)
    status = json.loads(run_cli("service", "status", "db.post", "--warehouse", wh.path, "--json").stdout
                        .splitlines()[0])
    assert status["table_kind"] == "postpone" and status["postponed_files"] == 2, status
    assert status["buckets"] == sum(len([b for b in bs if b != "bucket-postpone"])
                                    for bs in _bucket_dirs(wh, "post").values())


def test_one_key_paths(kinds):
    """get_sync, get (asyncio) and the command line agree with the batch read for present, deleted and absent
    keys of a dynamic-bucket table."""
    wh = kinds[0]
    c = _client(kinds, "plain")
    oracle = wh.batch_read("plain")
    for i in (1, 7, 8, 299, 500, -1):
        assert c.get_sync(i) == oracle.get((i,)), i
    assert asyncio.run(_get_async(wh, "plain", 8)) == oracle[(8,)]
    r = run_cli("lookup", "db.plain", "1", "7", "8", "--warehouse", wh.path, "--missing", "null")
    assert r.returncode == 0, r.stderr
    assert [json.loads(line) for line in r.stdout.splitlines()] == [oracle[(1,)], None, oracle[(8,)]]


@pytest.mark.parametrize("name", ["dyn", "fixedp", "post"])
def test_one_key_of_a_partitioned_table(kinds, name):
    """A composite key (partition, id) as typed values: the executor finds the id among the key's values."""
    wh = kinds[0]
    c = _client(kinds, name)
    oracle = wh.batch_read(name)
    for i in (0, 5, 6, 101, 250, 398, 1000):
        for dt in ("d0", "d1", "d2"):
            assert c.get_sync({"dt": dt, "id": i}) == oracle.get((dt, i)), (dt, i)


async def _get_async(wh: Warehouse, name: str, key):
    async with LookupClient(f"db.{name}", catalog_config(wh.path), timeout=30) as c:
        return await c.get(key)


def test_keys_are_routed_to_one_executor_and_misses_cost_what_hits_cost(kinds):
    """A key of a dynamic-bucket table goes to one executor (its slot's channel's owner): a batch is one call per
    executor that owns some of its keys, a key one call; keys no bucket holds are missing, none failed."""
    c = _client(kinds, "dyn")
    keys = [{"id": i, "dt": "d9"} for i in range(5000)] + [{"id": i, "dt": "d0"} for i in range(10_000, 15_000)]
    route = c.discover_sync(Deadline(10))
    calls = []
    send = c.sync.send
    c.sync.send = lambda cs: calls.append(len(cs)) or send(cs)  # (the real calls, counted)
    try:
        r = c.lookup_sync(keys)
    finally:
        c.sync.send = send
    assert r.rows.num_rows == 0 and len(r.missing) == len(keys) and not r.failed
    assert calls == [2]  # one per executor
    for key in ({"id": 4, "dt": "d0"}, {"id": 10_000, "dt": "d0"}):
        assert len(c.one_key(key).plan(route)) == 1
    # the slot's channel names the executor: the one that answers a key is its owner
    for i in range(0, 300, 7):
        key = {"id": i, "dt": f"d{i % 2}"}
        (call,) = c.one_key(key).plan(route)
        assert call.executor == route.owner(c.routing.partition_hash((key["dt"],)), c.routing.bucket(key))


def test_keys_without_their_bucket(kinds):
    """A caller that does not compute Paimon's hash sends bucket -1: an executor computes the key's bucket (or slot)
    and answers the keys of its own channels, and names the owner of the others (retry)."""
    wh = kinds[0]
    for name, keys in (("fixed", [(k,) for k in range(N)]), ("dyn", [("d0", k) for k in range(0, 700, 2)])):
        c = _client(kinds, name)
        route = c.discover_sync(Deadline(10), force=True)
        oracle = wh.batch_read(name)
        answered = set()
        for ex in route.executors:
            stub = pbg.ExecutorServiceStub(grpc.insecure_channel(route.executors[ex].address))
            values = [pb.Value(int=v) if isinstance(v, int) else pb.Value(text=v) for key in keys for v in key]
            resp = stub.Lookup(pb.LookupRequest(table=f"db.{name}", key=values, buckets=[-1] * len(keys),
                                                protocol_version=PROTOCOL_VERSION, row_values=True), timeout=10)
            width = len(resp.columns)
            for j, pos in enumerate(resp.found):
                row = {col: getattr(v, v.WhichOneof("kind")) if v.WhichOneof("kind") else None
                       for col, v in zip(resp.columns, resp.values[j * width:(j + 1) * width])}
                assert row == oracle[keys[pos]]
                answered.add(keys[pos])
            moved = {p for f in resp.failed for p in f.positions}
            assert all(f.retry and "belongs to executor" in f.reason for f in resp.failed)
            assert not moved & set(resp.found) and moved  # each executor holds some keys, not all
        assert answered == {k for k in keys if k in oracle} and answered, name


def test_buckets_added_while_serving(kinds):
    """Commits that add buckets to a dynamic table (and a new partition) while lookups run: every answer equals the
    batch read at its snapshot; a lookup at the latest snapshot sees the new buckets' rows."""
    wh = kinds[0]
    before = sum(len(b) for b in _bucket_dirs(wh, "dyn").values())
    stop = threading.Event()
    errors: List[BaseException] = []
    checked = []

    def look():
        try:
            while not stop.is_set():
                checked.append(_check(kinds, "dyn", _keys("dyn", range(0, 700, 3))))
        except BaseException as e:  # noqa: BLE001  (the test's thread reports to the test)
            errors.append(e)

    t = threading.Thread(target=look)
    t.start()
    try:
        for c in range(4):
            last = wh.write("dyn", _rows(range(400 + c * 80, 480 + c * 80), f"new{c}",
                                         dt=lambda i: ("d0", "d1", "d2")[i % 3]))
    finally:
        stop.set()
        t.join(60)
    assert not errors, errors[0]
    assert sum(len(b) for b in _bucket_dirs(wh, "dyn").values()) > before + 4
    assert len(checked) >= 2
    final = _check(kinds, "dyn", _keys("dyn", range(0, 700, 3)), min_snapshot=last)
    assert final["snapshots"] == 1 and final["found"] > 150


def test_the_coordinator_routes_keys_given_as_json(kinds):
    """What grpcurl sends: JSON keys (a text value parsed by its column's type), no bucket, to the one registered
    address; the coordinator routes them through the lookup client's core and answers every key."""
    from google.protobuf import json_format

    wh = kinds[0]
    reg = json.load(open(os.path.join(wh.path, "db.db", "dyn", "service", "service-paimon-tail-lookup")))
    oracle = wh.batch_read("dyn")
    wanted = [("d0", 4), ("d1", 5), ("d0", 5), ("d2", 399), ("d1", 16)]
    keys = [v for dt, i in wanted for v in ({"text": dt}, {"text": str(i)})]  # every value as text
    with grpc.insecure_channel(reg["addresses"][0]) as ch:
        stub = pbg.ExecutorServiceStub(ch)
        answer = json_format.MessageToDict(stub.Lookup(json_format.ParseDict(
            {"table": "db.dyn", "key": keys, "rowValues": True}, pb.LookupRequest()), timeout=20))
        with pytest.raises(grpc.RpcError) as bad:
            stub.Lookup(pb.LookupRequest(table="db.dyn", key=[pb.Value(int=1)]), timeout=20)
    assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "1 key values for keys of 2" in bad.value.details()
    expected = [oracle.get(k) for k in wanted]
    found = answer.get("found", [])
    assert found == [p for p, row in enumerate(expected) if row is not None] and found
    width = len(answer["columns"])
    for j, pos in enumerate(found):
        values = answer["values"][j * width:(j + 1) * width]
        row = dict(zip(answer["columns"], [None if not v else int(v["int"]) if "int" in v else v["text"]
                                           for v in values]))
        assert row == expected[pos]


def test_routers_right_before_and_after_they_are_built(kinds):
    """A slotted table's executor finds a key's store through a router the background builds; until then, and for
    stores changed since, it searches: every answer is right in each state (settled with routers, a commit just
    applied with routers built before it, settled again)."""
    wh = kinds[0]
    c = _client(kinds, "dyn")

    def settled() -> bool:
        return all(e.settled for e in c.status_sync().executors)

    wait_until(settled, 60)
    keys = _keys("dyn", range(0, 1200, 5))
    before = _check(kinds, "dyn", keys)["found"]
    assert before > 50
    sid = wh.write("dyn", _rows(range(1100, 1200), "late", dt=lambda i: ("d0", "d1", "d2")[i % 3])
                   + _rows(range(0, 40, 3), "moved-on"))
    assert _check(kinds, "dyn", keys, min_snapshot=sid)["snapshots"] == 1  # (routers of the snapshot before)
    wait_until(settled, 60)
    final = _check(kinds, "dyn", keys, min_snapshot=sid)
    assert final["found"] >= before + 20  # the late keys: 1100, 1105, ... each in one partition


def test_router_names_the_store_of_each_key():
    """``Router`` over real stores (key indexes with a base and an overlay): a key's store, no store, and keys
    whose low 32 bits another key in another store shares (ambiguous); what changed since it was built."""
    import numpy as np

    from paimon_tail.service.store.bucket import BucketStore
    from paimon_tail.service.store.index import KeyIndex, Layer
    from paimon_tail.service.store.packed import location
    from paimon_tail.service.store.key_hashes import KeyHasher
    from paimon_tail.service.store.router import Router

    hasher = KeyHasher(pa.schema([("id", pa.int64())]))

    def store(bucket, base, overlay=()):
        h = np.asarray(base, np.uint64)
        index = KeyIndex(Layer.of(h, None, location(0, np.arange(len(h)))))
        if len(overlay):
            o = np.asarray(overlay, np.uint64)
            index = index.upserted(Layer.of(o, None, location(1, np.arange(len(o)))))
        return BucketStore(((), bucket), "/nowhere", hasher, index)

    a, b = store(0, [10, 20, 30]), store(1, [40, 50], overlay=[60, (1 << 32) + 10])
    router = Router.build([a, b])
    assert router.nbytes == 7 * 6  # 6 bytes a key: 3 + 2 + an overlay of 2
    routed = router.route(np.asarray([10, 20, 40, 60, 70, (1 << 32) + 20, (1 << 32) + 10], np.uint64)).tolist()
    assert routed == [-2, 0, 1, 1, -1, 0, -2]  # 10 and 2^32+10 share their low bits; 2^32+20 looks like 20
    stores = {a.key: a, b.key: b}
    assert router.changed(stores) == [] and router.current(1, stores) is b
    b2, c = store(1, [40, 50, 70]), store(2, [80])
    now = {a.key: a, b.key: b2, c.key: c}
    assert router.changed(now) == [b2, c] and router.current(1, now) is b2
    assert router.current(0, {b.key: b2}) is None  # the bucket is gone
