"""``paimon-tail demo``: a local warehouse with live writers, followed in the terminal."""
from __future__ import annotations

import os
import sys
from typing import Optional

import click

from .common import run

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


def next_steps(warehouse: str) -> str:
    import shlex

    w, p = shlex.quote(warehouse), invocation()
    return (
        "\nTry next against this warehouse:\n"
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
@click.option("--warehouse", "-w", default=DEFAULT_DIR, show_default=True, metavar="DIR",
              help="Where to create the demo warehouse (reused if it exists).")
@click.option("--duration", type=click.FloatRange(min=0), help="Stop after this many seconds (default: Ctrl-C).")
@click.option("--interval", type=click.FloatRange(min=0.01), default=1.0, show_default=True,
              help="Seconds between commits of the background writer.")
@click.option("--no-follow", is_flag=True, help="Only write; follow it yourself from another terminal.")
def demo_command(warehouse: str, duration: Optional[float], interval: float, no_follow: bool) -> None:
    """Create a local warehouse with live data (orders with updates and deletes, events) and follow it."""
    import asyncio

    from ..demo import DemoWriter

    warehouse = os.path.abspath(warehouse)
    writer = DemoWriter(warehouse, interval=interval)
    click.echo(f"demo warehouse: {warehouse} (tables shop.orders, shop.events; a commit every {interval:g}s)",
               err=True)
    writer.step()  # so there is something to show at once
    writer.start()
    try:
        if no_follow:
            run(asyncio.sleep(duration if duration is not None else 10**9))
        else:
            run(_show(warehouse, duration, sys.stdout.isatty()))
    finally:
        writer.stop()
        click.echo(next_steps(warehouse), err=True)
