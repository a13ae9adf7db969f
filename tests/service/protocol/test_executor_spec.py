"""Where the two sides meet outside a socket (``service/protocol/``): the executor's entry point the coordinator's
launcher names without importing it, and whose directory in ``--local-dir`` is whose."""
from __future__ import annotations

import importlib
import os
import subprocess
import sys

from paimon_tail.service.protocol import executor_spec, local_dirs


def test_the_launchers_entry_point_is_the_executors():
    """``ENTRY_POINT`` (a name, so that the coordinator never imports the executor) is the executor's own
    ``executor_main``: renaming one without the other fails here, not in a spawned process."""
    module, name = executor_spec.ENTRY_POINT.split(":")
    target = getattr(importlib.import_module(module), name)
    from paimon_tail.service.executor.entry import executor_main

    assert target is executor_main


def test_the_coordinator_starts_executors_without_importing_them():
    """A process that loads the launcher and the query service has loaded nothing of ``service/executor/``."""
    code = ("import sys; import paimon_tail.service.coordinator.query_service; "
            "print(sorted(m for m in sys.modules if m.startswith('paimon_tail.service.executor')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ)).stdout.strip()
    assert out == "[]", out


def test_dirs_of_a_dead_executor_are_removed_and_a_living_ones_kept(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # reaped: no process has its pid now
    mine = tmp_path / local_dirs.own_dir_name(0, "a" * 32)  # this process: alive
    gone = tmp_path / local_dirs.own_dir_name(1, "b" * 32, pid=dead.pid)
    other = tmp_path / "not-an-executors"
    for d in (mine, gone, other):
        (d / "stores").mkdir(parents=True)
    assert {mine.name, gone.name} == set(local_dirs._own_dirs(str(tmp_path)))
    local_dirs.remove_dead_dirs(str(tmp_path))
    assert mine.exists() and other.exists() and not gone.exists()
    local_dirs.remove_dirs_of(str(tmp_path), os.getpid())  # (serve's launcher, after killing an executor)
    assert not mine.exists() and other.exists()
