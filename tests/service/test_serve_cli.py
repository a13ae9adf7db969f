"""``paimon-tail serve`` as a person runs it: in a terminal, stopped with Ctrl-C, on a port that is taken."""
from __future__ import annotations

import os
import socket
import time

import pytest

from tests.service.conftest import PLAIN_SCHEMA, cli_cmd, run_cli, wait_until

pexpect = pytest.importorskip("pexpect")


@pytest.fixture(scope="module")
def kv(warehouse):
    warehouse.create("kv", PLAIN_SCHEMA, primary_keys=["k"], bucket=2)
    warehouse.write("kv", [{"k": k, "v": f"v{k}", "op": "+I"} for k in range(100)])
    return warehouse


def _serve_in_terminal(wh: str):
    cmd = cli_cmd("serve", "db.kv", "--warehouse", wh, "--executors", "2")
    env = {k: v for k, v in os.environ.items() if k not in ("PAIMON_WAREHOUSE", "PAIMON_TAIL_TOKEN")}
    return pexpect.spawn(cmd[0], cmd[1:], dimensions=(40, 150), timeout=90, encoding="utf-8", env=env)


def _executors_of(pid: int) -> list:
    return [p for p in os.listdir("/proc") if p.isdigit() and _parent(p) == pid]


def _parent(pid: str) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


@pytest.mark.parametrize("when", ["loading", "early", "ready"])
def test_ctrl_c_in_a_terminal(kv, when):
    """Ctrl-C reaches the whole foreground process group, executors included. Whenever it comes (while the
    executors are still importing, while loading, once ready): no traceback, the registration removed, no
    executor left, exit 130 like every command."""
    reg = os.path.join(kv.path, "db.db", "kv", "service", "service-paimon-tail-lookup")
    child = _serve_in_terminal(kv.path)
    try:
        child.expect("loading")
        if when == "early":
            time.sleep(0.3)  # executors spawned a moment ago: still importing
        elif when == "loading":
            time.sleep(1.5)
        else:
            child.expect("ready in")
            assert run_cli("lookup", "db.kv", "7", "--warehouse", kv.path).stdout == '{"k":7,"v":"v7","op":"+I"}\n'
        pid = child.pid
        child.sendintr()
        child.expect(pexpect.EOF, timeout=30)
        out = child.before
    finally:
        child.close(force=True)
    assert child.exitstatus == 130, out
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out
    said = [line for line in out.splitlines() if line.strip() not in ("", "^C") and "ready in" not in line]
    assert len(said) <= 1, out  # "serving … loading…" (and "ready in", when loading was quicker than the sleep)
    assert not os.path.exists(reg)
    wait_until(lambda: not _executors_of(pid), timeout=10)


def test_busy_port_is_one_line(kv):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = run_cli("serve", "db.kv", "--warehouse", kv.path, "--port", str(port), "--executors", "1")
        m = run_cli("serve", "db.kv", "--warehouse", kv.path, "--metrics-port", str(port), "--executors", "1")
    assert r.returncode == 1
    assert r.stderr == f"paimon-tail: cannot listen on 127.0.0.1:{port}: address already in use\n"
    assert m.returncode == 1, m.stderr
    assert m.stderr == f"paimon-tail: cannot serve metrics on 127.0.0.1:{port}: address already in use\n"


@pytest.mark.parametrize("command, option, value, says", [
    ("serve", "--max-memory", "lots", "'lots' is not a size (e.g. 512M, 2G, 1048576)"),
    ("serve", "--max-disk", "0", "'0': a size must be more than 0"),
    ("executor", "--max-disk", "-1G", "'-1G': a size must be more than 0"),
])
def test_bad_budgets_are_one_line(kv, command, option, value, says):
    args = ["serve", "db.kv"] if command == "serve" else ["executor", "--join", "127.0.0.1:1"]
    r = run_cli(*args, "--warehouse", kv.path, option, value)
    assert r.returncode == 2
    assert r.stderr.startswith(f"paimon-tail: Invalid value for '{option}': {says} (see: ")
    assert r.stderr.endswith(f" {command} --help)\n") and r.stderr.count("\n") == 1


def test_budgets_reach_the_executors(kv, tmp_path):
    """`--max-memory` / `--max-disk` as sizes with units: every answer right, the frame files within the disk budget
    (one data file may stay above it: the one a lookup is reading)."""
    from paimon_tail.catalog import catalog_config
    from paimon_tail.service.client import LookupClient

    from tests.service.conftest import ServeProcess

    local = tmp_path / "local"
    svc = ServeProcess(kv.path, ["db.kv"], "--local-dir", str(local), "--max-memory", "64K", "--max-disk", "1",
                       executors=1).wait_ready()
    try:
        with LookupClient("db.kv", catalog_config(kv.path), timeout=30) as client:
            for _ in range(3):
                r = client.lookup_sync(list(range(-5, 105)))
                assert sorted(row["k"] for row in r.rows.to_pylist()) == list(range(100))
            st = client.status_sync()
        (e,) = st.executors
        assert e.files == 2 and e.memory_bytes <= 64 << 10
        frames = [os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(local) for f in fs
                  if f.endswith(".frames")]
        assert len(frames) == 1, "the disk budget keeps one data file's rows at a time"
    finally:
        svc.stop()


def test_log_format_json(kv):
    """``--log-format json``: everything serve and an executor say is one JSON object per line (their own lines,
    log records of serve's executor processes, the last error line), for a log shipper."""
    import json
    import signal

    from tests.processes import CliProcess
    from tests.service.executor.test_join import Joined

    env = {"PAIMON_TAIL_LOG": "INFO"}  # log records too, not only the commands' own lines
    svc = CliProcess(cli_cmd("serve", "db.kv", "--warehouse", kv.path, "--executors", "1", "--log-format", "json",
                             "--metrics-port", "0"), '"ready in', env=env, drop_env=("PAIMON_TAIL_TOKEN",
                                                                                      "PAIMON_WAREHOUSE"))
    try:
        assert svc.announced.wait(90), svc.lines
        reg = json.load(open(os.path.join(kv.path, "db.db", "kv", "service", "service-paimon-tail-lookup")))
        joined = Joined(kv.path, reg["addresses"][0], "--log-format", "json", env=env)
        assert joined.announced.wait(30), joined.lines
    finally:
        svc.proc.send_signal(signal.SIGTERM)
        assert svc.proc.wait(30) == 0
    assert joined.wait(30) == 0
    time.sleep(0.2)
    for proc, process in ((svc, "serve"), (joined, "executor")):
        records = [json.loads(line) for line in proc.lines]  # every line parses
        assert all({"time", "level", "logger", "process", "pid", "message"} <= set(r) for r in records), records
        assert any(r["process"] == process for r in records)
    messages = [r["message"] for r in map(json.loads, svc.lines)]
    assert any(m.startswith("serving db.kv at ") and "metrics at http://" in m for m in messages), messages
    assert any(m.startswith("ready in ") for m in messages)
    assert any(json.loads(line)["process"] == "executor-0" for line in svc.lines), svc.lines  # serve's executor
    assert any("joined the service at" in json.loads(line)["message"] for line in joined.lines)

    with socket.socket() as taken:  # an error is a JSON line too
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = run_cli("serve", "db.kv", "--warehouse", kv.path, "--port", str(port), "--log-format", "json")
    assert r.returncode == 1
    (line,) = r.stderr.splitlines()
    error = json.loads(line)
    assert error["level"] == "error"
    assert error["message"] == f"cannot listen on 127.0.0.1:{port}: address already in use"
