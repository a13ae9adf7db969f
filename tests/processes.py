"""A paimon-tail command run by a test as a real process: its own session (so the test can signal or kill all it
started, executors and Spark JVMs included), stderr collected line by line, and an event set when the line the
test waits for (``serve``'s "ready in", an executor's "joined the service") appears."""
from __future__ import annotations

import os
import signal
import subprocess
import threading
from typing import Dict, List, Optional, Sequence


class CliProcess:
    def __init__(self, args: Sequence[str], announce: str, *, env: Optional[Dict[str, str]] = None,
                 cwd: Optional[str] = None, drop_env: Sequence[str] = ("PAIMON_TAIL_TOKEN",)) -> None:
        e = {k: v for k, v in os.environ.items() if k not in drop_env}
        e.update(env or {})
        self.proc = subprocess.Popen(list(args), cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True, env=e, start_new_session=True)
        self.lines: List[str] = []
        self.announced = threading.Event()
        self._announce = announce
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append(line.rstrip())
            if self._announce in line:
                self.announced.set()

    def log(self) -> str:
        """stderr for an assertion message, without Java stack frames."""
        return "\n".join(line for line in self.lines if not line.lstrip().startswith("at "))[-6000:]

    def kill_all(self, sig: int = signal.SIGKILL, timeout: float = 10) -> None:
        """``sig`` to everything of the session still there, then reap the command itself."""
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout)
