"""The conditional replacement behind the query service's lease, on a local file system: exclusive among writers,
and a writer that hangs holding the lock (a SIGSTOPped coordinator) neither blocks a takeover nor writes over it
when it wakes."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from paimon_tail.atomic_file import LOCK_HUNG_SECONDS, Conflict, read_versioned, replace_if

# A writer that stops itself after its compare, holding the lock (as a SIGSTOP landing there would), then goes on.
HUNG_WRITER = r"""
import os, signal, sys
from paimon_tail import atomic_file

held, calls = atomic_file.Lock.held, []
def stop_then_check(self):
    calls.append(1)
    if len(calls) == 2:  # (the first is the lock's own, taking it; the second is replace_if's, after its compare)
        os.kill(os.getpid(), signal.SIGSTOP)
    return held(self)
atomic_file.Lock.held = stop_then_check
try:
    atomic_file.replace_if(None, sys.argv[1], "the hung writer", sys.argv[2])
except atomic_file.Conflict:
    sys.exit(3)
"""


def _stopped(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] == "T"


def test_a_writer_hung_holding_the_lock_neither_blocks_nor_overwrites(tmp_path):
    path = str(tmp_path / "service.json")
    first = replace_if(None, path, "first", None)
    hung = subprocess.Popen([sys.executable, "-c", HUNG_WRITER, path, first])
    try:
        deadline = time.monotonic() + 30
        while not _stopped(hung.pid):
            assert hung.poll() is None and time.monotonic() < deadline, "the writer never reached its lock"
            time.sleep(0.01)
        started = time.monotonic()
        replace_if(None, path, "the standby", first)  # the hung writer's lock is broken, not waited on forever
        took = time.monotonic() - started
        assert LOCK_HUNG_SECONDS <= took < LOCK_HUNG_SECONDS + 5, took
        os.kill(hung.pid, signal.SIGCONT)
        assert hung.wait(30) == 3  # it woke into a write that is no longer its to make: Conflict
        assert read_versioned(None, path)[0] == "the standby"
        assert sorted(os.listdir(tmp_path)) == [".service.json.lock", "service.json"]  # no temporary file left
    finally:
        if hung.poll() is None:
            os.kill(hung.pid, signal.SIGCONT)
            hung.kill()


@pytest.mark.parametrize("writers", [2, 6])
def test_read_modify_writes_never_lose_an_update(tmp_path, writers):
    """Counters incremented through compare-and-replace from threads at once: every increment is kept."""
    path = str(tmp_path / "counter")
    replace_if(None, path, "0", None)
    each = 150
    conflicts = []
    start = threading.Barrier(writers)

    def increment() -> None:
        start.wait()  # all at once: none finishes before another has begun
        done = 0
        while done < each:
            text, version = read_versioned(None, path)
            try:
                replace_if(None, path, str(int(text) + 1), version)
                done += 1
            except Conflict:
                conflicts.append(1)

    threads = [threading.Thread(target=increment) for _ in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert read_versioned(None, path)[0] == str(writers * each)
    assert conflicts, "the writers never raced: the test proves nothing"
