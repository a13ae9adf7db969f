"""No single point of failure: a second ``serve`` of the same table stands by and takes over when the active one
dies (SIGKILL of its whole process group, or of the coordinator alone while executors joined from elsewhere keep
the data); a client calling every 50 ms meanwhile loses no lookup. Every answer is checked against the table.
(Across hosts: tests/service/test_hosts.py.)"""
from __future__ import annotations

import json
import os
import random
import signal
import threading
import time
from typing import List

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from paimon_tail.catalog import catalog_config
from paimon_tail.errors import ServiceError
from paimon_tail.service.client import LookupClient

from tests.service.conftest import PLAIN_SCHEMA, ServeProcess, Warehouse, run_cli, wait_until
from tests.service.executor.test_join import Joined

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

N = 2000


@pytest.fixture
def kv(tmp_path):
    wh = Warehouse(str(tmp_path / "wh"))
    wh.create("kv", PLAIN_SCHEMA, primary_keys=["k"], bucket=8)
    wh.write("kv", [{"k": k, "v": f"v{k}", "op": "+I"} for k in range(N)])
    return wh


def registration(wh: Warehouse) -> dict:
    return json.load(open(f"{wh.path}/db.db/kv/service/service-paimon-tail-lookup"))


def health(address: str, service: str = "") -> int:
    with grpc.insecure_channel(address) as ch:
        return health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status


class Caller:
    """A client calling one random key every 50 ms (as an application would), each answer checked."""

    def __init__(self, wh: Warehouse, timeout: float = 10.0) -> None:
        self.client = LookupClient("db.kv", catalog_config(wh.path), timeout=timeout, call_timeout=0.5)
        self.calls: List[tuple] = []  # (start, seconds, error or None)
        self.wrong: List[tuple] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        rng = random.Random(7)
        while not self._stop.is_set():
            k = rng.randrange(N)
            t0 = time.monotonic()
            try:
                row = self.client.get_sync(k)
                error = None
                if row is None or row["v"] != f"v{k}":
                    self.wrong.append((k, row))
            except ServiceError as e:
                error = str(e)
            self.calls.append((t0, time.monotonic() - t0, error))
            self._stop.wait(0.05)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self.client.close_sync()

    def failed(self) -> list:
        return [c for c in self.calls if c[2] is not None]

    def slowest(self, since: float = 0.0) -> float:
        return max(c[1] for c in self.calls if c[0] >= since)


def test_a_standby_takes_over_from_a_killed_serve(kv):
    """SIGKILL of the active ``serve``'s process group (coordinator and its executors) with a standby whose own
    executors hold every bucket: 0 lookups fail, the slowest takes <= 3 s."""
    active = ServeProcess(kv.path, ["db.kv"]).wait_ready()
    standby = caller = None
    try:
        standby = ServeProcess(kv.path, ["db.kv"]).wait_ready()
        assert any("standing by for db.kv: the active coordinator is" in line for line in standby.lines), standby.lines
        assert any("(standing by)" in line for line in standby.lines), standby.lines
        first = registration(kv)
        assert first["pid"] == active.proc.pid and first["epoch"] >= 1
        wait_until(lambda: len(registration(kv)["standbys"]) == 1, 10)
        standby_address = registration(kv)["standbys"][0]
        # probes: the standby is alive, not ready (clients are not routed to it)
        assert health(standby_address, "liveness") == health_pb2.HealthCheckResponse.SERVING
        assert health(standby_address) == health_pb2.HealthCheckResponse.NOT_SERVING
        assert health(first["addresses"][0]) == health_pb2.HealthCheckResponse.SERVING

        caller = Caller(kv)
        wait_until(lambda: len(caller.calls) >= 20, 20)
        killed_at = time.monotonic()
        active.kill_all()  # the coordinator and its executors, at once
        wait_until(lambda: any("took over db.kv" in line for line in standby.lines), 15)
        wait_until(lambda: len([c for c in caller.calls if c[0] > killed_at + 2]) >= 20, 30)
        caller.stop()
        failed, slowest = caller.failed(), caller.slowest(killed_at - 1)
        print(f"\nSIGKILL of the active serve's group: {len(caller.calls)} calls, {len(failed)} failed, "
              f"slowest {slowest * 1000:.0f} ms")
        assert not failed, failed[:5]
        assert not caller.wrong, caller.wrong[:5]
        assert slowest <= 3.0, f"slowest call {slowest:.2f}s"
        after = registration(kv)
        assert after["pid"] == standby.proc.pid and after["epoch"] == first["epoch"] + 1
        assert health(standby_address) == health_pb2.HealthCheckResponse.SERVING
        r = run_cli("lookup", "db.kv", "5", "--warehouse", kv.path)
        assert r.returncode == 0 and json.loads(r.stdout)["v"] == "v5", r.stderr
    finally:
        if caller is not None:
            caller.stop()
        active.kill_all()
        if standby is not None:
            assert standby.stop() == 0, standby.lines


def test_a_standby_takes_over_a_killed_coordinator_whose_executors_joined_from_elsewhere(kv):
    """``serve --executors 0`` with two ``executor --join`` and a second coordinator standing by: SIGKILL of the
    active coordinator alone. The executors keep answering, re-join the new active with the channels they had
    (nothing reloaded), and no lookup fails."""
    active = ServeProcess(kv.path, ["db.kv"], executors=0)
    joined: List[Joined] = []
    standby = caller = None
    try:
        wait_until(lambda: os.path.exists(f"{kv.path}/db.db/kv/service/service-paimon-tail-lookup"), 30)
        address = registration(kv)["addresses"][0]
        joined = [Joined(kv.path, address), Joined(kv.path, address)]
        active.wait_ready()
        standby = ServeProcess(kv.path, ["db.kv"], executors=0).wait_ready()
        wait_until(lambda: len(registration(kv)["standbys"]) == 1, 10)
        before = {a["address"]: sorted(a["channels"]) for a in registration(kv)["assignment"]}
        caller = Caller(kv)
        wait_until(lambda: len(caller.calls) >= 20, 20)
        killed_at = time.monotonic()
        active.kill_all()
        wait_until(lambda: any("took over db.kv" in line for line in standby.lines), 15)
        # both re-join the new active, keeping their channels
        wait_until(lambda: sum("joined the service at" in line for j in joined for line in j.lines) == 4, 20)
        wait_until(lambda: {a["address"]: sorted(a["channels"]) for a in registration(kv)["assignment"]} == before
                   and registration(kv)["pid"] == standby.proc.pid, 20)
        wait_until(lambda: len([c for c in caller.calls if c[0] > killed_at + 2]) >= 20, 30)
        caller.stop()
        failed = caller.failed()
        print(f"\nSIGKILL of the coordinator alone: {len(caller.calls)} calls, {len(failed)} failed, slowest "
              f"{caller.slowest(killed_at - 1) * 1000:.0f} ms")
        assert not failed, failed[:5]
        assert not caller.wrong, caller.wrong[:5]
        with LookupClient("db.kv", catalog_config(kv.path)) as c:
            st = c.status_sync()
            assert st.role == "active" and st.epoch == registration(kv)["epoch"]
            assert sorted(e.info.address for e in st.executors) == sorted(before)
            assert all(e.info.alive and e.info.joined for e in st.executors)
    finally:
        if caller is not None:
            caller.stop()
        active.kill_all()
        if standby is not None:
            assert standby.stop() == 0, standby.lines
        for j in joined:  # the new active's clean stop stops them
            assert j.wait(15) == 0, j.lines


def test_a_hung_active_is_fenced_when_it_wakes(kv):
    """The active coordinator hangs (SIGSTOP) longer than its lease: the standby takes over when the lease has
    expired (a hung process still accepts connections, so only the lease tells). When the old one wakes, its next
    renewal finds the new epoch: it steps down and stands by, NOT_SERVING; lookups never stop."""
    active = ServeProcess(kv.path, ["db.kv"], "--lease", "2", executors=1).wait_ready()
    standby = caller = None
    try:
        standby = ServeProcess(kv.path, ["db.kv"], "--lease", "2", executors=1).wait_ready()
        wait_until(lambda: len(registration(kv)["standbys"]) == 1, 10)
        first = registration(kv)
        caller = Caller(kv)
        wait_until(lambda: len(caller.calls) >= 10, 20)
        os.kill(active.proc.pid, signal.SIGSTOP)  # the coordinator only: its executor answers on
        stopped_at = time.monotonic()
        wait_until(lambda: any("took over db.kv" in line for line in standby.lines), 20)
        took = time.monotonic() - stopped_at
        assert took >= 1.5, f"took over after {took:.1f}s, before the 2 s lease could expire"
        assert registration(kv)["epoch"] == first["epoch"] + 1
        os.kill(active.proc.pid, signal.SIGCONT)
        wait_until(lambda: any("another coordinator took db.kv over: standing by" in line for line in active.lines), 10)
        wait_until(lambda: health(first["addresses"][0]) == health_pb2.HealthCheckResponse.NOT_SERVING, 10)
        assert registration(kv)["pid"] == standby.proc.pid  # the old one never wrote over the new lease
        wait_until(lambda: len([c for c in caller.calls if c[0] > stopped_at + took + 1]) >= 10, 20)
        caller.stop()
        assert not caller.failed(), caller.failed()[:5]
        assert not caller.wrong, caller.wrong[:5]
    finally:
        if caller is not None:
            caller.stop()
        try:
            os.kill(active.proc.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
        assert active.stop() == 0, active.lines
        if standby is not None:
            assert standby.stop() == 0, standby.lines


def test_a_release_racing_a_renewal_leaves_no_registration(kv):
    """A stopping serve removes its registration while a renewal may still be writing in its thread (its task is
    cancelled, the thread is not): whatever the interleaving, no registration is left behind."""
    from paimon_tail.service.coordinator.lease import Lease
    from paimon_tail.service.protocol import registration as regmod
    from paimon_tail.service.protocol.security import Security

    table = kv.table("kv")
    path = regmod.service_path(table)
    for attempt in range(20):
        lease = Lease({"db.kv": table}, f"race-{attempt}", Security(), 30.0,
                      build=lambda: regmod.Registration(
                          service_id="race", addresses=["127.0.0.1:1"], host="h", pid=os.getpid(), tables=["db.kv"],
                          executors=0, tls=False, auth="none", started_ms=regmod.now_ms(),
                          heartbeat_ms=regmod.now_ms(), lease_ms=30000))
        lease.observe()
        assert lease.claim(None) and os.path.exists(path)
        stop = threading.Event()

        def renew_until_stopped() -> None:
            while not stop.is_set():
                lease.renew()

        renewer = threading.Thread(target=renew_until_stopped)
        renewer.start()
        time.sleep(random.uniform(0.0, 0.02))
        lease.release()
        stop.set()
        renewer.join()
        assert not os.path.exists(path), f"attempt {attempt}: the registration outlived its release"
