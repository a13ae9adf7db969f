"""The lookup paths route alike: ``Route`` (service/client/route.py) groups keys by owning executor in plain Python
for quick.py, and ``core.Lookup.plan`` sends exactly those groups (numpy for many keys, ``Route.owner`` for one)."""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from paimon_tail.service.client.core import Again, Deadline, Lookup, Prepared
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


# ------------------------------------------------------------------------- keys without a bucket (fan-out)
def _answer(found=(), snapshot=1, rows=None, failed=()) -> pb.LookupResponse:
    from paimon_tail.service.protocol.wire import ipc_stream

    table = pa.table({"k": pa.array(rows if rows is not None else list(found), pa.int64())})
    return pb.LookupResponse(snapshot_id=snapshot, schema_id=0, rows_ipc=ipc_stream(table), found=list(found),
                             failed=list(failed))


def _fanned(n: int):
    keys = pa.table({"k": pa.array(range(n), pa.int64())})
    prep = Prepared(np.full(n, -1, np.int32), np.zeros(n, np.int64), None, keys, lambda rows: keys, fanout=True)
    return Lookup("db.t", prep, None, None, Deadline(10), 2.0, 10_000, None)


def test_keys_without_a_bucket_are_asked_of_every_owner_under_its_assignment():
    from paimon_tail.service.protocol import owners_print

    route = _route([0, 1, 2, 1, 0, 2, 1, 0])
    op = _fanned(5)
    calls = op.plan(route)
    assert sorted(c.executor for c in calls) == [0, 1, 2]
    assert all(c.positions.tolist() == [0, 1, 2, 3, 4] for c in calls)
    assert {c.request.owners_print for c in calls} == {owners_print(route._owners)} != {0}
    assert list(calls[0].request.buckets) == [-1] * 5
    # a key one executor holds is answered by it; the rest are missing as of the one snapshot all answered at
    for call, answer in zip(calls, (_answer([1, 3], 7), _answer([], 7), _answer([4], 7))):
        op.absorb(call, answer)
    op.settle()
    r = op.result()
    assert r.found == [1, 3, 4] and r.missing == [0, 2] and [r.snapshot_of(p) for p in range(5)] == [7] * 5


def test_a_key_found_nowhere_at_different_snapshots_is_asked_again_at_the_newest():
    route = _route([0, 1])
    op = _fanned(3)
    calls = op.plan(route)
    op.absorb(calls[0], _answer([0], 5))  # found at 5: answered, whatever the other says
    op.absorb(calls[1], _answer([], 6))   # keys 1 and 2: not at 5 (executor 0) nor at 6 (executor 1)
    with pytest.raises(Again, match="snapshots 5 to 6: asking again at 6"):
        op.settle()
    again = op.plan(route)
    assert [c.positions.tolist() for c in again] == [[1, 2], [1, 2]]
    assert {c.request.min_snapshot_id for c in again} == {6}
    op.absorb(again[0], _answer([], 6))
    op.absorb(again[1], _answer([1], 6, rows=[2]))  # (its row for the position it found)
    op.settle()
    r = op.result()
    assert r.found == [0, 2] and r.missing == [1]
    assert [r.snapshot_of(p) for p in range(3)] == [5, 6, 6]


def test_a_key_an_executor_cannot_vouch_for_is_asked_again_unless_another_holds_it():
    route = _route([0, 1])
    op = _fanned(3)
    calls = op.plan(route)
    moved = pb.FailedKeys(positions=[0, 1, 2], reason="the channels moved", retry=True)
    op.absorb(calls[0], _answer([], 4, failed=[moved]))
    op.absorb(calls[1], _answer([2], 4, rows=[2]))
    with pytest.raises(Again, match="the channels moved"):
        op.settle()
    assert sorted(op.pending.tolist()) == [0, 1]  # key 2 was found: not asked again
    # a channel with no owner: nothing found is missing until one joins
    op2 = _fanned(2)
    calls = op2.plan(_route([0, -1]))
    assert [c.executor for c in calls] == [0]
    op2.absorb(calls[0], _answer([0], 3))
    with pytest.raises(Again, match="no executor serves 1 of 2 channels"):
        op2.settle()
    assert op2.pending.tolist() == [1]


def test_one_key_without_a_bucket():
    from paimon_tail.service.client.core import OneKey

    route = _route([0, 1])
    request = pb.LookupRequest(table="db.t", key=[pb.Value(int=9)], buckets=[-1])
    op = OneKey("db.t", request, -1, 0, None, Deadline(10), 2.0, lambda data: {"k": 9})
    calls = op.plan(route)
    assert [c.executor for c in calls] == [0, 1] and request.owners_print
    op.absorb(calls[1], _answer([], 8))
    assert not op.complete
    op.absorb(calls[0], _answer([], 9))
    with pytest.raises(Again, match="asking again at 9"):
        op.settle()
    assert request.min_snapshot_id == 9
    calls = op.plan(route)
    op.absorb(calls[0], _answer([0], 9))
    assert op.complete  # the other executor's answer is not waited for
    op.settle()
    assert op.result() == {"k": 9} and op.snapshot_id == 9
