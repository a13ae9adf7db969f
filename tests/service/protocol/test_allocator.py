"""Executors start with jemalloc's thread caches off (``service/protocol/executor_allocator.py`` has the measurement)."""
from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa
import pytest

from paimon_tail.service.protocol.executor_allocator import (EXECUTOR_JEMALLOC_CONF, JEMALLOC_CONF_VAR,
                                                             executor_environment)

from tests.service.conftest import ServeProcess

# what this process's pyarrow jemalloc says of its thread caches: "true", "false", or "" (no jemalloc here)
_TCACHE = """
def tcache_state():
    import ctypes, glob, os, re, tempfile
    import pyarrow as pa
    try:
        pa.jemalloc_memory_pool()
        lib = ctypes.CDLL(glob.glob(os.path.join(os.path.dirname(pa.__file__), "libarrow.so.*"))[0])
        stats = lib["_ZN5arrow20jemalloc_stats_printEPKc"]  # arrow::jemalloc_stats_print(const char*): to stderr
    except (NotImplementedError, AttributeError, IndexError, OSError, pa.ArrowException):
        return ""
    stats.argtypes = [ctypes.c_char_p]
    fd, path = tempfile.mkstemp()  # (a file that is a name on disk: with TemporaryFile's, the call crashes)
    saved = os.dup(2)
    os.dup2(fd, 2)
    try:
        stats(b"")
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)
    with open(path, "rb") as f:
        m = re.search(rb"opt\\.tcache: (true|false)", f.read())
    os.unlink(path)
    return m.group(1).decode() if m else ""
"""


def _without_var() -> dict:
    return {k: v for k, v in os.environ.items() if k not in (JEMALLOC_CONF_VAR, "PAIMON_WAREHOUSE")}


def _state_in_new_process(env: dict) -> str:
    code = _TCACHE + "\nprint(tcache_state())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    return out.stdout.strip()


def test_jemalloc_thread_caches_follow_the_executor_environment():
    default = _state_in_new_process(_without_var())
    if not default:
        pytest.skip("pyarrow without jemalloc (or without arrow::jemalloc_stats_print)")
    assert default == "true"  # jemalloc's default: what executors grew by
    assert _state_in_new_process(executor_environment(_without_var())) == "false"
    # an operator's own setting is kept
    env = executor_environment({**_without_var(), JEMALLOC_CONF_VAR: "tcache:true"})
    assert env[JEMALLOC_CONF_VAR] == "tcache:true"
    assert _state_in_new_process(env) == "true"


def _environ(pid: int) -> dict:
    with open(f"/proc/{pid}/environ", "rb") as f:
        return dict(kv.split("=", 1) for kv in f.read().decode(errors="replace").split("\0") if "=" in kv)


def test_serve_starts_its_executors_with_thread_caches_off(warehouse, monkeypatch):
    """A real ``serve``: its executor processes start with the option (what jemalloc reads as pyarrow loads: the
    test above), serve's own environment stays without it."""
    monkeypatch.delenv(JEMALLOC_CONF_VAR, raising=False)
    warehouse.create("alloc", pa.schema([("k", pa.int64()), ("v", pa.string())]), primary_keys=["k"], bucket=2)
    warehouse.write("alloc", [{"k": i, "v": f"v{i}"} for i in range(100)])
    svc = ServeProcess(warehouse.path, ["db.alloc"]).wait_ready()
    try:
        pids = svc.executor_pids()
        assert len(pids) == 2
        assert all(_environ(pid).get(JEMALLOC_CONF_VAR) == EXECUTOR_JEMALLOC_CONF for pid in pids)
        assert JEMALLOC_CONF_VAR not in _environ(svc.proc.pid)
    finally:
        svc.stop()


def test_executor_command_sets_it_before_pyarrow_loads(tmp_path):
    """``paimon-tail executor`` runs in a process started by someone else: it sets the variable itself, before
    anything of it imports pyarrow (a missing warehouse fails after the imports; a bad --join fails before, when
    the options are parsed)."""
    code = _TCACHE + """
import sys
from paimon_tail.cli.service import executor_command
assert "pyarrow" not in sys.modules
try:
    executor_command.main(["--join", "127.0.0.1:1"], standalone_mode=False)
except Exception as e:
    assert "no warehouse given" in str(e), e
assert "pyarrow" in sys.modules
print(tcache_state())
"""
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                         env=_without_var())
    assert out.returncode == 0, out.stderr
    state = out.stdout.strip()
    if not state:
        pytest.skip("pyarrow without jemalloc (or without arrow::jemalloc_stats_print)")
    assert state == "false"
