"""``lookup --missing``: what keys that are not found do to the output and the exit code.

``error`` (the default) is grep's contract: the rows found are printed, one line on stderr says how many keys were
not found, and the exit code is 1. ``skip`` and ``null`` are for pipelines, where a key without a row is normal:
exit 0, the missing keys left out (``skip``) or answered with a placeholder line (``null``: ``null`` in JSON lines,
the key alone in other formats), so the output stays aligned with the input.
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Dict, Sequence

import click

from ..errors import EXIT_OK, EXIT_RUNTIME

POLICIES = ("error", "skip", "null")
_SHOWN = 5  # keys named in the stderr line


def missing_option(f: Callable) -> Callable:
    return click.option(
        "--missing", type=click.Choice(POLICIES), default="error", show_default=True,
        help="A key not found: error = say how many on stderr, exit 1 (like grep); skip = leave it out, exit 0; "
             "null = print null for it (JSON; the key alone in other formats), exit 0.")(f)


def missing_exit_code(result: Any, policy: str) -> int:
    """The exit code for ``result`` (a LookupResult) under ``policy``; under ``error`` also the stderr line."""
    if not result.missing or policy != "error":
        return EXIT_OK
    keys = result.keys
    shown = ", ".join(_key_text(keys[pos]) for pos in result.missing[:_SHOWN])
    more = ", …" if len(result.missing) > _SHOWN else ""
    sys.stdout.flush()
    click.echo(f"paimon-tail: {len(result.missing)} of {len(result)} key{'s' if len(result) > 1 else ''} not "
               f"found: {shown}{more} (--missing skip or null to exit 0)", err=True)
    return EXIT_RUNTIME


def _key_text(key: Dict[str, Any]) -> str:
    values: Sequence = list(key.values())
    if len(values) == 1:
        return str(values[0])
    return ",".join(f"{k}={v}" for k, v in key.items())
