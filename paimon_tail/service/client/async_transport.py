"""The async transport: grpc.aio channels of the running event loop, calls gathered, at most ``max_in_flight`` at
once. It carries what the core plans (``carry``: discover → plan → send → absorb → settle, retried by the one
policy) and nothing else: routing, requests, answers and errors are the core's, as for the sync transport."""
from __future__ import annotations

import asyncio
from typing import Any, Dict, Optional

import grpc

from ..protocol import DEFAULT_MAX_MESSAGE_BYTES
from ..protocol import lookup_pb2 as pb
from ..protocol import lookup_pb2_grpc as pbg
from ..protocol.security import Security, make_channel
from .call_failures import address_failure, status_error, unreachable_error
from .call_plan import Call
from .deadline import Again, Deadline, retrying, run_async
from .discovery import Discovery, discovery_deadline
from .route import Route


class AsyncTransport:
    def __init__(self, discovery: Discovery, security: Security, max_in_flight: int = 64) -> None:
        self.discovery = discovery
        self.security = security
        self.max_in_flight = max(1, max_in_flight)
        self._metadata = security.metadata()
        self._channels: Dict[str, grpc.aio.Channel] = {}
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._sem: Optional[asyncio.Semaphore] = None

    def channel(self, address: str) -> grpc.aio.Channel:
        ch = self._channels.get(address)
        if ch is None:
            ch = make_channel(address, self.security, DEFAULT_MAX_MESSAGE_BYTES)
            self._channels[address] = ch
        return ch

    async def drop_channel(self, address: str) -> None:
        ch = self._channels.pop(address, None)
        if ch is not None:
            await ch.close(grace=None)

    def bind_loop(self) -> None:
        """Channels and the semaphore belong to one loop: a new running loop starts them afresh."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop = loop
            self._channels = {}
            self._sem = asyncio.Semaphore(self.max_in_flight)

    async def discover(self, deadline: Deadline, force: bool = False) -> Route:
        """The coordinator's current routing (cached until a lookup needs a fresh one)."""
        d = self.discovery
        if d.route is not None and not force:
            return d.route
        self.bind_loop()
        seen = [await asyncio.to_thread(d.registration, deadline)]
        within = discovery_deadline(seen[0], deadline)

        async def attempt() -> Route:
            reg = seen[-1]
            last = "no address"
            for address in [*reg.addresses, *reg.standbys]:
                try:
                    resp = await pbg.AddressServiceStub(self.channel(address)).Executors(
                        d.executors_request(), timeout=max(0.05, min(1.0, within.left())), metadata=self._metadata,
                        wait_for_ready=False)
                except grpc.aio.AioRpcError as e:
                    last, drop = address_failure(e, address)
                    if drop:
                        await self.drop_channel(address)
                    continue
                return d.routed(reg, resp)
            route = d.routed(reg, None)
            if route is not None:
                return route
            seen.append(await asyncio.to_thread(d.registration))  # a standby may have taken over
            raise Again(last)

        return await run_async(attempt, lambda: retrying(within, lambda why: unreachable_error(d.name, seen[-1], why)))

    async def send(self, call: Call) -> Any:
        """The call's ``LookupResponse`` or its ``grpc.aio.AioRpcError``."""
        stub = pbg.ExecutorServiceStub(self.channel(call.address))
        try:
            async with self._sem:
                return await stub.Lookup(call.request, timeout=call.timeout, metadata=self._metadata)
        except grpc.aio.AioRpcError as e:
            return e

    async def carry(self, op):
        """Attempts of ``op`` (a ``Lookup`` or a ``OneKey``) until it settles: its calls at once, their outcomes
        absorbed, retried by the one policy; its result."""
        self.bind_loop()

        async def attempt() -> None:
            route = await self.discover(op.deadline, force=op.attempts > 0)
            calls = op.plan(route)
            outcomes = [await self.send(calls[0])] if len(calls) == 1 else \
                await asyncio.gather(*[self.send(c) for c in calls])
            for call, outcome in zip(calls, outcomes):
                if op.absorb(call, outcome):
                    await self.drop_channel(call.address)
            op.settle()

        await run_async(attempt, lambda: retrying(op.deadline, op.give_up))
        return op.result()

    async def status(self, deadline: Deadline) -> pb.StatusResponse:
        route = await self.discover(deadline, force=True)
        address = route.registration.addresses[0]
        try:
            return await pbg.AddressServiceStub(self.channel(address)).Status(
                pb.StatusRequest(table=self.discovery.name), timeout=max(0.1, deadline.left()),
                metadata=self._metadata)
        except grpc.aio.AioRpcError as e:
            raise status_error(e, address) from None

    async def close(self) -> None:
        channels, self._channels = self._channels, {}
        for ch in channels.values():
            await ch.close(grace=None)

    def forget(self) -> None:
        """Drop the channels of a loop that is gone (nothing left to await them on)."""
        if self._channels:
            self._channels = {}


__all__ = ["AsyncTransport"]
