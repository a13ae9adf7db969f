"""Time and retries of a lookup: one ``Deadline`` for the whole operation, every call's timeout cut from it, and one
retry policy (``retrying``: tenacity, jittered exponential backoff, never past the deadline) that both transports
run (``run_sync``, ``run_async``). No I/O: an attempt is whatever the caller passes."""
from __future__ import annotations

import time
from typing import Callable, Optional


class Again(Exception):
    """Something worth another try after re-discovery (the reason is kept for the final error)."""


class Deadline:
    """When a whole operation must be over (monotonic clock); every call's timeout is cut from it."""

    __slots__ = ("at", "total")

    def __init__(self, seconds: float) -> None:
        self.total = seconds
        self.at = time.monotonic() + seconds

    def left(self) -> float:
        return self.at - time.monotonic()

    def expired(self) -> bool:
        return time.monotonic() >= self.at

    def sooner(self, seconds: float) -> "Deadline":
        """This deadline or ``seconds`` from now, whichever comes first."""
        d = Deadline.__new__(Deadline)
        d.total, d.at = self.total, min(self.at, time.monotonic() + seconds)
        return d


def retrying(deadline: Deadline, give_up: Callable[[str], BaseException]) -> dict:
    """The client's one retry policy, as keyword arguments for ``tenacity.Retrying`` / ``AsyncRetrying``: retry on
    ``Again`` with full-jitter exponential backoff (up to 1 s), and when the next wait would pass ``deadline``
    raise ``give_up(last reason)``."""
    from tenacity import retry_if_exception_type, wait_random_exponential

    def stop(state) -> bool:
        return time.monotonic() + state.upcoming_sleep >= deadline.at

    def raise_give_up(state):
        raise give_up(str(state.outcome.exception())) from None

    return dict(retry=retry_if_exception_type(Again), wait=wait_random_exponential(multiplier=0.05, max=1.0),
                stop=stop, retry_error_callback=raise_give_up)


def run_sync(attempt: Callable, policy: Callable[[], dict]):
    """``attempt()`` until it does not raise ``Again``: the first time inline (the common case costs no retry
    machinery), then under ``policy()`` (``retrying``)."""
    try:
        return attempt()
    except Again as e:
        first: Optional[Again] = e
    from tenacity import Retrying

    for step in Retrying(**policy()):
        with step:
            if first is not None:
                failed, first = first, None
                raise failed  # the inline attempt, as tenacity's first: it waits before the next
            return attempt()


async def run_async(attempt: Callable, policy: Callable[[], dict]):
    """``run_sync`` for a coroutine function."""
    try:
        return await attempt()
    except Again as e:
        first: Optional[Again] = e
    from tenacity import AsyncRetrying

    async for step in AsyncRetrying(**policy()):
        with step:
            if first is not None:
                failed, first = first, None
                raise failed
            return await attempt()


__all__ = ["Again", "Deadline", "retrying", "run_async", "run_sync"]
