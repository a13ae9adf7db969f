"""The one retry policy for storage: transient failures are waited out, reported, and never fatal by themselves.

Every storage call of the streaming core goes through a ``StorageRetry``. A transient failure (``errors.diagnose``:
network, timeouts, 5xx, throttling) is retried with capped exponential backoff (tenacity) and recorded in the shared
``StorageHealth`` (the status line and ``service status`` show "storage unreachable since T: cause"); the first
success clears it. A permanent failure (credentials, bucket, region) raises ``StorageError`` at once. With a
``timeout`` (``--storage-timeout``; ``-e`` runs have one by default, live follows and ``serve`` do not) an outage
longer than that raises ``StorageUnavailable``. pyarrow's own S3 retries are kept short (``compat/patches/s3_client``) so
that this policy, not the SDK's, decides how long we wait.
"""
from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, TypeVar

from .diagnosis import Diagnosis, StorageError, StorageUnavailable, diagnose

T = TypeVar("T")


@dataclass(frozen=True)
class Outage:
    since: float  # wall-clock time of the first failure
    cause: str
    attempts: int

    def describe(self) -> str:
        when = time.strftime("%H:%M:%S", time.localtime(self.since))
        return f"storage unreachable since {when}: {self.cause}"


class StorageHealth:
    """Whether storage answers right now; shared by everything that reads one table (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.outage: Optional[Outage] = None
        self.failures = 0  # failed calls since the start (metrics)

    def failed(self, diagnosis: Diagnosis) -> Outage:
        with self._lock:
            self.failures += 1
            prev = self.outage
            self.outage = Outage(prev.since if prev else time.time(), diagnosis.message,
                                 (prev.attempts if prev else 0) + 1)
            return self.outage

    def recovered(self) -> None:
        if self.outage is not None:
            with self._lock:
                self.outage = None


class StorageRetry:
    """Call ``fn`` until it succeeds or fails for a reason waiting cannot fix."""

    def __init__(self, endpoint: str = "the object store", timeout: Optional[float] = None,
                 health: Optional[StorageHealth] = None, first_delay: float = 0.2, max_delay: float = 5.0) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self.health = health or StorageHealth()
        self.first_delay = first_delay
        self.max_delay = max_delay

    def _next_delay(self, e: BaseException, attempt: int) -> float:
        """Raise unless ``e`` is worth another try; else how long to wait before it."""
        diagnosis = diagnose(e, self.endpoint)
        if diagnosis is None:
            raise e
        if not diagnosis.transient:
            raise StorageError(diagnosis.message) from e
        outage = self.health.failed(diagnosis)
        if self.timeout is not None and time.time() - outage.since >= self.timeout:
            raise StorageUnavailable(f"storage unreachable for {self.timeout:g} s: {diagnosis.message}",
                                     hint="raise --storage-timeout to wait longer") from e
        return min(self.max_delay, self.first_delay * (2 ** attempt))

    def _policy(self, sleep: Callable[[float], Any], last: list) -> dict:
        """This policy as keyword arguments for tenacity's ``Retrying``/``AsyncRetrying``: every failure is
        retried after ``_next_delay`` (which raises instead when waiting cannot help); ``last`` keeps the latest
        failure (what ``sleep`` may name)."""
        from tenacity import retry_if_exception_type

        def wait(state) -> float:
            last[0] = state.outcome.exception()
            return self._next_delay(last[0], state.attempt_number - 1)

        return dict(retry=retry_if_exception_type(Exception), wait=wait, sleep=sleep, reraise=True)

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a thread, retried (the first try inline: tenacity is loaded only when one fails)."""
        try:
            result = await asyncio.to_thread(fn, *args)
        except Exception as e:
            first: Optional[BaseException] = e
        else:
            self.health.recovered()
            return result
        from tenacity import AsyncRetrying

        async for step in AsyncRetrying(**self._policy(asyncio.sleep, [first])):
            with step:
                if first is not None:
                    failed, first = first, None
                    raise failed  # the inline try, as tenacity's first: it waits before the next
                result = await asyncio.to_thread(fn, *args)
                self.health.recovered()
                return result
        raise AssertionError("unreachable")  # pragma: no cover - retried until it returns or raises

    def call_sync(self, fn: Callable[..., T], *args: Any, stop: Optional[threading.Event] = None) -> T:
        """``fn(*args)`` on this thread, retried; ``stop`` ends the waiting early (raises ``InterruptedError``)."""
        try:
            result = fn(*args)
        except Exception as e:
            first: Optional[BaseException] = e
        else:
            self.health.recovered()
            return result
        from tenacity import Retrying

        last = [first]

        def sleep(delay: float) -> None:
            _sleep(delay, stop, last[0])

        for step in Retrying(**self._policy(sleep, last)):
            with step:
                if first is not None:
                    failed, first = first, None
                    raise failed
                result = fn(*args)
                self.health.recovered()
                return result
        raise AssertionError("unreachable")  # pragma: no cover

    def failed(self, e: BaseException, attempt: int, stop: Optional[threading.Event] = None) -> None:
        """For loops that cannot be wrapped in one call (a generator): wait before retry ``attempt``, or raise."""
        _sleep(self._next_delay(e, attempt), stop, e)

    def succeeded(self) -> None:
        self.health.recovered()


def _sleep(delay: float, stop: Optional[threading.Event], cause: Optional[BaseException]) -> None:
    """Wait ``delay`` seconds, or until ``stop`` (then ``InterruptedError``)."""
    if stop is None:
        time.sleep(delay)
    elif stop.wait(delay):
        raise InterruptedError("stopped while storage was unreachable") from cause


__all__ = ["Outage", "StorageHealth", "StorageRetry"]
