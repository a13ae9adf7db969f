"""How paimon-tail runs concurrent work: the one event-loop runner, signal handlers on it, and the one bounded,
ordered "N in flight" pipeline (``in_order``, ``in_order_async``).

Light on purpose (asyncio only): every command imports it.
"""
from __future__ import annotations

import asyncio
import signal
from collections import deque
from typing import Any, AsyncIterator, Awaitable, Callable, Coroutine, Iterable, Iterator, TypeVar

T = TypeVar("T")
P = TypeVar("P")
R = TypeVar("R")


def run_loop(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run ``coro`` to its end on a new event loop: uvloop's when installed (not on Windows), else asyncio's.

    A process that turned the garbage collector off for its start-up (``cli.main``) gets it back here, with
    what exists by now frozen out of its scans."""
    import gc

    if not gc.isenabled():
        gc.freeze()
        gc.enable()
    try:
        import uvloop
    except ImportError:  # pragma: no cover - Windows
        return asyncio.run(coro)
    return uvloop.run(coro)


def on_signals(handler: Callable[[int], None],
               signals: Iterable[int] = (signal.SIGINT, signal.SIGTERM)) -> None:
    """``handler(sig)`` on the running loop for each of ``signals`` (where the loop can take signals: its
    main thread, not Windows)."""
    loop = asyncio.get_running_loop()
    for sig in signals:
        try:
            loop.add_signal_handler(sig, handler, sig)
        except (NotImplementedError, RuntimeError, ValueError):  # pragma: no cover - not the main thread, Windows
            pass


def in_order(items: Iterable[T], start: Callable[[T], P], finish: Callable[[P], R], in_flight: int) -> Iterator[R]:
    """``finish(start(item))`` for each item, in input order, with ``in_flight`` items started ahead of the one
    being finished: ``start`` hands work to others (a thread pool, a client) and returns at once, ``finish`` waits
    for it. Items are read only as fast as results are taken (bounded); closing the iterator starts nothing more.
    """
    pending: "deque[P]" = deque()
    for item in items:
        pending.append(start(item))
        while len(pending) > in_flight:
            yield finish(pending.popleft())
    while pending:
        yield finish(pending.popleft())


async def drain(queue: asyncio.Queue, done: object) -> AsyncIterator[Any]:
    """The items of ``queue`` until ``done``; an exception put in it (a producer's failure) is raised here, after
    the items before it."""
    while True:
        item = await queue.get()
        if item is done:
            return
        if isinstance(item, BaseException):
            raise item
        yield item


async def in_order_async(items: Any, start: Callable[[T], Awaitable[R]], in_flight: int) -> AsyncIterator[R]:
    """The results of ``start(item)`` for each item of ``items`` (an iterable or async iterable), in input order:
    up to ``in_flight`` of them run while the caller takes earlier results and the source produces later items.
    An error from the source or from one item is raised after the results before it; closing the iterator
    cancels what is still running."""
    queue: asyncio.Queue = asyncio.Queue(maxsize=max(1, in_flight))
    done = object()

    async def produce() -> None:
        try:
            if hasattr(items, "__aiter__"):
                async for item in items:
                    await queue.put(asyncio.ensure_future(start(item)))
            else:
                for item in items:
                    await queue.put(asyncio.ensure_future(start(item)))
        except Exception as e:  # handed to the consumer, after the results before it
            await queue.put(e)
            return
        await queue.put(done)

    producer = asyncio.ensure_future(produce())
    try:
        async for item in drain(queue, done):
            yield await item
    finally:
        producer.cancel()
        while not queue.empty():
            item = queue.get_nowait()
            if isinstance(item, asyncio.Future):
                item.cancel()


__all__ = ["drain", "in_order", "in_order_async", "on_signals", "run_loop"]
