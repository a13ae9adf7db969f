"""``paimon-tail demo``: a local warehouse with live writers, followed in the terminal."""
from __future__ import annotations

import os
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
    import shlex
    import shutil

    script = sys.argv[0] if sys.argv else ""
    if os.path.basename(script) != "paimon-tail":
        return f"{shlex.quote(sys.executable)} -m paimon_tail"
    on_path = shutil.which("paimon-tail")
    if on_path and os.path.realpath(on_path) == os.path.realpath(script):
        return "paimon-tail"
    return shlex.quote(os.path.relpath(script) if not os.path.relpath(script).startswith("..") else script)


def next_steps(warehouse: str, writer: Optional[int]) -> str:
    import shlex

    w, p = shlex.quote(warehouse), invocation()
    running = (f"The demo writer keeps committing in the background (pid {writer}) until:\n"
               f"  {p} demo --stop -w {w}\n"
               f"(and {p} demo --no-follow -w {w} starts it again without following)\n") if writer is not None else ""
    return (
        f"\n{running}"
        "Try next against this warehouse:\n"
        f"  {p} follow shop.orders -w {w} --from earliest --row-kind\n"
        f"  {p} follow shop.events -w {w} -e --from earliest | jq -c 'select(.kind==\"shipped\")'\n"
        f"  {p} follow shop.orders -w {w} --consumer-id me --nl | head -5\n"
        f"  {p} serve shop.orders -w {w} &\n"
        f"  {p} lookup shop.orders 1 2 3 -w {w}\n"
    )


async def _show(warehouse: str, duration: Optional[float], interactive: bool) -> None:
    import asyncio

    import pyarrow as pa

    from ..catalog import open_table
    from ..output import make_renderer
    from ..stream import Follower

    followers = [Follower(open_table(name, warehouse=warehouse), start="latest-full", row_kind=kind)
                 for name, kind in (("shop.orders", True), ("shop.events", False))]
    if interactive:
        from rich.console import Group
        from rich.live import Live

        renderers = [make_renderer("table", stats=f.stats, title=name, max_rows=12, auto_start=False)
                     for f, name in zip(followers, ("shop.orders", "shop.events"))]
        live = Live(get_renderable=lambda: Group(*(r.render() for r in renderers)), refresh_per_second=8)
    else:
        renderers = [make_renderer("jsonl") for _ in followers]
        live = None

    async def pump(follower: Follower, renderer, name: str) -> None:
        async for item in follower:
            batch = item.batch
            if not interactive:
                batch = pa.RecordBatch.from_arrays([pa.array([name] * batch.num_rows), *batch.columns],
                                                   names=["_table", *batch.schema.names])
            renderer.write(batch)
            if item.last_in_snapshot and not interactive:
                renderer.flush()

    tasks = [asyncio.create_task(pump(f, r, n)) for f, r, n in zip(followers, renderers,
                                                                     ("shop.orders", "shop.events"))]
    if live is not None:
        live.start()
    try:
        done, _ = await asyncio.wait(tasks, timeout=duration, return_when=asyncio.FIRST_EXCEPTION)
        for t in done:
            t.result()
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if live is not None:
            live.stop()


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
    info = demo_daemon.running(warehouse)
    if info is None:
        info = demo_daemon.start(warehouse, interval if interval is not None else 1.0)
        click.echo(f"demo warehouse: {warehouse} (tables shop.orders, shop.events); started a writer in the "
                   f"background (pid {info.pid}): a commit every {info.interval:g}s", err=True)
    else:
        ignored = "" if interval is None or interval == info.interval else \
            f"; --interval {interval:g} ignored: stop it first to change it"
        click.echo(f"demo warehouse: {warehouse} (tables shop.orders, shop.events); its writer is already running "
                   f"(pid {info.pid}, a commit every {info.interval:g}s){ignored}", err=True)
    try:
        if not no_follow:
            from ..output.command_output import Output

            run(_show(warehouse, duration, Output.choose().terminal))
    finally:
        click.echo(next_steps(warehouse, info.pid), err=True)
