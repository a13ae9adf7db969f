"""The two ways a process runs an executor: ``executor_main``, the entry point of serve's own local processes
(named by ``protocol/executor_spec.py``, which the coordinator's launcher starts without importing this package),
and ``run_executor``, for every executor that is not one of serve's local processes (a Spark task,
``paimon-tail executor``): signals, metrics, its private directory."""
from __future__ import annotations

import logging
import os
import shutil
import signal
from dataclasses import dataclass
from typing import Callable, List, Optional

from ...concurrency import on_signals, run_loop
from ...errors import ServiceError
from ..protocol.executor_spec import ExecutorSpec
from ..protocol.local_dirs import private_dir
from .runner import Executor, JoinRefused

log = logging.getLogger(__name__)


def executor_main(spec: ExecutorSpec) -> None:
    """Entry point of one of serve's local executor processes (``multiprocessing`` spawn)."""
    from ...compat import patches
    from ...log_format import configure

    patches.install_long_running()
    configure(spec.log_format, f"executor-{spec.index}", text_format=f"executor-{spec.index} %(levelname)s %(message)s")
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # serve stops us (Stop), a terminal's Ctrl-C does not
    os.umask(0o077)  # file copies, stores and every directory on the way: owner-only
    try:
        run_loop(Executor(spec).run())
    except JoinRefused as e:
        log.error("%s", e)


@dataclass(frozen=True)
class Ended:
    """How ``run_executor`` ended."""

    reason: str  # "stopped" (by the service, or by ``signal``), otherwise why it stopped on its own
    signal: Optional[int] = None  # the first signal that stopped it (``signals=True``)

    @property
    def stopped(self) -> bool:
        """The service (or a signal) stopped it, as opposed to ending on its own (no coordinator, a failure)."""
        return self.reason == "stopped"


def run_executor(spec: ExecutorSpec, *, announce: Optional[Callable[[str], None]] = None, signals: bool = False,
                 metrics_port: Optional[int] = None) -> Ended:
    """Run an executor that is not one of serve's local processes (a Spark task, ``paimon-tail executor``) until
    the service stops it, and say how it ended.

    ``spec.local_dir`` empty: a private temp dir on this machine (``private_dir``), removed at the end.
    ``announce``: told when it joins (and where its metrics are). ``signals``: SIGTERM drains it (its channels
    handed over first), SIGINT or a second signal stops it. ``metrics_port``: Prometheus metrics on
    ``spec.host`` at that port (0: any free one). Raises ``JoinRefused``, and ``ServiceError`` when the metrics
    port cannot be served.
    """
    from dataclasses import replace

    from ...compat import patches

    patches.install_long_running()
    own_dir = None
    if not spec.local_dir:
        own_dir = private_dir(spec.tag)
        spec = replace(spec, local_dir=own_dir)
    else:
        os.makedirs(spec.local_dir, mode=0o700, exist_ok=True)
    old_umask = os.umask(0o077)  # file copies, stores, directories: owner-only
    executor = Executor(spec)
    executor.announce = announce
    stopped_by: List[int] = []

    def stop_on(sig: int) -> None:
        stopped_by.append(sig)
        if sig == signal.SIGTERM and len(stopped_by) == 1:
            executor.drain()  # hand the channels over first (a second signal stops at once)
        else:
            executor.stop()

    async def main() -> None:
        if signals:
            on_signals(stop_on)
        server = None
        if metrics_port is not None:
            from ..metrics import serve_metrics
            from .executor_metrics import ExecutorCollector

            try:
                server, bound = serve_metrics(ExecutorCollector(executor.holding, executor.probes), spec.host,
                                              metrics_port)
            except OSError as e:
                raise ServiceError(f"cannot serve metrics on {spec.host}:{metrics_port}: "
                                   f"{(e.strerror or str(e)).lower()}") from None
            if announce is not None:
                announce(f"metrics at http://{spec.host}:{bound}/metrics")
        try:
            await executor.run()
        finally:
            if server is not None:
                server.shutdown()

    try:
        run_loop(main())
    finally:
        os.umask(old_umask)
        if own_dir:
            shutil.rmtree(own_dir, ignore_errors=True)
    if stopped_by:
        return Ended("stopped", stopped_by[0])
    return Ended(executor.stop_reason or "stopped")


__all__ = ["Ended", "ExecutorSpec", "JoinRefused", "executor_main", "run_executor"]
