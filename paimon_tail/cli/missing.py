"""``lookup --missing``: what keys that are not found do to the output and the exit code, for every lookup path.

``error`` (the default) is grep's contract: the rows found are printed, one line on stderr says how many keys were
not found, and the exit code is 1. ``skip`` and ``null`` are for pipelines, where a key without a row is normal:
exit 0, the missing keys left out (``skip``) or answered with a placeholder line (``null``: ``null`` in JSON lines,
the key alone in other formats), so the output stays aligned with the input.

A key the service could not answer (its bucket cannot be served: ``LookupResult.failed``) is not a key not found:
it prints nothing, and whatever ``--missing`` says, one line names it with the reason and the exit code is 1.
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Dict, List, Sequence

import click

from ..errors import EXIT_RUNTIME

POLICIES = ("error", "skip", "null")
_SHOWN = 5  # keys named in the stderr line


def missing_option(f: Callable) -> Callable:
    return click.option(
        "--missing", type=click.Choice(POLICIES), default="error", show_default=True,
        help="A key not found: error = say how many on stderr, exit 1 (like grep); skip = leave it out, exit 0; "
             "null = print null for it (JSON; the key alone in other formats), exit 0.")(f)


class MissingKeys:
    """Counts the keys not found over a whole command (one lookup or many chunks) and, once every row is out,
    says so and exits as ``--missing`` asks. The one place to change that behaviour."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.count = 0
        self.total = 0
        self.shown: List[Dict[str, Any]] = []
        self.failed = 0
        self.failed_shown: List[Dict[str, Any]] = []
        self.reason = ""

    @property
    def printed(self) -> bool:
        """A line for each missing key: ``null`` in JSON lines, the key columns alone in other formats."""
        return self.mode == "null"

    def add(self, looked_up: int, missing: Sequence[int], key: Callable[[int], Dict[str, Any]]) -> None:
        """``looked_up`` keys answered, ``missing`` their positions not found, ``key(pos)`` the key at one."""
        self.total += looked_up
        self.count += len(missing)
        for pos in missing[:max(0, _SHOWN - len(self.shown))]:
            self.shown.append(key(pos))

    def add_failed(self, failed: Dict[int, str], key: Callable[[int], Dict[str, Any]]) -> None:
        """Positions the service could not answer, and why."""
        self.failed += len(failed)
        for pos, reason in sorted(failed.items())[:max(0, _SHOWN - len(self.failed_shown))]:
            self.failed_shown.append(key(pos))
            self.reason = self.reason or reason

    def finish(self) -> None:
        if self.failed:
            more = ", …" if self.failed > len(self.failed_shown) else ""
            sys.stdout.flush()
            click.echo(f"paimon-tail: {self.failed} of {self.total} key{'s' if self.total > 1 else ''} could not be "
                       f"answered: {', '.join(_key_text(k) for k in self.failed_shown)}{more} ({self.reason})",
                       err=True)
            raise SystemExit(EXIT_RUNTIME)
        if not self.count or self.mode != "error":
            return
        more = ", …" if self.count > len(self.shown) else ""
        sys.stdout.flush()
        click.echo(f"paimon-tail: {self.count} of {self.total} key{'s' if self.total > 1 else ''} not found: "
                   f"{', '.join(_key_text(k) for k in self.shown)}{more} (--missing skip or null to exit 0)",
                   err=True)
        # SystemExit, not click's Exit: with standalone_mode=False click turns Exit into a return value.
        raise SystemExit(EXIT_RUNTIME)


def _key_text(key: Dict[str, Any]) -> str:
    values: Sequence = list(key.values())
    if len(values) == 1:
        return str(values[0])
    return ",".join(f"{k}={v}" for k, v in key.items())


__all__ = ["MissingKeys", "POLICIES", "missing_option"]
