"""Keys as typed values and rows as values (protocol 3), what version 2 clients still get, and concurrent
``get_sync`` calls sharing gRPC calls (``client/coalesce.py``): every answer equals pypaimon's batch read."""
from __future__ import annotations

import datetime
import glob
import os
import random
import threading
from decimal import Decimal

import grpc
import pyarrow as pa
import pytest

from paimon_tail.catalog import catalog_config
from paimon_tail.errors import ServiceError
from paimon_tail.service.client import LookupClient
from paimon_tail.service.client.deadline import Deadline
from paimon_tail.service.protocol import PROTOCOL_VERSION
from paimon_tail.service.protocol import lookup_pb2 as pb
from paimon_tail.service.protocol import lookup_pb2_grpc as pbg
from paimon_tail.service.keys.routing import TableRouting

from tests.service.conftest import ServeProcess

N = 400
TYPED = pa.schema([("k", pa.int64()), ("t", pa.int8()), ("s", pa.int16()), ("f", pa.float32()),
                   ("d", pa.float64()), ("b", pa.bool_()), ("bin", pa.binary()), ("txt", pa.string())])
RICH = pa.schema([("k", pa.int32()), ("dec", pa.decimal128(10, 2)), ("ts", pa.timestamp("us")),
                  ("day", pa.date32()), ("txt", pa.string())])
TEXT_KEY = pa.schema([("name", pa.string()), ("n", pa.int64())])
BROKEN = 1  # the bucket of db.broken whose data file is corrupt


def _typed_row(k: int) -> dict:
    if k % 7 == 3:  # every value column null
        return {"k": k, "t": None, "s": None, "f": None, "d": None, "b": None, "bin": None, "txt": None}
    return {"k": k, "t": k % 120 - 60, "s": k * 3 - 500, "f": k / 3.0, "d": k * 1.25 + 0.1, "b": k % 2 == 0,
            "bin": bytes([k % 256, 0, 255]), "txt": f"t-{k}-é"}


@pytest.fixture(scope="module")
def served(warehouse):
    warehouse.create("typed", TYPED, primary_keys=["k"], bucket=4)
    warehouse.create("rich", RICH, primary_keys=["k"], bucket=2)
    warehouse.create("texts", TEXT_KEY, primary_keys=["name"], bucket=3)
    _write(warehouse, "typed", TYPED, [_typed_row(k) for k in range(N)])
    _write(warehouse, "rich", RICH, [
        {"k": k, "dec": Decimal(k) / 4, "ts": datetime.datetime(2026, 11, 1) + datetime.timedelta(seconds=k),
         "day": datetime.date(2026, 1, 1) + datetime.timedelta(days=k), "txt": f"r{k}"} for k in range(N)])
    _write(warehouse, "texts", TEXT_KEY, [{"name": f"name-{i}", "n": i} for i in range(N)])
    warehouse.create("broken", TYPED, primary_keys=["k"], bucket=4)
    _write(warehouse, "broken", TYPED, [_typed_row(k) for k in range(N)])
    (path,) = glob.glob(f"{warehouse.path}/db.db/broken/bucket-{BROKEN}/data-*")
    size = os.path.getsize(path)
    with open(path, "r+b") as f:  # garbage over the whole file (same size, same name): that bucket cannot serve
        f.write((b"\x00garbage" * (size // 8 + 1))[:size])
    svc = ServeProcess(warehouse.path, ["db.typed", "db.rich", "db.texts", "db.broken"], "--executors", "2"
                       ).wait_ready()
    yield svc
    assert svc.stop() == 0, svc.lines


def _write(warehouse, name: str, schema: pa.Schema, rows) -> None:
    table = warehouse.table(name)
    wb = table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.Table.from_pylist(rows, schema=schema))
    c.commit(w.prepare_commit())
    w.close()
    c.close()


def _client(warehouse, name: str, **kw) -> LookupClient:
    return LookupClient(f"db.{name}", catalog_config(warehouse.path), timeout=20, **kw)


def _executor_of(client: LookupClient, bucket: int) -> str:
    route = client.discover_sync(Deadline(10), force=True)
    owner = route.owner(client.routing.partition_hash(()), bucket)
    return route.executors[owner].address


def _call(address: str, request: pb.LookupRequest) -> pb.LookupResponse:
    with grpc.insecure_channel(address) as ch:
        return pbg.ExecutorServiceStub(ch).Lookup(request, timeout=10)


def _values(response: pb.LookupResponse):
    out = []
    for v in response.values:
        kind = v.WhichOneof("kind")
        out.append(getattr(v, kind) if kind else None)
    return out


def test_get_sync_answers_every_type_as_the_batch_read(warehouse, served):
    """Integers of every width, float (exact float32 values), double, boolean, binary, strings and nulls come back
    as values; decimals, timestamps and dates as Arrow (the executor falls back); both equal the batch read."""
    for name, keys in (("typed", range(-3, N + 3)), ("rich", range(-3, N + 3))):
        oracle = {k[0]: row for k, row in warehouse.batch_read(name).items()}
        with _client(warehouse, name) as c:
            for k in keys:
                assert c.get_sync(k) == oracle.get(k), k
            assert c.get_sync(5, select=["txt", "k"]) == {"txt": oracle[5]["txt"], "k": 5}
    oracle = {k[0]: row for k, row in warehouse.batch_read("texts").items()}
    with _client(warehouse, "texts") as c:  # a string key: the hashed index, compared before it is answered
        for i in range(-2, N + 2):
            assert c.get_sync(f"name-{i}") == oracle.get(f"name-{i}")


def test_the_wire_for_version_2_and_version_3_clients(warehouse, served):
    oracle = {k[0]: row for k, row in warehouse.batch_read("typed").items()}
    routing = TableRouting.of(warehouse.table("typed"))
    with _client(warehouse, "typed") as c:
        key = 10
        bucket = routing.bucket({"k": key})
        address = _executor_of(c, bucket)
        v2 = pb.LookupRequest(table="db.typed", key=[pb.Value(int=key)], buckets=[bucket], protocol_version=2)
        # a version 2 client: its one key answered as Arrow IPC, as before (row_values is unknown to it)
        r = _call(address, v2)
        assert list(r.found) == [0] and not r.columns and not r.values
        assert pa.ipc.open_stream(r.rows_ipc).read_all().to_pylist() == [oracle[key]]
        # version 3 asking for values: columns and values, no Arrow
        v3 = pb.LookupRequest(table="db.typed", key=[pb.Value(int=key)], buckets=[bucket],
                              protocol_version=PROTOCOL_VERSION, row_values=True, select=["txt", "f", "b"])
        r = _call(address, v3)
        assert list(r.found) == [0] and list(r.columns) == ["txt", "f", "b"] and not r.rows_ipc
        assert _values(r) == [oracle[key]["txt"], oracle[key]["f"], oracle[key]["b"]]
        # several keys in one request: found positions in order, missing ones left out, a key whose bucket
        # another executor serves named as failed (retry), the values row after row
        mine = [k for k in range(N) if _executor_of(c, routing.bucket({"k": k})) == address]
        other = next(k for k in range(N) if _executor_of(c, routing.bucket({"k": k})) != address)
        absent = next(k for k in range(N, 2 * N) if _executor_of(c, routing.bucket({"k": k})) == address)
        keys = [mine[0], absent, other, mine[1], mine[2]]
        many = pb.LookupRequest(table="db.typed", key=[pb.Value(int=k) for k in keys],
                                buckets=[routing.bucket({"k": k}) for k in keys], protocol_version=PROTOCOL_VERSION,
                                row_values=True)
        r = _call(address, many)
        assert list(r.found) == [0, 3, 4] and list(r.columns) == TYPED.names
        values = _values(r)
        w = len(TYPED.names)
        assert [dict(zip(TYPED.names, values[i:i + w])) for i in range(0, len(values), w)] == \
            [oracle[mine[0]], oracle[mine[1]], oracle[mine[2]]]
        assert [(list(f.positions), f.retry) for f in r.failed] == [([2], True)]
        assert "belongs to executor" in r.failed[0].reason
        # the same keys without row_values: Arrow IPC, one row per found key
        many.row_values = False
        r = _call(address, many)
        assert pa.ipc.open_stream(r.rows_ipc).read_all().to_pylist() == [oracle[k] for k in (mine[0], mine[1],
                                                                                               mine[2])]
        # several keys are protocol 3: a version 2 request with them is refused, as a version 2 executor does
        many.protocol_version = 2
        with pytest.raises(grpc.RpcError) as refused:
            _call(address, many)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "5 key values and 5 buckets" in refused.value.details()
        bad = pb.LookupRequest(table="db.typed", key=[pb.Value(int=1), pb.Value(int=2), pb.Value(int=3)],
                               buckets=[0, 1], protocol_version=PROTOCOL_VERSION)
        with pytest.raises(grpc.RpcError) as refused:
            _call(address, bad)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert refused.value.details() == "3 key values and 2 buckets for keys of 1 columns"
        bad = pb.LookupRequest(table="db.typed", key=[pb.Value(int=1), pb.Value(text="2")], buckets=[0, 1],
                               protocol_version=PROTOCOL_VERSION)
        with pytest.raises(grpc.RpcError) as refused:
            _call(address, bad)
        assert "a text value for a int column" in refused.value.details()

    # rich types: row_values asked, Arrow answered (no Value field for decimals, timestamps, dates)
    oracle = {k[0]: row for k, row in warehouse.batch_read("rich").items()}
    routing = TableRouting.of(warehouse.table("rich"))
    with _client(warehouse, "rich") as c:
        bucket = routing.bucket({"k": 7})
        r = _call(_executor_of(c, bucket), pb.LookupRequest(
            table="db.rich", key=[pb.Value(int=7)], buckets=[bucket], protocol_version=PROTOCOL_VERSION,
            row_values=True))
        assert not r.columns and pa.ipc.open_stream(r.rows_ipc).read_all().to_pylist() == [oracle[7]]
        # ... unless the columns asked for all have one
        r = _call(_executor_of(c, bucket), pb.LookupRequest(
            table="db.rich", key=[pb.Value(int=7)], buckets=[bucket], protocol_version=PROTOCOL_VERSION,
            row_values=True, select=["txt"]))
        assert list(r.columns) == ["txt"] and _values(r) == ["r7"]


def test_a_batch_in_any_order_names_each_row_by_its_key(warehouse, served):
    """keys_ipc with ``any_order``: the same rows, each named by ``found``; without it, in request order."""
    from paimon_tail.service.protocol.wire import ipc_stream

    oracle = {k[0]: row for k, row in warehouse.batch_read("typed").items()}
    routing = TableRouting.of(warehouse.table("typed"))
    with _client(warehouse, "typed") as c:
        address = _executor_of(c, 0)
        keys = sorted((k for k in range(N + 20) if _executor_of(c, routing.bucket({"k": k})) == address),
                      key=lambda k: (-routing.bucket({"k": k}), k))[:150]  # the executor's buckets, last first
        assert len({routing.bucket({"k": k}) for k in keys}) > 1
        request = pb.LookupRequest(table="db.typed", keys_ipc=ipc_stream(pa.table({"k": pa.array(keys, pa.int64())})),
                                   buckets=[routing.bucket({"k": k}) for k in keys],
                                   protocol_version=PROTOCOL_VERSION)
        want = [i for i, k in enumerate(keys) if k in oracle]
        ordered = _call(address, request)
        assert list(ordered.found) == want
        assert pa.ipc.open_stream(ordered.rows_ipc).read_all().to_pylist() == [oracle[keys[i]] for i in want]
        request.any_order = True
        loose = _call(address, request)
        rows = pa.ipc.open_stream(loose.rows_ipc).read_all().to_pylist()
        assert sorted(loose.found) == want and list(loose.found) != want  # the buckets' order, not the request's
        assert rows == [oracle[keys[i]] for i in loose.found]
        assert c.lookup_sync(keys).rows.to_pylist() == [oracle[keys[i]] for i in want]  # the client orders them


@pytest.mark.parametrize("name", ["typed", "texts"])
def test_concurrent_get_sync_calls_share_calls_and_answer_right(warehouse, served, name):
    """16 threads calling ``get_sync`` at once on one client: keys to one executor travel together, and each
    thread gets its own key's row (or None), exactly as alone; with ``share_calls=False`` too."""
    oracle = {k[0]: row for k, row in warehouse.batch_read(name).items()}
    keys = list(range(-20, N + 20)) if name == "typed" else [f"name-{i}" for i in range(-20, N + 20)]
    for share in (True, False):
        with _client(warehouse, name, share_calls=share) as c:
            wrong, errors = [], []

            def work(seed: int) -> None:
                rnd = random.Random(seed)
                try:
                    for _ in range(150):
                        k = rnd.choice(keys)
                        select = ["txt"] if name == "typed" and rnd.random() < 0.3 else None
                        got = c.get_sync(k, select=select)
                        want = oracle.get(k)
                        if select and want is not None:
                            want = {"txt": want["txt"]}
                        if got != want:
                            wrong.append((k, got, want))
                except Exception as e:  # noqa: BLE001 - reported below
                    errors.append(e)

            threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
            assert not errors and not wrong, (errors, wrong[:3])
            calls, shared_keys = c.coalesced
            if share:
                assert calls > 0 and shared_keys >= 2 * calls  # some calls did carry several keys
            else:
                assert (calls, shared_keys) == (0, 0)


def test_a_shared_call_answers_each_key_its_own_way(warehouse, served):
    """Keys of one shared call whose answers differ: rows, absent keys, and keys of a bucket the executor cannot
    serve (its data file is corrupt): those fail with the bucket's reason, the others are answered."""
    # (what was written, through Arrow's types: the batch read cannot read the corrupt file)
    oracle = {r["k"]: r for r in pa.Table.from_pylist([_typed_row(k) for k in range(N)], schema=TYPED).to_pylist()}
    routing = TableRouting.of(warehouse.table("broken"))
    with _client(warehouse, "broken") as c:
        for _ in range(20):  # until calls were shared (threads released together almost always share at once)
            results = {}
            keys = list(range(0, 48)) + [N + 1, N + 2]
            barrier = threading.Barrier(len(keys))

            def work(k) -> None:
                barrier.wait()
                try:
                    results[k] = c.get_sync(k)
                except ServiceError as e:
                    results[k] = str(e)

            threads = [threading.Thread(target=work, args=(k,)) for k in keys]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            for k in keys:
                if routing.bucket({"k": k}) == BROKEN:
                    assert f"bucket {BROKEN} of db.broken cannot be served" in results[k], (k, results[k])
                else:
                    assert results[k] == oracle.get(k), k
            if c.coalesced[0]:
                break
        assert c.coalesced[0] > 0
