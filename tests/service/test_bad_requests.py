"""Hostile gRPC callers and bad registration files, against a real service with small limits.

Extends tests/service/test_fuzz.py (random bytes, structured garbage, valid IPC with wrong content): here every
documented INVALID_ARGUMENT / NOT_FOUND / FAILED_PRECONDITION / RESOURCE_EXHAUSTED answer is asserted with its
message, hypothesis sends wrong types, unknown tables and batches around the limit, and the registration file is
truncated, foreign, expired or points at a dead address. Rows in docs/errors.md point here.
"""
from __future__ import annotations

import asyncio
import json
import os
import socket
import time

import grpc
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_tail.catalog import catalog_config
from paimon_tail.errors import ServiceError
from paimon_tail.service.protocol import PROTOCOL_VERSION
from paimon_tail.service.protocol import lookup_pb2 as pb
from paimon_tail.service.client import LookupClient
from paimon_tail.service.keys.routing import TableRouting

from paimon_tail.service.client.deadline import Deadline

from tests.service.conftest import PLAIN_SCHEMA, ServeProcess, Warehouse, owner_of, run_cli

LOOKUP = "/paimon_tail.lookup.v1.ExecutorService/Lookup"
MAX_KEYS = 1000


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    wh = Warehouse(str(tmp_path_factory.mktemp("wh")))
    wh.create("kv", PLAIN_SCHEMA, primary_keys=["k"], bucket=4)
    wh.write("kv", [{"k": k, "v": f"v{k}", "op": "+I"} for k in range(3000)])
    s = ServeProcess(wh.path, ["db.kv"], "--max-batch-keys", str(MAX_KEYS), "--max-message-mb", "1").wait_ready()
    client = LookupClient("db.kv", catalog_config(wh.path))
    executors = client.executors_sync()
    info = {"wh": wh, "address": client.discover_sync(Deadline(10)).registration.addresses[0],
            "executors": [e.address for e in executors.executors], "routing": TableRouting.of(wh.table("kv")),
            "owner": owner_of(client)}
    yield info
    client.close_sync()
    assert s.stop() == 0


def call(address: str, method: str, payload: bytes):
    async def go():
        async with grpc.aio.insecure_channel(address, options=[("grpc.max_send_message_length", 64 << 20)]) as ch:
            c = ch.unary_unary(method, request_serializer=lambda b: b, response_deserializer=lambda b: b)
            try:
                await c(payload, timeout=5)
            except grpc.aio.AioRpcError as e:
                return e.code(), e.details() or ""
            return grpc.StatusCode.OK, ""

    return asyncio.run(go())


def ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def owned(info, executor: int, count: int):
    r = info["routing"]
    keys = [k for k in range(3000) if info["owner"]((), r.bucket({"k": k})) == executor][:count]
    return keys, [r.bucket({"k": k}) for k in keys]


def lookup_req(info, table="db.kv", keys=None, buckets=None, select=(), raw_keys=None):
    if keys is None:
        keys, b = owned(info, 0, 3)
        buckets = b if buckets is None else buckets
    payload = raw_keys if raw_keys is not None else ipc(pa.table({"k": pa.array(keys, pa.int32())}))
    return pb.LookupRequest(table=table, keys_ipc=payload, buckets=buckets, select=list(select)).SerializeToString()


CASES = {
    "malformed Arrow": (lambda i: lookup_req(i, raw_keys=b"\x00not arrow"), "INVALID_ARGUMENT",
                        "keys are not an Arrow IPC stream"),
    "unknown table": (lambda i: lookup_req(i, table="db.nope"), "NOT_FOUND", "'db.nope' is not served here"),
    "wrong key type": (lambda i: pb.LookupRequest(table="db.kv", keys_ipc=ipc(pa.table({"k": ["a", "b"]})),
                                                  buckets=[0, 0]).SerializeToString(),
                       "INVALID_ARGUMENT", "keys do not fit the key columns"),
    "missing key column": (lambda i: pb.LookupRequest(table="db.kv", keys_ipc=ipc(pa.table({"x": [1]})),
                                                      buckets=[0]).SerializeToString(),
                           "INVALID_ARGUMENT", "missing key column(s) k"),
    "null key": (lambda i: pb.LookupRequest(table="db.kv", keys_ipc=ipc(pa.table({"k": pa.array([None], pa.int32())})),
                                            buckets=[0]).SerializeToString(),
                 "INVALID_ARGUMENT", "primary-key values cannot be null"),
    "buckets do not match keys": (lambda i: lookup_req(i, buckets=[0]), "INVALID_ARGUMENT", "1 buckets for 3 keys"),
    "bucket out of range": (lambda i: lookup_req(i, buckets=[99, 99, 99]), "INVALID_ARGUMENT", "bucket out of range"),
    "unknown select column": (lambda i: lookup_req(i, select=["nosuch"]), "INVALID_ARGUMENT", "unknown column(s) nosuch"),
    "batch over --max-batch-keys": (
        lambda i: lookup_req(i, keys=list(range(MAX_KEYS + 1)), buckets=[0] * (MAX_KEYS + 1)),
        "INVALID_ARGUMENT", f"batch of {MAX_KEYS + 1} keys exceeds the limit of {MAX_KEYS} keys per request"),
    "message over --max-message-mb": (lambda i: lookup_req(i, raw_keys=b"\x00" * (2 << 20)), "RESOURCE_EXHAUSTED",
                                      "Received message larger than max"),
    "key of another executor": (lambda i: lookup_req(i, keys=owned(i, 1, 3)[0], buckets=owned(i, 1, 3)[1]),
                                "FAILED_PRECONDITION",
                                "belongs to executor 1, not 0"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_lookup_request(svc, name):
    make, status, message = CASES[name]
    code, details = call(svc["executors"][0], LOOKUP, make(svc))
    assert code.name == status and message in details, (code, details)


def test_bad_address_requests(svc):
    code, details = call(svc["address"], "/paimon_tail.lookup.v1.AddressService/Executors",
                         pb.ExecutorsRequest(table="db.nope").SerializeToString())
    assert code == grpc.StatusCode.NOT_FOUND and "table db.nope is not served here (serving db.kv)" in details
    code, details = call(svc["address"], "/paimon_tail.lookup.v1.AddressService/Status",
                         pb.StatusRequest(table="db.nope").SerializeToString())
    assert code == grpc.StatusCode.NOT_FOUND

    def hello(**over):
        fields = dict(address="127.0.0.1:1", instance_id="x", index=-1, protocol_version=PROTOCOL_VERSION,
                      warehouse=os.path.abspath(svc["wh"].path))
        fields.update(over)
        return pb.ExecutorReport(hello=pb.ExecutorHello(**fields)).SerializeToString()

    heartbeat = pb.ExecutorReport(heartbeat=pb.Heartbeat()).SerializeToString()
    for reports, status, message in (
            ([heartbeat], "INVALID_ARGUMENT", "bad executor hello: the first message of a Join call must be a hello"),
            ([hello(index=7)], "FAILED_PRECONDITION", "bad executor index 7: the service has 2 slot(s)"),
            ([hello(address="")], "FAILED_PRECONDITION", "bad executor hello: no address or instance id"),
            ([hello(protocol_version=2)], "FAILED_PRECONDITION",
             f"executor speaks protocol 2, the service {PROTOCOL_VERSION}"),
            ([hello(warehouse="/elsewhere")], "FAILED_PRECONDITION",
             f"the executor reads warehouse /elsewhere, the service serves {os.path.abspath(svc['wh'].path)}")):
        code, details = join(svc["address"], reports)
        assert code.name == status and message in details, (code, details)


def join(address: str, reports):
    """A raw Join call: send ``reports`` (serialized ExecutorReports), read until the service ends the call."""
    async def go():
        async with grpc.aio.insecure_channel(address) as ch:
            call = ch.stream_stream("/paimon_tail.lookup.v1.AddressService/Join", request_serializer=lambda b: b,
                                    response_deserializer=lambda b: b)(iter(reports))
            try:
                async for _ in call:
                    pass
            except grpc.aio.AioRpcError as e:
                return e.code(), e.details() or ""
            return grpc.StatusCode.OK, ""

    return asyncio.run(go())


def test_client_splits_batches_to_the_server_limit(svc):
    with LookupClient("db.kv", catalog_config(svc["wh"].path), batch_size=50_000) as c:
        r = c.lookup_sync(list(range(3000)))  # 3x the server's limit: split, all found
        assert len(r.rows) == 3000 and not r.missing


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(values=st.one_of(
    st.lists(st.floats(allow_nan=True), min_size=1, max_size=5), st.lists(st.booleans(), min_size=1, max_size=5),
    st.lists(st.binary(max_size=4), min_size=1, max_size=5), st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1,
                                                                       max_size=5),
    st.lists(st.dates(), min_size=1, max_size=5), st.lists(st.lists(st.integers(0, 3), max_size=2), min_size=1,
                                                           max_size=3)),
    table=st.sampled_from(["db.kv", "db.nope", "", "db.kv\x00", "x" * 300]), n=st.sampled_from([1, MAX_KEYS, MAX_KEYS + 1]))
def test_fuzz_wrong_types_unknown_tables_big_batches(svc, values, table, n):
    keys = pa.table({"k": pa.array((values * (n // len(values) + 1))[:n])})
    req = pb.LookupRequest(table=table, keys_ipc=ipc(keys), buckets=[0] * n).SerializeToString()
    code, _ = call(svc["executors"][0], LOOKUP, req)
    assert code in (grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND,
                    grpc.StatusCode.FAILED_PRECONDITION), code


def test_zz_still_serving(svc):
    r = run_cli("lookup", "db.kv", "42", "--warehouse", svc["wh"].path)
    assert r.returncode == 0 and json.loads(r.stdout)["v"] == "v42", r.stderr


# -- the registration file -------------------------------------------------------------------------------------
def _reg_path(wh) -> str:
    return f"{wh.path}/db.db/kv/service/service-paimon-tail-lookup"


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture
def unserved(tmp_path):
    wh = Warehouse(str(tmp_path / "wh"))
    wh.create("kv", PLAIN_SCHEMA, primary_keys=["k"], bucket=1)
    wh.write("kv", [{"k": 1, "v": "a", "op": "+I"}])
    import os

    os.makedirs(f"{wh.path}/db.db/kv/service")
    return wh


def _registration(**over) -> str:
    now = int(time.time() * 1000)
    d = {"addresses": [f"127.0.0.1:{_free_port()}"], "auth": "none", "executors": 1, "format": "paimon-tail-lookup/1",
         "heartbeat_ms": now, "host": "elsewhere", "lease_ms": 10000, "pid": 1, "protocol": 1, "service_id": "x",
         "started_ms": now, "tables": ["db.kv"], "tls": False}
    d.update(over)
    return json.dumps(d)


REGISTRATIONS = {
    "truncated": (lambda: _registration()[:40], "no query service is registered for db.kv"),
    "foreign JSON (Java's address list)": (lambda: '["127.0.0.1:9999"]', "no query service is registered for db.kv"),
    "foreign JSON (another format)": (lambda: '{"format": "other/1"}', "no query service is registered for db.kv"),
    "expired lease": (lambda: _registration(heartbeat_ms=int(time.time() * 1000) - 60_000),
                      "no live service for db.kv: the registration of"),
    "dead host, live lease": (lambda: _registration(), "does not answer (UNAVAILABLE)"),
    "needs a token we do not have": (lambda: _registration(auth="token"), "requires a token"),
    "needs TLS we are not set up for": (lambda: _registration(tls=True), "uses TLS"),
}


@pytest.mark.parametrize("name", list(REGISTRATIONS))
def test_bad_registration_file(unserved, name):
    make, message = REGISTRATIONS[name]
    with open(_reg_path(unserved), "w") as f:
        f.write(make())
    t0 = time.monotonic()
    with pytest.raises(ServiceError, match=message.replace("(", r"\(").replace(")", r"\)")):
        LookupClient("db.kv", catalog_config(unserved.path)).lookup_sync([1])
    assert time.monotonic() - t0 < 2.5  # never waits for a lease or hangs on a dead address
    r = run_cli("lookup", "db.kv", "1", "--warehouse", unserved.path)
    assert r.returncode == 1 and message in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_a_version_1_client_is_served(svc):
    """A client of protocol 1 (no protocol_version in its requests) routes with ChannelComputer over
    ``num_executors`` and indexes ``executors`` by the result: the coordinator answers it one entry per channel, so
    its lookups land on the executor that serves the key and are answered."""
    from paimon_tail.service.keys.binary_row import channel
    from paimon_tail.service.protocol import lookup_pb2_grpc as pbg

    with grpc.insecure_channel(svc["address"]) as ch:
        resp = pbg.AddressServiceStub(ch).Executors(pb.ExecutorsRequest(table="db.kv"), timeout=5)
    assert resp.num_executors == 16 and len(resp.executors) == 16 and not resp.owners  # the default 16 channels
    r = svc["routing"]
    part = r.partition_hash(())
    groups: dict = {}
    for k in range(0, 3000, 7):
        b = r.bucket({"k": k})
        groups.setdefault(channel(part, b, resp.num_executors), []).append((k, b))
    got = {}
    for ex, keys in groups.items():
        with grpc.insecure_channel(resp.executors[ex].address) as ch:
            answer = pbg.ExecutorServiceStub(ch).Lookup(pb.LookupRequest(
                table="db.kv", keys_ipc=ipc(pa.table({"k": pa.array([k for k, _ in keys], pa.int32())})),
                buckets=[b for _, b in keys]), timeout=5)
        assert not answer.failed
        rows = pa.ipc.open_stream(answer.rows_ipc).read_all().to_pylist()
        got.update({row["k"]: row["v"] for row in rows})
    assert got == {k: f"v{k}" for k in range(0, 3000, 7)}
