"""``paimon-tail serve`` as a person runs it: in a terminal, stopped with Ctrl-C, on a port that is taken."""
from __future__ import annotations

import os
import socket
import time

import pytest

from .conftest import PLAIN_SCHEMA, cli_cmd, run_cli, wait_until

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
    assert r.returncode == 1
    assert r.stderr == f"paimon-tail: cannot listen on 127.0.0.1:{port}: address already in use\n"
