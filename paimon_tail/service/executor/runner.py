"""An executor's life: serve ``ExecutorService`` on its own port, join the coordinator (``join_loop.py``), and end:
when the service says stop, on ``stop()``, when no coordinator is found in time, or drained (SIGTERM: its
channels handed over to other executors first).

One path for every executor, wherever it runs: serve's own local processes, the tasks of a Spark job and
``paimon-tail executor --join`` on another host all start here through ``entry.py``. What it holds and how the
coordinator's messages change it is ``holding.py``; one Join call ``session.py``; answers ``servicer.py``.
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Callable, Optional

import grpc

from ..protocol import lookup_pb2_grpc as pbg
from ..protocol.addresses import NoAddress, advertised, split_host_port
from ..protocol.executor_spec import ExecutorSpec
from ..protocol.probes import EXECUTOR_SERVICE, Probes
from ..protocol.security import add_port, server_options
from .holding import Holding
from .join_loop import JoinLoop, JoinRefused
from .lookups import Lookups
from .servicer import ExecutorServicer
from .session import Signals

log = logging.getLogger(__name__)


class Executor:
    def __init__(self, spec: ExecutorSpec) -> None:
        self.spec = spec
        self.holding = Holding(spec, uuid.uuid4().hex)
        self.signals = Signals(stop=asyncio.Event(), drain=asyncio.Event())
        self.server: Optional[grpc.aio.Server] = None
        self.address = ""
        self.announce: Optional[Callable[[str], None]] = None  # told when it joins (the executor command prints it)
        self.probes = Probes(EXECUTOR_SERVICE)
        self.join_loop: Optional[JoinLoop] = None
        self._grace = 0.5

    @property
    def index(self) -> int:
        return self.holding.index

    @property
    def stop_reason(self) -> Optional[str]:
        """Why it ended on its own (None: stopped by the service, or by ``stop()``)."""
        return self.join_loop.stop_reason if self.join_loop is not None else None

    async def start(self) -> None:
        spec = self.spec
        self.server = grpc.aio.server(options=server_options(spec.max_message_bytes),
                                      interceptors=spec.security.server_interceptors())
        pbg.add_ExecutorServiceServicer_to_server(ExecutorServicer(Lookups(self.holding)), self.server)
        self.probes.add_to(self.server, [EXECUTOR_SERVICE])
        try:
            port = add_port(self.server, f"{spec.host}:{spec.port}", spec.security)
        except RuntimeError as e:
            port = 0
            why = str(e)
        else:
            why = "the address is in use or not on this machine"
        if not port:
            raise JoinRefused(f"cannot listen on {spec.host}:{spec.port}: {why}")
        try:  # (run() stops the server when this raises)
            first = spec.coordinator.split(",")[0]
            self.address = advertised(spec.host, port, spec.advertise, toward=split_host_port(first)[0])
        except NoAddress as e:
            raise JoinRefused(f"cannot tell clients where to dial this executor (--host {spec.host}): {e}; "
                              "give --advertise HOST") from None
        await self.server.start()

    async def run(self) -> None:
        """Serve until the service says stop, ``stop()`` is called, or (see ``ExecutorSpec.rejoin``) the service is
        gone; raises ``JoinRefused``."""
        signals = self.signals
        try:
            await self.start()
            self.join_loop = JoinLoop(self.holding, self.spec, self.address, self.probes, signals, self.announce)
            joining = asyncio.ensure_future(self.join_loop.run())
            stopping = asyncio.ensure_future(signals.stop.wait())
            draining = asyncio.ensure_future(signals.drain.wait())
            await asyncio.wait({joining, stopping, draining}, return_when=asyncio.FIRST_COMPLETED)
            if draining.done() and not stopping.done() and not joining.done():
                await self._drain_out(joining)
            stopping.cancel()
            draining.cancel()
            if not joining.done():  # stop(): leave the service (it moves our channels at once)
                joining.cancel()
                await asyncio.gather(joining, return_exceptions=True)
            else:
                joining.result()
        finally:
            await self.close()

    async def _drain_out(self, joining: "asyncio.Future") -> None:
        """SIGTERM: NOT_SERVING; the coordinator moves every channel to other executors, each answering here
        until the new owner has it loaded; then calls in flight finish and it leaves. Without a coordinator (or
        after ``drain_timeout``) it leaves as it is."""
        await self.probes.drain()
        holding = self.holding
        holding.draining = True
        waits = {asyncio.ensure_future(holding.released.wait()), asyncio.ensure_future(self.signals.stop.wait())}
        try:
            await asyncio.wait({joining, *waits}, timeout=self.spec.drain_timeout,
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()
        if not holding.released.is_set():
            log.warning("executor %d: leaving without handing its channels over (%s)", self.index,
                        "no coordinator" if joining.done() else f"not done within {self.spec.drain_timeout:.0f}s")
        self._grace = 2.0  # calls in flight finish (new ones are refused)
        self.signals.stop.set()

    def drain(self) -> None:
        """Stop gracefully (SIGTERM)."""
        self.signals.drain.set()

    async def close(self) -> None:
        self.signals.stop.set()
        self.holding.stop_maintenance()
        if self.server is not None:
            await self.server.stop(self._grace)
            self.server = None
        self.holding.close()

    def stop(self) -> None:
        self.signals.stop.set()


__all__ = ["Executor", "JoinRefused"]
