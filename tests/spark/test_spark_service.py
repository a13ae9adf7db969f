"""``paimon-tail serve --spark``: the query service's executors as the tasks of a real local Spark job.

One ``python -m paimon_tail serve ... --spark --master local[2]`` process (its own session, so everything it
starts — the driver JVM, the Python workers running the executors — can be found and must be gone at the end).
The tests run in file order: lookups vs the batch read, a commit while serving, a killed task (its job runs
again and only its executor registers again), then SIGTERM ends it all.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import List

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

try:
    import pyspark  # noqa: F401
except ImportError as e:  # pragma: no cover
    pytest.skip(f"!!! PySpark is not installed ({e}): the Spark service tests DID NOT RUN. "
                "Install it with: pip install 'paimon-tail[spark]'", allow_module_level=True)

from paimon_tail.catalog import catalog_config
from paimon_tail.service.client import LookupClient
from tests.processes import CliProcess

import pyarrow as pa

PK_SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("name", pa.string()), ("amount", pa.int32()),
                       ("op", pa.string())])


class Warehouse:
    """A pypaimon warehouse: writes, and the oracle (pypaimon's batch read by primary key)."""

    def __init__(self, path: str) -> None:
        from pypaimon import CatalogFactory

        self.path = path
        self.catalog = CatalogFactory.create({"warehouse": path})
        self.catalog.create_database("db", True)

    def create(self, name, schema, primary_keys, partition_keys, **options):
        from pypaimon import Schema

        opts = {"rowkind.field": "op", **{k: str(v) for k, v in options.items()}}
        self.catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(
            schema, partition_keys=partition_keys, primary_keys=primary_keys, options=opts), False)

    def write(self, name: str, rows) -> int:
        table = self.catalog.get_table(f"db.{name}")
        wb = table.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        w.write_arrow(pa.Table.from_pylist(rows, schema=PK_SCHEMA))
        c.commit(w.prepare_commit())
        w.close()
        c.close()
        return table.snapshot_manager().get_latest_snapshot().id

    def batch_read(self, name: str) -> dict:
        table = self.catalog.get_table(f"db.{name}")
        rb = table.new_read_builder()
        rows = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
        pk = table.table_schema.primary_keys
        return {tuple(r[k] for k in pk): r for r in rows}

N = 400
DATES = ("2026-11-01", "2026-11-02", "2026-11-03")


def _rows(ids, tag, op="+I"):
    return [{"id": i, "dt": DATES[i % 3], "name": f"{tag}-{i}", "amount": i % 1000, "op": op} for i in ids]


def _session_pids(sid: int) -> List[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[3]) == sid and fields[0] != "Z":  # session id; zombies are already gone
                out.append(int(entry))
        except (OSError, IndexError, ValueError):
            pass
    return out


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _listening(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=1.0):
            return True
    except OSError:
        return False


class SparkServe(CliProcess):
    def __init__(self, warehouse: str, tmp: Path) -> None:
        self.tmp = tmp
        super().__init__(
            [sys.executable, "-m", "paimon_tail", "serve", "db.orders", "db.dyn", "--warehouse", warehouse,
             "--executors", "2", "--spark", "--master", "local[2]",
             "--spark-conf", "spark.ui.enabled=false", "--spark-conf", "spark.driver.host=127.0.0.1",
             "--spark-conf", "spark.driver.bindAddress=127.0.0.1"],
            "ready in", env={"PYSPARK_PYTHON": sys.executable, "TMPDIR": str(tmp)})

    def stop(self, sig=signal.SIGTERM, timeout: float = 60) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill_all()
            raise AssertionError("serve --spark did not stop:\n" + self.log())


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> Warehouse:
    return orders_warehouse(str(tmp_path_factory.mktemp("wh")))


def orders_warehouse(path: str) -> Warehouse:
    """db.orders, partitioned by dt, 3 buckets: N rows, a tenth updated, some deleted."""
    w = Warehouse(path)
    w.create("orders", PK_SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], bucket=3)
    w.write("orders", _rows(range(N), "v1"))
    w.write("orders", _rows(range(0, N, 7), "v2", "+U"))
    w.write("orders", _rows(range(3, N, 11), "gone", "-D"))
    # Paimon's default primary-key table (dynamic buckets, added as they fill): keys routed by no client hash
    w.create("dyn", PK_SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
             **{"dynamic-bucket.target-row-num": 20})
    w.write("dyn", _rows(range(N), "v1"))
    w.write("dyn", _rows(range(3, N, 11), "gone", "-D"))
    return w


@pytest.fixture(scope="module")
def served(wh, tmp_path_factory):
    svc = SparkServe(wh.path, tmp_path_factory.mktemp("tmp"))
    if not svc.announced.wait(120):
        svc.stop(signal.SIGKILL)
        pytest.fail("serve --spark was not ready:\n" + svc.log())
    yield svc
    if svc.proc.poll() is None:
        svc.kill_all()


@pytest.fixture
def client(wh, served):
    c = LookupClient("db.orders", catalog_config(wh.path), timeout=30)
    yield c
    c.close_sync()


def _all_keys():
    keys = [(i, DATES[i % 3]) for i in range(N + 50)]  # present, updated, deleted, never written
    keys += [(i, "2026-11-09") for i in range(20)]  # right id, unknown partition
    return keys


def _check_against_batch_read(wh, client, min_snapshot=None):
    oracle = wh.batch_read("orders")
    keys = _all_keys()
    result = client.lookup_sync([{"id": i, "dt": d} for i, d in keys], min_snapshot=min_snapshot)
    got = {(r["id"], r["dt"]): r for r in result.rows.to_pylist()}
    assert got == {k: oracle[k] for k in keys if k in oracle}
    assert sorted(result.missing) == [i for i, k in enumerate(keys) if k not in oracle]
    return result


def test_executors_are_spark_tasks_and_answer_like_the_batch_read(wh, served, client):
    result = _check_against_batch_read(wh, client)
    assert set(result.snapshot_ids.values()) == {3}
    assert (3, DATES[0]) in {(i, d) for i, d in _all_keys()} and len(result.missing) > 50
    st = client.status_sync()
    assert st.num_executors == 2
    for e in st.executors:
        assert e.info.alive and e.info.address.startswith("127.0.0.1:")
        # The executor runs inside a Python worker of the Spark job, not a spawn child of serve.
        assert "pyspark" in _cmdline(e.info.pid), _cmdline(e.info.pid)
    assert sum(len(e.buckets) for e in st.executors) == 9  # 3 partitions x 3 buckets, split between two
    # serve's stderr is serve's: none of the driver JVM's start-up lines (its log profile, the Hadoop warning)
    log = "\n".join(served.lines)
    assert not any(s in log for s in ("log4j", "NativeCodeLoader", "Setting default log level")), log[:3000]


def test_a_dynamic_bucket_table_is_served_by_spark_tasks(wh, served):
    oracle = wh.batch_read("dyn")
    keys = _all_keys()
    with LookupClient("db.dyn", catalog_config(wh.path), timeout=30) as c:
        result = c.lookup_sync([{"id": i, "dt": d} for i, d in keys])
        assert not result.failed
        got = {(r["id"], r["dt"]): r for r in result.rows.to_pylist()}
        assert got == {k: oracle[k] for k in keys if k in oracle} and len(got) > N // 2
        assert c.get_sync({"id": 1, "dt": DATES[1]}) == oracle[(1, DATES[1])]
        st = c.status_sync()
    assert st.table_kind == "dynamic" and st.buckets > 9  # buckets were added as they filled


def _status(wh):
    with LookupClient("db.orders", catalog_config(wh.path), timeout=20) as c:
        return c.status_sync()


def test_commit_while_serving_is_visible_with_min_snapshot(wh, served, client):
    snap = wh.write("orders", _rows(range(0, N, 5), "v3", "+U") + _rows([N + 1, N + 2], "new"))
    result = _check_against_batch_read(wh, client, min_snapshot=snap)
    assert set(result.snapshot_ids.values()) == {snap}
    row = client.get_sync({"id": 5, "dt": DATES[5 % 3]})
    assert row["name"] == "v3-5"
    # The CLI lookup does not know the difference either.
    out = subprocess.run([sys.executable, "-m", "paimon_tail", "lookup", "db.orders", f"id={N + 1},dt={DATES[(N + 1) % 3]}",
                          "--warehouse", wh.path, "--min-snapshot", str(snap), "--format", "jsonl"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert f'"name":"new-{N + 1}"' in out.stdout.replace(" ", "")


def test_a_killed_task_is_replaced_and_registers_again(wh, served, client):
    before = _status(wh)
    victim = before.executors[1].info
    os.kill(victim.pid, signal.SIGKILL)  # the Python worker running executor 1
    deadline = time.monotonic() + 90
    while True:
        st = _status(wh)
        pids = [e.info.pid for e in st.executors]
        if (all(e.info.alive and e.info.snapshot_id > 0 for e in st.executors) and victim.pid not in pids
                and st.executors[1].info.restarts >= 1):
            break
        assert time.monotonic() < deadline, f"executors did not come back: {st}\n{served.log()}"
        time.sleep(0.5)
    # One job per executor: only the killed one is a new task (registered under its index); the other lived on.
    assert st.executors[1].info.instance_id != victim.instance_id and st.executors[1].info.restarts >= 1
    assert st.executors[0].info.instance_id == before.executors[0].info.instance_id
    _check_against_batch_read(wh, client)
    assert served.proc.poll() is None


def test_stopping_serve_ends_the_spark_job(wh, served):
    st = _status(wh)
    addresses = [st.address] + [e.info.address for e in st.executors]
    assert all(_listening(a) for a in addresses)
    children = _session_pids(served.proc.pid)
    assert any("pyspark" in _cmdline(p) for p in children) and any("java" in _cmdline(p) for p in children)
    t0 = time.monotonic()
    assert served.stop(signal.SIGTERM) == 0, served.log()
    assert time.monotonic() - t0 < 30
    deadline = time.monotonic() + 15
    while _session_pids(served.proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = {p: _cmdline(p) for p in _session_pids(served.proc.pid)}
    assert not left, f"left behind: {left}"
    assert not any(_listening(a) for a in addresses)
    assert not list((Path(wh.path) / "db.db" / "orders" / "service").glob("service-*"))  # registration removed
    assert not list(served.tmp.glob("paimon-tail-*")), list(served.tmp.iterdir())  # executor dirs removed


# ---------------------------------------------------------------------------------------------- no Spark needed
def test_spark_options_need_spark(tmp_path):
    out = subprocess.run([sys.executable, "-m", "paimon_tail", "serve", "db.t", "--warehouse", str(tmp_path),
                          "--master", "local[2]"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--master and --spark-conf need --spark" in out.stderr
    out = subprocess.run([sys.executable, "-m", "paimon_tail", "serve", "db.t", "--warehouse", str(tmp_path),
                          "--spark", "--spark-conf", "novalue"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "'novalue' is not KEY=VALUE" in out.stderr
    out = subprocess.run([sys.executable, "-m", "paimon_tail", "serve", "db.t", "--warehouse", str(tmp_path),
                          "--spark", "--master", "spark://nowhere:7077"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "routable --host" in out.stderr


def test_a_wrong_table_fails_before_spark_starts(wh):
    """The tables are opened before Spark starts: a typo costs a second and one line, not a JVM's start."""
    out = subprocess.run([sys.executable, "-m", "paimon_tail", "serve", "db.nope", "--warehouse", wh.path,
                          "--spark", "--master", "local[1]"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and out.stderr.splitlines() == ["paimon-tail: table db.nope does not exist"], out.stderr


def test_a_task_binds_and_advertises_its_workers_address(monkeypatch):
    """serve on a routable --host gives tasks "0.0.0.0": a task narrows it to the address its worker was given
    (SPARK_LOCAL_IP), else its address on the route to the coordinator; a loopback serve keeps loopback."""
    from paimon_tail.service.protocol.executor_spec import ExecutorSpec
    from paimon_tail.spark.service_job import task_host

    spec = ExecutorSpec(catalog=catalog_config("/wh"), coordinator="127.0.0.1:7700", local_dir="", host="0.0.0.0")
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.3")
    assert task_host(spec) == "127.0.0.3"
    monkeypatch.setenv("SPARK_LOCAL_IP", "0.0.0.0")  # a wildcard says nothing: the route to the coordinator
    assert task_host(spec) == "127.0.0.1"
    monkeypatch.delenv("SPARK_LOCAL_IP")
    assert task_host(spec) == "127.0.0.1"
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.3")
    assert task_host(ExecutorSpec(catalog=spec.catalog, coordinator=spec.coordinator, local_dir="",
                                  host="127.0.0.1")) == "127.0.0.1"


def test_a_job_that_cannot_start_ends_serve_with_the_reason(wh, tmp_path):
    """Workers without a working paimon-tail: the job is resubmitted with backoff, then serve gives up with the
    task's Python error (exit 1) and leaves nothing running."""
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "sitecustomize.py").write_text(
        "import sys\n\n\nclass _Broken:\n    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'pypaimon':\n"
        "            raise ImportError('pypaimon is broken on this worker')\n\n\n"
        "sys.meta_path.insert(0, _Broken())\n")
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nPYTHONPATH="{fake}:$PYTHONPATH" exec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    err = _serve_fails(wh, "--master", "local[2]", python=str(python))
    last = err.strip().splitlines()[-1]
    assert "failed 5 times in a row" in last and "ImportError: pypaimon is broken on this worker" in last, last
    assert err.count("resubmitting it") >= 5


def _serve_fails(wh, *extra: str, python: str = sys.executable, tmp: str = "") -> str:
    """Run ``serve --spark`` expecting it to give up: exit 1, nothing left running (no process of its session, no
    registration); returns its stderr (in local mode with Spark's own ERROR lines: a failed task's traceback)."""
    env = dict(os.environ, PYSPARK_PYTHON=python, **({"TMPDIR": tmp} if tmp else {}))
    env.pop("PAIMON_TAIL_TOKEN", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "paimon_tail", "serve", "db.orders", "--warehouse", wh.path, "--executors", "2",
         "--spark", "--spark-conf", "spark.ui.enabled=false", *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    assert proc.returncode == 1, err[-3000:]
    deadline = time.monotonic() + 15
    while _session_pids(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _session_pids(proc.pid)
    assert not list((Path(wh.path) / "db.db" / "orders" / "service").glob("service-*"))
    return err


def test_fewer_cores_than_executors_is_one_line(wh):
    """Two executors on one core: the second task never starts. After --spark-start-timeout serve says so in one
    line (exit 1) instead of waiting at "loading…"."""
    err = _serve_fails(wh, "--master", "local[1]", "--spark-start-timeout", "5")
    assert "Traceback" not in err and "collectAndServe" not in err, err[-3000:]
    assert err.strip().splitlines()[-1] == (
        "paimon-tail: Spark executors failed: only 1 of 2 executor tasks started within 5s: the Spark application "
        "has 1 task slot(s) (cores) for --executors 2 (give it more cores, or fewer --executors)")


def test_tasks_that_cannot_reach_the_service_are_one_line(wh, tmp_path, monkeypatch):
    """Tasks that run but cannot dial the coordinator (here: an --advertise nothing listens on) are named. Their
    tasks are cancelled (killed: no cleanup of theirs runs); the next executor on this machine removes the temp
    dirs they left."""
    import tempfile

    from paimon_tail.service.protocol.local_dirs import private_dir

    err = _serve_fails(wh, "--master", "local[2]", "--advertise", "127.0.0.1:1", "--spark-start-timeout", "5",
                       tmp=str(tmp_path))
    left = sorted(tmp_path.glob("paimon-tail-executor-*"))
    assert len(left) == 2, left  # one per killed task
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    mine = private_dir("next")
    assert sorted(tmp_path.glob("paimon-tail-executor-*")) == [Path(mine)], left
    assert "Traceback" not in err and "collectAndServe" not in err, err[-3000:]
    last = err.strip().splitlines()[-1]
    assert last == ("paimon-tail: Spark executors failed: executor task(s) 0, 1 did not join the service at "
                    "127.0.0.1:1 within 5s (can the Spark workers reach that address? see serve --host; or are the "
                    "application's cores busy?)"), last
