"""The address server: executors register and heartbeat; clients ask where executors are and how they do."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

import grpc

from ..storage.retry import Outage
from . import lookup_pb2 as pb
from . import lookup_pb2_grpc as pbg

PROTOCOL_VERSION = 1
ASSIGNMENT = "paimon-channel-computer"


@dataclass
class ExecutorRecord:
    index: int
    address: str = ""
    pid: int = 0
    instance_id: str = ""
    registered: float = 0.0
    last_heartbeat: float = 0.0  # time.monotonic()
    last_heartbeat_ms: int = 0
    tables: Dict[str, pb.TableServing] = field(default_factory=dict)
    requests: int = 0
    keys: int = 0
    restarts: int = -1
    rates: Tuple[float, float] = (0.0, 0.0)
    _prev: Optional[Tuple[float, int, int]] = None

    def alive(self, timeout: float, now: Optional[float] = None) -> bool:
        now = time.monotonic() if now is None else now
        return bool(self.address) and now - self.last_heartbeat <= timeout


class Registry:
    def __init__(self, num_executors: int, tables: List[str], heartbeat_timeout: float = 2.0) -> None:
        self.num_executors = num_executors
        self.tables = list(tables)
        self.heartbeat_timeout = heartbeat_timeout
        self.executors = [ExecutorRecord(i) for i in range(num_executors)]
        self.started_ms = int(time.time() * 1000)

    def forget(self, index: int) -> None:
        """The supervisor killed or lost this executor: stop routing to it until it registers again."""
        rec = self.executors[index]
        rec.address = ""
        rec.instance_id = ""
        rec.tables = {}

    def register(self, req: pb.RegisterRequest) -> None:
        rec = self.executors[req.executor_index]
        rec.address, rec.pid, rec.instance_id = req.address, req.pid, req.instance_id
        rec.registered = rec.last_heartbeat = time.monotonic()
        rec.last_heartbeat_ms = int(time.time() * 1000)
        rec.tables = {}
        rec.restarts += 1
        rec._prev = None

    def heartbeat(self, req: pb.HeartbeatRequest) -> bool:
        if not 0 <= req.executor_index < self.num_executors:
            return False
        rec = self.executors[req.executor_index]
        if rec.instance_id != req.instance_id or not rec.address:
            return False
        now = time.monotonic()
        rec.last_heartbeat = now
        rec.last_heartbeat_ms = int(time.time() * 1000)
        rec.tables = {t.table: t for t in req.tables}
        if rec._prev is not None and now - rec._prev[0] > 0.05:
            dt = now - rec._prev[0]
            rec.rates = ((req.requests - rec._prev[1]) / dt, (req.keys_looked_up - rec._prev[2]) / dt)
        if rec._prev is None or now - rec._prev[0] >= 1.0:
            rec._prev = (now, req.requests, req.keys_looked_up)
        rec.requests, rec.keys = req.requests, req.keys_looked_up
        return True

    def info(self, rec: ExecutorRecord, table: str) -> pb.ExecutorInfo:
        serving = rec.tables.get(table)
        return pb.ExecutorInfo(
            index=rec.index, address=rec.address, alive=rec.alive(self.heartbeat_timeout),
            snapshot_id=serving.snapshot_id if serving is not None else 0, pid=rec.pid,
            instance_id=rec.instance_id, restarts=max(0, rec.restarts),
        )


class AddressServicer(pbg.AddressServiceServicer):
    def __init__(self, registry: Registry, address: Callable[[], str], max_batch_keys: int,
                 max_message_bytes: int, version: str,
                 outage: Callable[[str], Optional[Outage]] = lambda table: None) -> None:
        self.registry = registry
        self.outage = outage
        self.address = address
        self.max_batch_keys = max_batch_keys
        self.max_message_bytes = max_message_bytes
        self.version = version

    async def _check_table(self, table: str, context) -> None:
        if table and table not in self.registry.tables:
            await context.abort(grpc.StatusCode.NOT_FOUND,
                                f"table {table} is not served here (serving {', '.join(self.registry.tables)})")

    async def Register(self, request, context):
        if not 0 <= request.executor_index < self.registry.num_executors or not request.address:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "bad executor index or address")
        self.registry.register(request)
        return pb.RegisterResponse(num_executors=self.registry.num_executors, heartbeat_interval_ms=500)

    async def Heartbeat(self, request, context):
        return pb.HeartbeatResponse(known=self.registry.heartbeat(request))

    async def Executors(self, request, context):
        await self._check_table(request.table, context)
        reg = self.registry
        return pb.ExecutorsResponse(
            protocol_version=PROTOCOL_VERSION, num_executors=reg.num_executors,
            executors=[reg.info(rec, request.table) for rec in reg.executors], assignment=ASSIGNMENT,
            max_batch_keys=self.max_batch_keys, max_message_bytes=self.max_message_bytes, tables=reg.tables,
        )

    async def Status(self, request, context):
        await self._check_table(request.table, context)
        reg = self.registry
        out = []
        for rec in reg.executors:
            serving = rec.tables.get(request.table)
            out.append(pb.ExecutorStatus(
                info=reg.info(rec, request.table),
                commit_time_ms=serving.commit_time_ms if serving is not None else 0,
                keys=serving.keys if serving is not None else 0,
                buckets=list(serving.buckets) if serving is not None else [],
                requests_per_second=rec.rates[0], keys_per_second=rec.rates[1],
                last_heartbeat_ms=rec.last_heartbeat_ms,
            ))
        outage = self.outage(request.table)
        return pb.StatusResponse(
            table=request.table, address=self.address(), started_ms=reg.started_ms,
            num_executors=reg.num_executors, executors=out, tables=reg.tables, version=self.version,
            storage_error=outage.cause if outage else "",
            storage_error_since_ms=int(outage.since * 1000) if outage else 0,
        )
