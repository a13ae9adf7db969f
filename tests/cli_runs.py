"""Shared helpers for the reliability suite: real processes, real signals, real files.

Fixtures for warehouses come from ``tests/conftest.py`` (``wh``); the query-service helpers (``ServeProcess``,
``Warehouse``) are reused from ``tests/service/conftest.py``.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from typing import List

import pytest

from tests.conftest import CLI


def start_cli_to_file(args: List[str], out_path: str, env: dict | None = None) -> subprocess.Popen:
    """The CLI with stdout going to a file (a pipe we do not drain could block the child) and stderr piped."""
    e = dict(os.environ)
    e.pop("PAIMON_WAREHOUSE", None)
    e.pop("PAIMON_TAIL_TOKEN", None)
    e.update(env or {})
    out = open(out_path, "wb")
    try:
        return subprocess.Popen(CLI + list(args), stdout=out, stderr=subprocess.PIPE, env=e)
    finally:
        out.close()


def json_lines(path: str) -> list:
    """Whole JSON lines of an output file; a line cut by SIGKILL is not a row that was delivered."""
    rows = []
    with open(path, "rb") as f:
        for line in f.read().splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:
                pass
    return rows


def wait_for(predicate, timeout: float = 30.0, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(interval)


def file_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def expire_snapshots(table_path: str, keep_from: int) -> List[int]:
    """Expire snapshots before ``keep_from`` as Paimon's snapshot expiration does (pypaimon 2.1 has no expire
    API): delete their snapshot files, then move the EARLIEST hint. Returns the ids removed."""
    snapdir = f"{table_path}/snapshot"
    removed = []
    for name in os.listdir(snapdir):
        if name.startswith("snapshot-") and int(name.split("-")[1]) < keep_from:
            os.remove(f"{snapdir}/{name}")
            removed.append(int(name.split("-")[1]))
    tmp = f"{snapdir}/.EARLIEST.tmp"
    with open(tmp, "w") as f:
        f.write(str(keep_from))
    os.replace(tmp, f"{snapdir}/EARLIEST")
    return sorted(removed)


@pytest.fixture
def reaper():
    """Processes registered here are SIGKILLed (and SIGCONTed first) at teardown, whatever the test did."""
    procs: List[subprocess.Popen] = []
    yield procs.append
    for p in procs:
        if p.poll() is None:
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    p.send_signal(sig)
                except ProcessLookupError:
                    pass
            p.wait(10)
