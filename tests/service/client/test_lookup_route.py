"""The lookup paths route alike: ``Route`` (service/client/route.py) groups keys by owning executor in plain Python
for few_keys.py, and ``many_keys.Lookup.plan`` sends exactly those groups (numpy for many keys, ``Route.owner`` for
one)."""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from paimon_tail.service.client.deadline import Again, Deadline
from paimon_tail.service.client.many_keys import Lookup
from paimon_tail.service.client.prepare_keys import Prepared
from paimon_tail.service.client.route import Route
from paimon_tail.service.keys.binary_row import channel
from paimon_tail.service.protocol import lookup_pb2 as pb
from paimon_tail.service.protocol import registration as regmod


def _route(owners, alive=(0, 1, 2)) -> Route:
    executors = [pb.ExecutorInfo(index=i, address=f"127.0.0.1:{5000 + i}", alive=i in alive) for i in range(3)]
    response = pb.ExecutorsResponse(protocol_version=3, num_executors=3, executors=executors, channels=len(owners),
                                    owners=owners)
    registration = regmod.Registration(service_id="s", addresses=["127.0.0.1:1"], host="h", pid=1, tables=["db.t"],
                                       executors=3, tls=False, auth="none", started_ms=0, heartbeat_ms=0,
                                       lease_ms=10_000)
    return Route(registration, response)


def _plan(route: Route, part_hashes, buckets):
    n = len(buckets)
    keys = pa.table({"k": pa.array(range(n), pa.int64())})
    prep = Prepared(np.asarray(buckets, dtype=np.int32), np.asarray(part_hashes, dtype=np.int64), None, keys,
                    lambda rows: keys)
    op = Lookup("db.t", prep, None, None, Deadline(10), 2.0, 10_000, None)
    return op, {call.executor: sorted(call.positions.tolist()) for call in op.plan(route)}


def test_route_groups_as_the_core_plans():
    rnd = random.Random(3)
    owners = [rnd.randrange(3) for _ in range(16)]
    route = _route(owners)
    part_hashes = [rnd.randrange(-2 ** 31, 2 ** 31) for _ in range(500)]
    buckets = [rnd.randrange(8) for _ in range(500)]
    groups = route.groups(part_hashes, buckets)
    assert len(groups) == 3 and sum(map(len, groups.values())) == 500
    for ex, positions in groups.items():
        assert all(owners[channel(part_hashes[i], buckets[i], 16)] == ex for i in positions)
    _, planned = _plan(route, part_hashes, buckets)
    assert planned == groups
    for i in (0, 17, 499):  # one key: Route.owner, no numpy
        assert _plan(route, [part_hashes[i]], [buckets[i]])[1] == {groups_owner(groups, i): [0]}


def groups_owner(groups, i: int) -> int:
    return next(ex for ex, positions in groups.items() if i in positions)


def test_an_executor_that_cannot_take_calls_is_not_planned():
    route = _route([0, 1, 2, -1], alive=(0, 2))
    assert route.available(0).address == "127.0.0.1:5000"
    assert route.available(1) is None and route.available(-1) is None and route.available(7) is None
    part_hashes, buckets = [0] * 4, [0, 1, 2, 3]  # channels 0..3: owners 0, 1, 2, none
    assert route.groups(part_hashes, buckets) == {0: [0], 1: [1], 2: [2], -1: [3]}
    op, planned = _plan(route, part_hashes, buckets)
    assert planned == {0: [0], 2: [2]}  # the others wait for the next attempt
    with pytest.raises(Again, match="no executor serves these keys now"):
        op.settle()
    assert sorted(op.pending.tolist()) == [1, 3]


# ------------------------------------------------------------------------- keys routed by slot
def test_a_slotted_tables_keys_route_by_the_hash_of_their_trimmed_key():
    """Dynamic-bucket, postpone and cross-partition tables: a key's routing bucket is its slot, Paimon's hash of the
    trimmed primary key modulo KEY_SLOTS (bit for bit what bucket_hash computes for many keys), the same in the
    plain-Python, vectorised and command-line paths."""
    from paimon_tail.service.client.few_keys import key_routes
    from paimon_tail.table_meta import TableMeta
    from paimon_tail.service.keys.routing import KEY_SLOTS, TableRouting

    fields = [{"id": 0, "dt": None, "name": "dt", "type": "STRING NOT NULL"},
              {"id": 1, "name": "id", "type": "BIGINT NOT NULL"}, {"id": 2, "name": "v", "type": "STRING"}]
    for options, pks, kind, route_keys in (({}, ["dt", "id"], "dynamic", ["id"]),
                                           ({"bucket": "-2"}, ["dt", "id"], "postpone", ["id"]),
                                           ({"bucket": "-1"}, ["id"], "cross-partition", ["id"]),
                                           ({"bucket": "4"}, ["dt", "id"], "fixed", ["id"]),
                                           ({"bucket": "4", "bucket-function.type": "mod"}, ["dt", "id"], "fixed",
                                            ["id"])):
        meta = TableMeta("db.t", "/nowhere", 0, [{k: v for k, v in f.items() if k != "dt"} for f in fields], pks,
                         ["dt"], options)
        routing = TableRouting.of(meta)
        assert routing.kind == kind and routing.route_keys == route_keys
        slotted = kind != "fixed" or "bucket-function.type" in options
        assert routing.slotted == slotted and routing.routes == (KEY_SLOTS if slotted else 4)
        keys = [{"dt": f"d{i % 3}", "id": i * 7919} for i in range(40)]
        one = [routing.bucket(k) for k in keys]
        many = routing.buckets_of(pa.table({"dt": [k["dt"] for k in keys],
                                            "id": pa.array([k["id"] for k in keys], pa.int64())})).tolist()
        assert one == many and len(set(one)) > (20 if slotted else 3) and all(0 <= b < routing.routes for b in one)
        plan = key_routes(meta, keys, None)
        assert plan["buckets"] == one  # the command line's few keys route alike
        if kind == "cross-partition":
            assert routing.key_partition_keys == [] and len(set(plan["partitions"])) == 1
