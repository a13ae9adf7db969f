"""How paimon-tail runs concurrent work: the one event-loop runner and signal handlers on it.

Light on purpose (asyncio only): every command imports it.
"""
from __future__ import annotations

import asyncio
import signal
from typing import Any, Callable, Coroutine, Iterable


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


__all__ = ["on_signals", "run_loop"]
