"""``paimon-tail demo``: a local warehouse with live writers, followed in the terminal."""
from __future__ import annotations

import os
import shlex
import sys
from typing import Optional

import click

from ..errors import UsageError
from .common import run
from .types import Seconds, Text

DEFAULT_DIR = "paimon-tail-demo"


def invocation() -> str:
    """How this shell reaches paimon-tail: ``paimon-tail`` when that name on PATH is this program, else the path
    it was started by (``.venv/bin/paimon-tail`` when the venv is not active), else ``python -m paimon_tail``."""
    import shutil

    script = sys.argv[0] if sys.argv else ""
    if os.path.basename(script) != "paimon-tail":
        return f"{shlex.quote(sys.executable)} -m paimon_tail"
    on_path = shutil.which("paimon-tail")
    if on_path and os.path.realpath(on_path) == os.path.realpath(script):
        return "paimon-tail"
    return shlex.quote(os.path.relpath(script) if not os.path.relpath(script).startswith("..") else script)


@click.command("demo")
@click.option("--warehouse", "-w", default=DEFAULT_DIR, show_default=True, metavar="DIR", type=Text(name=True),
              help="Where to create the demo warehouse (reused if it exists).")
@click.option("--duration", type=Seconds(min=0), help="Stop following after this many seconds "
              "(default: Ctrl-C). The writer goes on.")
@click.option("--interval", type=Seconds(min=0.01), default=None,
              help="Seconds between commits of the background writer [default: 1; a running writer keeps its own].")
@click.option("--no-follow", is_flag=True, help="Start the writer (or find it running) and return: follow the "
              "tables yourself.")
@click.option("--stop", "stop_writer", is_flag=True, help="Stop the background writer of this warehouse.")
def demo_command(warehouse: str, duration: Optional[float], interval: Optional[float], no_follow: bool,
                 stop_writer: bool) -> None:
    """Create a local warehouse with live data (orders with updates and deletes, events) and follow it.

    The writer runs in the background: Ctrl-C stops following, not writing, so the other commands have live
    tables to work on. A second demo reuses the running writer; demo --stop stops it."""
    from .. import demo_daemon

    warehouse = os.path.abspath(warehouse)
    if stop_writer:
        if duration is not None or interval is not None or no_follow:
            raise UsageError("--stop goes alone (with --warehouse)")
        stopped = demo_daemon.stop(warehouse)
        click.echo(f"stopped the demo writer of {warehouse} (pid {stopped.pid})" if stopped is not None
                   else f"no demo writer is running for {warehouse}", err=True)
        return
    if no_follow and duration is not None:
        raise UsageError("--duration is how long to follow: it does not go with --no-follow")
    from .. import demo_view
    from ..output.command_output import Output

    info = demo_daemon.running(warehouse)
    started = info is None
    if started:
        info = demo_daemon.start(warehouse, interval if interval is not None else 1.0)
    intro = demo_view.intro(warehouse, info, started)
    if not started and interval is not None and interval != info.interval:
        intro += f"; --interval {interval:g} ignored: stop it first to change it"
    registered, why = _register(warehouse)
    interactive = not no_follow and Output.choose().terminal
    if not interactive:  # on a terminal the live view shows it, wrapped, above the tables
        click.echo(intro, err=True)
    try:
        if not no_follow:
            run(demo_view.show(warehouse, duration, interactive, intro if interactive else ""))
    finally:
        stop_flag = "" if warehouse == os.path.abspath(DEFAULT_DIR) else f" -w {shlex.quote(warehouse)}"
        click.echo(demo_view.next_steps(invocation(), demo_view.reach(warehouse, registered, why), info.pid,
                                        stop_flag), err=True, nl=False)


def _register(warehouse: str):
    """The demo's warehouse as the named catalog ``demo`` (the default when there is none): a new shell then
    needs no -w. A config directory that cannot be written only loses the convenience: (None, why)."""
    from .. import catalogs
    from ..demo_view import CATALOG
    from ..errors import PaimonTailError

    try:
        return catalogs.register(CATALOG, {"warehouse": warehouse}), ""
    except (OSError, PaimonTailError) as e:
        return None, getattr(e, "strerror", None) or str(e)
