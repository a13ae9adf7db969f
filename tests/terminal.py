"""A command in a real pseudo-terminal of a given size, its screen read back as a person sees it (pyte emulates
the terminal: cursor moves, redraws and colours are applied, not left as escape codes in a string)."""
from __future__ import annotations

import os
import re
import signal
import sys
import time
from typing import Dict, List, Optional, Sequence

import pexpect
import pyte


class Terminal:
    """``args`` run in a pty of ``columns`` x ``lines``; ``screen()`` is the visible text, ``history()`` adds what
    scrolled off the top."""

    def __init__(self, args: Sequence[str], columns: int = 80, lines: int = 30, *, cwd: Optional[str] = None,
                 env: Optional[Dict[str, str]] = None, python: bool = True) -> None:
        e = {"TERM": "xterm-256color", "LANG": "C.UTF-8", "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
             "HOME": os.environ.get("HOME", "/tmp")}
        for name in ("XDG_CONFIG_HOME", "PYTHONPATH"):  # the test's named catalogs (conftest.py), the code tested
            if name in os.environ:
                e[name] = os.environ[name]
        e.update(env or {})
        e.pop("COLUMNS", None)
        e.pop("LINES", None)
        command, argv = (sys.executable, ["-m", "paimon_tail", *args]) if python else (args[0], list(args[1:]))
        self.columns, self.lines = columns, lines
        self._screen = pyte.HistoryScreen(columns, lines, history=100_000)
        self._stream = pyte.Stream(self._screen)
        self.raw: List[str] = []
        self.child = pexpect.spawn(command, argv, dimensions=(lines, columns), cwd=cwd, env=e, encoding="utf-8",
                                   codec_errors="replace", timeout=60)

    def _feed(self, timeout: float) -> bool:
        try:
            data = self.child.read_nonblocking(65536, timeout=timeout)
        except pexpect.TIMEOUT:
            return True
        except pexpect.EOF:
            return False
        self.raw.append(data)
        self._stream.feed(data.replace("\n", "\r\n") if False else data)
        return True

    def screen(self) -> str:
        return "\n".join(line.rstrip() for line in self._screen.display)

    def history(self) -> str:
        top = ["".join(ch.data for ch in (row[i] for i in range(self.columns))).rstrip()
               for row in self._screen.history.top]
        return "\n".join(top + [self.screen()])

    def wait_for(self, pattern: str, timeout: float = 60) -> str:
        """Read until the screen shows ``pattern`` (a regex); returns the screen."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            if re.search(pattern, text):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"{pattern!r} not on the screen within {timeout}s:\n{text}")
            if not self._feed(0.1) and not re.search(pattern, self.screen()):
                raise AssertionError(f"ended without showing {pattern!r}:\n{self.history()}")

    def wait_exit(self, timeout: float = 60) -> int:
        deadline = time.monotonic() + timeout
        while self._feed(0.1):
            if time.monotonic() > deadline:
                raise AssertionError(f"still running after {timeout}s:\n{self.screen()}")
        self.child.close()
        return self.child.exitstatus if self.child.exitstatus is not None else 128 + self.child.signalstatus

    def interrupt(self) -> None:
        self.child.sendintr()

    def close(self) -> None:
        if self.child.isalive():
            try:
                os.killpg(self.child.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.child.close(force=True)

    def __enter__(self) -> "Terminal":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def widest_line(text: str) -> int:
    return max((len(line.rstrip()) for line in text.splitlines()), default=0)
