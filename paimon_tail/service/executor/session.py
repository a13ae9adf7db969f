"""One Join call of an executor: its hello and heartbeats go up, the coordinator's messages come down and are
applied, in order, one at a time, to what it holds (``holding.py``).

On that one stream it receives a welcome (its index and tables), its assignment of channels, and for each table a
full state and one delta per snapshot; the active and standby coordinators of the moment when they change; and
at the end a ``Stop`` (one with ``rejoin``: a handover, go to the new active). A welcome from a coordinator of a
lower epoch than one it followed is refused (``Deposed``).
"""
from __future__ import annotations

import asyncio
import logging
import os
import socket
from dataclasses import dataclass, field
from typing import Callable, List, Optional

from ..protocol import PROTOCOL_VERSION
from ..protocol import lookup_pb2 as pb
from ..protocol import lookup_pb2_grpc as pbg
from ..protocol.executor_spec import ExecutorSpec
from ..protocol.probes import Probes
from ..protocol.security import make_channel
from .holding import Holding

log = logging.getLogger(__name__)


class Rejoin(Exception):
    """The coordinator handed over: join the new active."""


class Deposed(Exception):
    """The coordinator has a lower epoch than one this executor followed: another took over from it."""


@dataclass
class Following:
    """The coordinators an executor knows of, kept from one Join call to the next."""

    epoch: int = 0  # the highest coordinator epoch followed
    coordinators: List[str] = field(default_factory=list)  # the active and standbys, as the coordinator last said
    coordinator: str = ""  # the address of the coordinator it follows (or followed last)
    next: str = ""  # where a handover sent it
    interval: float = 0.5  # between heartbeats, as the coordinator asked


@dataclass
class Signals:
    """What ends an executor's heartbeats: ``stop`` (now), ``drain`` (SIGTERM: said in the next heartbeat)."""

    stop: asyncio.Event
    drain: asyncio.Event


class Session:
    """One Join call to one coordinator (see the module's docstring)."""

    def __init__(self, holding: Holding, following: Following, spec: ExecutorSpec, address: str, probes: Probes,
                 signals: Signals, announce: Optional[Callable[[str], None]]) -> None:
        self.holding = holding
        self.following = following
        self.spec = spec
        self.address = address  # where clients dial this executor
        self.probes = probes
        self.signals = signals
        self.announce = announce
        self.joined = False  # the coordinator sent something on this call

    async def run(self, coordinator: str) -> bool:
        """One Join call to ``coordinator``; True when the service said stop."""
        spec = self.spec
        channel = make_channel(coordinator, spec.security, spec.max_message_bytes)
        self.following.coordinator = coordinator
        try:
            call = pbg.AddressServiceStub(channel).Join(self._reports(), metadata=spec.security.metadata())
            async for work in call:
                self.joined = True
                if not await self._apply(work):
                    return True
            return False
        finally:
            await channel.close(grace=None)

    async def _reports(self):
        spec, holding, signals = self.spec, self.holding, self.signals
        yield pb.ExecutorReport(hello=pb.ExecutorHello(
            address=self.address, pid=os.getpid(), instance_id=holding.instance_id, index=spec.index,
            host=socket.gethostname(), protocol_version=PROTOCOL_VERSION,
            warehouse=spec.catalog.warehouse_id, service_id=spec.service_id))
        while not signals.stop.is_set():
            waits = [asyncio.ensure_future(signals.stop.wait())]
            if not holding.draining:  # a drain is said at once, not at the next beat
                waits.append(asyncio.ensure_future(signals.drain.wait()))
            await asyncio.wait(waits, timeout=self.following.interval, return_when=asyncio.FIRST_COMPLETED)
            for w in waits:
                w.cancel()
            if signals.drain.is_set():
                holding.draining = True
            await self.probes.set_serving(holding.ready())
            yield pb.ExecutorReport(heartbeat=holding.heartbeat())

    async def _apply(self, work: pb.ExecutorWork) -> bool:
        """Apply one message; False when it says stop."""
        kind = work.WhichOneof("kind")
        holding = self.holding
        if kind == "welcome":
            await self._welcome(work.welcome)
        elif kind == "assignment":
            holding.assign(work.assignment)
        elif kind == "full":
            await holding.full(work.full)
        elif kind == "delta":
            await holding.delta(work.delta)
        elif kind == "coordinators":
            self.following.coordinators = list(work.coordinators.addresses)
        elif kind == "stop":
            if work.stop.rejoin:  # a handover: on to the new active, answering meanwhile
                log.info("executor %d: %s; re-joining", holding.index, work.stop.reason)
                self.following.next = work.stop.coordinator
                raise Rejoin()
            log.info("executor %d: the service says stop (%s)", holding.index, work.stop.reason)
            return False
        return True

    async def _welcome(self, welcome: pb.Welcome) -> None:
        following, holding = self.following, self.holding
        if welcome.epoch < following.epoch:
            raise Deposed(f"epoch {welcome.epoch} < {following.epoch}")
        following.epoch = welcome.epoch
        following.coordinators = list(welcome.coordinators)
        holding.index = welcome.index
        following.interval = max(0.05, welcome.heartbeat_interval_ms / 1000)
        holding.max_batch_keys = welcome.max_batch_keys or holding.max_batch_keys
        if self.announce is not None:
            self.announce(f"executor {holding.index} joined the service at {following.coordinator} serving "
                          f"{', '.join(welcome.tables)}; lookups at {self.address}")
        await holding.open(welcome.tables)


__all__ = ["Deposed", "Following", "Rejoin", "Session", "Signals"]
