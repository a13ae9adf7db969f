"""The sync transport: plain (thread-safe) grpc channels used from the caller's thread, no event loop. It carries
what the core plans (``carry``: discover → plan → send → absorb → settle, retried by the one policy) and nothing
else: routing, requests, answers and errors are the core's. Calls to several executors go as ``.future()`` calls at
once; concurrent one-key calls to one executor share calls (``coalesce.py``). Imports no pyarrow, so the command
line's few keys (``few_keys.py``) send through it too."""
from __future__ import annotations

import threading
from typing import Any, Dict, List, Optional, Sequence

import grpc

from ..protocol import DEFAULT_MAX_MESSAGE_BYTES
from ..protocol import lookup_pb2 as pb
from ..protocol import lookup_pb2_grpc as pbg
from ..protocol.security import Security, make_sync_channel
from .call_failures import address_failure, status_error, unreachable_error
from .call_plan import Call
from .coalesce import Coalescer
from .deadline import Again, Deadline, retrying, run_sync
from .discovery import Discovery, discovery_deadline
from .route import Route


class SyncTransport:
    def __init__(self, discovery: Discovery, security: Security, max_in_flight: int = 64,
                 coalescer: Optional[Coalescer] = None) -> None:
        self.discovery = discovery
        self.security = security
        self.max_in_flight = max(1, max_in_flight)
        self.coalescer = coalescer
        self._metadata = security.metadata()
        self._channels: Dict[str, grpc.Channel] = {}
        self._stubs: Dict[str, pbg.ExecutorServiceStub] = {}
        self._lock = threading.Lock()

    def channel(self, address: str) -> grpc.Channel:
        ch = self._channels.get(address)
        if ch is None:
            with self._lock:
                ch = self._channels.get(address)
                if ch is None:
                    ch = make_sync_channel(address, self.security, DEFAULT_MAX_MESSAGE_BYTES)
                    self._channels[address] = ch
        return ch

    def stub(self, address: str) -> pbg.ExecutorServiceStub:
        stub = self._stubs.get(address)
        if stub is None:
            stub = pbg.ExecutorServiceStub(self.channel(address))
            self._stubs[address] = stub
        return stub

    def drop_channel(self, address: str) -> None:
        with self._lock:
            ch = self._channels.pop(address, None)
            self._stubs.pop(address, None)
        if ch is not None:
            ch.close()

    def executors(self, address: str, timeout: float) -> pb.ExecutorsResponse:
        """One ``Executors`` call to the address server at ``address`` (raises ``grpc.RpcError``)."""
        return pbg.AddressServiceStub(self.channel(address)).Executors(
            self.discovery.executors_request(), timeout=timeout, metadata=self._metadata)

    def discover(self, deadline: Deadline, force: bool = False) -> Route:
        """The coordinator's current routing (cached until a lookup needs a fresh one)."""
        d = self.discovery
        route = d.route
        if route is not None and not force:
            return route
        seen = [d.registration(deadline)]
        within = discovery_deadline(seen[0], deadline)

        def attempt() -> Route:
            reg = seen[-1]
            last = "no address"
            for address in [*reg.addresses, *reg.standbys]:
                try:
                    resp = self.executors(address, max(0.05, min(1.0, within.left())))
                except grpc.RpcError as e:
                    last, drop = address_failure(e, address)
                    if drop:
                        self.drop_channel(address)
                    continue
                return d.routed(reg, resp)
            route = d.routed(reg, None)
            if route is not None:
                return route
            seen.append(d.registration())  # a standby may have taken over
            raise Again(last)

        return run_sync(attempt, lambda: retrying(within, lambda why: unreachable_error(d.name, seen[-1], why)))

    def send(self, calls: Sequence[Call]) -> List[Any]:
        """Each call's ``LookupResponse`` or ``grpc.RpcError``, in order: one call inline, several as futures (at
        most ``max_in_flight`` at once)."""
        md = self._metadata
        if len(calls) == 1:
            call = calls[0]
            try:
                return [self.stub(call.address).Lookup(call.request, timeout=call.timeout, metadata=md)]
            except grpc.RpcError as e:
                return [e]
        outcomes: List[Any] = []
        for w in range(0, len(calls), self.max_in_flight):
            wave = [(c, self.stub(c.address).Lookup.future(c.request, timeout=c.timeout, metadata=md))
                    for c in calls[w:w + self.max_in_flight]]
            for _, future in wave:
                try:
                    outcomes.append(future.result())
                except grpc.RpcError as e:
                    outcomes.append(e)
        return outcomes

    def attempt(self, op, route: Route) -> None:
        """One attempt of ``op`` (a ``Lookup``, ``OneKey`` or ``FewKeys``) over ``route``: its calls sent, their
        outcomes absorbed."""
        calls = op.plan(route)
        for call, outcome in zip(calls, self.send(calls)):
            if op.absorb(call, outcome):
                self.drop_channel(call.address)

    def carry(self, op):
        """Attempts of ``op`` until it settles, retried by the one policy; its result."""
        def attempt() -> None:
            self.attempt(op, self.discover(op.deadline, force=op.attempts > 0))
            op.settle()

        run_sync(attempt, lambda: retrying(op.deadline, op.give_up))
        return op.result()

    def get(self, op):
        """``carry`` for a ``OneKey``: concurrent threads asking one executor share calls (``coalesce.py``)."""
        def attempt() -> None:
            route = self.discover(op.deadline, force=op.attempts > 0)
            calls = op.plan(route)
            if calls:
                call = calls[0]
                if self.coalescer is not None and route.shared_calls and not op.min_snapshot and \
                        len(call.request.key):
                    outcome = self.coalescer.send(call, self.stub)
                else:
                    try:
                        outcome = self.stub(call.address).Lookup(call.request, timeout=call.timeout,
                                                                  metadata=self._metadata or None)
                    except grpc.RpcError as e:
                        outcome = e
                if op.absorb(call, outcome):
                    self.drop_channel(call.address)
            op.settle()

        run_sync(attempt, lambda: retrying(op.deadline, op.give_up))
        return op.result()

    def status(self, deadline: Deadline) -> pb.StatusResponse:
        route = self.discover(deadline, force=True)
        address = route.registration.addresses[0]
        try:
            return pbg.AddressServiceStub(self.channel(address)).Status(
                pb.StatusRequest(table=self.discovery.name), timeout=max(0.1, deadline.left()),
                metadata=self._metadata)
        except grpc.RpcError as e:
            raise status_error(e, address) from None

    def close(self) -> None:
        with self._lock:
            channels, self._channels, self._stubs = self._channels, {}, {}
        for ch in channels.values():
            ch.close()


__all__ = ["SyncTransport"]
