"""The calls of one attempt, planned the same way on every lookup path: keys grouped by the executor that owns
them (``route.py``) become one ``Call`` per executor (split at ``max_batch`` keys), each with its timeout cut from
the deadline; keys whose executor cannot take calls now, or that are out of time, wait for the next attempt with
the reason. Plain Python, no I/O: the transports send what this returns."""
from __future__ import annotations

from typing import Any, Callable, Iterable, List, Optional, Tuple

from ..protocol import lookup_pb2 as pb
from .deadline import Deadline
from .route import Route


class Call:
    """One ``Lookup`` call: to which executor and address, for which request positions (None: the one key), with
    which request and timeout."""

    __slots__ = ("executor", "address", "positions", "request", "timeout")

    def __init__(self, executor: int, address: str, positions: Any, request: pb.LookupRequest,
                 timeout: float) -> None:
        self.executor, self.address, self.positions, self.request, self.timeout = \
            executor, address, positions, request, timeout


def plan_calls(route: Route, groups: Iterable[Tuple[int, Any]], deadline: Deadline, call_timeout: float,
               min_snapshot: int, request_of: Callable[[Any], pb.LookupRequest], wait: Callable[[Any, str], None],
               what: str = "these keys", max_batch: Optional[int] = None) -> List[Call]:
    """The calls for ``groups`` (executor, positions): ``request_of(positions)`` builds each call's request;
    ``wait(positions, reason)`` is told of the positions left for the next attempt. A call waiting for a snapshot
    (``min_snapshot``) may take the whole time left, others at most ``call_timeout``."""
    calls: List[Call] = []
    for ex, positions in groups:
        info = route.available(ex)
        if info is None:
            wait(positions, f"no executor serves {what} now (executor {ex} is not available)" if ex >= 0 else
                 f"no executor serves {what} now (waiting for one to join)")
            continue
        left = deadline.left()
        if left <= 0:
            wait(positions, f"executor {ex} at {info.address}: out of time")
            continue
        timeout = left if min_snapshot else min(call_timeout, left)
        if max_batch is None:
            calls.append(Call(ex, info.address, positions, request_of(positions), timeout))
            continue
        for s in range(0, len(positions), max_batch):
            part = positions[s:s + max_batch]
            calls.append(Call(ex, info.address, part, request_of(part), timeout))
    return calls


__all__ = ["Call", "plan_calls"]
