"""Fixtures shared by the Spark tests: a real ``paimon-tail serve`` process for lookup-join tests."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Iterator, List

import pytest

from tests.processes import CliProcess


class Served(CliProcess):
    """``paimon-tail serve TABLES -w WH`` (local executor processes) in its own process group."""

    def __init__(self, warehouse: str, tables: List[str], executors: int = 2, env=None) -> None:
        super().__init__([sys.executable, "-m", "paimon_tail", "serve", *tables, "--warehouse", warehouse,
                          "--executors", str(executors)], "ready in", env=env)

    def wait_ready(self, timeout: float = 120) -> "Served":
        if not self.announced.wait(timeout):
            self.stop()
            raise AssertionError("paimon-tail serve did not get ready:\n" + "\n".join(self.lines[-30:]))
        return self

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                pass
        self.kill_all()  # anything of the session still there


@pytest.fixture(scope="module")
def serve():
    """``serve(warehouse, "db.a", "db.b", executors=2)`` → a ready ``Served``; all stopped after the module."""
    started: List[Served] = []

    def start(warehouse: str, *tables: str, executors: int = 2, env=None) -> Served:
        s = Served(warehouse, list(tables), executors, env)
        started.append(s)
        return s.wait_ready()

    yield start
    for s in started:
        s.stop()


def local_spark(app_name: str, register: bool = True) -> Iterator:
    """For a module's ``spark`` fixture (``yield from local_spark(...)``): a ``local[2]`` session on loopback whose
    Python workers run this interpreter, the source registered; stopped after the module."""
    from pyspark.sql import SparkSession

    import paimon_tail.spark

    os.environ["PYSPARK_PYTHON"] = sys.executable  # Python workers must see paimon-tail and pypaimon
    session = (SparkSession.builder.master("local[2]").appName(app_name)
               .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1").config("spark.sql.shuffle.partitions", "2")
               .config("spark.pyspark.python", sys.executable).getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    if register:
        paimon_tail.spark.register(session)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A standalone master and two 1-core workers on 127.0.0.1, for one test module (its JVMs end with it)."""
    from paimon_tail.spark.standalone import StandaloneCluster

    c = StandaloneCluster(workers=2, cores=1, memory="1g", base_dir=str(tmp_path_factory.mktemp("standalone")))
    c.start()
    yield c
    c.stop()


JVM_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jvm", "FakePaimonSource.java")


@pytest.fixture(scope="session")
def fake_paimon_jar(tmp_path_factory) -> str:
    """A JVM data source named ``paimon`` (tests/spark/jvm/FakePaimonSource.java, one row {source: "jvm"}),
    compiled here against PySpark's jars, as the paimon-spark connector would sit on a driver's class path."""
    import shutil
    import zipfile

    from paimon_tail.spark.standalone import spark_home

    if not shutil.which("javac"):
        pytest.skip("!!! javac (JDK 17) is not installed: the JVM 'paimon' source tests DID NOT RUN")
    out = tmp_path_factory.mktemp("fake-paimon")
    classes = out / "classes"
    proc = subprocess.run(["javac", "-nowarn", "-encoding", "UTF-8", "-cp", os.path.join(spark_home(), "jars", "*"),
                           "-d", str(classes), JVM_SOURCE], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"javac failed:\n{proc.stderr}"
    jar = out / "fake-paimon.jar"
    with zipfile.ZipFile(jar, "w") as z:
        for path in classes.rglob("*.class"):
            z.write(path, path.relative_to(classes).as_posix())
        z.writestr("META-INF/services/org.apache.spark.sql.sources.DataSourceRegister",
                   "paimontail.fixture.FakePaimonSource\n")
    return str(jar)
