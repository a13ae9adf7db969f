"""rich's ``Console`` for our outputs, with a closed pipe reported the way every other writer reports it.

rich answers a ``BrokenPipeError`` (``| head`` went away) by pointing stdout at /dev/null and raising
``SystemExit(1)``: exit 1 with nothing said, where the docs promise exit 0. ``PipeConsole`` raises
``OutputClosed`` instead, which the error boundary ends quietly with exit 0, as it does for the JSON, CSV and Arrow
writers.
"""
from __future__ import annotations

import os
import sys

from rich.console import Console

from ..errors import OutputClosed


class PipeConsole(Console):
    def on_broken_pipe(self) -> None:
        self.quiet = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        raise OutputClosed()


__all__ = ["PipeConsole"]
