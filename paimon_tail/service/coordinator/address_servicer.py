"""The coordinator's gRPC face (``AddressService``): clients ask where executors are (``Executors``) and how they
do (``Status``); executors join (``Join``) and receive their assignment and file changes on the same call."""
from __future__ import annotations

import asyncio
import logging
from typing import Callable, Optional

import grpc

from ...storage.retry import Outage
from ..protocol import lookup_pb2 as pb
from ..protocol import lookup_pb2_grpc as pbg
from .lease import ACTIVE, Lease
from .members import Member
from .registry import ExecutorStatus, JoinRefused, Registry
from .scanner import TableLayout

log = logging.getLogger(__name__)

HELLO_TIMEOUT = 10.0


class AddressServicer(pbg.AddressServiceServicer):
    def __init__(self, registry: Registry, address: Callable[[], str], version: str,
                 outage: Callable[[str], Optional[Outage]] = lambda table: None,
                 layout: Callable[[str], TableLayout] = lambda table: TableLayout(),
                 lease: Optional[Lease] = None) -> None:
        self.registry = registry
        self.lease = lease
        self.address = address
        self.version = version
        self.outage = outage
        self.layout = layout

    async def _check_table(self, table: str, context) -> None:
        if table and table not in self.registry.tables:
            await context.abort(grpc.StatusCode.NOT_FOUND,
                                f"table {table} is not served here (serving {', '.join(self.registry.tables)})")

    def standing_by(self) -> Optional[str]:
        """Why this coordinator does not coordinate now (a standby, or one handing over), or None."""
        lease = self.lease
        if lease is None or lease.role == ACTIVE:
            return None
        where = f"; the active coordinator is {lease.active.addresses[0]}" if lease.active is not None and \
            lease.active.addresses else ""
        return f"standing by ({lease.role}){where}"

    async def Executors(self, request, context):
        await self._check_table(request.table, context)
        why = self.standing_by()
        if why is not None:  # clients try the next address (UNAVAILABLE is what they retry)
            await context.abort(grpc.StatusCode.UNAVAILABLE, why)
        return self.registry.executors(request.table, request.protocol_version)

    async def Standby(self, request, context):
        lease = self.lease
        if lease is None or self.standing_by() is not None:
            await context.abort(grpc.StatusCode.UNAVAILABLE, self.standing_by() or "no standbys here")
        reg = self.registry
        if request.warehouse.rstrip("/") != reg.warehouse or sorted(request.tables) != sorted(reg.tables):
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, "a standby must serve the same tables of the "
                                f"same warehouse ({', '.join(reg.tables)} of {reg.warehouse})")
        log.info("standby coordinator at %s (pid %d on %s) joined", request.address, request.pid, request.host)
        queue = lease.standby_joined(request.address)
        try:
            yield lease.news(self.address())
            while True:
                news = await queue.get()
                if news is None:
                    return
                yield news
                if news.handover:
                    await asyncio.sleep(3600)  # held until the standby ends it (it took over)
        finally:
            lease.standby_left(request.address, queue)

    async def Status(self, request, context):
        await self._check_table(request.table, context)
        reg = self.registry
        executors = [_executor_status(e) for e in reg.status(request.table)]
        outage = self.outage(request.table)
        lease = self.lease
        layout = self.layout(request.table)
        return pb.StatusResponse(
            role=lease.role if lease is not None else "active", epoch=lease.epoch if lease is not None else 0,
            standbys=sorted(lease.standbys) if lease is not None else [],
            table=request.table, address=self.address(), started_ms=reg.started_ms,
            num_executors=len(executors), executors=executors, tables=reg.tables, version=self.version,
            storage_error=outage.cause if outage else "",
            storage_error_since_ms=int(outage.since * 1000) if outage else 0,
            channels=reg.assignment.channels, schema_id=layout.schema_id, table_kind=layout.kind,
            buckets=layout.buckets, partitions=layout.partitions, postponed_files=layout.postponed_files,
        )

    async def Join(self, request_iterator, context):
        try:
            first = await asyncio.wait_for(request_iterator.__anext__(), HELLO_TIMEOUT)
        except (StopAsyncIteration, asyncio.TimeoutError):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "bad executor hello: none within "
                                f"{HELLO_TIMEOUT:.0f}s")
        if not first.HasField("hello"):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "bad executor hello: the first message of a "
                                "Join call must be a hello")
        why = self.standing_by()
        hello = first.hello
        if why is not None and not (hello.index >= 0 and hello.service_id == self.registry.service_id):
            await context.abort(grpc.StatusCode.UNAVAILABLE, why)  # (its own executors join it while it stands by)
        try:
            member = self.registry.join(first.hello)
        except JoinRefused as e:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(e))
        peer = context.peer()
        log.info("executor %d joined from %s (%s, pid %d)", member.index, peer, member.address, member.hello.pid)
        reader = asyncio.ensure_future(self._reports(request_iterator, member))
        try:
            while True:
                work = await member.outbox.get()
                if work is None:
                    return
                yield work
                if work.HasField("stop"):
                    return
        finally:
            reader.cancel()
            self.registry.leave(member)
            log.info("executor %d (%s) left", member.index, member.address)

    async def _reports(self, reports, member: Member) -> None:
        try:
            async for report in reports:
                if report.HasField("heartbeat"):
                    self.registry.heartbeat(member, report.heartbeat)
        except (grpc.aio.AioRpcError, asyncio.CancelledError):
            pass
        finally:
            member.end()  # it closed its side: it is leaving


def _executor_status(e: ExecutorStatus) -> pb.ExecutorStatus:
    """The registry's ``ExecutorStatus`` as the proto says it."""
    serving = e.serving
    return pb.ExecutorStatus(
        info=e.info, channels=e.channels, requests_per_second=e.rates[0], keys_per_second=e.rates[1],
        last_heartbeat_ms=e.last_heartbeat_ms, memory_bytes=e.memory_bytes,
        commit_time_ms=serving.commit_time_ms if serving is not None else 0,
        keys=serving.keys if serving is not None else 0,
        buckets=list(serving.buckets) if serving is not None else [],
        schema_id=serving.schema_id if serving is not None else 0,
        files_loaded=serving.files_loaded if serving is not None else 0,
        files=serving.files if serving is not None else 0,
        disk_bytes=serving.disk_bytes if serving is not None else 0,
        settled=serving.settled if serving is not None else False,
    )


__all__ = ["AddressServicer"]
