"""A Spark standalone cluster, or a Spark Connect server, on this machine, from PySpark's own scripts.

    python -m paimon_tail.spark.standalone --workers 2          # master + 2 workers on 127.0.0.1 until Ctrl-C
    python -m paimon_tail.spark.standalone --connect            # a Spark Connect server (sc://127.0.0.1:PORT)

    with StandaloneCluster(workers=2) as cluster:                # what the tests and benchmarks do
        spark = SparkSession.builder.master(cluster.master_url)...

No Spark download: ``$SPARK_HOME`` is the installed ``pyspark`` package (``bin/spark-class``,
``sbin/start-connect-server.sh``, the jars). Every process runs in its own process group, so a worker is stopped
(or killed like a lost machine, ``kill_worker``) together with its executors and their Python workers, and
``stop()`` leaves no JVM behind. Logs and work directories go to a temporary directory, removed at the end
unless ``keep`` is set.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence


def spark_home() -> str:
    """``$SPARK_HOME``, or the installed pyspark package (which carries bin/, sbin/ and jars/)."""
    home = os.environ.get("SPARK_HOME")
    if home:
        return home
    import pyspark

    return os.path.dirname(os.path.abspath(pyspark.__file__))


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


@dataclass
class _Proc:
    name: str
    args: List[str]
    log: str
    proc: Optional[subprocess.Popen] = None

    def start(self, env: Dict[str, str], cwd: str) -> None:
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(self.args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=env, cwd=cwd, start_new_session=True)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, sig)  # the whole group: executors and Python workers of a worker too
        except ProcessLookupError:
            pass

    def stop(self, grace: float = 10.0) -> None:
        if self.proc is None:
            return
        self.signal(signal.SIGTERM)
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            pass
        self.signal(signal.SIGKILL)  # what is left of the group
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            pass

    def tail(self, lines: int = 30) -> str:
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""


class SparkProcessError(RuntimeError):
    pass


@dataclass
class _Base:
    host: str = "127.0.0.1"
    python: str = field(default_factory=lambda: sys.executable)
    keep: bool = False
    base_dir: Optional[str] = None
    daemon_memory: str = "256m"

    def _prepare(self, prefix: str) -> None:
        self.dir = self.base_dir or tempfile.mkdtemp(prefix=prefix)
        os.makedirs(self.dir, exist_ok=True)
        self.home = spark_home()
        self.env = dict(os.environ, SPARK_HOME=self.home, SPARK_LOCAL_IP=self.host, SPARK_LOG_DIR=self._sub("logs"),
                        SPARK_PID_DIR=self._sub("pids"), SPARK_DAEMON_MEMORY=self.daemon_memory,
                        SPARK_NO_DAEMONIZE="1", PYSPARK_PYTHON=self.python, PYSPARK_DRIVER_PYTHON=self.python)
        self.procs: List[_Proc] = []

    def _sub(self, name: str) -> str:
        path = os.path.join(self.dir, name)
        os.makedirs(path, exist_ok=True)
        return path

    def _launch(self, name: str, args: Sequence[str]) -> _Proc:
        p = _Proc(name, list(args), os.path.join(self._sub("logs"), f"{name}.out"))
        p.start(self.env, self.dir)
        self.procs.append(p)
        return p

    def _wait(self, what: str, ready, proc: _Proc, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            if not proc.alive():
                raise SparkProcessError(f"{what} exited with {proc.proc.returncode}:\n{proc.tail()}")
            if time.monotonic() > deadline:
                raise SparkProcessError(f"{what} not ready after {timeout:.0f}s:\n{proc.tail()}")
            time.sleep(0.2)

    def stop(self) -> None:
        for p in reversed(self.procs):
            p.stop()
        if not self.keep and not self.base_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


@dataclass
class StandaloneCluster(_Base):
    """A master and ``workers`` workers (``cores`` and ``memory`` each), all on ``host``."""

    workers: int = 2
    cores: int = 1
    memory: str = "1g"

    def start(self) -> "StandaloneCluster":
        self._prepare("spark-standalone-")
        self.port, self.ui_port = free_port(self.host), free_port(self.host)
        self.worker_procs: List[_Proc] = []
        try:
            master = self._launch("master", [
                os.path.join(self.home, "bin", "spark-class"), "org.apache.spark.deploy.master.Master",
                "--host", self.host, "--port", str(self.port), "--webui-port", str(self.ui_port)])
            self._wait("the Spark master", lambda: _port_open(self.host, self.port), master, 60)
            self._find_ui_port(master)
            for _ in range(self.workers):
                self.add_worker(wait=False)
            self.wait_workers(self.workers)
        except BaseException:
            self.stop()
            raise
        return self

    def _find_ui_port(self, master: _Proc, timeout: float = 30) -> None:
        """The port the master's web UI (its JSON status) is really on: Spark moves to the next port when the
        one we picked was taken meanwhile (other work on this machine), and says so in its log."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = re.search(r"MasterWebUI.* started at https?://[^:/]+:(\d+)", master.tail(200))
            if m:
                self.ui_port = int(m.group(1))
                return
            time.sleep(0.2)

    @property
    def master_url(self) -> str:
        return f"spark://{self.host}:{self.port}"

    def add_worker(self, wait: bool = True) -> int:
        """Start one more worker; returns its index."""
        i = len(self.worker_procs)
        p = self._launch(f"worker-{i}", [
            os.path.join(self.home, "bin", "spark-class"), "org.apache.spark.deploy.worker.Worker",
            "--host", self.host, "--cores", str(self.cores), "--memory", self.memory,
            "--work-dir", self._sub(f"work-{i}"), "--webui-port", str(free_port(self.host)), self.master_url])
        self.worker_procs.append(p)
        if wait:
            self.wait_workers(len([w for w in self.worker_procs if w.alive()]))
        return i

    def state(self) -> dict:
        """The master's JSON status (workers, applications)."""
        with urllib.request.urlopen(f"http://{self.host}:{self.ui_port}/json/", timeout=2) as r:
            return json.loads(r.read())

    def alive_workers(self) -> int:
        try:
            return sum(1 for w in self.state().get("workers", []) if w.get("state") == "ALIVE")
        except OSError:
            return 0

    def wait_workers(self, n: int, timeout: float = 90) -> None:
        self._wait(f"{n} Spark worker(s)", lambda: self.alive_workers() >= n, self.procs[0], timeout)

    def kill_worker(self, i: int) -> None:
        """SIGKILL worker ``i`` with its executors and Python workers: a machine lost."""
        self.worker_procs[i].signal(signal.SIGKILL)
        self.worker_procs[i].proc.wait(10)

    def session_builder(self, app: str = "paimon-tail", executor_memory: str = "512m"):
        """A SparkSession builder for this cluster: driver on ``host``, one core per executor."""
        from pyspark.sql import SparkSession

        return (SparkSession.builder.master(self.master_url).appName(app)
                .config("spark.driver.host", self.host).config("spark.driver.bindAddress", self.host)
                .config("spark.executor.memory", executor_memory).config("spark.executor.cores", str(self.cores))
                .config("spark.pyspark.python", self.python).config("spark.ui.enabled", "false")
                .config("spark.sql.shuffle.partitions", str(self.workers * self.cores)))


@dataclass
class ConnectServer(_Base):
    """``sbin/start-connect-server.sh --wait`` on ``host``:``port`` with a ``master`` of its own."""

    master: str = "local[2]"
    port: int = 0
    driver_memory: str = "1g"
    jars: Sequence[str] = ()
    conf: Dict[str, str] = field(default_factory=dict)

    def start(self) -> "ConnectServer":
        self._prepare("spark-connect-")
        self.env.pop("SPARK_DAEMON_MEMORY")  # the server is a driver: --driver-memory
        self.port = self.port or free_port(self.host)
        conf = {
            "spark.connect.grpc.binding.address": self.host, "spark.connect.grpc.binding.port": str(self.port),
            "spark.driver.host": self.host, "spark.driver.bindAddress": self.host, "spark.ui.enabled": "false",
            "spark.pyspark.python": self.python, "spark.sql.shuffle.partitions": "2", **self.conf,
        }
        args = [os.path.join(self.home, "sbin", "start-connect-server.sh"), "--wait", "--master", self.master,
                "--driver-memory", self.driver_memory]
        if self.jars:
            args += ["--jars", ",".join(self.jars)]
        for k, v in conf.items():
            args += ["--conf", f"{k}={v}"]
        try:
            server = self._launch("connect", args)
            self._wait("the Spark Connect server", lambda: _port_open(self.host, self.port), server, 120)
        except BaseException:
            self.stop()
            raise
        return self

    @property
    def url(self) -> str:
        return f"sc://{self.host}:{self.port}"


def main(argv=None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m paimon_tail.spark.standalone", description=__doc__.split("\n\n")[0])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--cores", type=int, default=1)
    p.add_argument("--memory", default="1g")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--connect", action="store_true", help="a Spark Connect server instead of a cluster")
    p.add_argument("--master", default="local[2]", help="--connect: the server's master")
    args = p.parse_args(argv)

    def stop(signum, frame):  # `kill`, as well as Ctrl-C, stops what was started
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    if args.connect:
        thing = ConnectServer(host=args.host, master=args.master, keep=True)
    else:
        thing = StandaloneCluster(host=args.host, workers=args.workers, cores=args.cores, memory=args.memory,
                                  keep=True)
    try:
        with thing:
            url = thing.url if args.connect else thing.master_url
            print(f"{url}  (logs in {thing.dir}; Ctrl-C stops it)", flush=True)
            while all(p.alive() for p in thing.procs[:1]):
                time.sleep(1)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
