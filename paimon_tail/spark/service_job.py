"""``paimon-tail serve --spark``: the query service's executors as long-lived Spark tasks, one job each.

The ``serve`` process is the Spark driver. It keeps the coordinator (address server, scanners, assignment) and
submits, for each of its N executors (N = ``--executors``), a job of one task, from a thread of its own::

    sc.parallelize([i], 1).mapPartitions(partial(run_executor_task, spec_i)).collect()   # job group <group>-i

Every task runs the ordinary executor (``paimon_tail.service.executor.entry.run_executor``): its gRPC server bound
to its worker's address (``task_host``), and the one Join call to the coordinator that carries its heartbeats one
way and its assignment and file changes the other, with the service's TLS and token. Clients cannot tell these
executors from local ones.

* One job per executor, not one barrier job: a lost worker costs only its own executor. Its Join call ends (or
  its heartbeats stop), and the coordinator moves its channels to the executors that are up
  (``ExecutorLauncher.keeps_slots`` is False: slots behave like joined executors); lookups retry meanwhile.
  Spark reschedules the lost task by itself (an executor lost is not the task's failure) and it joins again as
  soon as a core is free, taking its share back. A task that fails (its executor ended, its Python worker died)
  is retried by Spark (``spark.task.maxFailures``); a job that failed for good is resubmitted by its thread
  (backoff 1-10 s; ``MAX_QUICK_FAILURES`` failures in a row that each lasted less than a minute end ``serve``).
* At the start every task must join within ``start_timeout``; otherwise ``serve`` ends with one line instead of
  waiting forever: fewer task slots than executors (Spark's own count, as its barrier check), or the tasks
  that did not join and the address they dial.
* A task whose executor ends for any reason but the service's "stop" raises, so Spark runs it again.
* Stopping: the service sends ``Stop`` to every executor (tasks return, the jobs end), then the launcher cancels
  its job groups (``interruptOnCancel``) in case a task is stuck and stops the SparkSession it created.
"""
from __future__ import annotations

import logging
import os
import re
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Dict, List, Optional
from urllib.parse import urlparse

from ..errors import UsageError
from ..service.coordinator.launcher import ExecutorLauncher

log = logging.getLogger(__name__)

MAX_QUICK_FAILURES = 5
QUICK = 60.0  # a job that failed sooner than this counts towards MAX_QUICK_FAILURES
DEFAULT_START_TIMEOUT = 120.0
LOG4J_CONFIG = Path(__file__).resolve().with_name("log4j2-serve.properties")


def task_host(spec) -> str:
    """The address a task's executor binds and advertises: loopback when serve is on loopback; else the one its
    worker was given (``SPARK_LOCAL_IP``), else this machine's address on the route to the coordinator."""
    from ..service.protocol.addresses import WILDCARDS, route_address, spark_local_ip, split_host_port

    if spec.host not in WILDCARDS:
        return spec.host
    return spark_local_ip() or route_address(split_host_port(spec.coordinator)[0]) or spec.host


def run_executor_task(spec, iterator):
    """The body of slot ``spec.index``'s task (runs in a Spark Python worker)."""
    from dataclasses import replace

    from pyspark import TaskContext

    from ..service.executor.entry import run_executor

    for _ in iterator:  # the partition's single element: the slot
        pass
    attempt = TaskContext.get().attemptNumber()
    from ..log_format import configure

    configure(spec.log_format, f"executor-{spec.index}", text_format=f"executor-{spec.index} %(levelname)s %(message)s")
    ended = run_executor(replace(spec, host=task_host(spec)))
    if not ended.stopped:  # Spark runs the task again (a new executor for this slot)
        raise RuntimeError(f"paimon-tail executor {spec.index} (task attempt {attempt}) ended: {ended.reason}")
    yield spec.index


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


def master_hosts(master: str) -> Optional[List[str]]:
    """The hosts of a ``spark://h1:p1,h2:p2`` master URL; [] for local masters; None when unknown (yarn, k8s)."""
    if not master or master.startswith("local"):
        return []
    if master.startswith("spark://"):
        return [urlparse(f"spark://{part}").hostname or "" for part in master[len("spark://"):].split(",")]
    return None


class _Resubmit(Exception):
    """A slot's job ended before the service stopped: submit it again."""


class _Resubmits:
    """A slot's failed jobs in a row, each within ``QUICK`` of its start, and the wait before the next
    submission (tenacity's ``wait``): 1 s, doubling up to 10 s while the failures are quick."""

    def __init__(self) -> None:
        self.quick_failures, self.backoff = 0, 1.0

    def failed(self, lasted: float) -> int:
        """A job failed after ``lasted`` seconds; how many quick failures in a row that makes."""
        quick = lasted < QUICK
        self.quick_failures = self.quick_failures + 1 if quick else 1
        self.backoff = self.backoff * 2 if quick else 1.0
        return self.quick_failures

    def wait(self, state) -> float:
        return min(self.backoff, 10.0)


class SparkExecutors(ExecutorLauncher):
    """Runs each executor as a Spark job of one task; creates (and stops) its own SparkSession unless given one."""

    description = "Spark"
    keeps_slots = False  # a lost worker may not come back: its executor's channels move to the others

    def __init__(self, master: Optional[str] = None, conf: Optional[Dict[str, str]] = None,
                 app_name: str = "paimon-tail serve", session=None, orphan_timeout: float = 30.0,
                 host: str = "127.0.0.1", start_timeout: float = DEFAULT_START_TIMEOUT) -> None:
        self.master = master
        self.host = host
        self.conf = dict(conf or {})
        self.app_name = app_name
        self.session = session
        self._own_session = session is None
        self.orphan_timeout = orphan_timeout
        self.start_timeout = start_timeout
        self.error: Optional[BaseException] = None
        self.group = f"paimon-tail-serve-{uuid.uuid4().hex[:12]}"
        self.jobs_submitted = 0
        self._stopping = threading.Event()
        self._threads: List[threading.Thread] = []
        self._specs: List = []
        self._started = 0.0
        self._all_joined = False
        self._present: set = set()
        self._last_restart: Dict[int, float] = {}

    # -- session ------------------------------------------------------------------------------------------
    def _master(self) -> str:
        return self.master or self.conf.get("spark.master") or os.environ.get("MASTER", "")

    def on_loopback(self) -> bool:
        """Every worker is on this machine's loopback (a local master, or a standalone master on loopback)."""
        from ..service.protocol.security import is_loopback

        hosts = master_hosts(self._master())
        return hosts is not None and all(is_loopback(h) for h in hosts)

    def check_host(self) -> None:
        """A loopback --host works only when every worker is on loopback too."""
        from ..service.protocol.security import is_loopback

        if is_loopback(self.host) and not self.on_loopback():
            raise UsageError(f"--spark with master {self._master()} needs a routable --host for the address "
                             f"server (its workers cannot reach {self.host})",
                             hint="e.g. --host 0.0.0.0 with a token (PAIMON_TAIL_TOKEN) and TLS")

    def _build_session(self):
        try:
            from pyspark.sql import SparkSession
        except ImportError as e:
            raise UsageError(f"--spark needs PySpark ({e})",
                             hint="pip install 'paimon-tail[spark]', from a clone: pip install -e '.[spark]'") from None
        from ..service.protocol.security import is_loopback

        conf = dict(self.conf)
        # A SparkContext made from Python takes its workers' interpreter from PYSPARK_PYTHON, not from the conf
        # (spark-submit turns the conf into that variable; we are not started by spark-submit).
        if "spark.pyspark.python" in conf:
            os.environ.setdefault("PYSPARK_PYTHON", conf["spark.pyspark.python"])
        if self.on_loopback():  # workers on this machine: the serving interpreter sees paimon-tail and pypaimon
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        if self.on_loopback() and is_loopback(self.host):
            conf.setdefault("spark.driver.host", "127.0.0.1")  # executors on loopback reach the driver there
            conf.setdefault("spark.driver.bindAddress", "127.0.0.1")
            # The driver JVM's other servers (its web UI binds every interface otherwise) stay on loopback too.
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # A reused Python worker would run a second executor loop in a process that already had one (gRPC aio,
        # umask, threads): one executor per worker process.
        conf.setdefault("spark.python.worker.reuse", "false")
        conf.setdefault("spark.ui.showConsoleProgress", "false")  # serve's stderr is for its own lines
        level = os.environ.get("PAIMON_TAIL_SPARK_LOG")
        if level is None and "spark.driver.extraJavaOptions" not in conf:
            # errors only, and none of Spark's start-up lines (its log profile, the native Hadoop warning)
            conf["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile={LOG4J_CONFIG.as_uri()}"
        else:
            conf.setdefault("spark.log.level", level or "ERROR")
        builder = SparkSession.builder.appName(self.app_name)
        if self.master:
            builder = builder.master(self.master)
        for k, v in conf.items():
            builder = builder.config(k, v)
        return builder.getOrCreate()

    def prepare(self) -> None:
        """Start Spark (its JVM gateway) now, before any gRPC server or channel exists: PySpark forks to launch
        the JVM, and a fork of a process with gRPC's threads running can kill the child before it execs (seen as
        "Java gateway process exited before sending its port number"). In a worker thread, PySpark leaves the
        main thread's SIGINT handler (serve's clean stop) alone."""
        if self.session is None:
            self.session = self._build_session()

    # -- ExecutorLauncher ---------------------------------------------------------------------------------
    def start(self, specs) -> None:
        from dataclasses import replace

        self._specs = [replace(spec, orphan_timeout=self.orphan_timeout) for spec in specs]
        self._started = time.monotonic()
        self.prepare()  # when the service did not (a launcher used on its own)
        for spec in self._specs:
            t = threading.Thread(target=self._slot_loop, args=(spec,), daemon=True,
                                 name=f"paimon-tail-spark-executor-{spec.index}")
            t.start()
            self._threads.append(t)

    def _run_job(self, spec) -> None:
        from functools import partial

        sc = self.session.sparkContext
        # (PySpark pins each Python thread to a JVM thread: the group is this thread's, its job this slot's)
        sc.setJobGroup(f"{self.group}-{spec.index}", f"paimon-tail query service executor {spec.index}",
                       interruptOnCancel=True)
        self.jobs_submitted += 1
        sc.parallelize([spec.index], 1).mapPartitions(partial(run_executor_task, spec)).collect()

    def _slot_loop(self, spec) -> None:
        """Submit slot ``spec``'s job, and again whenever it ends before the service stops (tenacity: 1 s between
        tries, doubling up to 10 s while jobs keep failing within ``QUICK``), until ``MAX_QUICK_FAILURES`` quick
        failures in a row end the service."""
        from tenacity import Retrying, retry_if_exception_type

        jobs = _Resubmits()
        for step in Retrying(retry=retry_if_exception_type(_Resubmit), wait=jobs.wait,
                             sleep=self._stopping.wait, reraise=True):
            with step:
                self._slot_job(spec, jobs)

    def _slot_job(self, spec, jobs: "_Resubmits") -> None:
        """One run of the slot's job; raises ``_Resubmit`` when it is to run again."""
        if self._stopping.is_set():
            return
        t0 = time.monotonic()
        try:
            self._run_job(spec)
            if self._stopping.is_set():
                return
            log.warning("the Spark job of executor %d ended without a stop: resubmitting it", spec.index)
        except Exception as e:  # noqa: BLE001 - a failed job (its task failed too often, cancelled): resubmit
            if self._stopping.is_set():
                return
            why = job_failure(e)
            log.warning("the Spark job of executor %d failed (%s): resubmitting it", spec.index, why)
            if jobs.failed(time.monotonic() - t0) >= MAX_QUICK_FAILURES:
                self.error = RuntimeError(f"the Spark job of executor {spec.index} failed {jobs.quick_failures} "
                                          f"times in a row, last: {why}")
                return
        raise _Resubmit()

    def task_slots(self) -> Optional[int]:
        """How many tasks the application can run at once now (what Spark's own barrier check asks), or None."""
        try:
            jsc = self.session.sparkContext._jsc.sc()
            return int(jsc.maxNumConcurrentTasks(jsc.resourceProfileManager().defaultResourceProfile()))
        except Exception as e:  # noqa: BLE001 - a Spark internal (private[spark]): say less rather than fail
            log.debug("could not ask Spark for its task slots: %s", e)
            return None

    def _check_started(self, registry, now: float) -> None:
        """Every slot's first executor must join within ``start_timeout``; say why one did not."""
        waiting = [i for i in range(len(self._specs)) if i not in registry.restarts]
        if not waiting:
            self._all_joined = True
            return
        if now - self._started < self.start_timeout:
            return
        n, address, within = len(self._specs), self._specs[0].coordinator, f"{self.start_timeout:.0f}s"
        slots = self.task_slots()
        if slots is not None and slots < n:
            self.error = RuntimeError(
                f"only {n - len(waiting)} of {n} executor tasks started within {within}: the Spark application "
                f"has {slots} task slot(s) (cores) for --executors {n} (give it more cores, or fewer --executors)")
        else:
            self.error = RuntimeError(
                f"executor task(s) {', '.join(map(str, waiting))} did not join the service at {address} within "
                f"{within} (can the Spark workers reach that address? see serve --host; or are the application's "
                "cores busy?)")

    def supervise(self, registry, timeout: float) -> None:
        """Says when an executor is lost (the service moves its channels); at the start, ends the service with
        the reason when not every task could start. An executor silent for ``timeout`` while its task may live
        (a hang, SIGSTOP, a cut network), which the service drops next, gets its job cancelled and resubmitted,
        at most once per 30 s."""
        now = time.monotonic()
        if not self._all_joined:
            self._check_started(registry, now)
        present = {i for i, m in registry.members.items() if m.slot}
        for index in sorted(self._present - present):
            log.warning("executor %d is gone: its channels move to the other executors; Spark starts its task "
                        "again when a core is free", index)
        self._present = present
        for member in registry.silent(timeout, now):
            if member.slot and not member.gone and now - self._last_restart.get(member.index, 0.0) > 30.0:
                self._last_restart[member.index] = now
                self.restarts += 1
                reason = f"executor {member.index} sent no heartbeat for {now - member.last_heartbeat:.1f}s"
                threading.Thread(target=self.restart, args=(member.index, reason), daemon=True).start()

    def restart(self, index: int, reason: str) -> None:
        """Cancel slot ``index``'s job; its thread resubmits it."""
        if self.session is not None and not self._stopping.is_set():
            log.warning("restarting Spark executor %d: %s", index, reason)
            self.session.sparkContext.cancelJobGroup(f"{self.group}-{index}")

    def stop(self, timeout: float) -> None:
        self._stopping.set()
        deadline = time.monotonic() + min(5.0, timeout)
        for t in self._threads:  # executors were told to stop: tasks return
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        if self.session is None:
            return
        try:
            stuck = [i for i, t in enumerate(self._threads) if t.is_alive()]
            for i in stuck:
                self.session.sparkContext.cancelJobGroup(f"{self.group}-{i}")
            deadline = time.monotonic() + max(1.0, timeout - 5.0)
            for i in stuck:
                self._threads[i].join(timeout=max(0.0, deadline - time.monotonic()))
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


__all__ = ["SparkExecutors", "master_hosts", "parse_conf", "run_executor_task", "task_host"]
