"""The real CLI run in this process, as ``main()`` runs it (click, then the one error boundary), thousands of times
in the time a few hundred processes would take to start: the fuzz and corruption suites run here.

What a process would see is kept: stdout is a file (a pipe for the command: not a terminal), stderr is a real
pseudo-terminal (so click and rich write to it as they would to a person's terminal: nothing is stripped before the
test sees it), stdin a file. A watchdog interrupts a command that runs past its limit (SIGINT, as Ctrl-C would):
for a command that runs until stopped (``serve``) that is its normal end once it said it started (``started``), for
any other it is a hang.
"""
from __future__ import annotations

import io
import logging
import os
import signal
import sys
import tempfile
import threading
import time
import tty
from dataclasses import dataclass
from typing import Callable, Optional, Sequence


@dataclass
class Result:
    code: int
    out: bytes
    err: bytes  # as written to the terminal (raw mode: no \n -> \r\n)
    seconds: float
    interrupted: bool  # the watchdog sent SIGINT (a hang, or the stop of a command that runs until stopped)
    started: bool  # ``started`` saw what it waited for on stderr

    @property
    def err_text(self) -> str:
        return self.err.decode("utf-8", "replace")


def _stream(fd: int, mode: str, errors: str, line_buffering: bool) -> io.TextIOWrapper:
    """A text stream on ``fd`` as Python makes ``sys.stdout`` and the others at start-up (UTF-8, stderr
    line-buffered with backslashreplace), which does not close the fd."""
    raw = io.FileIO(fd, mode, closefd=False)
    buffered = io.BufferedReader(raw) if "r" in mode else io.BufferedWriter(raw)
    return io.TextIOWrapper(buffered, encoding="utf-8", errors=errors, line_buffering=line_buffering)


def run(args: Sequence[str], *, limit: float = 30.0, started: Optional[Callable[[str], bool]] = None,
        stdin: bytes = b"") -> Result:
    """``paimon-tail ARGS`` through ``error_boundary``; interrupted after ``limit`` seconds, or as soon as
    ``started(stderr so far)`` is true (then shortly after, so the command is past what it announced)."""
    from paimon_tail import log_format
    from paimon_tail.cli import cli, debug_enabled_any
    from paimon_tail.cli.common import error_boundary

    log_format.current = log_format.TEXT
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(0), os.dup(1), os.dup(2)
    master, slave = os.openpty()
    tty.setraw(slave)
    out = tempfile.TemporaryFile()
    inp = tempfile.TemporaryFile()
    inp.write(stdin)
    inp.seek(0)
    err = bytearray()
    done = threading.Event()
    lock = threading.Lock()  # the watchdog never interrupts a command that has finished
    state = {"interrupted": False, "started": False}

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            err.extend(chunk)

    def watchdog() -> None:
        deadline = time.monotonic() + limit
        while not done.wait(0.05):
            if started is not None and not state["started"] and started(err.decode("utf-8", "replace")):
                state["started"] = True
                deadline = min(deadline, time.monotonic() + 0.3)
            if time.monotonic() >= deadline:
                with lock:
                    if done.is_set():
                        return
                    state["interrupted"] = True
                    os.kill(os.getpid(), signal.SIGINT)
                return

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    os.dup2(inp.fileno(), 0)
    os.dup2(out.fileno(), 1)
    os.dup2(slave, 2)
    streams = sys.stdin, sys.stdout, sys.stderr  # pytest's capture objects: the command gets the fds, as main() does
    sys.stdin, sys.stdout, sys.stderr = _stream(0, "rb", "strict", False), _stream(1, "wb", "strict", False), \
        _stream(2, "wb", "backslashreplace", True)
    guard = threading.Thread(target=watchdog, daemon=True)
    t0 = time.monotonic()
    guard.start()
    try:
        code = error_boundary(lambda: cli.main(list(args), prog_name="paimon-tail", standalone_mode=False),
                              debug_enabled_any)
    except SystemExit as e:  # lookup's --missing ends with SystemExit, as main() lets it
        code = e.code if isinstance(e.code, int) else 1
    except KeyboardInterrupt:  # the watchdog's SIGINT landed outside the boundary
        code = 130
    finally:
        seconds = time.monotonic() - t0
        while not done.is_set():
            try:
                with lock:
                    done.set()
            except KeyboardInterrupt:  # sent as the command finished: it has ended all the same
                pass
        if state["interrupted"]:
            try:
                time.sleep(0.3)  # a SIGINT still on its way lands here, not in the caller
            except KeyboardInterrupt:
                pass
        guard.join()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        sys.stdin, sys.stdout, sys.stderr = streams
        os.dup2(saved[0], 0)
        os.dup2(saved[1], 1)
        os.dup2(saved[2], 2)
        for fd in (*saved, slave):
            os.close(fd)
        reader.join(5)
        os.close(master)
        if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        root.handlers[:] = handlers
        root.setLevel(level)
        log_format.current = log_format.TEXT
    out.seek(0)
    return Result(code, out.read(), bytes(err), seconds, state["interrupted"], state["started"])
