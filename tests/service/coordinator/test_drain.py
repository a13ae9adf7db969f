"""Graceful drain and a rolling restart: SIGTERM makes a process NOT_SERVING at once, hands what it holds over (a
coordinator to its standby, an executor's channels to the other executors, each moved only once the new owner
has it loaded), finishes the calls in flight, leaves and exits 0. Every process of a running service
(coordinator, then two executors) restarted one at a time under ~200 lookups/s: no lookup fails."""
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

from tests.service.conftest import PLAIN_SCHEMA, ServeProcess, Warehouse, wait_until
from tests.service.executor.test_join import Joined

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]

N = 4000
RATE = 200  # lookups per second


@pytest.fixture
def kv(tmp_path):
    wh = Warehouse(str(tmp_path / "wh"))
    wh.create("kv", PLAIN_SCHEMA, primary_keys=["k"], bucket=16)
    wh.write("kv", [{"k": k, "v": f"v{k}", "op": "+I"} for k in range(N)])
    return wh


def _reg(wh: Warehouse) -> dict:
    return json.load(open(f"{wh.path}/db.db/kv/service/service-paimon-tail-lookup"))


class Load:
    """~RATE single-key lookups a second from one client, each timed and checked."""

    def __init__(self, wh: Warehouse) -> None:
        self.client = LookupClient("db.kv", catalog_config(wh.path), timeout=10.0, call_timeout=0.5)
        self.calls: List[tuple] = []  # (start, seconds, error)
        self.wrong: List[tuple] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        rng = random.Random(3)
        step = 1.0 / RATE
        next_at = time.monotonic()
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
            next_at += step
            time.sleep(max(0.0, next_at - time.monotonic()))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self.client.close_sync()


def _watch_not_serving(address: str, seen: list) -> threading.Thread:
    """Record every status a health Watch stream reports until the server goes away."""
    def run():
        try:
            with grpc.insecure_channel(address) as ch:
                for answer in health_pb2_grpc.HealthStub(ch).Watch(health_pb2.HealthCheckRequest(service=""),
                                                                    timeout=120):
                    seen.append(answer.status)
        except grpc.RpcError:
            pass

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def _sigterm_and_wait(proc, timeout: float = 60) -> int:
    proc.proc.send_signal(signal.SIGTERM)
    return proc.proc.wait(timeout)


def test_rolling_restart_under_load(kv):
    coord = ServeProcess(kv.path, ["db.kv"], executors=0)
    procs: List = [coord]
    load = None
    try:
        wait_until(lambda: os.path.exists(f"{kv.path}/db.db/kv/service/service-paimon-tail-lookup"), 30)
        first = _reg(kv)["addresses"][0]
        standby = ServeProcess(kv.path, ["db.kv"], executors=0).wait_ready()
        procs.append(standby)
        wait_until(lambda: _reg(kv)["standbys"], 10)
        second = _reg(kv)["standbys"][0]
        join = f"{first},{second}"  # executors know both coordinators
        executors = [Joined(kv.path, join), Joined(kv.path, join)]
        procs += executors
        coord.wait_ready()
        wait_until(lambda: sorted(len(a["channels"]) for a in _reg(kv)["assignment"]) == [8, 8], 20)

        load = Load(kv)
        wait_until(lambda: len(load.calls) >= 200, 20)
        marks = {}

        # 1. the coordinator: it hands over to the standby (executors keep their channels), a new one stands by
        t0 = time.monotonic()
        assert _sigterm_and_wait(coord) == 0, coord.lines
        wait_until(lambda: any("took over db.kv" in line for line in standby.lines), 10)
        coord = ServeProcess(kv.path, ["db.kv"], executors=0).wait_ready()
        procs.append(coord)
        wait_until(lambda: any("standing by for db.kv" in line for line in coord.lines), 10)
        marks["coordinator"] = time.monotonic() - t0

        # 2, 3. each executor: NOT_SERVING at once, its channels to the other (loaded before they move), exit 0;
        # then it comes back and takes its share again
        for i in range(2):
            old = executors[i]
            address = next(a["address"] for a in _reg(kv)["assignment"] if len(a["channels"]) == 8 and
                           a["address"] in " ".join(old.lines))
            seen: list = []
            watcher = _watch_not_serving(address, seen)
            wait_until(lambda: seen, 10)
            t0 = time.monotonic()
            assert _sigterm_and_wait(old) == 0, old.lines
            watcher.join(10)
            assert health_pb2.HealthCheckResponse.NOT_SERVING in seen, seen
            assert [len(a["channels"]) for a in _reg(kv)["assignment"]] == [16]
            executors[i] = Joined(kv.path, f"{second},{coord_address(kv, second)}")
            procs.append(executors[i])
            assert executors[i].announced.wait(30), executors[i].lines
            wait_until(lambda: sorted(len(a["channels"]) for a in _reg(kv)["assignment"]) == [8, 8], 20)
            marks[f"executor {i}"] = time.monotonic() - t0

        time.sleep(1)
        load.stop()
        calls = load.calls
        failed = [c for c in calls if c[2] is not None]
        latencies = sorted(c[1] for c in calls)
        p99 = latencies[int(len(latencies) * 0.99)]
        span = calls[-1][0] - calls[0][0]
        print(f"\nrolling restart: {len(calls)} lookups in {span:.1f}s ({len(calls) / span:.0f}/s), {len(failed)} "
              f"failed, p50 {latencies[len(latencies) // 2] * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, max "
              f"{latencies[-1] * 1000:.0f} ms; steps {', '.join(f'{k} {v:.1f}s' for k, v in marks.items())}; "
              f"load average {os.getloadavg()[0]:.1f}")
        assert not failed, failed[:5]
        assert not load.wrong, load.wrong[:5]
        assert len(calls) / span > RATE * 0.7
    finally:
        if load is not None:
            load.stop()
        for p in reversed(procs):
            if p.proc.poll() is None:
                p.proc.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.proc.wait(30)
            except Exception:  # noqa: BLE001
                p.kill_all()


def coord_address(wh: Warehouse, active: str) -> str:
    """The other coordinator (the standby of ``active``)."""
    reg = _reg(wh)
    return next((a for a in reg["standbys"] if a != active), active)
