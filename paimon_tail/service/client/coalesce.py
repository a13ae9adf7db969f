"""Concurrent one-key calls of a sync client to one executor share gRPC calls.

Most of a one-key lookup's cost is the gRPC call itself (~0.4 ms of CPU between client and server in Python,
whatever it carries), so when several threads of one process ask one executor at the same moment, sending their
keys together costs about one call instead of several. A *lane* per (executor address, projection) lets at most
``in_flight`` calls be under way; a key that finds them all busy waits in the lane's queue, and whichever call
ends first takes the whole queue (up to ``max_keys``) as its next call: the thread whose key is first in it sends
that call and hands each waiting thread its own answer (``one_key.KeyAnswer``). Nothing waits on purpose: a key that
finds a free slot goes at once, alone, exactly as without a lane, so one thread alone never pays for this.

Only one-key calls with typed keys to a protocol-3 executor share (several keys in one ``LookupRequest.key``);
calls with ``min_snapshot`` never do (one may wait for a snapshot while the others need not). An answer is the
same as a call of its own would get: each key's row, the snapshot it was read at, or its failure.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

import grpc

from .call_plan import Call
from .lookup_requests import shared_request
from .one_key import KeyAnswer, split_answer

IN_FLIGHT = 1  # calls under way per lane before keys wait to share the next one (2 measured ~10 % more CPU per key)
MAX_KEYS = 64  # keys in one shared call


class _Waiter:
    """One key's thread in a lane. A waiter is woken exactly once (``wake``): with its outcome, or with the
    batch it is to send. The wake-up is a plain lock its thread waits to acquire, released by whoever wakes it: a
    ``threading.Event`` costs a condition, a second lock and a notify on every hand-off, and hand-offs are on the
    path of every shared key."""

    __slots__ = ("call", "_asleep", "outcome", "batch")

    def __init__(self, call: Call) -> None:
        self.call = call
        self._asleep: Optional[threading.Lock] = None
        self.outcome: Any = None
        self.batch: Optional[List["_Waiter"]] = None  # set when this waiter is to send the next call

    def sleep(self) -> None:
        """Get ready to wait (under the lane's lock, before the waiter is queued)."""
        self._asleep = threading.Lock()
        self._asleep.acquire()

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Until woken (True) or ``timeout`` seconds (False)."""
        return self._asleep.acquire(timeout=-1 if timeout is None else max(0.0, timeout))

    def wake(self) -> None:
        self._asleep.release()


class _Lane:
    __slots__ = ("lock", "busy", "queue")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.busy = 0
        self.queue: List[_Waiter] = []


class Coalescer:
    """Lanes of one client's sync transport. ``send(call, stub)`` returns the call's outcome: its
    ``LookupResponse`` (sent alone), this key's ``KeyAnswer`` (sent with others), or a ``grpc.RpcError``."""

    def __init__(self, metadata, first_row: Callable, in_flight: int = IN_FLIGHT, max_keys: int = MAX_KEYS) -> None:
        self._metadata = metadata or None
        self._first_row = first_row
        self.in_flight = max(1, in_flight)
        self.max_keys = max(1, max_keys)
        self._lanes: Dict[Tuple, _Lane] = {}
        self._lock = threading.Lock()
        self.shared_calls = 0  # calls that carried more than one key, and their keys (for tests and benchmarks)
        self.shared_keys = 0

    def _lane(self, key: Tuple) -> _Lane:
        lane = self._lanes.get(key)
        if lane is None:
            with self._lock:
                lane = self._lanes.setdefault(key, _Lane())
        return lane

    def send(self, call: Call, stub: Callable[[str], Any]) -> Any:
        request = call.request
        lane = self._lane((call.address, tuple(request.select)))
        me = _Waiter(call)
        with lane.lock:
            if lane.busy < self.in_flight:
                lane.busy += 1
                batch: Optional[List[_Waiter]] = [me]
            else:
                me.sleep()
                lane.queue.append(me)
                batch = None
        if batch is None:
            if not me.wait(call.timeout):
                with lane.lock:
                    queued = me.batch is None and me.outcome is None and me in lane.queue
                    if queued:
                        lane.queue.remove(me)
                if queued:  # no call took it in time
                    return KeyAnswer(again=f"executor {call.executor} at {call.address} did not answer within "
                                           f"{call.timeout:.1f}s")
                me.wait()  # taken by a call under way (bounded by that call's deadline)
            if me.batch is None:
                return me.outcome
            batch = me.batch
        self._run(lane, batch, stub)
        return me.outcome

    def _run(self, lane: _Lane, batch: List[_Waiter], stub: Callable[[str], Any]) -> None:
        """Send ``batch`` as one call, hand out the answers, then pass the lane's queue on (or free the slot)."""
        lead = batch[0].call
        try:
            if len(batch) == 1:
                try:
                    outcome = stub(lead.address).Lookup(lead.request, timeout=lead.timeout, metadata=self._metadata)
                except grpc.RpcError as e:
                    outcome = e
                batch[0].outcome = outcome
            else:
                self.shared_calls += 1
                self.shared_keys += len(batch)
                request = shared_request([w.call.request for w in batch])
                try:
                    outcome = stub(lead.address).Lookup(request, timeout=lead.timeout, metadata=self._metadata)
                except grpc.RpcError as e:
                    outcome = e
                try:
                    answers = split_answer(lead, outcome, len(batch), self._first_row)
                except Exception as e:  # noqa: BLE001 - an unreadable answer: each key says so
                    answers = [KeyAnswer(failure=str(e))] * len(batch)
                for w, answer in zip(batch, answers):
                    w.outcome = answer
        except BaseException as e:  # never leave a waiter without an outcome
            for w in batch:
                if w.outcome is None:
                    w.outcome = KeyAnswer(failure=f"lookup failed: {type(e).__name__}: {e}")
            raise
        finally:
            for w in batch[1:]:
                w.wake()
            with lane.lock:
                nxt = lane.queue[:self.max_keys]
                del lane.queue[:self.max_keys]
                if not nxt:
                    lane.busy -= 1
            if nxt:
                nxt[0].batch = nxt
                nxt[0].wake()


__all__ = ["Coalescer", "IN_FLIGHT", "MAX_KEYS"]
