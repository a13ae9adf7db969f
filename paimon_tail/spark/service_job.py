"""``paimon-tail serve --spark``: the query service's executors as the long-lived tasks of one Spark job.

The ``serve`` process is the Spark driver. It keeps the coordinator (address server, scanners, assignment) and
submits one barrier job with N partitions (N = ``--executors``), one executor per task::

    sc.parallelize(range(N), N).barrier().mapPartitions(run_executor_task).collect()

Every task runs the ordinary executor (``paimon_tail.service.executor.runner.run_executor``): its gRPC server bound
to the task's host, and the one Join call to the coordinator that carries its heartbeats one way and its
assignment and file changes the other, with the service's TLS and token. Clients cannot tell these executors
from local ones.

* Barrier mode starts all tasks together (the job needs N free slots) and fails the whole stage when one task
  fails: the other tasks are killed, Spark retries the stage (``spark.stage.maxConsecutiveAttempts``) and, once
  the job has failed for good, this launcher resubmits it (backoff 1-10 s; it gives up after
  ``MAX_QUICK_FAILURES`` failures in a row that each lasted less than a minute). Re-submitted executors register
  again under their index with a new instance id and get their full state.
* A task whose executor ends for any reason but the service's "stop" raises, so a lone dead executor fails the
  stage instead of leaving a hole.
* Stopping: the service sends ``Stop`` to every executor (tasks return, the job ends), then the launcher cancels
  its job group (``interruptOnCancel``) in case a task is stuck and stops the SparkSession it created.
"""
from __future__ import annotations

import logging
import os
import re
import sys
import threading
import time
import uuid
from typing import Dict, List, Optional

from ..errors import UsageError
from ..service.coordinator.launcher import ExecutorLauncher

log = logging.getLogger(__name__)

MAX_QUICK_FAILURES = 5
QUICK = 60.0  # a job that failed sooner than this counts towards MAX_QUICK_FAILURES


def run_executor_task(specs, iterator):
    """The body of one barrier task (runs in a Spark Python worker)."""
    from pyspark import BarrierTaskContext

    from ..service.executor.runner import run_executor

    for _ in iterator:  # the partition's single element: its index (the same as partitionId)
        pass
    ctx = BarrierTaskContext.get()
    index = ctx.partitionId()
    logging.basicConfig(level=os.environ.get("PAIMON_TAIL_LOG", "WARNING"),
                        format=f"executor-{index} %(levelname)s %(message)s")
    reason = run_executor(specs[index])
    if reason != "stopped":
        # Fail the stage: barrier mode then restarts every executor (a lone dead one would leave a hole).
        raise RuntimeError(f"paimon-tail executor {index} ended: {reason}")
    yield index


_PY_ERROR = re.compile(r"^([A-Z]\w*(Error|Exception|Interrupt)): (.+)")
_JAVA_ERROR = re.compile(r"^(?::\s*)?(?:Caused by: )?[\w.$]+(?:Exception|Error): (.+)")


def job_failure(e: BaseException) -> str:
    """One line out of a failed job's Py4J error: the Python error in a task if there is one (a missing module,
    an executor that ended), else the innermost Spark reason (a crashed worker, a cancelled job)."""
    lines = [line.strip() for line in str(e).splitlines()]
    for line in lines:
        m = _PY_ERROR.match(line)
        if m and "." not in m.group(1):
            return line[:300]
    reasons = [m.group(1) for m in map(_JAVA_ERROR.match, lines) if m]
    reasons = [r for r in reasons if not r.startswith("An error occurred while calling")]
    if reasons:
        return reasons[-1].split(". Consider setting")[0][:300]
    return (lines[0] if lines and lines[0] else type(e).__name__)[:300]


def parse_conf(pairs) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"bad --spark-conf {pair!r}", hint="use --spark-conf key=value")
        out[key.strip()] = value.strip()
    return out


class SparkExecutors(ExecutorLauncher):
    """Runs the executors as one barrier Spark job; creates (and stops) its own SparkSession unless given one."""

    description = "Spark"

    def __init__(self, master: Optional[str] = None, conf: Optional[Dict[str, str]] = None,
                 app_name: str = "paimon-tail serve", session=None, orphan_timeout: float = 30.0,
                 host: str = "127.0.0.1") -> None:
        self.master = master
        self.host = host
        self.conf = dict(conf or {})
        self.app_name = app_name
        self.session = session
        self._own_session = session is None
        self.orphan_timeout = orphan_timeout
        self.error: Optional[BaseException] = None
        self.group = f"paimon-tail-serve-{uuid.uuid4().hex[:12]}"
        self.jobs_submitted = 0
        self._stopping = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._specs: List = []
        self._last_relaunch = 0.0

    # -- session ------------------------------------------------------------------------------------------
    def _local(self) -> bool:
        master = self.master or self.conf.get("spark.master") or os.environ.get("MASTER", "")
        return not master or master.startswith("local")

    def _build_session(self):
        try:
            from pyspark.sql import SparkSession
        except ImportError as e:
            raise UsageError(f"--spark needs PySpark ({e})", hint="pip install 'paimon-tail[spark]'") from None
        conf = dict(self.conf)
        if self._local():
            # Python workers on this machine must see paimon-tail and pypaimon: the serving interpreter.
            # (SparkContext takes the worker interpreter from PYSPARK_PYTHON, not from the conf, in local mode.)
            if "spark.pyspark.python" in conf:
                os.environ.setdefault("PYSPARK_PYTHON", conf["spark.pyspark.python"])
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            host = self._specs[0].host if self._specs else self.host
            if host in ("127.0.0.1", "localhost", "::1"):
                conf.setdefault("spark.driver.host", "127.0.0.1")
                conf.setdefault("spark.driver.bindAddress", "127.0.0.1")
        # A reused Python worker would run a second executor loop in a process that already had one (gRPC aio,
        # umask, threads): one executor per worker process.
        conf.setdefault("spark.python.worker.reuse", "false")
        conf.setdefault("spark.ui.showConsoleProgress", "false")  # serve's stderr is for its own lines
        conf.setdefault("spark.log.level", os.environ.get("PAIMON_TAIL_SPARK_LOG", "ERROR"))
        builder = SparkSession.builder.appName(self.app_name)
        if self.master:
            builder = builder.master(self.master)
        for k, v in conf.items():
            builder = builder.config(k, v)
        return builder.getOrCreate()

    def open_session(self) -> None:
        """Start Spark (its JVM gateway) now. ``serve`` calls this before any gRPC server or channel exists:
        PySpark forks to launch the JVM, and a fork of a process with gRPC's threads running can kill the child
        before it execs (seen as "Java gateway process exited before sending its port number")."""
        if self.session is None:
            self.session = self._build_session()

    # -- ExecutorLauncher ---------------------------------------------------------------------------------
    def start(self, specs) -> None:
        from dataclasses import replace

        self._specs = [replace(spec, orphan_timeout=self.orphan_timeout) for spec in specs]
        self._last_relaunch = time.monotonic()
        if self.session is None:
            self.session = self._build_session()
        sc = self.session.sparkContext
        slots = sc.defaultParallelism
        if slots < len(specs):
            log.warning("Spark reports %d slots for %d executor tasks: a barrier job waits until all fit",
                        slots, len(specs))
        self._thread = threading.Thread(target=self._job_loop, daemon=True, name="paimon-tail-spark-job")
        self._thread.start()

    def _run_job(self) -> None:
        from functools import partial

        sc = self.session.sparkContext
        n = len(self._specs)
        sc.setJobGroup(self.group, f"paimon-tail query service executors ({n})", interruptOnCancel=True)
        task = partial(run_executor_task, self._specs)
        self.jobs_submitted += 1
        sc.parallelize(range(n), n).barrier().mapPartitions(task).collect()

    def _job_loop(self) -> None:
        quick_failures, backoff = 0, 1.0
        while not self._stopping.is_set():
            t0 = time.monotonic()
            try:
                self._run_job()
                if self._stopping.is_set():
                    return
                log.warning("the Spark job of the executors ended without a stop: resubmitting it")
            except Exception as e:  # noqa: BLE001 - a failed job (a task died, cancelled): resubmit
                if self._stopping.is_set():
                    return
                why = job_failure(e)
                log.warning("the Spark job of the executors failed (%s): resubmitting it", why)
                lasted = time.monotonic() - t0
                quick_failures = quick_failures + 1 if lasted < QUICK else 1
                backoff = backoff * 2 if lasted < QUICK else 1.0
                if quick_failures >= MAX_QUICK_FAILURES:
                    self.error = RuntimeError(f"the Spark job failed {quick_failures} times in a row, last: {why}")
                    return
            self._stopping.wait(min(backoff, 10.0))

    def supervise(self, registry, timeout: float) -> None:
        """An executor whose task lives but sends no heartbeat (a hang, SIGSTOP) gets the job cancelled and
        resubmitted, at most once per 30 s (a lost task fails the barrier stage by itself)."""
        now = time.monotonic()
        silent = [m for m in registry.silent(max(10.0, 3 * timeout), now) if m.slot]
        if silent and now - self._last_relaunch > 30.0:
            self._last_relaunch = now
            self.restarts += 1
            reason = f"executor {silent[0].index} sent no heartbeat for {now - silent[0].last_heartbeat:.1f}s"
            threading.Thread(target=self.restart, args=(reason,), daemon=True).start()

    def restart(self, reason: str) -> None:
        """Cancel the running job; the job loop resubmits it."""
        if self.session is not None and not self._stopping.is_set():
            log.warning("restarting the Spark executors: %s", reason)
            self.session.sparkContext.cancelJobGroup(self.group)

    def stop(self, timeout: float) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=min(5.0, timeout))  # executors were told to stop: tasks return
        if self.session is None:
            return
        try:
            if self._thread is not None and self._thread.is_alive():
                self.session.sparkContext.cancelJobGroup(self.group)
                self._thread.join(timeout=max(1.0, timeout - 5.0))
        finally:
            if self._own_session:
                self.session.stop()
                self.session = None
                _shutdown_gateway(timeout)


def _shutdown_gateway(timeout: float) -> None:
    """End the driver JVM now (it would only notice our exit later): nothing of the job outlives ``serve``."""
    try:
        from pyspark import SparkContext

        gateway = SparkContext._gateway
        proc = getattr(gateway, "proc", None)
        if gateway is None or proc is None:
            return
        gateway.shutdown()
        SparkContext._gateway = None
        SparkContext._jvm = None
        if proc.stdin is not None:
            proc.stdin.close()  # the JVM exits at EOF on its stdin
        try:
            proc.wait(timeout=timeout)
        except Exception:  # noqa: BLE001 - subprocess.TimeoutExpired
            proc.kill()
            proc.wait(timeout=5)
    except Exception as e:  # noqa: BLE001 - best effort; the JVM still exits when we do
        log.debug("could not shut the Spark gateway down: %s", e)


__all__ = ["SparkExecutors", "parse_conf", "run_executor_task"]
