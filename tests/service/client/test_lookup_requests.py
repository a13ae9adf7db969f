"""Every ``LookupRequest`` the client sends comes from one place (service/client/lookup_requests.py), and each path
(the batch, one key, the command line's few keys, calls shared by threads) still asks what it asked before the
restructure: the same keys, buckets, projection and flags."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from paimon_tail.table_meta import TableMeta
from paimon_tail.service.client.deadline import Deadline
from paimon_tail.service.client.few_keys import FewKeys, key_routes
from paimon_tail.service.client.lookup_requests import lookup_request, shared_request, typed_key
from paimon_tail.service.client.many_keys import Lookup
from paimon_tail.service.client.prepare_keys import KeyPreparer
from paimon_tail.service.client.route import Route
from paimon_tail.service.keys.parse import KeyParser
from paimon_tail.service.keys.routing import TableRouting
from paimon_tail.service.protocol import PROTOCOL_VERSION
from paimon_tail.service.protocol import lookup_pb2 as pb
from paimon_tail.service.protocol import registration as regmod
from tests import REPO

ROOT = REPO / "paimon_tail"
GENERATED = {"lookup_pb2.py", "lookup_pb2_grpc.py", "lookup_pb2.pyi"}

FIELDS = [{"id": 0, "name": "dt", "type": "STRING NOT NULL"}, {"id": 1, "name": "id", "type": "BIGINT NOT NULL"},
          {"id": 2, "name": "v", "type": "STRING"}]


def _meta(fields=FIELDS, pks=("dt", "id")) -> TableMeta:
    return TableMeta("db.t", "/nowhere", 0, list(fields), list(pks), ["dt"], {"bucket": "4"})


def _preparer(meta: TableMeta) -> KeyPreparer:
    return KeyPreparer(meta.name, KeyParser(meta), TableRouting.of(meta))


def _keys_of(request: pb.LookupRequest) -> list:
    return pa.ipc.open_stream(request.keys_ipc).read_all().to_pylist()


def test_lookup_request_is_built_in_one_place():
    builders = sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py")
                      if p.name not in GENERATED and "LookupRequest(" in p.read_text())
    assert builders == ["service/client/lookup_requests.py"]  # (the scan sees the one that is there)


def test_defaults_are_left_unset():
    request = lookup_request("db.t", [3])
    assert {f.name for f, _ in request.ListFields()} == {"table", "buckets", "protocol_version"}
    assert request.protocol_version == PROTOCOL_VERSION
    full = lookup_request("db.t", [3], key=typed_key([7, "x"]), select=["v"], min_snapshot=5, row_values=True,
                          any_order=True)
    assert {f.name for f, _ in full.ListFields()} == {"table", "buckets", "protocol_version", "key", "select",
                                                      "min_snapshot_id", "row_values", "any_order"}
    assert [v.WhichOneof("kind") for v in full.key] == ["int", "text"]


def test_one_key_goes_typed_or_as_arrow():
    meta = _meta()
    keys = _preparer(meta)
    op = keys.one_key({"dt": "d1", "id": 42}, ["v"], 9, Deadline(5), 2.0, None, lambda select: None)
    r = op.request
    assert [(v.text, v.int) for v in r.key] == [("d1", 0), ("", 42)] and not r.keys_ipc
    assert list(r.buckets) == [keys.routing.bucket({"dt": "d1", "id": 42})] and list(r.select) == ["v"]
    assert r.min_snapshot_id == 9 and r.row_values and not r.any_order
    checked = []
    dated = _meta([dict(FIELDS[0]), {"id": 1, "name": "id", "type": "DATE NOT NULL"}, FIELDS[2]])
    op = _preparer(dated).one_key({"dt": "d1", "id": "2026-11-01"}, None, None, Deadline(5), 2.0, None,
                                  checked.append)
    assert not op.request.key and op.request.row_values and not checked  # no select: nothing to check
    assert [str(k["id"]) for k in _keys_of(op.request)] == ["2026-11-01"]


def test_a_batch_goes_as_arrow_and_one_of_its_keys_typed():
    meta = _meta()
    keys = _preparer(meta)
    batch = [{"dt": f"d{i % 3}", "id": i} for i in range(10)]
    prep = keys.many(batch)
    op = Lookup("db.t", prep, ["v"], None, Deadline(5), 2.0, 10_000, None)
    idx = np.asarray([1, 4, 7])
    r = op._request(idx, _route_v2())
    assert _keys_of(r) == [batch[i] for i in idx] and r.any_order and not r.row_values and not r.key
    assert list(r.buckets) == [keys.routing.bucket(batch[i]) for i in idx] and list(r.select) == ["v"]
    one = keys.many(batch[:1])
    r = Lookup("db.t", one, None, 3, Deadline(5), 2.0, 10_000, None)._request(np.asarray([0]), _route_v2())
    assert [(v.text, v.int) for v in r.key] == [("d0", 0), ("", 0)] and not r.keys_ipc and not r.any_order
    assert r.min_snapshot_id == 3 and list(r.buckets) == [keys.routing.bucket(batch[0])]


def test_the_command_lines_few_keys_route_and_ask_as_the_client():
    meta = _meta()
    keys = [{"dt": "d2", "id": 5}, {"dt": "d0", "id": 11}, {"dt": "d2", "id": 12}]
    routes = key_routes(meta, keys, ["v"])
    r = FewKeys("db.t", keys, routes, ["v"], Deadline(5))._request([0, 2])
    assert _keys_of(r) == [keys[0], keys[2]] and list(r.select) == ["v"]
    routing = TableRouting.of(meta)
    assert list(r.buckets) == [routing.bucket(keys[0]), routing.bucket(keys[2])]
    assert not r.any_order and not r.row_values and not r.min_snapshot_id
    assert key_routes(meta, keys, ["nope"]) is None  # an unknown column: the client says so


def test_threads_share_one_request_with_every_key_in_order():
    requests = [lookup_request("db.t", [b], key=typed_key(["d", b * 10]), select=["v"], row_values=True)
                for b in (3, 1, 2)]
    shared = shared_request(requests)
    assert list(shared.buckets) == [3, 1, 2] and [v.int for v in shared.key][1::2] == [30, 10, 20]
    before = pb.LookupRequest()  # how coalesce.py built it before: the first request, the others' keys appended
    before.CopyFrom(requests[0])
    for r in requests[1:]:
        before.key.extend(r.key)
        before.buckets.extend(r.buckets)
    assert shared.SerializeToString() == before.SerializeToString()


def _route_v2() -> Route:
    registration = regmod.Registration(service_id="s", addresses=["127.0.0.1:1"], host="h", pid=1, tables=["db.t"],
                                       executors=1, tls=False, auth="none", started_ms=0, heartbeat_ms=0,
                                       lease_ms=10_000)
    return Route(registration, pb.ExecutorsResponse(protocol_version=3, num_executors=1, channels=4, owners=[0] * 4,
                                                    executors=[pb.ExecutorInfo(index=0, address="127.0.0.1:2",
                                                                               alive=True)]))
