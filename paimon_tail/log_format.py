"""What the long-running commands (``serve``, ``executor``) say on stderr: plain lines (``paimon-tail: …``), or with
``--log-format json`` one JSON object per line for log shippers — their own lines, the library's log records,
serve's executor processes and the final error line alike::

    {"time": "2026-11-24T13:20:37.123Z", "level": "info", "logger": "paimon_tail", "process": "serve",
     "pid": 4242, "message": "ready in 3.1s"}
"""
from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import Optional

TEXT, JSON = "text", "json"
current = TEXT  # the format of this process (set by configure)
_process = "paimon-tail"


class JsonFormatter(logging.Formatter):
    def __init__(self, process: str) -> None:
        super().__init__()
        self.process = process

    def format(self, record: logging.LogRecord) -> str:
        entry = {"time": _iso(record.created), "level": record.levelname.lower(), "logger": record.name,
                 "process": self.process, "pid": record.process, "message": record.getMessage()}
        if record.exc_info and logging.getLogger().isEnabledFor(logging.DEBUG):
            entry["traceback"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z"


def configure(fmt: str, process: str, level: Optional[str] = None, text_format: Optional[str] = None) -> None:
    """Set this process's format: json gets a root handler writing JSON lines; text keeps Python's defaults (or
    ``text_format`` for the records, as serve's executor processes prefix theirs)."""
    global current, _process
    current, _process = fmt, process
    level = level or os.environ.get("PAIMON_TAIL_LOG", "WARNING")
    if fmt == JSON:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(JsonFormatter(process))
        root = logging.getLogger()
        root.handlers[:] = [handler]
        root.setLevel(level)
    elif text_format is not None:
        logging.basicConfig(level=level, format=text_format)


def say(message: str, level: str = "info") -> None:
    """One of the command's own lines (``paimon-tail: MESSAGE`` as text), safe for a terminal (``safe_text``)."""
    from .errors import safe_text

    message = safe_text(message)
    if current == JSON:
        sys.stderr.write(json.dumps({"time": _iso(time.time()), "level": level, "logger": "paimon_tail",
                                     "process": _process, "pid": os.getpid(), "message": message},
                                    ensure_ascii=False) + "\n")
        sys.stderr.flush()
    else:
        import click

        click.echo(f"paimon-tail: {message}", err=True)


__all__ = ["JSON", "JsonFormatter", "TEXT", "configure", "say"]
