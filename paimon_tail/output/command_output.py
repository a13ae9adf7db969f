"""One command's output, chosen once (pyiceberg's ``cli/output.py`` idea): ``Output.choose(fmt)`` decides the
format where every command decides it ("auto": a table on a terminal, JSON lines when piped), refuses a binary
format on a terminal, and everything the command prints then goes through it: JSON records, a terminal report, a
follower's renderer (``renderer()``) or lookup answers (``lookup_rows.py``).

Imports neither pyarrow, polars nor rich: ``lookup`` of a few keys, ``service status`` and ``consumers`` load only
what their format needs (``tests/cli/test_startup.py``).
"""
from __future__ import annotations

import json
import sys
from typing import Any, Iterable, List, Sequence

import click

from .formats import choose_format, refuse_binary_terminal

VALUE_FORMATS = ("jsonl", "table")  # written from Python values too, without pyarrow (plain.py)


class Output:
    """Where and how one command writes: ``fmt`` is the chosen format (never ``auto``), ``stream`` the text
    stream (stdout by default; its bytes for the Arrow-based renderers)."""

    def __init__(self, fmt: str, stream=None) -> None:
        self.fmt = fmt
        self._stream = stream
        self._console = None

    @classmethod
    def choose(cls, fmt: str = "auto", stream=None, force_binary: bool = False) -> "Output":
        """The one decision: ``auto`` is a table on a terminal and JSON lines otherwise; a binary format is not
        written to a terminal unless ``force_binary``."""
        target = stream if stream is not None else sys.stdout
        chosen = choose_format(fmt, target)
        refuse_binary_terminal(chosen, target, force_binary)
        return cls(chosen, stream)

    @property
    def stream(self):
        return self._stream if self._stream is not None else sys.stdout

    @property
    def terminal(self) -> bool:
        """The table format: for a person at a terminal (rich), not for a program."""
        return self.fmt == "table"

    @property
    def takes_values(self) -> bool:
        """Rows of Python values can be written in this format without pyarrow (a few keys' lookup)."""
        return self.fmt in VALUE_FORMATS

    # -- records (consumers, service status) --------------------------------------------------------------
    def json(self, value: Any) -> None:
        """One JSON document on a line."""
        click.echo(json.dumps(value), file=self._stream)

    def records(self, rows: Iterable[dict]) -> None:
        """JSON lines: a flat record per line, for jq."""
        for row in rows:
            self.json(row)

    # -- the terminal (rich, loaded on first use) ---------------------------------------------------------
    @property
    def console(self):
        if self._console is None:
            from .pipe_console import PipeConsole

            self._console = PipeConsole(file=self._stream)
        return self._console

    def say(self, markup: str, highlight: bool = True) -> None:
        """A line of rich markup on the terminal; ``highlight``: rich's colouring of numbers, strings and brackets."""
        self.console.print(markup, highlight=highlight)

    def report(self, header: Sequence[str], rows: List[List[str]], title: str = "",
               optional: Sequence[str] = ()) -> None:
        """A table that fits the terminal's width, leaving ``optional`` columns out if need be
        (``terminal_tables.report``)."""
        from .terminal_tables import report

        self.console.print(report(header, rows, self.console, title=title, optional=optional))

    # -- Arrow rows (follow) ------------------------------------------------------------------------------
    def renderer(self, **options):
        """The renderer of this format (``renderers.make_renderer``) on the stream's bytes."""
        from .renderers import make_renderer

        return make_renderer(self.fmt, None if self._stream is None else self._stream.buffer, **options)


__all__ = ["Output", "VALUE_FORMATS"]
