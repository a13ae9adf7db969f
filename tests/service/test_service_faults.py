"""Query-service faults not covered by tests/service/test_faults.py: an executor SIGKILLed under load while a
writer commits (every answer checked against the table's history), the address server SIGKILLed (not the
whole group) and SIGSTOPped, an executor SIGSTOPped seen through the CLI, and warehouse data files that vanish or
are corrupt under an executor.

Covered there already: executor SIGKILL restart (no writer), executor SIGSTOP deadline + recovery (library),
the whole service killed (killpg) → "no live service" and takeover after the lease, no service, token required.
"""
from __future__ import annotations

import glob
import json
import os
import random
import signal
import threading
import time

import grpc
import pyarrow as pa
import pytest

from paimon_tail.catalog import catalog_config
from paimon_tail.errors import ServiceError
from paimon_tail.service.client import LookupClient
from paimon_tail.service.keys.routing import TableRouting
from paimon_tail.service.protocol import lookup_pb2 as pb
from paimon_tail.service.protocol import lookup_pb2_grpc as pbg
from paimon_tail.service.protocol.wire import ipc_stream

from tests.service.conftest import PLAIN_SCHEMA, ServeProcess, Warehouse, owner_of, run_cli, wait_until

N = 2000


@pytest.fixture
def kv(tmp_path):
    wh = Warehouse(str(tmp_path / "wh"))
    wh.create("kv", PLAIN_SCHEMA, primary_keys=["k"], bucket=4)
    return wh


class History:
    """Every committed version of every key: the oracle for 'the answer at snapshot s'."""

    def __init__(self) -> None:
        self.versions: dict = {}  # k -> [(snapshot, value or None)]

    def record(self, snapshot: int, rows) -> None:
        for r in rows:
            self.versions.setdefault(r["k"], []).append((snapshot, None if r["op"] == "-D" else r["v"]))

    def at(self, k: int, snapshot: int):
        value = None
        for s, v in self.versions.get(k, ()):
            if s <= snapshot:
                value = v
        return value


def _pid_of(client: LookupClient, index: int) -> int:
    return next(e.info.pid for e in client.status_sync().executors if e.info.index == index)


@pytest.mark.slow
def test_executor_sigkill_under_load_with_writer(kv):
    """SIGKILL an executor while lookups run and a writer commits updates and deletes: its buckets answer again
    within 5 s, and every answer given meanwhile equals the table's content at the snapshot it reports."""
    history = History()
    rows = [{"k": k, "v": f"v{k}@0", "op": "+I"} for k in range(N)]
    history.record(kv.write("kv", rows), rows)
    svc = ServeProcess(kv.path, ["db.kv"]).wait_ready()
    stop = threading.Event()
    answers, failures = [], []
    errors = []

    def writer():
        rng = random.Random(1)
        i = 0
        try:
            while not stop.is_set():
                i += 1
                batch = [{"k": k, "v": f"v{k}@{i}", "op": rng.choice(["+U", "+U", "+U", "-D"])}
                         for k in rng.sample(range(N), 20)]
                history.record(kv.write("kv", batch), batch)
                time.sleep(0.1)
        except BaseException as e:
            errors.append(e)

    def loader():
        rng = random.Random(2)
        with LookupClient("db.kv", catalog_config(kv.path), timeout=3.0, call_timeout=0.5) as c:
            while not stop.is_set():
                keys = rng.sample(range(N), 100)
                t = time.monotonic()
                try:
                    r = c.lookup_sync(keys)
                except ServiceError as e:
                    failures.append((t, str(e)))
                    continue
                answers.append((time.monotonic(), keys, r.found, r.rows.to_pylist(), dict(r.snapshot_ids)))

    threads = [threading.Thread(target=writer, daemon=True), threading.Thread(target=loader, daemon=True)]
    try:
        with LookupClient("db.kv", catalog_config(kv.path)) as c:
            victim = _pid_of(c, 0)
            owner = owner_of(c)
            for t in threads:
                t.start()
            time.sleep(1.5)
            before = len(answers)
            os.kill(victim, signal.SIGKILL)
            killed_at = time.monotonic()
            wait_until(lambda: any(a[0] > killed_at + 0.05 for a in answers), timeout=15)
            recovered = min(a[0] for a in answers if a[0] > killed_at + 0.05) - killed_at
            time.sleep(1.0)  # keep checking answers after the restart too
            assert _pid_of(c, 0) != victim
    finally:
        stop.set()
        for t in threads:
            t.join(15)
        svc.stop()
    assert not errors, errors
    assert before > 0 and len(answers) > before
    assert recovered < 5.0, f"executor 0's buckets were served again only after {recovered:.1f}s"
    routing = TableRouting.of(kv.table("kv"))
    owners = {k: owner((), routing.bucket({"k": k})) for k in range(N)}
    checked = 0
    for _, keys, found, got, snapshots in answers:
        by_pos = dict(zip(found, got))
        for pos, k in enumerate(keys):
            want = history.at(k, snapshots[owners[k]])
            row = by_pos.get(pos)
            assert (row["v"] if row else None) == want, f"key {k} at snapshot {snapshots[owners[k]]}: {row} != {want}"
            checked += 1
    assert checked >= 100 * len(answers)
    # during the outage lookups waited or failed with a clear line, never a wrong row
    assert all("did not complete within" in m or "no live service" in m for _, m in failures), failures


@pytest.mark.slow
def test_address_server_sigkill_then_takeover(kv):
    """SIGKILL the address server only (no standby): its executor keeps answering from what it holds — clients
    that knew the route and new ones, routed by the registration's assignment — and a new serve takes over at
    once (the old pid is dead); the orphaned executor re-joins it, and its clean stop ends it."""
    kv.write("kv", [{"k": k, "v": f"v{k}", "op": "+I"} for k in range(100)])
    svc = ServeProcess(kv.path, ["db.kv"], executors=1).wait_ready()
    svc2 = None
    try:
        executors = svc.executor_pids()
        with LookupClient("db.kv", catalog_config(kv.path), timeout=10) as c:
            assert c.get_sync(5)["v"] == "v5"
            os.kill(svc.proc.pid, signal.SIGKILL)
            svc.proc.wait(5)
            assert c.get_sync(6)["v"] == "v6"  # (was: "no live service" at once)
        with LookupClient("db.kv", catalog_config(kv.path), timeout=10) as fresh:
            assert fresh.lookup_sync([7, 8]).rows.column("v").to_pylist() == ["v7", "v8"]
        r = run_cli("lookup", "db.kv", "5", "--warehouse", kv.path)
        assert r.returncode == 0 and json.loads(r.stdout)["v"] == "v5", r.stderr
        assert all(os.path.exists(f"/proc/{p}") for p in executors)  # orphaned, still answering
        t0 = time.monotonic()
        svc2 = ServeProcess(kv.path, ["db.kv"], executors=1).wait_ready()
        assert time.monotonic() - t0 < 10  # no waiting for the dead service's lease
        reg = json.load(open(f"{kv.path}/db.db/kv/service/service-paimon-tail-lookup"))
        assert reg["pid"] == svc2.proc.pid
        # the orphan found the new coordinator through the registration and joined it
        wait_until(lambda: any(a["address"] and a["joined"] for a in json.load(open(
            f"{kv.path}/db.db/kv/service/service-paimon-tail-lookup"))["assignment"]), 20)
        r = run_cli("lookup", "db.kv", "5", "--warehouse", kv.path)
        assert r.returncode == 0 and json.loads(r.stdout)["v"] == "v5", r.stderr
    finally:
        svc.kill_all()
        if svc2 is not None:
            assert svc2.stop() == 0
    wait_until(lambda: not any(os.path.exists(f"/proc/{p}") and
                               "Z" not in open(f"/proc/{p}/stat").read().split()[2] for p in executors), 10)


@pytest.mark.slow
def test_sigstop_executor_and_address_server_never_hang(kv):
    """SIGSTOP: the other executor's keys keep answering, the stopped one's keys fail within --timeout with one
    line; while the address server is stopped its executors answer (routed by the registration); all recover."""
    kv.write("kv", [{"k": k, "v": f"v{k}", "op": "+I"} for k in range(200)])
    svc = ServeProcess(kv.path, ["db.kv"]).wait_ready()
    stopped = []
    try:
        routing = TableRouting.of(kv.table("kv"))
        with LookupClient("db.kv", catalog_config(kv.path)) as c:
            victim = _pid_of(c, 0)
            owner = owner_of(c)
        a = next(k for k in range(200) if owner((), routing.bucket({"k": k})) == 0)
        b = next(k for k in range(200) if owner((), routing.bucket({"k": k})) == 1)
        os.kill(victim, signal.SIGSTOP)
        stopped.append(victim)
        # First the stopped executor's key, in-process: the supervisor replaces a silent executor after 3 s,
        # and a CLI start-up on a loaded machine could take that long by itself.
        t0 = time.monotonic()
        with pytest.raises(ServiceError, match=r"did not complete within 1.5s|not available") as failed:
            LookupClient("db.kv", catalog_config(kv.path), timeout=1.5).lookup_sync([a])
        took = time.monotonic() - t0
        assert "\n" not in str(failed.value)
        assert took < 1.5 + 1.0, took  # the deadline fires; never a hang
        ok = run_cli("lookup", "db.kv", str(b), "--warehouse", kv.path, "--timeout", "5")
        assert ok.returncode == 0 and json.loads(ok.stdout)["v"] == f"v{b}", ok.stderr
        # the supervisor replaces the stopped executor (3 s without heartbeats)
        wait_until(lambda: run_cli("lookup", "db.kv", str(a), "--warehouse", kv.path).returncode == 0, 20)

        os.kill(svc.proc.pid, signal.SIGSTOP)
        stopped.append(svc.proc.pid)
        # a stopped address server: its executors answer (routed by the registration) within the 2 s budget
        t0 = time.monotonic()
        r = LookupClient("db.kv", catalog_config(kv.path)).lookup_sync([a, b])
        assert r.rows.column("v").to_pylist() == [f"v{a}", f"v{b}"] and not r.failed
        assert time.monotonic() - t0 < 3.0
        r = run_cli("lookup", "db.kv", str(b), "--warehouse", kv.path)
        assert r.returncode == 0 and json.loads(r.stdout)["v"] == f"v{b}", r.stderr
        os.kill(svc.proc.pid, signal.SIGCONT)
        stopped.remove(svc.proc.pid)
        wait_until(lambda: run_cli("lookup", "db.kv", str(a), str(b), "--warehouse", kv.path).returncode == 0, 20)
    finally:
        for pid in stopped:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        assert svc.stop() == 0


@pytest.mark.slow
def test_missing_and_corrupt_data_files(kv):
    """A corrupt data file at start-up and a data file deleted from the warehouse before a (killed) executor
    copies it again: those buckets answer with one clear error naming the bucket; every other bucket serves,
    with the batch read's answers."""
    kv.write("kv", [{"k": k, "v": f"v{k}", "op": "+I"} for k in range(N)])
    oracle = kv.batch_read("kv")
    table_dir = f"{kv.path}/db.db/kv"
    routing = TableRouting.of(kv.table("kv"))
    bucket_of = {k: routing.bucket({"k": k}) for k in range(N)}
    corrupt = 0
    (path,) = glob.glob(f"{table_dir}/bucket-{corrupt}/data-*")
    size = os.path.getsize(path)
    with open(path, "r+b") as f:  # garbage over the whole file, footer included (same size, same name)
        f.write((b"\x00garbage" * (size // 8 + 1))[:size])
    svc = ServeProcess(kv.path, ["db.kv"]).wait_ready(30)
    try:
        with LookupClient("db.kv", catalog_config(kv.path), timeout=5) as c:
            good = [k for k in range(N) if bucket_of[k] != corrupt]
            r = c.lookup_sync(good)
            assert not r.missing and {row["k"]: row for row in r.rows.to_pylist()} == {k: oracle[(k,)] for k in good}
            bad = next(k for k in range(N) if bucket_of[k] == corrupt)
            t0 = time.monotonic()
            r = c.lookup_sync(good[:50] + [bad])  # a partial answer: the healthy keys, and the broken one named
            assert time.monotonic() - t0 < 1.0  # at once, not a retry loop until the timeout
            assert list(r.failed) == [50] and f"bucket {corrupt} of db.kv cannot be served: " in r.failed[50]
            assert r.found == list(range(50)) and not r.missing
            assert r.rows.to_pylist() == [oracle[(k,)] for k in good[:50]]
            with pytest.raises(ServiceError, match=f"bucket {corrupt} of db.kv cannot be served: "):
                c.get_sync(bad)
            # the lookup join: a key the service could not answer is an error, never a row with nulls
            import paimon_tail

            events = pa.table({"k": pa.array(good[:5] + [bad], pa.int32())})
            with pytest.raises(ServiceError, match=f"1 keys could not be answered, e.g. {{'k': {bad}}}: bucket "):
                paimon_tail.lookup_join(events, "db.kv", client=c)
            joined = paimon_tail.lookup_join(events.slice(0, 5), "db.kv", client=c)
            assert joined.column("v").to_pylist() == [oracle[(k,)]["v"] for k in good[:5]]
            # a version 1 client (no protocol_version) gets the whole call refused, as before: DATA_LOSS
            executor = {e.index: e.address for e in c.executors_sync().executors}[owner_of(c)((), corrupt)]
            with grpc.insecure_channel(executor) as ch:
                with pytest.raises(grpc.RpcError) as refused:
                    pbg.ExecutorServiceStub(ch).Lookup(pb.LookupRequest(
                        table="db.kv", keys_ipc=ipc_stream(pa.table({"k": pa.array([good[0], bad], pa.int32())})),
                        buckets=[bucket_of[good[0]], corrupt]), timeout=5)
            assert refused.value.code() == grpc.StatusCode.DATA_LOSS
            assert f"bucket {corrupt} of db.kv cannot be served" in refused.value.details()

            # another bucket's file vanishes from the warehouse; its executor is killed and must copy it again
            gone = next(b for b in range(4) if b != corrupt)
            (path,) = glob.glob(f"{table_dir}/bucket-{gone}/data-*")
            os.remove(path)
            victim_index = owner_of(c)((), gone)
            victim = _pid_of(c, victim_index)
            os.kill(victim, signal.SIGKILL)
            wait_until(lambda: _pid_of(c, victim_index) not in (0, victim) and
                       all(e.info.alive and e.info.snapshot_id for e in c.status_sync().executors), 20)
            vanished = next(k for k in range(N) if bucket_of[k] == gone)
            with pytest.raises(ServiceError, match=f"bucket {gone} of db.kv cannot be served: cannot read data file "
                               f"{path}: it does not exist"):
                c.get_sync(vanished)
            rest = [k for k in range(N) if bucket_of[k] not in (corrupt, gone)]
            r = c.lookup_sync(rest)
            assert not r.missing and {row["k"]: row for row in r.rows.to_pylist()} == {k: oracle[(k,)] for k in rest}
        out = run_cli("lookup", "db.kv", str(good[0]), str(vanished), "--warehouse", kv.path)
        assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
        assert out.stderr.startswith(f"paimon-tail: 1 of 2 keys could not be answered: {vanished} (bucket {gone} of "
                                     f"db.kv cannot be served: cannot read data file {path}: it does not exist"), \
            out.stderr
        assert [json.loads(line)["k"] for line in out.stdout.splitlines()] == [good[0]]  # the healthy key
        assert all(not line.startswith("Traceback") for line in svc.lines)
    finally:
        assert svc.stop() == 0
