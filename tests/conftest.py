"""Shared fixtures: real Paimon tables written with pypaimon into temporary warehouses, and the real CLI."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Iterable, List, Optional

import pyarrow as pa
import pytest

APPEND = pa.schema([("id", pa.int64()), ("writer", pa.string()), ("n", pa.int32())])
# Spark picks the first non-loopback interface for its own address when the host name resolves to loopback (its
# "using 192.0.2.2 instead" warning): tests keep every Spark JVM and Python worker on 127.0.0.1.
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# The run forks after in-process gRPC servers and clients have started (pexpect's terminals are pty.fork()): with
# gRPC's fork support on, its handlers restart the event engine's poller in the child, which then closes every
# descriptor before its exec, and the poller aborts the child ("epoll_wait error: Bad file descriptor", SIGABRT;
# 6 in 200 spawns). paimon-tail itself never forks after gRPC (its processes start by vfork: subprocess and
# multiprocessing's spawn), so only the test run turns it off, before anything imports grpc.
os.environ["GRPC_ENABLE_FORK_SUPPORT"] = "false"

# The user's named catalogs (catalogs.yaml in ~/.config/paimon-tail) are not the tests': the run, and every process
# it starts, has a config directory of its own, and each test a fresh one (``config_home``), so a demo that
# registers its warehouse as the default catalog in one test is not the default of the next.
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="paimon-tail-config-")


@pytest.fixture(autouse=True)
def config_home(tmp_path_factory, monkeypatch) -> str:
    """This test's config directory (``$XDG_CONFIG_HOME``): empty, no named catalogs."""
    path = str(tmp_path_factory.mktemp("config"))
    monkeypatch.setenv("XDG_CONFIG_HOME", path)
    return path


ORDERS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("status", pa.string()),
                    ("amount", pa.decimal128(10, 2)), ("op", pa.string())])


class TestWarehouse:
    """A temporary filesystem warehouse with database ``db`` (a local directory, or an S3 URI with ``options``)."""

    __test__ = False

    def __init__(self, path: str, options: Optional[dict] = None) -> None:
        from pypaimon import CatalogFactory

        self.path = path
        self.options = dict(options or {}, warehouse=path)
        self.catalog = CatalogFactory.create(self.options)
        self.catalog.create_database("db", True)

    def cli_args(self, options: Optional[dict] = None) -> List[str]:
        """``-w PATH -O k=v …`` for the CLI (``options``: another set of catalog options, e.g. via a proxy)."""
        opts = dict(options or self.options)
        args = ["-w", opts.pop("warehouse", self.path)]
        for k, v in opts.items():
            args += ["-O", f"{k}={v}"]
        return args

    def create(self, name: str, schema: pa.Schema = APPEND, primary_keys: Optional[list] = None,
               partition_keys: Optional[list] = None, options: Optional[dict] = None):
        from pypaimon import Schema

        opts = dict(options or {})
        if primary_keys and "op" in schema.names:
            opts.setdefault("rowkind.field", "op")
        if not primary_keys:
            opts.setdefault("bucket", "-1")
        self.catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(
            schema, primary_keys=primary_keys or [], partition_keys=partition_keys or [], options=opts), False)
        return self.table(name)

    def table(self, name: str):
        return self.catalog.get_table(f"db.{name}")

    def commit(self, name: str, rows: List[dict], schema: Optional[pa.Schema] = None) -> int:
        """One commit of ``rows``; returns the new snapshot id."""
        from pypaimon.schema.data_types import PyarrowFieldParser

        table = self.table(name)
        schema = schema or PyarrowFieldParser.from_paimon_schema(table.fields)
        builder = table.new_batch_write_builder()
        write, commit = builder.new_write(), builder.new_commit()
        try:
            write.write_arrow(pa.Table.from_pylist(rows, schema=schema))
            commit.commit(write.prepare_commit())
        finally:
            write.close()
            commit.close()
        return table.snapshot_manager().get_latest_snapshot().id

    def latest(self, name: str) -> int:
        snap = self.table(name).snapshot_manager().get_latest_snapshot()
        return snap.id if snap else 0

    def batch_rows(self, name: str) -> list:
        table = self.table(name)
        rb = table.new_read_builder()
        return rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()


@pytest.fixture
def wh(tmp_path) -> TestWarehouse:
    return TestWarehouse(str(tmp_path / "warehouse"))


def append_rows(commit_no: int, size: int = 10, writer: str = "w") -> list:
    return [{"id": commit_no * 1000 + i, "writer": writer, "n": commit_no} for i in range(size)]


class BackgroundWriter(threading.Thread):
    """Commits ``commits`` batches to an append table from another thread, as a live writer would."""

    def __init__(self, wh: TestWarehouse, name: str, commits: int, size: int = 10, pause: float = 0.0,
                 first: int = 0) -> None:
        super().__init__(daemon=True)
        self.wh, self.name_, self.commits, self.size, self.pause, self.first = wh, name, commits, size, pause, first
        self.ids: list = []
        self.error: Optional[BaseException] = None

    def run(self) -> None:
        try:
            for c in range(self.first, self.first + self.commits):
                rows = append_rows(c, self.size)
                self.wh.commit(self.name_, rows)
                self.ids.extend(r["id"] for r in rows)
                if self.pause:
                    time.sleep(self.pause)
        except BaseException as e:  # surfaced by the test
            self.error = e


CLI = [sys.executable, "-m", "paimon_tail"]


def run_cli(args: Iterable[str], timeout: float = 60, **kwargs) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("PAIMON_WAREHOUSE", None)
    env.update(kwargs.pop("env", {}))
    return subprocess.run(CLI + list(args), capture_output=True, timeout=timeout, env=env, **kwargs)


def start_cli(args: Iterable[str], **kwargs) -> subprocess.Popen:
    env = dict(os.environ)
    env.pop("PAIMON_WAREHOUSE", None)
    env.update(kwargs.pop("env", {}))
    return subprocess.Popen(CLI + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, **kwargs)


def writers_of(warehouse: str, prefix: bool = False) -> list:
    """pids of the demo writer processes running for ``warehouse`` (with ``prefix``: for any under it)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
        except OSError:
            continue
        path = warehouse.encode()
        if b"paimon_tail.demo_daemon" in cmd and any(a == path or prefix and a.startswith(path) for a in cmd):
            found.append(int(pid))
    return found


@pytest.fixture
def demo_dir(tmp_path):
    """Where a test runs the demo; whatever writer it leaves is stopped (and, failing that, killed)."""
    path = str(tmp_path / "demo")
    yield path
    run_cli(["demo", "--stop", "-w", path], timeout=120)
    for pid in writers_of(path):
        os.kill(pid, signal.SIGKILL)


_BASETEMP: List[str] = []  # this run's temporary root (other runs on the machine have their own)


@pytest.fixture(scope="session", autouse=True)
def _remember_basetemp(tmp_path_factory):
    _BASETEMP.append(str(tmp_path_factory.getbasetemp()))
    yield


def pytest_sessionfinish(session, exitstatus) -> None:
    """A demo writer keeps committing until ``demo --stop`` (by design): a test that starts one stops it (the
    ``demo_dir`` fixture). One still running at the end of the run is a test's leak: killed, and the run fails.
    Only this run's: a writer under another run's temporary root belongs to that run."""
    if not _BASETEMP:
        return
    leaked = writers_of(os.path.join(_BASETEMP[0], ""), prefix=True)
    for pid in leaked:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if leaked:
        print(f"\ndemo writers left running by the tests (killed): {leaked}", file=sys.stderr)
        session.exitstatus = 1


# -- environments: a test's needs, as markers (``-m s3``, ``-m "not java and not spark"``) -----------------------
# java, spark, slow and hosts are set by the tests' modules (``pytestmark``); s3 follows from what a test uses (the
# S3 fixtures, or a module that starts its own S3 server), so such a test is selected with the others wherever it sits.
S3_FIXTURES = {"s3", "s3wh", "proxy"}
S3_BUCKET = "lake"


def pytest_collection_modifyitems(items) -> None:
    from tests.objectstore import S3Server

    for item in items:
        module = getattr(item, "module", None)
        if S3_FIXTURES & set(getattr(item, "fixturenames", ())) or getattr(module, "S3Server", None) is S3Server:
            item.add_marker(pytest.mark.s3)


@pytest.fixture(scope="session")
def s3():
    """moto's S3 server in its own process on 127.0.0.1, with the bucket ``lake`` (tests/objectstore.py)."""
    from tests.objectstore import S3Server

    with S3Server() as server:
        server.create_bucket(S3_BUCKET)
        yield server


@pytest.fixture
def proxy(s3):
    """Our proxy in front of moto: what it counts is what paimon-tail costs; an outage it plays hits only us."""
    from tests.objectstore import S3Proxy

    with S3Proxy(s3) as p:
        yield p


@pytest.fixture
def s3wh(s3) -> TestWarehouse:
    """A fresh warehouse in the bucket (a new prefix per test). Writers write to moto directly; paimon-tail goes
    through the proxy (``via(proxy, s3wh)``)."""
    import uuid

    path = f"s3://{S3_BUCKET}/{uuid.uuid4().hex[:12]}/warehouse"
    return TestWarehouse(path, s3.catalog_options(path))


# fixtures of helper modules, for the tests of every package: Paimon Java's tables, and processes reaped at the end
from tests.cli_runs import reaper  # noqa: E402,F401
from tests.java.javafix import java_env, java_warehouse  # noqa: E402,F401
