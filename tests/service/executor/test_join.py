"""``paimon-tail executor --join``: executors that join a running service (here on loopback; across machines in
tests/service/test_hosts.py), take a share of the channels, and hand it back when they go. Every answer is checked against
pypaimon's batch read."""
from __future__ import annotations

import json
import os
import time
from typing import List

import pytest

from paimon_tail.catalog import catalog_config
from paimon_tail.errors import ServiceError
from paimon_tail.service.client import LookupClient
from paimon_tail.service.protocol import PROTOCOL_VERSION

from tests.processes import CliProcess
from tests.service.conftest import PLAIN_SCHEMA, ServeProcess, Warehouse, cli_cmd, wait_until

N = 2000


class Joined(CliProcess):
    """``paimon-tail executor --join ADDRESS`` in its own session, stderr collected."""

    def __init__(self, warehouse: str, coordinator: str, *extra: str, env: dict = None) -> None:
        super().__init__(cli_cmd("executor", "--join", coordinator, "--warehouse", warehouse, *extra),
                         "joined the service", env=env, drop_env=("PAIMON_TAIL_TOKEN", "PAIMON_WAREHOUSE"))

    def wait(self, timeout: float = 30) -> int:
        code = self.proc.wait(timeout)
        time.sleep(0.1)  # the reader thread takes the last lines
        return code


def _coordinator(wh: Warehouse, table: str = "kv") -> str:
    path = f"{wh.path}/db.db/{table}/service/service-paimon-tail-lookup"
    wait_until(lambda: os.path.exists(path), 30)
    return json.load(open(path))["addresses"][0]


@pytest.fixture
def kv(tmp_path):
    wh = Warehouse(str(tmp_path / "wh"))
    wh.create("kv", PLAIN_SCHEMA, primary_keys=["k"], bucket=16)  # a bucket per channel: any move moves one
    wh.write("kv", [{"k": k, "v": f"v{k}", "op": "+I"} for k in range(N)])
    return wh


def _check(client: LookupClient, oracle: dict, keys=range(-5, N + 5)) -> None:
    r = client.lookup_sync(list(keys))
    assert not r.failed
    assert {(row["k"],): row for row in r.rows.to_pylist()} == {(k,): oracle[(k,)] for k in keys if (k,) in oracle}


def test_executors_join_take_channels_and_hand_them_back(kv):
    svc = ServeProcess(kv.path, ["db.kv"], executors=0)
    joined: List[Joined] = []
    try:
        address = _coordinator(kv)
        # nobody serves yet: a lookup says why, within its timeout
        with pytest.raises(ServiceError, match="no executor serves these keys now .waiting for one to join."):
            LookupClient("db.kv", catalog_config(kv.path), timeout=1.0).lookup_sync([1])
        joined = [Joined(kv.path, address), Joined(kv.path, address)]
        svc.wait_ready()
        assert all(j.announced.wait(10) for j in joined)
        oracle = kv.batch_read("kv")
        with LookupClient("db.kv", catalog_config(kv.path), timeout=10) as c:
            _check(c, oracle)
            st = c.status_sync()
            assert st.channels == 16 and [len(e.channels) for e in st.executors] == [8, 8]
            assert all(e.info.joined and e.info.alive for e in st.executors)
            reg = json.load(open(f"{kv.path}/db.db/kv/service/service-paimon-tail-lookup"))
            assert reg["protocol"] == PROTOCOL_VERSION and reg["channels"] == 16
            assert sorted(a["address"] for a in reg["assignment"]) == sorted(e.info.address for e in st.executors)
            assert sorted(c for a in reg["assignment"] for c in a["channels"]) == list(range(16))

            # one goes away: its channels move to the other, which answers for all keys within 5 s
            victim = joined.pop(0)
            victim.kill_all()
            t0 = time.monotonic()
            wait_until(lambda: not c.lookup_sync(list(range(N)), timeout=5).missing, 10, interval=0.05)
            assert time.monotonic() - t0 < 5.0
            _check(c, oracle)
            wait_until(lambda: [len(e.channels) for e in c.status_sync().executors] == [16], 5)

            # a writer commits; a third executor joins and takes half: the answers follow the table
            sid = kv.write("kv", [{"k": k, "v": f"w{k}", "op": "+U"} for k in range(0, N, 3)])
            joined.append(Joined(kv.path, address))
            assert joined[-1].announced.wait(30)
            wait_until(lambda: sorted(len(e.channels) for e in c.status_sync().executors) == [8, 8], 10)
            oracle = kv.batch_read("kv")
            r = c.lookup_sync(list(range(N)), min_snapshot=sid)
            assert set(r.snapshot_ids.values()) == {sid}
            assert {(row["k"],): row for row in r.rows.to_pylist()} == oracle

            # the executor that held every channel drops the buckets it handed over: once the newcomer holds its
            # share, each bucket is held once
            def each_bucket_held_once() -> bool:
                st = c.status_sync()
                held = [[b.bucket for b in e.buckets] for e in st.executors]
                return all(held) and sorted(sum(held, [])) == list(range(16)) and sum(e.keys for e in st.executors) == N

            wait_until(each_bucket_held_once, 10)
    finally:
        assert svc.stop() == 0, svc.lines
        for j in joined:  # serve's clean stop tells them to stop: they exit 0
            assert j.wait(15) == 0, j.lines
            assert not any("Traceback" in line for line in j.lines), j.lines


def test_a_slotted_table_while_executors_join_and_leave(tmp_path):
    """A dynamic-bucket table (Paimon's default: keys routed by their slot, every executor keeps every bucket and
    indexes its channels' keys): lookups loop while an executor joins (channels move to it, its stores are built
    with their keys) and one leaves; no key is ever answered missing that the table holds, or found that it does
    not (a channel is answered only once a full state loaded its keys)."""
    import threading

    from tests.service.conftest import PK_SCHEMA

    wh = Warehouse(str(tmp_path / "wh"))
    wh.create("dyn", PK_SCHEMA, primary_keys=["id"], **{"dynamic-bucket.target-row-num": 100})
    wh.write("dyn", [{"id": i, "dt": "x", "name": f"n{i}", "amount": i, "op": "+I"} for i in range(1500)])
    oracle = wh.batch_read("dyn")
    assert len(os.listdir(os.path.join(wh.path, "db.db", "dyn", "index"))) >= 10  # buckets were added
    svc = ServeProcess(wh.path, ["db.dyn"], executors=0)
    joined: List[Joined] = []
    wrong: List[str] = []
    stop = threading.Event()
    rounds = [0]
    try:
        address = _coordinator(wh, "dyn")
        joined = [Joined(wh.path, address), Joined(wh.path, address)]
        svc.wait_ready()
        keys = list(range(-20, 1520))
        with LookupClient("db.dyn", catalog_config(wh.path), timeout=20) as c:
            def loop():
                while not stop.is_set():
                    r = c.lookup_sync(keys)
                    got = {row["id"]: row for row in r.rows.to_pylist()}
                    if r.failed or got != {k[0]: v for k, v in oracle.items()}:
                        wrong.append(f"round {rounds[0]}: {len(r.failed)} failed, {len(got)} found")
                    one = c.get_sync(keys[rounds[0] % len(keys)])
                    if one != oracle.get((keys[rounds[0] % len(keys)],)):
                        wrong.append(f"round {rounds[0]}: one key")
                    rounds[0] += 1

            looper = threading.Thread(target=loop)
            looper.start()
            try:
                time.sleep(1)
                joined.append(Joined(wh.path, address))
                assert joined[-1].announced.wait(30)
                wait_until(lambda: sorted(len(e.channels) for e in c.status_sync().executors) == [5, 5, 6], 15)
                time.sleep(1)
                joined.pop(0).kill_all()
                wait_until(lambda: sorted(len(e.channels) for e in c.status_sync().executors) == [8, 8], 15)
                time.sleep(1)
            finally:
                stop.set()
                looper.join(60)
        assert not wrong, wrong[:5]
        assert rounds[0] >= 5
    finally:
        assert svc.stop() == 0, svc.lines
        for j in joined:
            j.wait(15)


def test_an_executor_the_service_refuses_says_why(kv, tmp_path):
    svc = ServeProcess(kv.path, ["db.kv"], executors=1, env={"PAIMON_TAIL_TOKEN": "t0ken"}).wait_ready()
    try:
        address = _coordinator(kv)
        other = Warehouse(str(tmp_path / "other"))
        cases = [
            (Joined(other.path, address, env={"PAIMON_TAIL_TOKEN": "t0ken"}),
             f"refused this executor: the executor reads warehouse {other.path}, the service serves {kv.path}"),
            (Joined(kv.path, address), "refused this executor: missing bearer token"),
            (Joined(kv.path, address, env={"PAIMON_TAIL_TOKEN": "wrong"}), "refused this executor: bad bearer token"),
        ]
        for j, message in cases:
            assert j.wait(30) == 1, j.lines
            assert len(j.lines) == 1 and j.lines[0].startswith("paimon-tail: the service at ") \
                and message in j.lines[0], j.lines
    finally:
        assert svc.stop() == 0
    gone = Joined(kv.path, address, "--orphan-timeout", "2")  # nobody listens there any more
    assert gone.wait(30) == 1, gone.lines
    assert gone.lines == [f"paimon-tail: the service at {address} does not answer (UNAVAILABLE); trying again for 2s",
                          f"paimon-tail: the executor stopped: the service at {address} does not answer "
                          "(UNAVAILABLE); gave up after 2s"], gone.lines


def test_an_executor_that_cannot_open_the_catalog_leaves_nothing_behind(kv, tmp_path):
    """Joined (same warehouse), then its catalog options fail to open the tables: one line, exit 1, and nothing of
    it stays in its --local-dir (the directory it had made for its stores was left behind)."""
    svc = ServeProcess(kv.path, ["db.kv"], executors=1).wait_ready()
    local = tmp_path / "local"
    try:
        bad = Joined(kv.path, _coordinator(kv), "--local-dir", str(local), "-O", "metastore=nosuch")
        assert bad.wait(60) == 1, bad.lines
        assert bad.lines[-1].startswith("paimon-tail: the executor stopped: failed to apply a change: "), bad.lines
        assert not any("Traceback" in line for line in bad.lines), bad.lines
        assert local.is_dir() and not list(local.iterdir()), list(local.iterdir())
    finally:
        assert svc.stop() == 0


def test_a_killed_executors_copies_go_when_the_next_one_starts(kv, tmp_path):
    """SIGKILL leaves an executor no cleanup of its own: its copies stay in --local-dir until the next executor
    started on it (the same machine) joins, which removes every directory whose process is gone."""
    svc = ServeProcess(kv.path, ["db.kv"], executors=0)
    local = tmp_path / "local"
    first = second = None
    try:
        address = _coordinator(kv)
        first = Joined(kv.path, address, "--local-dir", str(local))
        svc.wait_ready()
        left = [p.name for p in local.iterdir()]
        assert len(left) == 1 and f"-pid{first.proc.pid}-" in left[0], left
        first.kill_all()
        assert [p.name for p in local.iterdir()] == left  # no cleanup of its own ran
        second = Joined(kv.path, address, "--local-dir", str(local))
        assert second.announced.wait(30), second.lines
        wait_until(lambda: [p.name for p in local.iterdir() if f"-pid{second.proc.pid}-" in p.name], 30)
        assert [p.name for p in local.iterdir() if p.name == left[0]] == []
        with LookupClient("db.kv", catalog_config(kv.path), timeout=10) as c:
            _check(c, kv.batch_read("kv"))
        second.proc.terminate()
        assert second.wait(30) == 0, second.lines
        assert list(local.iterdir()) == []
    finally:
        for j in (first, second):
            if j is not None:
                j.kill_all()
        assert svc.stop() == 0
