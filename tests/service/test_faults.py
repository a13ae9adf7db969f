"""Faults: killed and stopped executors, a crashed service, no service, bad tables, tokens."""
from __future__ import annotations

import json
import os
import signal
import time

import pytest

from paimon_tail.catalog import catalog_config
from paimon_tail.errors import ServiceError
from paimon_tail.service.client import LookupClient

from tests.service.conftest import PLAIN_SCHEMA, ServeProcess, run_cli, wait_until


@pytest.fixture(scope="module")
def table(warehouse):
    warehouse.create("kv", PLAIN_SCHEMA, primary_keys=["k"], bucket=4)
    warehouse.write("kv", [{"k": k, "v": f"v{k}", "op": "+I"} for k in range(2000)])
    warehouse.create("log", PLAIN_SCHEMA)  # append-only: not servable
    return "db.kv"


def test_missing_service(warehouse, table):
    """No registration: the lookup waits a while for one (a serve that is starting), within its timeout, then
    says so in one line."""
    from paimon_tail.service.client.discovery import START_GRACE

    t0 = time.monotonic()
    with pytest.raises(ServiceError, match="no query service is registered for db.kv"):
        LookupClient(table, catalog_config(warehouse.path), timeout=1).lookup_sync([1])
    assert time.monotonic() - t0 < 2
    t0 = time.monotonic()
    r = run_cli("lookup", table, "1", "--warehouse", warehouse.path)
    assert START_GRACE <= time.monotonic() - t0 < START_GRACE + 5
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "no query service" in r.stderr


def test_a_lookup_rides_through_the_start_of_its_service(warehouse, table):
    """The README's order: ``serve db.kv &`` then ``lookup db.kv 1`` at once. The lookup waits for the service
    to register and load (on a terminal it says so) and answers."""
    from tests.terminal import Terminal

    with Terminal(["lookup", table, "1", "7", "--warehouse", warehouse.path, "--timeout", "30"]) as term:
        term.wait_for("waiting for db.kv to be served", 20)
        svc = ServeProcess(warehouse.path, [table])
        try:
            assert term.wait_exit(60) == 0, term.history()
            shown = term.history()
            assert "v1" in shown and "v7" in shown, shown  # both rows, in the terminal's table
            r = run_cli("lookup", table, "2", "--warehouse", warehouse.path)
            assert r.returncode == 0 and json.loads(r.stdout)["v"] == "v2"
        finally:
            svc.stop()


def test_unsupported_table(warehouse, table):
    r = run_cli("serve", "db.log", "--warehouse", warehouse.path)
    assert r.returncode == 2, r.stderr
    assert "append-only table" in r.stderr and r.stderr.count("\n") == 1


@pytest.mark.slow
def test_killed_executor_is_restarted(warehouse, table):
    svc = ServeProcess(warehouse.path, [table]).wait_ready()
    try:
        with LookupClient(table, catalog_config(warehouse.path), timeout=15) as c:
            assert len(c.lookup_sync(list(range(2000))).rows) == 2000
            victim = svc.executor_pids()[0]
            os.kill(victim, signal.SIGKILL)
            t0 = time.monotonic()
            r = c.lookup_sync(list(range(2000)))  # retries while the executor is restarted
            assert len(r.rows) == 2000 and not r.missing
            assert time.monotonic() - t0 < 10
            assert victim not in svc.executor_pids()
            assert max(e.info.restarts for e in c.status_sync().executors) == 1
    finally:
        assert svc.stop() == 0


@pytest.mark.slow
def test_stopped_executor_deadline_then_recovery(warehouse, table):
    svc = ServeProcess(warehouse.path, [table]).wait_ready()
    victim = None
    try:
        with LookupClient(table, catalog_config(warehouse.path), call_timeout=0.5) as c:
            assert len(c.lookup_sync(list(range(2000))).rows) == 2000
            victim = svc.executor_pids()[0]
            os.kill(victim, signal.SIGSTOP)
            t0 = time.monotonic()
            with pytest.raises(ServiceError, match="did not complete within 1s"):
                c.lookup_sync(list(range(2000)), timeout=1.0)
            assert time.monotonic() - t0 < 2.5  # the deadline fires; never hangs
            # The supervisor notices the missing heartbeats, kills and replaces it within 5 s.
            r = c.lookup_sync(list(range(2000)), timeout=15)
            assert len(r.rows) == 2000
            assert time.monotonic() - t0 < 12
    finally:
        if victim:
            try:
                os.kill(victim, signal.SIGCONT)
            except ProcessLookupError:
                pass
        assert svc.stop() == 0


@pytest.mark.slow
def test_crashed_service_is_no_live_service(warehouse, table):
    svc = ServeProcess(warehouse.path, [table], "--lease", "3").wait_ready()
    with LookupClient(table, catalog_config(warehouse.path), timeout=10) as c:
        assert c.get_sync(5)["v"] == "v5"
        svc.kill_all()  # registration stays behind, nobody answers
        t0 = time.monotonic()
        with pytest.raises(ServiceError, match="no live service for db.kv"):
            c.lookup_sync([5])
        assert time.monotonic() - t0 < 3
    time.sleep(3.2)  # lease expired: recognised from the file alone, and a new service may take over
    with pytest.raises(ServiceError, match="expired"):
        LookupClient(table, catalog_config(warehouse.path)).lookup_sync([5])
    svc2 = ServeProcess(warehouse.path, [table], executors=1).wait_ready()
    svc3 = None
    try:
        assert LookupClient(table, catalog_config(warehouse.path)).get_sync(5)["v"] == "v5"
        # a second serve of a live table stands by (was: refused as "already served by")
        svc3 = ServeProcess(warehouse.path, [table], executors=1).wait_ready()
        assert any(f"standing by for {table}: the active coordinator is " in line for line in svc3.lines), svc3.lines
    finally:
        assert svc2.stop() == 0
        if svc3 is not None:  # the active handed over to it on its way out (SIGTERM: a drain)
            wait_until(lambda: any(f"took over {table}" in line for line in svc3.lines), 10)
            assert svc3.stop() == 0


@pytest.mark.slow
def test_token_required(warehouse, table, tmp_path):
    env = {"PAIMON_TAIL_TOKEN": "s3cret-token"}
    svc = ServeProcess(warehouse.path, [table], env=env, executors=1).wait_ready()
    try:
        text = open(os.path.join(warehouse.path, "db.db", "kv", "service", "service-paimon-tail-lookup")).read()
        assert "s3cret" not in text and '"auth": "token"' in text
        r = run_cli("lookup", table, "5", "--warehouse", warehouse.path)
        assert r.returncode == 1 and "requires a token" in r.stderr
        bad = tmp_path / "bad"
        bad.write_text("wrong\n")
        r = run_cli("lookup", table, "5", "--warehouse", warehouse.path, "--token-file", str(bad))
        assert r.returncode == 1 and "refused the credentials" in r.stderr, r.stderr
        r = run_cli("lookup", table, "5", "--warehouse", warehouse.path, env=env)
        assert r.returncode == 0 and '"v":"v5"' in r.stdout, r.stderr
    finally:
        assert svc.stop() == 0


def _session_processes(sid: int) -> list:
    """Every process (zombies too) of session ``sid``: what a service started and left in the process table."""
    out = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if pid.isdigit() and int(fields[3]) == sid:
            out.append((int(pid), fields[0]))
    return out


def _own_dirs(local) -> list:
    return sorted(p.name for p in local.iterdir()) if local.exists() else []


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("made", [True, False], ids=["local-dir-made-by-serve", "local-dir-given"])
def test_restarts_and_exits_leave_nothing(warehouse, table, tmp_path, how, made):
    """An executor restarted after missed heartbeats (SIGSTOP) or a crash (SIGKILL) had no cleanup of its own:
    serve removes its copies at once; at the end (Ctrl-C or SIGTERM) nothing of the service stays in --local-dir
    (which goes too when serve made it) nor in the process table (executors, multiprocessing's resource tracker),
    the moment serve has exited."""
    local = tmp_path / "local"
    if not made:
        local.mkdir()
    svc = ServeProcess(warehouse.path, [table], "--local-dir", str(local)).wait_ready()
    try:
        with LookupClient(table, catalog_config(warehouse.path), timeout=15) as c:
            for n, sig in enumerate((signal.SIGSTOP, signal.SIGKILL), start=1):
                assert len(c.lookup_sync(list(range(2000))).rows) == 2000
                dirs = _own_dirs(local)
                assert len(dirs) == 2, dirs
                victim = svc.executor_pids()[0]
                assert sum(f"-pid{victim}-" in d for d in dirs) == 1, (victim, dirs)
                os.kill(victim, sig)
                wait_until(lambda: sum("restarting it" in line for line in svc.lines) == n, timeout=15)
                assert len(c.lookup_sync(list(range(2000))).rows) == 2000  # the new executor has loaded
                wait_until(lambda: not any(f"-pid{victim}-" in d for d in _own_dirs(local)), timeout=5)
                assert len(_own_dirs(local)) == 2, _own_dirs(local)
            assert sum(e.info.restarts for e in c.status_sync().executors) == 2
        svc.proc.send_signal(getattr(signal, how))
        assert svc.proc.wait(30) == (130 if how == "SIGINT" else 0), svc.log()
        assert _session_processes(svc.proc.pid) == []
        assert _own_dirs(local) == [] and local.exists() != made
    finally:
        svc.kill_all()
