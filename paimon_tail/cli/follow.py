"""``paimon-tail follow``: parse, open the table, follow, render."""
from __future__ import annotations

import sys
from typing import Optional

import click

from ..catalog import CatalogConfig, check_qualified
from ..errors import UsageError
from ..output.formats import CDC_FORMATS, FORMATS, choices
from .common import END_POSITIONS, START_POSITIONS, catalog_options, complete_positions, complete_tables, run
from .types import Buckets, Columns, ConsumerId, Delimiter, Host, Seconds, Shard, Text


def refuse_system_tables(tables, option: str, why: str) -> None:
    """A usage error when one of ``tables`` is a system table (``t$snapshots``, ``t$audit_log``, ...)."""
    from ..catalog import TableName

    for name in tables:
        if "$" in name and "*" not in name and TableName.parse(name).system is not None:
            raise UsageError(f"{option} does not go with the system table {name}: {why}")


def parse_flag(options: dict, key: str) -> Optional[bool]:
    """A boolean table option given with -O (true/false, as Paimon spells them), or None when not given."""
    if key not in options:
        return None
    value = options[key].strip().lower()
    if value not in ("true", "false"):
        raise UsageError(f"bad -O {key}={options[key]}: use true or false")
    return value == "true"


def format_option(f):
    f = click.option("--format", "-f", "fmt", default="auto", show_default=True,
                     type=click.Choice(choices(FORMATS)),
                     help="auto = live table on a terminal (every row, scrolling, when the follow has an end: "
                     "-e, --until, -c), JSON lines when piped; json is jsonl; arrow: an Arrow IPC stream (not to a "
                     "terminal); debezium, canal, maxwell: change events.")(f)
    f = click.option("--force-binary", is_flag=True,
                     help="Write a binary format (-f arrow) even when stdout is a terminal.")(f)
    for flag, value, help_ in (("--nl", "jsonl", "JSON lines (like sqlite-utils --nl)."),
                               ("--csv", "csv", "CSV with a header."), ("--tsv", "tsv", "Tab-separated."),
                               ("--table", "table", "The live table, even when piped.")):
        f = click.option(flag, "fmt", flag_value=value, help=help_)(f)
    return f


@click.command("follow")
@click.argument("tables", nargs=-1, required=True, metavar="TABLE...", shell_complete=complete_tables)
@catalog_options
@click.option("--from", "start", default="latest-full", show_default=True, metavar="POSITION",
              shell_complete=complete_positions(START_POSITIONS),
              help="latest-full | latest | earliest | snapshot:N | snapshot-full:N | timestamp:T | -1h | "
              "compacted-full | file-creation-time:T | creation-timestamp:T | tag:NAME")
@click.option("--until", metavar="POSITION", shell_complete=complete_positions(END_POSITIONS),
              help="Stop after snapshot:N, timestamp:T or tag:NAME.")
@click.option("--exit-at-end", "-e", is_flag=True, help="Stop when caught up with the latest snapshot (kcat -e).")
@click.option("--last", "-n", type=click.IntRange(min=0), metavar="N",
              help="The last N rows committed, then follow (tail -n N -f); with -e, the last N and stop. Of "
              "the rows --from reads up to the latest snapshot; without --from, of the newest commits.")
@click.option("--count", "-c", "max_rows", type=click.IntRange(min=0), metavar="N",
              help="Stop after N rows (kcat -c); --max-rows is the same.")
@click.option("--max-rows", "max_rows_", type=click.IntRange(min=0), hidden=True)  # -c's name before -n was --last
@format_option
@click.option("--select", "-s", metavar="COLS", type=Columns(), help="Columns to output, comma-separated (pushed down).")
@click.option("--where", metavar="EXPR", multiple=True, type=Text(),
              help="Filter, e.g. \"amount > 100 AND status = 'open'\": strings in single quotes, a bare word is a "
              "column (pushed down; repeated: all must hold).")
@click.option("--row-kind", is_flag=True, help="Add _row_kind (+I/-U/+U/-D).")
@click.option("--meta", is_flag=True, help="Add _snapshot_id, _commit_time, _bucket, _partition.")
@click.option("--consumer-id", metavar="ID", type=ConsumerId(), help="Keep progress in Paimon's consumer file; resume on restart.")
@click.option("--shard", metavar="I/N", type=Shard(), help="Read the buckets b with b % N == I (parallel consumers).")
@click.option("--buckets", metavar="LIST", type=Buckets(), help="Read only these buckets, e.g. 0,3.")
@click.option("--catch-up", type=click.Choice(["replay", "diff"]), default="replay", show_default=True,
              help="replay: a backlog snapshot by snapshot; diff: one plan of the added files (faster, folds history).")
@click.option("--on-gap", type=click.Choice(["error", "skip"]), default="error", show_default=True,
              help="When snapshots expire before they are read.")
@click.option("--no-prefetch", is_flag=True, help="Plan the next snapshot only after the current one is written.")
@click.option("--stats", "show_stats", is_flag=True, help="Print a status line to stderr every second.")
@click.option("--read-threads", type=click.IntRange(1, 256), default=2, show_default=True,
              help="Splits read at once.")
@click.option("--poll-interval", type=Seconds(min=0.001), metavar="SECONDS",
              help="Idle polling cadence: one request per poll on object stores [default: 0.25 on object stores, "
              "0.5 locally (inotify wakes a local follower at once)].")
@click.option("--storage-timeout", type=Seconds(min=0), metavar="SECONDS",
              help="Give up after storage has been unreachable this long (0: never) [default: 60 with -e, "
              "else never: a live follow waits out an outage].")
@click.option("--metrics-port", type=click.IntRange(0, 65535), default=None, metavar="PORT",
              help="Serve Prometheus metrics (text format) on http://127.0.0.1:PORT/metrics: rows, snapshots, lag, "
              "consumer position, stalls (0 = any free port; --metrics-host to bind another address).")
@click.option("--metrics-host", default="127.0.0.1", show_default=True, metavar="HOST", type=Host(),
              help="Address --metrics-port binds (0.0.0.0: every interface, for a Prometheus elsewhere).")
@click.option("--key-delimiter", "-K", metavar="DELIM", type=Delimiter(),
              help="Change-event formats: print KEY<DELIM>EVENT per line, the primary key as JSON (kcat -K).")
def follow_command(tables: tuple, catalog: CatalogConfig, start: str, until: Optional[str], exit_at_end: bool,
                   last: Optional[int], max_rows: Optional[int], max_rows_: Optional[int], fmt: str,
                   force_binary: bool, select: Optional[list], where: tuple, row_kind: bool, meta: bool,
                   consumer_id: Optional[str], shard: Optional[tuple], buckets: Optional[list],
                   catch_up: str, on_gap: str, no_prefetch: bool, show_stats: bool, read_threads: int,
                   poll_interval: Optional[float], storage_timeout: Optional[float], metrics_port: Optional[int],
                   metrics_host: str, key_delimiter: Optional[str]) -> None:
    """Print the rows of TABLE (DATABASE.TABLE) as they are committed, like tail -f.

    Several tables, or globs such as 'shop.*' (quoted), are followed together: rows interleave as they commit,
    each tagged with its table (_table). A branch is 'TABLE$branch_NAME', a system table 'TABLE$snapshots',
    'TABLE$audit_log', ... OVERWRITE commits are skipped with a line on stderr, or read as -D/+I with
    -O streaming-read-overwrite=true.
    """
    from ..output.command_output import Output
    from ..stream.options import FollowOptions

    catalog, read_options = catalog.read_options()
    if fmt in CDC_FORMATS:
        refuse_system_tables(tables, f"--format {fmt}", "change events are a data table's (follow the table, or "
                             "TABLE$branch_NAME)")
    if fmt in CDC_FORMATS and meta:
        raise UsageError(f"--meta does not go with --format {fmt}: the event carries the table, snapshot and "
                         "commit time")
    max_rows = max_rows if max_rows is not None else max_rows_
    if last is not None and consumer_id:
        raise UsageError("-n does not go with --consumer-id: a consumer resumes where it stopped")
    check_qualified(tables, catalog)
    if last is not None and click.get_current_context().get_parameter_source("start").name == "DEFAULT":
        start = _start_for_last(catalog, tables, last)

    options = FollowOptions(
        start=start, until=until, exit_at_end=exit_at_end, select=select, where=list(where),
        row_kind=row_kind or fmt in CDC_FORMATS, meta=meta, consumer_id=consumer_id, shard=shard,
        buckets=buckets, catch_up=catch_up, on_gap=on_gap, prefetch=not no_prefetch,
        read_workers=read_threads, poll_interval=poll_interval, storage_timeout=storage_timeout,
        read_overwrite=parse_flag(read_options, "streaming-read-overwrite"),
    ).normalized()  # bad positions fail before the catalog is touched
    out = Output.choose(fmt, force_binary=force_binary)
    fmt = out.fmt
    delimiter = key_delimiter
    if not show_stats and metrics_port is None:
        from ..stream.quick import nothing_to_read

        nothing = nothing_to_read(catalog, tables, options, fmt)
        if nothing is not None:  # -e and nothing new: done without loading pypaimon's read path
            renderer = out.renderer(key_delimiter=delimiter)
            if fmt == "arrow":
                renderer.begin(nothing.schema())  # an empty result is still a valid (empty) stream
            renderer.close()
            return

    from ..stream import MultiFollower
    from ..stream.multi import follower_for
    from ..tail import tail

    follower = follower_for(catalog, tables, options,
                            on_event=lambda message: click.echo(f"paimon-tail: {message}", err=True))
    many = isinstance(follower, MultiFollower)
    bounded = exit_at_end or until is not None or max_rows is not None
    view = dict(stats=follower.stats, title=", ".join(tables), bounded=bounded) if fmt == "table" else {}
    renderer = out.renderer(many_tables=many, key_delimiter=delimiter, **view)
    if max_rows == 0:
        renderer.close()
        return
    if metrics_port is not None:
        _serve_metrics(follower, consumer_id, metrics_host, metrics_port)
    run(tail(follower, renderer, max_rows=max_rows, status=sys.stderr if show_stats else None, last=last))


def _serve_metrics(follower, consumer_id: Optional[str], host: str, port: int) -> None:
    """``--metrics-port``: the follow's metrics, and where they are said on stderr (a port of 0 picks one)."""
    from ..errors import UsageError
    from ..follow_metrics import collector_for, serve_metrics

    try:
        _, bound = serve_metrics(collector_for(follower, consumer_id), host, port)
    except OSError as e:
        raise UsageError(f"--metrics-port {port}: cannot listen on {host}:{port}: {e.strerror}") from None
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"paimon-tail: metrics at http://{shown}:{bound}/metrics", err=True)


def _start_for_last(catalog: CatalogConfig, tables: tuple, n: int) -> str:
    """``-n N`` without ``--from``: where the newest commits of the tables hold N rows (``stream/last.py``)."""
    from ..catalog import open_table
    from ..stream.last import start_for_tables
    from ..stream.tables import matching_tables, parse_patterns

    patterns = parse_patterns(tables)
    cat = catalog.open()
    names = [p.text for p in patterns if not p.is_glob] + matching_tables(cat, patterns)
    return start_for_tables([_data_table(open_table(name, cat), name) for name in dict.fromkeys(names)], n)


def _data_table(table, name: str):
    """The table whose newest commits ``-n`` counts rows of: a data table, or the table of ``$audit_log`` and
    ``$binlog`` (its changes); other system tables have no rows by commit to count."""
    from pypaimon.table.file_store_table import FileStoreTable

    from ..catalog import SystemView
    from ..errors import UsageError

    if isinstance(table, SystemView) and table.name in ("audit_log", "binlog"):
        return table.base
    if isinstance(table, FileStoreTable):
        return table
    raise UsageError(f"-n counts a table's rows by commit: {name} is a system table without them",
                     hint="give --from (for example --from earliest) instead")
