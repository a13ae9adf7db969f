"""What an executor process's allocator is told before pyarrow loads (this module imports nothing heavy).

An executor's pyarrow allocates from jemalloc (``store/budget.py``: ``use_returning_allocator``). jemalloc's
per-thread caches keep freed buffers for the thread that freed them, per size class (up to 32 KiB, 20 to 200 of
each), and a thread that allocates rarely never gives them back. An executor has a dozen threads that touch
Arrow buffers (builds, background writes, lookups, Arrow's I/O threads), each filling its cache a little more as
snapshots come. Under the soak's writer (a commit every 0.5 s, no lookups) jemalloc's ``tcache_bytes`` went
0.5 → 4.3 MiB in an executor's first 9 minutes, and its anonymous memory grew +23 to +26 MiB/h from the 4th to
the 12th minute; with the caches off, +7 to +9 MiB/h over the same minutes and +4.4 MiB/h from the 15th to the
30th (glibc's thread arenas and mimalloc's segments, while that table grows by ~10k rows an hour per executor;
docs/performance.md). Arrow buffers are large and few per lookup, so the caches buy little (a take-serialize-read loop of
small batches: 8 % slower on one thread, no slower on two): executors run with them off.

jemalloc reads its options once, when libarrow loads (``import pyarrow``), from ``JE_ARROW_MALLOC_CONF``; so the
variable goes into the environment an executor *starts* with: serve sets it before spawning its executors
(``coordinator/launcher.py``: its own environment is as it was afterwards), ``paimon-tail executor`` before it
imports pyarrow. An operator's own ``JE_ARROW_MALLOC_CONF`` is kept as it is. (An executor started any other way,
a Spark task, keeps jemalloc's default unless its environment has the variable.)
"""
from __future__ import annotations

import contextlib
import os
from typing import Iterator, MutableMapping, Optional

JEMALLOC_CONF_VAR = "JE_ARROW_MALLOC_CONF"
EXECUTOR_JEMALLOC_CONF = "tcache:false"


def executor_environment(environ: Optional[MutableMapping[str, str]] = None) -> MutableMapping[str, str]:
    """Put an executor's allocator options in ``environ`` (default: this process's, which the processes it
    starts inherit) unless already there; returns ``environ``. Has no effect on a process whose pyarrow is
    already loaded."""
    env = os.environ if environ is None else environ
    env.setdefault(JEMALLOC_CONF_VAR, EXECUTOR_JEMALLOC_CONF)
    return env


@contextlib.contextmanager
def for_executors() -> Iterator[None]:
    """This process's environment with an executor's allocator options while it starts executor processes
    (they inherit it); as it was again afterwards."""
    if JEMALLOC_CONF_VAR in os.environ:
        yield
        return
    executor_environment()
    try:
        yield
    finally:
        os.environ.pop(JEMALLOC_CONF_VAR, None)


__all__ = ["EXECUTOR_JEMALLOC_CONF", "JEMALLOC_CONF_VAR", "executor_environment", "for_executors"]
