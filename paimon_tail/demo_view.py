"""What ``paimon-tail demo`` shows: both demo tables followed at once, and the hints printed when it stops.

On a terminal, one live view that fits the screen, whatever its size (80×24 included): an intro wrapped at word
boundaries, then each table's newest rows over a footer that names it; the rows per table are what the screen
holds (at most ``MAX_ROWS``). The view leaves out ``op``, the column Paimon reads the row kind from
(``rowkind.field``), since ``_row_kind`` says the same, and shows times of day (the commits are seconds apart).
Piped, JSON lines tagged with ``_table``.

The hints are commands to paste into the same shell: without ``-w`` when the warehouse is this shell's already
(``PAIMON_WAREHOUSE``, or the default catalog the demo registers it as), else with ``--catalog demo``.
"""
from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass
from typing import Optional, Sequence

TABLES = ("shop.orders", "shop.events")
HIDDEN = {"shop.orders": ("op",)}  # the row kind column: _row_kind shows it
MAX_ROWS = 12
CATALOG = "demo"  # the name the demo registers its warehouse as (catalogs.py)


@dataclass(frozen=True)
class Reach:
    """How the commands of this shell reach the demo's warehouse: ``flag`` is what they need to add (``""`` when
    nothing: the environment's or the default catalog's warehouse is the demo's)."""

    flag: str
    how: str  # a sentence for the hints


def reach(warehouse: str, registered=None, registry_error: str = "") -> Reach:
    """``registered``: what ``catalogs.register`` returned for the demo's warehouse (None: not registered)."""
    from .catalog import CatalogConfig

    ours = CatalogConfig({"warehouse": warehouse}).warehouse_id
    env = os.environ.get("PAIMON_WAREHOUSE")
    if env and CatalogConfig({"warehouse": env}).warehouse_id == ours:
        return Reach("", "Its warehouse is this shell's PAIMON_WAREHOUSE.")
    if registered is None:
        why = f" (not registered as catalog {CATALOG}: {registry_error})" if registry_error else ""
        return Reach(f" -w {shlex.quote(warehouse)}", f"Its warehouse is {warehouse}{why}.")
    where = _home(registered.path)
    if registered.default and not env:
        return Reach("", f"Its warehouse is catalog {CATALOG}, the default in {where}: commands need no -w, "
                         "in this shell and in new ones.")
    overridden = " (PAIMON_WAREHOUSE names another)" if env and registered.default else ""
    return Reach(f" --catalog {CATALOG}", f"Its warehouse is catalog {CATALOG} in {where}{overridden}.")


def next_steps(program: str, reach_: Reach, writer: Optional[int], stop_flag: str = "",
               width: Optional[int] = None) -> str:
    """The text printed when the demo stops following: the writer, how to stop it, and commands to try (each
    short enough for 80 columns when the warehouse needs no flag)."""
    import textwrap

    width = width or _stderr_width()
    p, w = program, reach_.flag
    lines = [""]
    if writer is not None:
        lines += [f"The demo writer keeps committing in the background (pid {writer}) until:",
                  f"  {p} demo --stop{stop_flag}",
                  f"(and {p} demo --no-follow{stop_flag} starts it again without following)"]
    lines += textwrap.wrap(f"{reach_.how} Try next:", width - 1, break_on_hyphens=False,
                           break_long_words=False) + [
        f"  {p} tables{w}",
        f"  {p} describe shop.orders{w}",
        f"  {p} follow shop.orders{w} --from earliest --row-kind",
        f"  {p} follow shop.events{w} -n 20 | jq -c 'select(.kind==\"paid\")'",
        f"  {p} follow shop.orders{w} --consumer-id me --nl | head -5",
        f"  {p} serve shop.orders{w} &",
        f"  {p} lookup shop.orders{w} 1 2 3",
    ]
    return "\n".join(lines) + "\n"


def intro(warehouse: str, writer, started: bool) -> str:
    """One sentence on what runs: the warehouse, its tables, the writer."""
    head = f"demo warehouse: {_relative(warehouse)} (tables {', '.join(TABLES)}); "
    if started:
        return head + f"started a writer in the background (pid {writer.pid}): a commit every {writer.interval:g}s"
    return head + f"its writer is already running (pid {writer.pid}, a commit every {writer.interval:g}s)"


async def show(warehouse: str, duration: Optional[float], interactive: bool, intro_text: str = "") -> None:
    """Follow both tables until ``duration`` has passed (or forever): the live view on a terminal, JSON lines
    otherwise."""
    import asyncio

    from .catalog import open_table
    from .stream import Follower

    followers = [Follower(open_table(name, warehouse=warehouse), start="latest-full", row_kind=name == TABLES[0])
                 for name in TABLES]
    view = _LiveView(followers, intro_text) if interactive else _JsonView()

    async def pump(follower: Follower, name: str) -> None:
        async for item in follower:
            view.write(name, _shown(name, item.batch, interactive), item.last_in_snapshot)

    tasks = [asyncio.create_task(pump(f, n)) for f, n in zip(followers, TABLES)]
    view.start()
    try:
        done, _ = await asyncio.wait(tasks, timeout=duration, return_when=asyncio.FIRST_EXCEPTION)
        for t in done:
            t.result()
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        view.stop()


def _shown(name: str, batch, interactive: bool):
    """The columns the demo shows: without the row kind column; on a terminal, times of day."""
    import pyarrow as pa
    import pyarrow.compute as pc

    keep = [i for i, n in enumerate(batch.schema.names) if n not in HIDDEN.get(name, ())]
    columns, fields = [batch.column(i) for i in keep], [batch.schema.field(i) for i in keep]
    if interactive:
        for i, f in enumerate(fields):
            if pa.types.is_timestamp(f.type):
                seconds = pc.cast(columns[i], pa.timestamp("s", tz=f.type.tz), safe=False)
                columns[i] = pc.strftime(seconds, format="%H:%M:%S")
                fields[i] = pa.field(f.name, pa.string())
    return pa.RecordBatch.from_arrays(columns, schema=pa.schema(fields))


class _JsonView:
    def __init__(self) -> None:
        from .output import make_renderer

        self.renderer = make_renderer("jsonl")

    def start(self) -> None:
        pass

    def write(self, name: str, batch, last_in_snapshot: bool) -> None:
        import pyarrow as pa

        self.renderer.write(pa.RecordBatch.from_arrays([pa.array([name] * batch.num_rows), *batch.columns],
                                                       names=["_table", *batch.schema.names]))
        if last_in_snapshot:
            self.renderer.flush()

    def stop(self) -> None:
        self.renderer.close()


class _LiveView:
    """The intro and a section per table (rows over a footer that names the table), redrawn in place."""

    # a section without rows: the table's top border, header, its rule and bottom border, and the footer
    SECTION_LINES = 5

    def __init__(self, followers: Sequence, intro_text: str) -> None:
        from rich.console import Console, Group
        from rich.live import Live
        from rich.text import Text

        from .output.live_table import LiveTableRenderer

        console = Console()
        self.intro = Text(intro_text + ". Ctrl-C stops following, not writing.", style="dim") if intro_text \
            else None
        rows = rows_per_table(console.size.height, console.size.width, self._intro_lines(console), len(followers))
        self.renderers = {name: LiveTableRenderer(stats=f.stats, console=console, max_rows=rows, auto_start=False,
                                                  label=name) for f, name in zip(followers, TABLES)}
        parts = ([self.intro] if self.intro is not None else [])
        self.live = Live(get_renderable=lambda: Group(*parts, *(r.render() for r in self.renderers.values())),
                         console=console, refresh_per_second=8, redirect_stdout=False, redirect_stderr=False)

    def _intro_lines(self, console) -> int:
        if self.intro is None:
            return 0
        return len(self.intro.wrap(console, console.size.width))

    def start(self) -> None:
        self.live.start()

    def write(self, name: str, batch, last_in_snapshot: bool) -> None:
        self.renderers[name].write(batch)

    def stop(self) -> None:
        ended = "stopped" if sys.exc_info()[1] is not None else "done"  # Ctrl-C, or --duration's end
        for renderer in self.renderers.values():
            if renderer.footer is not None:
                renderer.footer.ended = ended
        self.live.stop()


NARROW = 72  # below this many columns, a section names the columns it leaves out on a line of its own


def rows_per_table(height: int, width: int, intro_lines: int, tables: int) -> int:
    """Rows each table shows so that the intro and every section fit ``height`` lines (the cursor's line
    included): 5 each at 80×24 with a two-line intro, at most ``MAX_ROWS``, at least 1."""
    section = _LiveView.SECTION_LINES + (1 if width < NARROW else 0)
    room = height - 1 - intro_lines - tables * section
    return max(1, min(MAX_ROWS, room // tables))


def _relative(path: str) -> str:
    """``path`` relative to the working directory when it is under it (shorter), else as it is."""
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else path


def _home(path: str) -> str:
    home = os.path.expanduser("~")
    return "~" + path[len(home):] if home not in ("", "/") and path.startswith(home + os.sep) else path


def _stderr_width() -> int:
    import shutil

    return shutil.get_terminal_size((80, 24)).columns if sys.stderr.isatty() else 80


__all__ = ["CATALOG", "Reach", "intro", "next_steps", "reach", "rows_per_table", "show"]
