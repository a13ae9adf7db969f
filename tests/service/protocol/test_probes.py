"""What operators' tools ask of every gRPC port: ``grpc.health.v1`` (Kubernetes probes, load balancers) and server
reflection (grpcurl, Postman), against a real ``serve`` with a token, through real grpc clients. The reflection
checks do what grpcurl does: list the services, describe a method, build its request from the reflected
descriptors alone (no generated code) and call it."""
from __future__ import annotations

import json
import os

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from paimon_tail.catalog import catalog_config
from paimon_tail.service.client import LookupClient
from paimon_tail.service.protocol.security import Security

from tests.service.conftest import PLAIN_SCHEMA, ServeProcess, Warehouse

TOKEN = "pr0be-t0ken"
SERVING, NOT_SERVING = health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    wh = Warehouse(str(tmp_path_factory.mktemp("probes")))
    wh.create("kv", PLAIN_SCHEMA, primary_keys=["k"], bucket=4)
    wh.write("kv", [{"k": k, "v": f"v{k}", "op": "+I"} for k in range(100)])
    svc = ServeProcess(wh.path, ["db.kv"], env={"PAIMON_TAIL_TOKEN": TOKEN}).wait_ready()
    try:
        reg = json.load(open(os.path.join(wh.path, "db.db", "kv", "service", "service-paimon-tail-lookup")))
        with LookupClient("db.kv", catalog_config(wh.path), security=Security(token=TOKEN)) as c:
            executors = [e.address for e in c.executors_sync().executors]
        yield wh, reg["addresses"][0], executors
    finally:
        assert svc.stop() == 0


def _check(address: str, service: str):
    with grpc.insecure_channel(address) as ch:  # no token: probes cannot send one
        return health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status


def test_health_on_every_port_without_the_token(served):
    _, coordinator, executors = served
    assert len(executors) == 2
    assert _check(coordinator, "") == SERVING
    assert _check(coordinator, "paimon_tail.lookup.v1.AddressService") == SERVING
    assert _check(coordinator, "liveness") == SERVING
    for address in executors:
        assert _check(address, "") == SERVING
        assert _check(address, "paimon_tail.lookup.v1.ExecutorService") == SERVING
        assert _check(address, "liveness") == SERVING
    with pytest.raises(grpc.RpcError) as unknown:
        _check(coordinator, "no.such.Service")
    assert unknown.value.code() == grpc.StatusCode.NOT_FOUND
    # a Watch stream (what grpc_health_probe and Envoy use) gets the current status first
    with grpc.insecure_channel(executors[0]) as ch:
        stream = health_pb2_grpc.HealthStub(ch).Watch(health_pb2.HealthCheckRequest(service=""), timeout=5)
        assert next(stream).status == SERVING
        stream.cancel()


def _services(address: str, metadata=()) -> list:
    with grpc.insecure_channel(address) as ch:
        stub = reflection_pb2_grpc.ServerReflectionStub(ch)
        answers = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]),
                                            metadata=metadata, timeout=5)
        return sorted(s.name for a in answers for s in a.list_services_response.service)


def test_reflection_lists_describes_and_calls_like_grpcurl(served):
    _, coordinator, executors = served
    # without the token: refused like every call but health
    with pytest.raises(grpc.RpcError) as refused:
        _services(coordinator)
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    auth = (("authorization", f"Bearer {TOKEN}"),)
    assert _services(coordinator, auth) == ["grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection",
                                            "paimon_tail.lookup.v1.AddressService",
                                            "paimon_tail.lookup.v1.ExecutorService"]
    assert _services(executors[0], auth) == ["grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection",
                                             "paimon_tail.lookup.v1.ExecutorService"]

    # grpcurl describe + call, from the reflected descriptors only
    from google.protobuf import descriptor_pool, json_format, message_factory

    with grpc.insecure_channel(coordinator) as ch:
        class Authed(grpc.StreamStreamClientInterceptor):  # grpcurl -H 'authorization: Bearer …'
            def intercept_stream_stream(self, continuation, details, requests):
                return continuation(details._replace(metadata=auth), requests)

        db = ProtoReflectionDescriptorDatabase(grpc.intercept_channel(ch, Authed()))
        pool = descriptor_pool.DescriptorPool(db)
        service = pool.FindServiceByName("paimon_tail.lookup.v1.AddressService")
        assert {m.name for m in service.methods} == {"Executors", "Status", "Join", "Standby"}
        method = service.FindMethodByName("Executors")
        request_class = message_factory.GetMessageClass(method.input_type)
        response_class = message_factory.GetMessageClass(method.output_type)
        call = ch.unary_unary(f"/{service.full_name}/{method.name}", request_serializer=request_class.SerializeToString,
                              response_deserializer=response_class.FromString)
        answer = json_format.MessageToDict(call(json_format.ParseDict({"table": "db.kv", "protocolVersion": 2},
                                                                      request_class()), metadata=auth, timeout=5))
        # grpcurl -d '{"table": "db.kv", "key": [{"int": 7}, ...], "rowValues": true}' COORDINATOR .../Lookup:
        # plain JSON keys, no bucket, the one registered address; the coordinator routes them
        lookups = pool.FindServiceByName("paimon_tail.lookup.v1.ExecutorService").FindMethodByName("Lookup")
        request_class = message_factory.GetMessageClass(lookups.input_type)
        response_class = message_factory.GetMessageClass(lookups.output_type)
        lookup = ch.unary_unary(f"/{lookups.containing_service.full_name}/Lookup",
                                request_serializer=request_class.SerializeToString,
                                response_deserializer=response_class.FromString)
        rows = json_format.MessageToDict(lookup(json_format.ParseDict(
            {"table": "db.kv", "key": [{"int": 7}, {"int": 1000}, {"int": 42}], "rowValues": True}, request_class()),
            metadata=auth, timeout=10))
    assert answer["channels"] == 16 and sorted(e["address"] for e in answer["executors"]) == sorted(executors)
    assert rows["found"] == [0, 2] and rows["columns"] == ["k", "v", "op"] and rows["snapshotId"] == "1"
    assert [v.get("int") or v.get("text") for v in rows["values"]] == ["7", "v7", "+I", "42", "v42", "+I"]
