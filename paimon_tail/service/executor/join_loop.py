"""An executor's join loop: join the coordinator, and join again whenever the call ends, until stopped or given up.

When a call ends without a ``Stop`` (the coordinator died, the network broke) the executor keeps answering from
what it holds — every answer still carries the snapshot it reflects — and looks for the coordinator of the moment
until ``orphan_timeout`` passes: the one it had, the active and standbys that coordinator named, the ``--join``
list, and the tables' registration (which names the active after a takeover). A coordinator of a lower epoch than
one it followed is never joined again (it was deposed). Its stores are kept (a full state of the same files reuses
them).
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable, List, Optional

import grpc

from ..protocol import registration as regmod
from ..protocol.executor_spec import ExecutorSpec
from ..protocol.probes import Probes
from .holding import Holding
from .session import Deposed, Following, Rejoin, Session, Signals

log = logging.getLogger(__name__)


class JoinRefused(Exception):
    """The coordinator refused this executor (wrong warehouse, bad index, bad credentials)."""


class _Again(Exception):
    """A round of joining ended without the executor ending: wait, then another."""


class _Outage:
    """The join loop's memory between rounds: since when no coordinator was joined, whether that was said, and
    the next wait (tenacity's ``wait``: doubling from 0.2 s up to 2 s, from 0.2 s again after a join)."""

    def __init__(self, now: float) -> None:
        self.last_ok, self.said, self.delay = now, False, 0.2

    def joined(self) -> None:
        self.last_ok, self.said, self.delay = time.monotonic(), False, 0.2

    def wait(self, state) -> float:
        delay, self.delay = self.delay, min(2.0, self.delay * 2)
        return delay


class JoinLoop:
    """Sessions, one after the other, with the coordinators of the moment (see the module's docstring);
    ``stop_reason`` says why it ended on its own (None: the service, or ``signals.stop``, stopped it)."""

    def __init__(self, holding: Holding, spec: ExecutorSpec, address: str, probes: Probes, signals: Signals,
                 announce: Optional[Callable[[str], None]]) -> None:
        self.holding = holding
        self.spec = spec
        self.address = address
        self.probes = probes
        self.signals = signals
        self.announce = announce
        self.following = Following()
        self.stop_reason: Optional[str] = None

    def _candidates(self) -> List[str]:
        """Where the coordinator of the moment may be, most likely first."""
        f = self.following
        out = [f.next, f.coordinator, *f.coordinators, *self.spec.coordinator.split(",")]
        for state in self.holding.tables.values():  # the registration names the active (and standbys) after a takeover
            try:
                reg = regmod.read(state.table)
            except Exception:  # noqa: BLE001 - storage away: the other candidates
                reg = None
            if reg is not None:
                out[1:1] = [*reg.addresses, *reg.standbys]
            break
        seen, candidates = set(), []
        for address in out:
            address = address.strip()
            if address and address not in seen:
                seen.add(address)
                candidates.append(address)
        return candidates

    async def run(self) -> None:
        """Join, and join again whenever the call ends, until stopped or given up (see the module's docstring).
        The waits between rounds are tenacity's: 0.2 s doubling to 2 s, from 0.2 s again after each join."""
        from tenacity import AsyncRetrying, retry_if_exception_type

        outage = _Outage(time.monotonic())
        async for step in AsyncRetrying(retry=retry_if_exception_type(_Again), wait=outage.wait, sleep=self._pause,
                                        reraise=True):
            with step:
                await self._rounds(outage)

    async def _pause(self, seconds: float) -> None:
        """Wait between rounds; a stop cuts it short."""
        try:
            await asyncio.wait_for(self.signals.stop.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    async def _rounds(self, outage: _Outage) -> None:
        """Rounds over the coordinator's candidates; returns when the executor ends, raises ``_Again`` to wait."""
        holding = self.holding
        while not self.signals.stop.is_set():
            why = ""
            joined = False
            candidates = await asyncio.to_thread(self._candidates) if holding.tables else self._candidates()
            self.following.next = ""
            for address in candidates:
                session = Session(holding, self.following, self.spec, self.address, self.probes, self.signals,
                                  self.announce)
                try:
                    if await session.run(address):
                        return
                    why = "the service closed the connection"
                except Rejoin:
                    why = "handed over"
                except Deposed:
                    why = f"the coordinator at {address} was replaced"
                except grpc.aio.AioRpcError as e:
                    if e.code() in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.INVALID_ARGUMENT,
                                    grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED,
                                    grpc.StatusCode.UNIMPLEMENTED):
                        raise JoinRefused(f"the service at {address} refused this executor: "
                                          f"{e.details() or e.code().name}") from None
                    if not session.joined and (e.details() or "").startswith("standing by"):
                        continue  # a standby: the next candidate
                    why = f"the service at {address} does not answer ({e.code().name})"
                except JoinRefused:
                    raise
                except Exception as e:  # applying a message failed: the service's full state starts us over
                    self.stop_reason = f"failed to apply a change: {type(e).__name__}: {e}"
                    if self.announce is None:  # (the executor command prints the reason as its last line)
                        log.error("executor %d %s", holding.index, self.stop_reason,
                                  exc_info=log.isEnabledFor(logging.DEBUG))
                    return
                joined = joined or session.joined
                if session.joined or self.following.next:
                    break  # it was joined: look again (the registration may name a new active now)
            if joined:
                outage.joined()
                if self.following.next:
                    continue
            if not self.spec.rejoin:
                self.stop_reason = why or "no coordinator"
                return
            if time.monotonic() - outage.last_ok > self.spec.orphan_timeout:
                self.stop_reason = f"{why}; gave up after {self.spec.orphan_timeout:.0f}s"
                return
            if not outage.said and why:  # once per outage
                outage.said = True
                message = f"{why}; trying again for {self.spec.orphan_timeout:.0f}s"
                if holding.tables:
                    message += " (answering from what it holds meanwhile)"
                if self.announce is not None:
                    self.announce(message)
                else:
                    log.warning("executor %d: %s", holding.index, message)
            raise _Again()


__all__ = ["JoinLoop", "JoinRefused"]
