"""Who runs serve's own executors (its slots ``0..N-1``) and keeps them running.

Every executor, wherever it runs, joins the coordinator the same way; a launcher only starts them (through the
executor's public entry point named in ``protocol/executor_spec.py``: this side never imports the executor) and
brings back what dies. ``LocalProcesses`` (the default) spawns processes on this machine and restarts one that
exits, stops heart-beating (SIGSTOP, a hang: SIGKILLed first) or does not join; the Spark launcher (``paimon_tail.spark.service_job``) runs them as the tasks of one job.
"""
from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import threading
import time
from typing import Dict, List, Optional, Tuple

from ..protocol.executor_allocator import for_executors
from ..protocol.executor_spec import ExecutorSpec, start_executor
from ..protocol.local_dirs import remove_dirs_of
from .registry import Registry

log = logging.getLogger(__name__)

JOIN_TIMEOUT = 120.0  # a started executor that has not joined by then is started again


class ExecutorLauncher:
    """Starts the executors of serve's slots (``specs[i]`` for slot ``i``) and keeps them running.

    ``start`` is called on the event loop's thread (the main thread: signal dispositions are inherited from it)
    and ``supervise`` on the loop every 0.2 s: neither may block; ``stop`` is called in a worker thread and may.
    ``error`` set means the launcher gave up, which stops the service.
    """

    description = "local"
    error: Optional[BaseException] = None
    restarts = 0
    #: True: a slot keeps its channels while its executor is down (it is back within seconds); False: they move
    #: to the executors that are up until it joins again (registry.py)
    keeps_slots = True

    def prepare(self) -> None:
        """Called once the tables are open and before any gRPC server or channel exists, in a worker thread; may
        block (the Spark launcher starts its JVM here: a wrong table name fails before that)."""

    def start(self, specs: List[ExecutorSpec]) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def supervise(self, registry: Registry, timeout: float) -> None:
        pass

    def stop(self, timeout: float) -> None:  # pragma: no cover - interface
        raise NotImplementedError


@contextlib.contextmanager
def _sigint_ignored():
    """An executor is in our process group, so a Ctrl-C on the terminal reaches it too: while it imports (about
    a second), before executor_main ignores SIGINT, that was a KeyboardInterrupt traceback per executor. An
    ignored signal stays ignored across fork and exec (a handler does not), so it starts ignoring SIGINT. A
    Ctrl-C in the few milliseconds of the start is lost (press it again)."""
    if threading.current_thread() is not threading.main_thread():  # signal handlers belong to the main thread
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class LocalProcesses(ExecutorLauncher):
    """Executors as ``multiprocessing`` spawn processes of serve (they join over gRPC like any other).

    Nothing of theirs outlives them: an executor killed for a restart is reaped (at once, or by ``supervise``
    when SIGKILL takes longer) and its directory in ``--local-dir`` removed, as at ``stop``, which also ends
    multiprocessing's resource tracker (the process the first spawn starts, serve's child, which would otherwise
    linger after serve, reparented, until someone reaps it)."""

    def __init__(self) -> None:
        self._ctx = multiprocessing.get_context("spawn")
        self.specs: List[ExecutorSpec] = []
        self.processes: Dict[int, multiprocessing.Process] = {}
        self.started: Dict[int, float] = {}
        self._dying: List[Tuple[int, multiprocessing.Process]] = []  # (slot, killed process) not yet reaped

    def start(self, specs: List[ExecutorSpec]) -> None:
        self.specs = list(specs)
        for spec in specs:
            self._spawn(spec.index)

    def _spawn(self, index: int) -> None:
        process = self._ctx.Process(target=start_executor, args=(self.specs[index],), daemon=True,
                                    name=f"paimon-tail-executor-{index}")
        with _sigint_ignored(), for_executors():  # its allocator's options (protocol/executor_allocator.py)
            process.start()
        self.processes[index] = process
        self.started[index] = time.monotonic()

    def _restart(self, index: int, reason: str) -> None:
        log.warning("executor %d %s: restarting it", index, reason)
        self.restarts += 1
        process = self.processes[index]
        if process.is_alive():
            try:
                os.kill(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        process.join(timeout=0.5)
        self._dying.append((index, process))
        self._reap()
        self._spawn(index)

    def _reap(self) -> None:
        """Forget the killed executors that are gone, and remove what they left in --local-dir."""
        for index, process in list(self._dying):
            if not process.is_alive():  # (is_alive reaps)
                self._dying.remove((index, process))
                remove_dirs_of(self.specs[index].local_dir, process.pid)

    def supervise(self, registry: Registry, timeout: float) -> None:
        self._reap()
        now = time.monotonic()
        for index, process in list(self.processes.items()):
            member = registry.members.get(index)
            if not process.is_alive():
                self._restart(index, f"exited (code {process.exitcode})")
            elif member is not None and member.hello.pid == process.pid and now - member.last_heartbeat > timeout:
                member.end()
                self._restart(index, f"sent no heartbeat for {now - member.last_heartbeat:.1f}s")
            elif (member is None or member.hello.pid != process.pid) and now - self.started[index] > JOIN_TIMEOUT:
                self._restart(index, f"did not join within {JOIN_TIMEOUT:.0f}s")

    def pids(self) -> List[int]:
        return [p.pid for p in self.processes.values() if p.pid]

    def stop(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for index, process in self.processes.items():  # told to stop by the service: they exit on their own
            process.join(timeout=max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()
                process.join(timeout=1.0)
            self._dying.append((index, process))
        self.processes.clear()
        for _, process in self._dying:
            process.join(timeout=5.0)
        self._reap()
        _stop_resource_tracker(timeout=5.0)


def _stop_resource_tracker(timeout: float) -> None:
    """End multiprocessing's resource tracker once every executor is gone: it exits when the last holder of its
    pipe closes it (serve, and each spawned executor inherited it), and is reaped here rather than left to
    whoever adopts it after serve exits (CPython's own ``ResourceTracker._stop`` waits without a limit)."""
    from multiprocessing import resource_tracker

    tracker = resource_tracker._resource_tracker
    with tracker._lock:
        fd, pid = tracker._fd, tracker._pid
        if fd is None:
            return
        tracker._fd = tracker._pid = None
        os.close(fd)
    if pid is None:
        return
    deadline = time.monotonic() + timeout
    while True:
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:
                return
        except ChildProcessError:
            return
        if time.monotonic() > deadline:
            log.warning("multiprocessing's resource tracker (pid %d) did not exit", pid)
            return
        time.sleep(0.01)


__all__ = ["ExecutorLauncher", "LocalProcesses"]
