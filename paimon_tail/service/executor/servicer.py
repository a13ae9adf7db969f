"""``ExecutorService.Lookup`` over gRPC: a request goes to ``Lookups`` (lookups.py), whose answer goes back as is
and whose ``Refused`` becomes the call's status. Nothing else: what an answer holds is decided in lookups.py."""
from __future__ import annotations

import grpc

from ..protocol import lookup_pb2_grpc as pbg
from .lookups import Lookups
from .refusals import Refused, Why

STATUS = {
    Why.INVALID: grpc.StatusCode.INVALID_ARGUMENT,
    Why.NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    Why.UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
    Why.MOVED: grpc.StatusCode.FAILED_PRECONDITION,
    Why.DATA_LOSS: grpc.StatusCode.DATA_LOSS,
    Why.NOT_YET: grpc.StatusCode.DEADLINE_EXCEEDED,
}


class ExecutorServicer(pbg.ExecutorServiceServicer):
    def __init__(self, lookups: Lookups) -> None:
        self.lookups = lookups

    async def Lookup(self, request, context):
        try:
            return await self.lookups.lookup(request, context.time_remaining())
        except Refused as e:
            await context.abort(STATUS[e.why], str(e))


__all__ = ["ExecutorServicer", "STATUS"]
