"""An executor as the coordinator knows it: a ``Member`` while its Join call lives (its hello, its outbox of work,
what its heartbeats last said), or ``Reserved`` (the executor of a coordinator this one took over from, expected
to re-join)."""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

from ..protocol import lookup_pb2 as pb


@dataclass
class Reserved:
    """An executor of the coordinator this one took over from, expected to re-join: it keeps its index and its
    channels (clients keep being routed to it: it still answers from what it holds) until ``until``."""

    address: str
    host: str
    until: float


@dataclass(eq=False)
class Member:
    index: int
    hello: pb.ExecutorHello
    slot: bool  # one of serve's own executors
    outbox: "asyncio.Queue[Optional[pb.ExecutorWork]]" = field(default_factory=asyncio.Queue)
    joined: float = field(default_factory=time.monotonic)
    last_heartbeat: float = field(default_factory=time.monotonic)
    last_heartbeat_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    tables: Dict[str, pb.TableServing] = field(default_factory=dict)
    requests: int = 0
    keys: int = 0
    memory_bytes: int = 0
    rates: Tuple[float, float] = (0.0, 0.0)
    _prev: Optional[Tuple[float, int, int]] = None
    gone: bool = False
    draining: bool = False  # it said it is stopping: its channels move away (made before the break)
    stats: pb.ExecutorStats = field(default_factory=pb.ExecutorStats)  # its counters (metrics)

    @property
    def address(self) -> str:
        return self.hello.address

    def send(self, work: pb.ExecutorWork) -> None:
        if not self.gone:
            self.outbox.put_nowait(work)

    def end(self) -> None:
        """End its Join call (it left, fell silent, or was replaced)."""
        if not self.gone:
            self.gone = True
            self.outbox.put_nowait(None)

    def alive(self, timeout: float, now: Optional[float] = None) -> bool:
        now = time.monotonic() if now is None else now
        return not self.gone and now - self.last_heartbeat <= timeout


__all__ = ["Member", "Reserved"]
