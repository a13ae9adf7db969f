"""``paimon-tail serve --spark`` on a real Spark standalone cluster: a master and two 1-core workers started from
PySpark's own ``spark-class`` on 127.0.0.1 (``paimon_tail.spark.standalone``), and ``serve`` as a real process
(the driver), with ``--host 127.0.0.1`` (every worker is on loopback) and a relative ``-w wh`` (made absolute
before it is shipped: a worker runs in its own work directory).

In file order: lookups (``LookupClient`` and ``paimon-tail lookup``) equal pypaimon's batch read, the executors
being tasks on both workers; one worker killed with its executor and Python workers (a lost machine): lookups
recover within 10 s, still right, the surviving executor serving every channel, and a commit after the kill is
seen with ``min_snapshot``; a new worker: the lost executor's task starts there, cleans what the killed one left
and takes its share back; a frozen worker is dropped and comes back; SIGTERM ends it all, nothing left behind.
Slow (~1 min on 2 shared cores).
"""
from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import tempfile
import time
from typing import List

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(600)]

try:
    import pyspark  # noqa: F401
except ImportError as e:  # pragma: no cover
    pytest.skip(f"!!! PySpark is not installed ({e}): the Spark cluster tests DID NOT RUN. "
                "Install it with: pip install 'paimon-tail[spark]'", allow_module_level=True)

from paimon_tail.catalog import catalog_config
from paimon_tail.service.client import LookupClient
from paimon_tail.service.protocol import registration as regmod
from paimon_tail.spark.standalone import StandaloneCluster

from tests.processes import CliProcess
from tests.spark.test_spark_service import (DATES, N, Warehouse, _all_keys, _cmdline, _rows, _session_pids,
                                             orders_warehouse)

RECOVERY = 10.0  # seconds from a lost worker to right answers again


@pytest.fixture(scope="module")
def cwd(tmp_path_factory):
    return tmp_path_factory.mktemp("serve-cwd")


@pytest.fixture(scope="module")
def wh(cwd) -> Warehouse:
    return orders_warehouse(str(cwd / "wh"))


class ClusterServe(CliProcess):
    """``paimon-tail serve db.orders -w wh --spark --master spark://127.0.0.1:PORT --host 127.0.0.1`` in ``cwd``,
    in its own session; the workers' Python given as a user would, with ``spark.pyspark.python``."""

    def __init__(self, cluster: StandaloneCluster, cwd) -> None:
        super().__init__(
            [sys.executable, "-m", "paimon_tail", "serve", "db.orders", "-w", "wh", "--spark",
             "--master", cluster.master_url, "--host", "127.0.0.1", "--executors", "2",
             "--spark-conf", "spark.executor.cores=1", "--spark-conf", "spark.executor.memory=512m",
             "--spark-conf", f"spark.pyspark.python={sys.executable}", "--spark-conf", "spark.ui.enabled=false"],
            "ready in", cwd=str(cwd), drop_env=("PAIMON_TAIL_TOKEN", "PYSPARK_PYTHON"))


@pytest.fixture(scope="module")
def served(cluster, wh, cwd):
    svc = ClusterServe(cluster, cwd)
    if not svc.announced.wait(180):
        svc.kill_all()
        pytest.fail("serve --spark on the cluster was not ready:\n" + svc.log())
    svc.service_id = regmod.read(wh.catalog.get_table("db.orders")).service_id
    yield svc
    if svc.proc.poll() is None:
        svc.kill_all()


@pytest.fixture
def client(wh, served):
    c = LookupClient("db.orders", catalog_config(wh.path), timeout=RECOVERY)
    yield c
    c.close_sync()


def _check(wh, client, min_snapshot=None):
    oracle = wh.batch_read("orders")
    keys = _all_keys()
    result = client.lookup_sync([{"id": i, "dt": d} for i, d in keys], min_snapshot=min_snapshot)
    assert not result.failed, result.failed
    got = {(r["id"], r["dt"]): r for r in result.rows.to_pylist()}
    assert got == {k: oracle[k] for k in keys if k in oracle}
    assert sorted(result.missing) == [i for i, k in enumerate(keys) if k not in oracle]
    return result


def _status(wh):
    with LookupClient("db.orders", catalog_config(wh.path), timeout=10) as c:
        return c.status_sync()


def _cli_lookup(wh, key_id: int, min_snapshot: int) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "paimon_tail", "lookup", "db.orders", f"id={key_id},dt={DATES[key_id % 3]}",
         "--warehouse", wh.path, "--min-snapshot", str(min_snapshot), "--format", "jsonl"],
        capture_output=True, text=True, timeout=60)


def _tag_dirs(served) -> List[str]:
    """The executors' private temp dirs of this service (named by its id: ``ExecutorSpec.tag``)."""
    return glob.glob(os.path.join(tempfile.gettempdir(), f"paimon-tail-executor-{served.service_id[:10]}-*"))


def test_serve_on_the_cluster_answers_like_the_batch_read(wh, served, client):
    result = _check(wh, client)
    assert set(result.snapshot_ids.values()) == {3}
    st = client.status_sync()
    assert st.num_executors == 2 and st.address.startswith("127.0.0.1:")
    pids = set()
    for e in st.executors:
        assert e.info.alive and e.info.address.startswith("127.0.0.1:"), e.info
        assert "pyspark" in _cmdline(e.info.pid)  # a Python worker of a Spark executor ...
        pids.add(e.info.pid)
    # ... on a worker, not in serve's session (its driver)
    assert not pids & set(_session_pids(served.proc.pid))
    assert sum(len(e.channels) for e in st.executors) == st.channels
    assert len(_tag_dirs(served)) == 2
    out = _cli_lookup(wh, 7, 3)
    assert out.returncode == 0 and '"name":"v2-7"' in out.stdout.replace(" ", ""), out.stderr


def test_a_lost_worker_costs_only_its_executor(wh, served, client, cluster):
    before = client.status_sync()
    by_pid = {e.info.pid: e.info.index for e in before.executors}
    worker_pids = set(_session_pids(cluster.worker_procs[0].proc.pid))
    lost = [i for pid, i in by_pid.items() if pid in worker_pids]
    assert len(lost) == 1, (by_pid, worker_pids)  # one executor on each worker
    survivor = 1 - lost[0]
    _check(wh, client)

    cluster.kill_worker(0)  # the worker, its executor and its Python workers: a machine lost
    t0 = time.monotonic()
    _check(wh, client)  # retried inside its deadline (RECOVERY) until the survivor serves every channel
    recovered = time.monotonic() - t0
    print(f"lookups right again {recovered:.1f}s after the worker was killed")
    assert recovered < RECOVERY

    st = client.status_sync()
    info = {e.info.index: e for e in st.executors}
    assert info[survivor].info.alive and sorted(info[survivor].channels) == list(range(st.channels))
    assert info[survivor].info.instance_id == {e.info.index: e for e in before.executors}[survivor].info.instance_id
    assert not info[lost[0]].info.alive
    for _ in range(5):  # and it stays so
        _check(wh, client)

    snap = wh.write("orders", _rows(range(0, N, 4), "after-kill", "+U") + _rows([N + 5], "new"))
    result = _check(wh, client, min_snapshot=snap)
    assert set(result.snapshot_ids.values()) == {snap}
    out = _cli_lookup(wh, N + 5, snap)
    assert out.returncode == 0 and f'"name":"new-{N + 5}"' in out.stdout.replace(" ", ""), out.stderr
    assert served.proc.poll() is None
    assert "executor %d is gone" % lost[0] in served.log()


def test_a_new_worker_brings_the_lost_executor_back(wh, served, client, cluster):
    st = client.status_sync()
    lost = [e.info.index for e in st.executors if not e.info.alive]
    assert len(lost) == 1
    cluster.add_worker()
    _both_serving(wh, 120, served)  # Spark starts the waiting task on the new worker; it takes its share back
    _check(wh, client)
    assert len(_tag_dirs(served)) == 2  # the new task removed what the killed one left on this machine


def _both_serving(wh, timeout: float, served) -> None:
    deadline = time.monotonic() + timeout
    while True:
        st = _status(wh)
        if all(e.info.alive and len(e.channels) == st.channels // 2 for e in st.executors):
            return
        assert time.monotonic() < deadline, f"the executors did not share the channels again: {st}\n{served.log()}"
        time.sleep(0.5)


def test_a_frozen_worker_is_dropped_and_comes_back(wh, served, client, cluster):
    """A worker that stops answering without closing its sockets (SIGSTOP of every process of its session: the
    worker, its executor JVM, its Python workers, which PySpark puts in process groups of their own; a hung
    machine, a cut network): no heartbeat for 3 s, its executor's channels move, lookups are right again within
    10 s; thawed, its executor joins its slot again and takes its share back."""
    st = client.status_sync()
    frozen_pid = {e.info.index: e.info.pid for e in st.executors}
    worker = next(w for w in cluster.worker_procs[1:] if w.alive() and any(
        p in _session_pids(w.proc.pid) for p in frozen_pid.values()))
    frozen = next(i for i, p in frozen_pid.items() if p in _session_pids(worker.proc.pid))
    def signal_all(sig: int) -> None:
        for pid in _session_pids(worker.proc.pid):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    signal_all(signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        _check(wh, client)
        recovered = time.monotonic() - t0
        print(f"lookups right again {recovered:.1f}s after the worker froze")
        assert recovered < RECOVERY
        info = {e.info.index: e for e in client.status_sync().executors}
        assert sorted(info[1 - frozen].channels) == list(range(len(info[0].channels) + len(info[1].channels)))
    finally:
        signal_all(signal.SIGCONT)
    _both_serving(wh, 120, served)
    _check(wh, client)


def test_sigterm_ends_serve_and_its_jobs(wh, served):
    assert served.proc.poll() is None
    served.proc.send_signal(signal.SIGTERM)
    assert served.proc.wait(60) == 0, served.log()
    deadline = time.monotonic() + 15
    while (_session_pids(served.proc.pid) or _tag_dirs(served)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _session_pids(served.proc.pid)
    assert not _tag_dirs(served)  # the tasks removed their temp dirs
    assert regmod.read(wh.catalog.get_table("db.orders")) is None
