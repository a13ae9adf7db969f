"""The demo's writer as a process of its own, so the demo's tables keep changing after Ctrl-C on ``paimon-tail
demo`` (which only stops following them) until ``paimon-tail demo --stop``.

``start`` runs ``python -m paimon_tail.demo_daemon`` detached (its own session, no terminal: closing the shell
does not stop it either), logging to ``demo-writer.log`` in the warehouse. The writer holds an exclusive lock
on ``demo-writer.pid`` in the warehouse for as long as it runs, and writes its pid and interval there once its
first commit is in: a locked pid file is a running writer, whatever its pid says (a pid is reused after a
reboot, a lock is not), and two ``demo`` commands started at once end up with one writer. The writer stops on
SIGTERM or SIGINT after the commit in progress, and also when its pid file disappears (the warehouse deleted).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import List, Optional

PID_FILE = "demo-writer.pid"
LOG_FILE = "demo-writer.log"


@dataclasses.dataclass(frozen=True)
class WriterInfo:
    pid: int
    interval: float
    started: float  # epoch seconds


def pid_path(warehouse: str) -> str:
    return os.path.join(warehouse, PID_FILE)


def log_path(warehouse: str) -> str:
    return os.path.join(warehouse, LOG_FILE)


def running(warehouse: str) -> Optional[WriterInfo]:
    """The writer running for ``warehouse`` once it has committed, or None."""
    state = _state(warehouse)
    return state if isinstance(state, WriterInfo) else None


def _state(warehouse: str):
    """A ``WriterInfo``; ``"starting"`` (a writer holds the lock, no commit yet); or None (no writer: no pid file,
    or one left unlocked by a writer that was killed)."""
    import fcntl

    try:
        fd = os.open(pid_path(warehouse), os.O_RDONLY)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:  # a writer holds it
            try:
                info = json.loads(os.pread(fd, 4096, 0) or b"null")
                return WriterInfo(int(info["pid"]), float(info["interval"]), float(info["started"]))
            except (ValueError, TypeError, KeyError):
                return "starting"
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def start(warehouse: str, interval: float, timeout: float = 120.0) -> WriterInfo:
    """Start the writer for ``warehouse`` (an absolute path) and return once its first commit is in; if one is
    already running (started by another command meanwhile), that one."""
    from .errors import PaimonTailError, WarehouseError

    if os.path.exists(warehouse) and not os.path.isdir(warehouse):
        raise WarehouseError(f"demo warehouse {warehouse} is not a directory")
    try:
        os.makedirs(warehouse, exist_ok=True)
        log = open(log_path(warehouse), "ab")
    except OSError as e:
        raise WarehouseError(f"cannot create the demo warehouse {warehouse}: {e.strerror}") from None
    try:
        proc = subprocess.Popen([sys.executable, "-m", "paimon_tail.demo_daemon", "--warehouse", warehouse,
                                 "--interval", repr(interval)], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True, close_fds=True)
    finally:
        log.close()
    deadline = time.monotonic() + timeout
    while True:
        state = _state(warehouse)
        if isinstance(state, WriterInfo):
            return state
        code = proc.poll()
        # exit code 0 at once: another command's writer got the lock first; it is the one to wait for
        if code is not None and _state(warehouse) is None:
            raise PaimonTailError(f"the demo writer stopped at once (exit code {code}): {_last_line(warehouse)}",
                                  hint=f"its log: {log_path(warehouse)}")
        if time.monotonic() > deadline:
            raise PaimonTailError(f"the demo writer made no commit within {timeout:.0f}s",
                                  hint=f"its log: {log_path(warehouse)}")
        time.sleep(0.05)


def stop(warehouse: str, timeout: float = 60.0) -> Optional[WriterInfo]:
    """Stop the writer of ``warehouse`` (after the commit in progress); the writer it stopped, or None."""
    from .errors import PaimonTailError

    info = running(warehouse)
    if info is None:
        return None
    try:
        os.kill(info.pid, signal.SIGTERM)
    except ProcessLookupError:
        return info
    deadline = time.monotonic() + timeout
    while running(warehouse) is not None or not _gone(info.pid):  # the lock goes first, then the process
        if time.monotonic() > deadline:
            raise PaimonTailError(f"the demo writer (pid {info.pid}) did not stop within {timeout:.0f}s")
        time.sleep(0.05)
    return info


def _gone(pid: int) -> bool:
    """The process has exited (a zombie waiting for its parent counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True
    except OSError:  # no /proc
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False


def _last_line(warehouse: str) -> str:
    try:
        with open(log_path(warehouse), "rb") as f:
            lines = [line for line in f.read().decode("utf-8", "replace").splitlines() if line.strip()]
    except OSError:
        return "no log"
    return lines[-1].strip() if lines else "no log"


def _lock(path: str) -> Optional[int]:
    """The pid file, opened and locked by this process; None when another writer holds it."""
    import fcntl

    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        if _same_file(path, fd):
            os.ftruncate(fd, 0)  # what a killed writer left is not this one: "starting" until it commits
            return fd
        os.close(fd)  # the file was removed (its writer stopping) between our open and our lock: again


def run(warehouse: str, interval: float) -> int:
    """The writer process: commit every ``interval`` seconds until told to stop."""
    from .demo import DemoWriter

    path = pid_path(warehouse)
    fd = _lock(path)
    if fd is None:
        return 0  # another writer runs for this warehouse
    stopping = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.set())
    try:
        writer = DemoWriter(warehouse, interval=interval)
        writer.step()
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "interval": interval, "started": time.time()}).encode(), 0)
        print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} demo writer {os.getpid()} started: a commit every {interval:g}s",
              flush=True)
        while not stopping.wait(interval):
            if not _same_file(path, fd):
                print("the pid file is gone (the warehouse was removed?): stopping", flush=True)
                return 0
            writer.step()
        print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} demo writer {os.getpid()} stopped after {writer.commits} "
              "commits", flush=True)
        return 0
    finally:
        try:
            if _same_file(path, fd):
                os.unlink(path)
        finally:
            os.close(fd)


def _same_file(path: str, fd: int) -> bool:
    """``path`` is still the file open as ``fd`` (not removed, nor removed and made again by another writer)."""
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m paimon_tail.demo_daemon", description=__doc__.split("\n\n")[0])
    p.add_argument("--warehouse", required=True)
    p.add_argument("--interval", type=float, default=1.0)
    args = p.parse_args(argv)
    return run(os.path.abspath(args.warehouse), args.interval)


if __name__ == "__main__":
    sys.exit(main())
