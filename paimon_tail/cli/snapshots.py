"""``paimon-tail snapshots``: a table's snapshots, listed, or followed as they are committed (``-f``).

A thin use of ``follow 'TABLE$snapshots'`` (``stream/system.py``): the same rows, positions and formats.
"""
from __future__ import annotations

import sys
from typing import Optional

import click

from ..catalog import CatalogConfig
from ..errors import UsageError
from .common import catalog_options, complete_tables, run
from .types import Columns, Text

ROW_FORMATS = ("auto", "jsonl", "table", "csv", "tsv", "arrow")
#: what a person reads first; --select picks others (the manifest lists, watermark, ...)
COLUMNS = ("snapshot_id", "commit_kind", "commit_time", "total_record_count", "delta_record_count",
           "changelog_record_count", "schema_id", "commit_identifier", "commit_user")


@click.command("snapshots")
@click.argument("table", metavar="TABLE", shell_complete=complete_tables)
@catalog_options
@click.option("--follow", "-f", "live", is_flag=True, help="Go on: a row per new commit, as it is committed.")
@click.option("--from", "start", default="earliest", show_default=True, metavar="POSITION",
              help="The first snapshot listed: earliest | latest (only new ones, with -f) | snapshot:N | "
              "timestamp:T | -1h | tag:NAME (every --from of follow).")
@click.option("--until", metavar="POSITION", help="Stop after snapshot:N, timestamp:T or tag:NAME.")
@click.option("--select", "-s", metavar="COLS", type=Columns(),
              help=f"Columns, comma-separated [default: {','.join(COLUMNS)}; the table's $snapshots has more].")
@click.option("--where", metavar="EXPR", multiple=True, type=Text(),
              help="Filter, e.g. \"commit_kind = 'OVERWRITE'\".")
@click.option("--format", "fmt", default="auto", show_default=True, type=click.Choice(ROW_FORMATS),
              help="auto = a table on a terminal, JSON lines when piped (-f is --follow here, as in tail).")
@click.option("--nl", "fmt", flag_value="jsonl", help="JSON lines.")
@click.option("--csv", "fmt", flag_value="csv", help="CSV with a header.")
@click.option("--tsv", "fmt", flag_value="tsv", help="Tab-separated.")
@click.option("--force-binary", is_flag=True, help="Write --format arrow even when stdout is a terminal.")
def snapshots_command(table: str, catalog: CatalogConfig, live: bool, start: str, until: Optional[str],
                      select: Optional[list], where: tuple, fmt: str, force_binary: bool) -> None:
    """List the snapshots of TABLE (DATABASE.TABLE[$branch_NAME]): one row per commit, oldest first.

    With -f, then a row per new commit as it comes (like follow 'TABLE$snapshots').
    """
    from ..output.command_output import Output
    from ..stream.options import FollowOptions

    if "$" in table.split(".", 1)[-1].replace("$branch_", "", 1):
        raise UsageError(f"snapshots takes a table or TABLE$branch_NAME, not {table}")
    options = FollowOptions(start=start, until=until, exit_at_end=not live,
                            select=select or list(COLUMNS), where=list(where)).normalized()
    out = Output.choose(fmt, force_binary=force_binary)

    from ..stream.multi import follower_for
    from ..tail import tail

    follower = follower_for(catalog, [f"{table}$snapshots"], options)
    view = dict(stats=follower.stats, title=f"{table} snapshots", bounded=not live) if out.fmt == "table" else {}
    renderer = out.renderer(**view)
    run(tail(follower, renderer, status=None, notice=lambda m: click.echo(m, err=True)))
