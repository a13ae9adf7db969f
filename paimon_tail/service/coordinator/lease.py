"""Who coordinates a service: this ``serve`` (active) or another one (then this one stands by), and the
registration file that says so (``protocol/registration.py``: a lease with an epoch, always written conditionally).

* Start: a live registration of another process makes this ``serve`` a standby; otherwise it claims the file with
  ``epoch + 1`` (a conditional write: of two that start at once, one wins, the other stands by).
* Standing by: it holds ``AddressService.Standby`` open to the active, which lists it in the registration
  (``standbys``) and tells its executors. It takes over — a conditional write of ``epoch + 1`` over the version it
  read — when the active hands over (drains), when the active's address refuses connections (the process is
  gone: at once), or when the active's lease expired (a hung or cut-off active). A takeover it loses to another
  standby leaves it standing by behind the winner.
* Active: every renewal is conditional on the version it wrote last. Finding another's file means it was
  deposed (its lease ran out while it could not renew, and a standby took over): it steps down and stands by.
"""
from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import time
from typing import Callable, Dict, List, Optional

import grpc

from ..protocol import lookup_pb2 as pb
from ..protocol import lookup_pb2_grpc as pbg
from ..protocol import registration as regmod
from ..protocol.addresses import split_host_port
from ..protocol.security import Security, make_channel

log = logging.getLogger(__name__)

ACTIVE, STANDBY, DRAINING, STOPPED = "active", "standby", "draining", "stopped"


class Lease:
    def __init__(self, tables: Dict[str, object], service_id: str, security: Security, lease_seconds: float,
                 build: Callable[[], regmod.Registration], announce: Callable[[str], None] = lambda m: None) -> None:
        self.tables = tables
        self.service_id = service_id
        self.security = security
        self.lease_seconds = lease_seconds
        self.build = build  # this service's registration (epoch and standbys filled in here)
        self.announce = announce
        self.role = STANDBY
        self.epoch = 0
        self.versions: Dict[str, object] = {}
        self.active: Optional[regmod.Registration] = None  # whom this standby stands behind
        self.seen: Optional[regmod.Registration] = None  # a registration found at the start (live or not)
        self.standbys: Dict[str, "asyncio.Queue[pb.StandbyNews]"] = {}  # (active) standbys holding Standby
        self.on_change: List[Callable[[], None]] = []  # role or standbys changed
        self.became_active = asyncio.Event()
        self.on_claim: Callable[[Optional[regmod.Registration]], None] = lambda previous: None  # before the write
        self._handed_over = False
        self._writing = threading.Lock()
        self._released = False  # a renewal still in its thread when the service stopped must not write again

    # -- the file -----------------------------------------------------------------------------------------
    def observe(self) -> Optional[regmod.Registration]:
        """Read every table's registration (in a thread); the live one of another process, if any."""
        other = None
        for name, table in self.tables.items():
            reg, version = regmod.read_versioned(table)
            self.versions[name] = version
            if reg is not None:
                self.seen = self.seen or reg
                self.epoch = max(self.epoch, reg.epoch)
                if reg.service_id != self.service_id and reg.is_live() and not dead_local(reg) and other is None:
                    other = reg
        return other

    def registration(self) -> regmod.Registration:
        reg = self.build()
        reg.epoch = self.epoch
        reg.standbys = sorted(self.standbys)
        return reg

    def _write_all(self) -> None:
        """Conditional writes of every table's registration; raises ``regmod.Conflict``. One writer at a time in
        this process (two renewals racing each other would each see the other's file as a takeover)."""
        with self._writing:
            if self._released:
                return
            reg = self.registration()
            for name, table in self.tables.items():
                self.versions[name] = regmod.write_if(table, reg, self.versions.get(name))

    def claim(self, previous: Optional[regmod.Registration]) -> bool:
        """Become the active coordinator (in a thread): ``epoch + 1``, written over what was read. False when
        another got there first (then ``observe`` again)."""
        epoch = self.epoch
        self.epoch = epoch + 1
        try:
            self._write_all()
        except regmod.Conflict:
            self.epoch = epoch
            return False
        self.role = ACTIVE
        self.active = None
        if previous is not None:
            self.announce(f"took over {', '.join(self.tables)} from {previous.describe()} (epoch {self.epoch})")
        return True

    def renew(self) -> bool:
        """Refresh the registration (in a thread); False: another coordinator holds it now (deposed)."""
        try:
            self._write_all()
        except regmod.Conflict:
            return False
        return True

    def release(self) -> None:
        """A clean stop without a standby: remove the registration if it is still ours. Under the writers' lock, and
        for good: a renewal whose thread outlived its cancelled task would otherwise write the file back."""
        with self._writing:
            self._released = True
            for name, table in self.tables.items():
                try:
                    regmod.remove_if_ours(table, self.versions.get(name))
                except Exception as e:  # noqa: BLE001 - best effort: the lease expires anyway
                    log.warning("could not remove the registration of %s: %s", name, e)

    def changed(self) -> None:
        for callback in self.on_change:
            callback()

    # -- standing by --------------------------------------------------------------------------------------
    async def stand_by(self, hello: pb.StandbyHello) -> None:
        """Until this service is the active one: follow the active, take over when it is gone or hands over."""
        self.role = STANDBY
        self.became_active.clear()
        self.changed()
        while True:
            previous = self.active
            other = await asyncio.to_thread(self.observe)
            if other is None:  # no live registration (expired, removed, or its process is dead)
                previous = previous or self.seen
                self.on_claim(previous)
                if await asyncio.to_thread(self.claim, previous):
                    break
                continue
            if previous is None or other.service_id != previous.service_id:
                self.announce(f"standing by for {', '.join(self.tables)}: the active coordinator is "
                              f"{other.describe()}; taking over when it stops")
            self.active = other
            outcome = await self._follow(other, hello)
            if outcome == "handover" or (outcome == "gone" and await self._gone(other)):
                self.on_claim(other)
                if await asyncio.to_thread(self._claim_after, other):
                    break
                continue
            await asyncio.sleep(min(1.0, self.lease_seconds / 10))
        self.became_active.set()
        self.changed()

    async def _gone(self, other: regmod.Registration) -> bool:
        """Its call broke: is the active's process gone? (Its port refuses connections; a dying process may hold
        it a moment longer, so ask a few times.)"""
        for _ in range(20):
            if await _refuses(other.addresses[0]):
                return True
            await asyncio.sleep(0.05)
        return False

    def _claim_after(self, other: regmod.Registration) -> bool:
        """Take over from ``other``, which is gone or handed over: only over the version of its file we read now
        (if someone else took over meanwhile, that one is followed instead)."""
        for name, table in self.tables.items():
            reg, version = regmod.read_versioned(table)
            self.versions[name] = version
            if reg is not None and reg.service_id != other.service_id:
                return False
        return self.claim(other)

    async def _follow(self, active: regmod.Registration, hello: pb.StandbyHello) -> str:
        """Hold ``Standby`` on the active: "handover", "gone" (the call broke), or "refused"."""
        channel = make_channel(active.addresses[0], self.security, 4 << 20)
        try:
            call = pbg.AddressServiceStub(channel).Standby(hello, metadata=self.security.metadata())
            while True:  # the active sends news at every renewal (lease/3): silence for half a lease is a hang
                try:
                    news = await asyncio.wait_for(call.read(), self.lease_seconds / 2)
                except asyncio.TimeoutError:
                    call.cancel()
                    return "silent"
                if news is grpc.aio.EOF:
                    return "gone"
                if news.handover:
                    return "handover"
                if not await asyncio.to_thread(self._still, active):
                    return "changed"
        except grpc.aio.AioRpcError as e:
            if e.code() in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED,
                            grpc.StatusCode.FAILED_PRECONDITION):
                log.warning("the active coordinator at %s refuses this standby: %s", active.addresses[0],
                            e.details())
                await asyncio.sleep(self.lease_seconds / 3)
                return "refused"
            return "gone"
        finally:
            await channel.close(grace=None)

    def _still(self, active: regmod.Registration) -> bool:
        """The registration still names ``active`` and its lease is live (it renews it)."""
        first = next(iter(self.tables.values()))
        reg = regmod.read(first)
        return reg is not None and reg.service_id == active.service_id and reg.is_live()

    # -- the active's side of Standby ---------------------------------------------------------------------
    def standby_joined(self, address: str) -> "asyncio.Queue[pb.StandbyNews]":
        queue: "asyncio.Queue[pb.StandbyNews]" = asyncio.Queue()
        old = self.standbys.get(address)
        if old is not None:
            old.put_nowait(None)
        self.standbys[address] = queue
        self.changed()
        return queue

    def standby_left(self, address: str, queue) -> None:
        if self.standbys.get(address) is queue:
            del self.standbys[address]
            self.changed()

    def news(self, address: str) -> pb.StandbyNews:
        return pb.StandbyNews(epoch=self.epoch, active=address)

    def tell_standbys(self, address: str) -> None:
        """At every renewal: standbys check the file and know the active is alive."""
        for queue in self.standbys.values():
            queue.put_nowait(self.news(address))

    async def hand_over(self, timeout: float) -> Optional[str]:
        """(Draining) ask a standby to take over and wait until the registration names it; its address, or None
        when there is no standby or none took over within ``timeout``."""
        for address, queue in list(self.standbys.items()):
            queue.put_nowait(pb.StandbyNews(epoch=self.epoch, handover=True))
            deadline = time.monotonic() + timeout
            first = next(iter(self.tables.values()))
            while time.monotonic() < deadline:
                reg = await asyncio.to_thread(regmod.read, first)
                if reg is not None and reg.service_id != self.service_id and reg.epoch > self.epoch:
                    self._handed_over = True
                    return reg.addresses[0] if reg.addresses else address
                await asyncio.sleep(0.05)
        return None

    @property
    def handed_over(self) -> bool:
        return self._handed_over


def dead_local(reg: regmod.Registration) -> bool:
    """The registration's process was on this machine and is gone."""
    if reg.host != socket.gethostname():
        return False
    try:
        os.kill(reg.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


async def _refuses(address: str, timeout: float = 1.0) -> bool:
    """Nothing listens at ``address`` any more (its process is gone): a connection is refused. A timeout proves
    nothing (a hung process, a cut network): then only the lease's expiry lets a standby take over."""
    host, port = split_host_port(address)
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host.strip("[]"), port), timeout)
    except (ConnectionRefusedError, ConnectionResetError):
        return True
    except (OSError, asyncio.TimeoutError):
        return False
    writer.close()
    return False


__all__ = ["ACTIVE", "DRAINING", "Lease", "STANDBY", "STOPPED", "dead_local"]
