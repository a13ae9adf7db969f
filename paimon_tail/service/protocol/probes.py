"""What operators' tools expect of a gRPC port: ``grpc.health.v1`` and server reflection.

Every gRPC server of the service (the coordinator's ``AddressService``, each executor's ``ExecutorService``) gets
both. Health names, the same on every port (Kubernetes' ``grpc`` probes, load balancers, ``grpc_health_probe``):

* ``""`` (overall) and the port's own service (``paimon_tail.lookup.v1.AddressService`` /
  ``…ExecutorService``): SERVING once ready — a coordinator when it is the active one and every channel is held
  by an executor that loaded it; an executor when every channel it owns is loaded — and NOT_SERVING before, while
  standing by, and from the moment a drain (SIGTERM) starts. A readiness probe.
* ``liveness``: SERVING for as long as the process runs (a standby, a draining process and one still loading are
  alive: a liveness probe must not restart them).

Health is answered without the bearer token (probes cannot send one; it says nothing but the status). Reflection
(``grpc.reflection.v1alpha``, what ``grpcurl`` and Postman ask) needs the token like every other call when the
service has one (``grpcurl -H 'authorization: Bearer …'``).
"""
from __future__ import annotations

from typing import Iterable, Optional

import grpc

HEALTH_SERVICE = "grpc.health.v1.Health"
HEALTH_PREFIX = f"/{HEALTH_SERVICE}/"
LIVENESS = "liveness"
ADDRESS_SERVICE = "paimon_tail.lookup.v1.AddressService"
EXECUTOR_SERVICE = "paimon_tail.lookup.v1.ExecutorService"


class Probes:
    """The health servicer of one server, and whether it reports SERVING."""

    def __init__(self, service: str) -> None:
        from grpc_health.v1 import health_pb2
        from grpc_health.v1.health import aio

        self.service = service
        self._pb = health_pb2
        self._servicer = aio.HealthServicer()
        self._servicer._server_status.update({  # (set() is a coroutine; nothing is watching yet)
            "": health_pb2.HealthCheckResponse.NOT_SERVING,
            service: health_pb2.HealthCheckResponse.NOT_SERVING,
            LIVENESS: health_pb2.HealthCheckResponse.SERVING,
        })
        self.serving: Optional[bool] = False
        self.draining = False

    def add_to(self, server: grpc.aio.Server, services: Iterable[str]) -> None:
        """Health and reflection on ``server``, which serves ``services`` (full names)."""
        from grpc_health.v1 import health_pb2_grpc
        from grpc_reflection.v1alpha import reflection

        health_pb2_grpc.add_HealthServicer_to_server(self._servicer, server)
        reflection.enable_server_reflection([*services, HEALTH_SERVICE, reflection.SERVICE_NAME], server)

    async def set_serving(self, serving: bool) -> None:
        """Readiness; once draining it stays NOT_SERVING."""
        serving = serving and not self.draining
        if serving == self.serving:
            return
        self.serving = serving
        status = self._pb.HealthCheckResponse.SERVING if serving else self._pb.HealthCheckResponse.NOT_SERVING
        for name in ("", self.service):
            await self._servicer.set(name, status)

    async def drain(self) -> None:
        """NOT_SERVING for good (readiness); still alive."""
        await self.set_serving(False)
        self.draining = True

    def status(self, name: str = "") -> int:
        return self._servicer._server_status.get(name, self._pb.HealthCheckResponse.SERVICE_UNKNOWN)


def is_health_call(method: Optional[str]) -> bool:
    return bool(method) and method.startswith(HEALTH_PREFIX)


__all__ = ["ADDRESS_SERVICE", "EXECUTOR_SERVICE", "HEALTH_SERVICE", "LIVENESS", "Probes", "is_health_call"]
