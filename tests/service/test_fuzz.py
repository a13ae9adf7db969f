"""Malformed requests never crash the servers (hypothesis)."""
from __future__ import annotations

import asyncio

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_tail.catalog import catalog_config
from paimon_tail.service.protocol import lookup_pb2 as pb
from paimon_tail.service.client import LookupClient
from paimon_tail.service.client.deadline import Deadline

from tests.service.conftest import PLAIN_SCHEMA, ServeProcess


@pytest.fixture(scope="module")
def service(warehouse):
    warehouse.create("fz", PLAIN_SCHEMA, primary_keys=["k"], bucket=2)
    warehouse.write("fz", [{"k": k, "v": f"v{k}", "op": "+I"} for k in range(100)])
    svc = ServeProcess(warehouse.path, ["db.fz"], executors=1).wait_ready()
    client = LookupClient("db.fz", catalog_config(warehouse.path))
    client.lookup_sync([1])
    yield svc, client, client.executors_sync()
    client.close_sync()
    assert svc.stop() == 0


def _raw_call(address: str, method: str, payload: bytes):
    async def go():
        async with grpc.aio.insecure_channel(address) as ch:
            call = ch.unary_unary(method, request_serializer=lambda b: b, response_deserializer=lambda b: b)
            try:
                await call(payload, timeout=2)
            except grpc.aio.AioRpcError as e:
                return e.code()
            return grpc.StatusCode.OK

    return asyncio.run(go())


METHODS = [
    "/paimon_tail.lookup.v1.ExecutorService/Lookup",
    "/paimon_tail.lookup.v1.AddressService/Executors",
    "/paimon_tail.lookup.v1.AddressService/Status",
    "/paimon_tail.lookup.v1.AddressService/Heartbeat",
    "/paimon_tail.lookup.v1.AddressService/Register",
]


def _addresses(client):
    route = client.discover_sync(Deadline(10), force=True)
    return route.registration.addresses[0], route.response.executors[0].address


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(method=st.sampled_from(METHODS), payload=st.binary(max_size=300))
def test_random_bytes(service, method, payload):
    _, client, _ = service
    address_server, executor = _addresses(client)
    target = executor if "Executor" in method else address_server
    code = _raw_call(target, method, payload)
    assert code != grpc.StatusCode.UNAVAILABLE


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(table=st.sampled_from(["db.fz", "", "db.nope"]), keys=st.binary(max_size=200),
       buckets=st.lists(st.integers(-5, 2**31 - 1), max_size=5), min_snapshot=st.integers(-10, 3),
       select=st.lists(st.sampled_from(["k", "v", "zz", ""]), max_size=3))
def test_structured_garbage(service, table, keys, buckets, min_snapshot, select):
    _, client, _ = service
    _, executor = _addresses(client)
    req = pb.LookupRequest(table=table, keys_ipc=keys, buckets=buckets, min_snapshot_id=min_snapshot, select=select)
    code = _raw_call(executor, "/paimon_tail.lookup.v1.ExecutorService/Lookup", req.SerializeToString())
    assert code != grpc.StatusCode.UNAVAILABLE


def test_zz_still_serving_after_fuzz(service):
    _, client, _ = service
    assert client.get_sync(42) == {"k": 42, "v": "v42", "op": "+I"}


def _ipc(table) -> bytes:
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(values=st.one_of(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=20),
                        st.lists(st.text(max_size=5), max_size=20),
                        st.lists(st.none(), max_size=3)),
       column=st.sampled_from(["k", "v", "x"]), bucket=st.integers(-3, 4), extra_bucket=st.booleans())
def test_valid_ipc_wrong_content(service, values, column, bucket, extra_bucket):
    import pyarrow as pa

    _, client, _ = service
    _, executor = _addresses(client)
    table = pa.table({column: pa.array(values)}) if values else pa.table({column: pa.array([], pa.int64())})
    buckets = [bucket] * (len(values) + (1 if extra_bucket else 0))
    req = pb.LookupRequest(table="db.fz", keys_ipc=_ipc(table), buckets=buckets)
    code = _raw_call(executor, "/paimon_tail.lookup.v1.ExecutorService/Lookup", req.SerializeToString())
    assert code in (grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION)
