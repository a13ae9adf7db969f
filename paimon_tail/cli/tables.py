"""``paimon-tail tables`` and ``paimon-tail describe``: a catalog's tables, and one table's schema, keys, buckets,
options, snapshots, files and consumers (``table_info.py``). A report on a terminal; piped, JSON (a line per
table; one document for describe)."""
from __future__ import annotations

import time
from typing import Optional

import click

from ..catalog import CatalogConfig
from .common import catalog_options, complete_tables
from .types import Text


@click.command("tables")
@click.argument("pattern", required=False, metavar="[DATABASE | 'GLOB']", type=Text(name=True),
                shell_complete=complete_tables)
@catalog_options
@click.option("--json", "as_json", is_flag=True, help="JSON lines, also on a terminal (the default when piped).")
def tables_command(pattern: Optional[str], catalog: CatalogConfig, as_json: bool) -> None:
    """List tables: all of them, a database's (shop), or those a glob matches ('shop.*', '*.orders'), with their
    keys, buckets and latest snapshot."""
    from ..output.command_output import Output
    from ..table_info import list_tables

    found = list_tables(catalog, pattern)
    out = Output.choose("jsonl" if as_json else "auto")
    if not out.terminal:
        out.records(t.to_json() for t in found)
        return
    if not found:
        out.say(f"no tables{f' match {_escape(pattern)}' if pattern else ''}")
        return
    now = time.time()
    rows = []
    for t in found:
        if t.error:
            rows.append([t.table, "-", "-", "-", "-", f"cannot be read: {t.error}"])
            continue
        latest = t.latest
        rows.append([t.table, ",".join(t.primary_keys) or "-", ",".join(t.partition_keys) or "-", _buckets(t),
                     str(latest.id) if latest else "-", _ago(latest.time_ms, now) if latest else "no commit yet"])
    out.report(("table", "primary key", "partitioned by", "buckets", "snapshot", "committed"), rows)


@click.command("describe")
@click.argument("table", metavar="DB.TABLE", type=Text(name=True), shell_complete=complete_tables)
@catalog_options
@click.option("--json", "as_json", is_flag=True, help="One JSON document, also on a terminal (the default when "
              "piped).")
def describe_command(table: str, catalog: CatalogConfig, as_json: bool) -> None:
    """Show a table: columns, primary and partition keys, bucket mode and count, options, the latest snapshot and
    its time, the snapshots kept, the data files (count and size) and the consumers."""
    from ..catalog import check_qualified, open_table
    from ..output.command_output import Output
    from ..output.plain import size_text
    from ..table_info import describe

    check_qualified([table], catalog)
    info = describe(open_table(table, catalog))
    out = Output.choose("jsonl" if as_json else "auto")
    if not out.terminal:
        out.json(info.to_json())
        return
    title = f"[bold]{_escape(info.table)}[/]" + (f": {_escape(info.comment)}" if info.comment else "")
    out.say(title)
    out.report(("column", "type", "key", "comment"),
               [[c.name, c.type, _role(info, c.name), c.comment or ""] for c in info.columns])
    now = time.time()
    latest, earliest = info.latest, info.earliest
    lines = [
        f"primary key: {', '.join(info.primary_keys) or '- (an append table)'} · partitioned by: "
        f"{', '.join(info.partition_keys) or '-'}",
        f"buckets: {_buckets(info)} ({info.bucket_mode}) · schema {info.schema_id}",
        f"latest snapshot: {latest.id} ({latest.commit_kind}), committed {_when(latest.time_ms, now)}"
        if latest else "latest snapshot: none yet",
        *([f"snapshots kept: {earliest.id}..{latest.id} ({latest.id - earliest.id + 1:,})"] if earliest else []),
        f"files: {info.files:,} data files, {size_text(info.file_bytes)}, {info.file_records:,} records",
        "consumers: " + (", ".join(f"{c} (next snapshot {n})" for c, n in info.consumers.items()) or "none"),
        "options: " + (", ".join(f"{k}={v}" for k, v in sorted(info.options.items())) or "none"),
    ]
    for line in lines:
        out.say(_escape(line), highlight=False)


def _buckets(t) -> str:
    return str(t.buckets) if t.buckets > 0 else {"HASH_DYNAMIC": "dynamic", "BUCKET_UNAWARE": "unaware",
                                                 "CROSS_PARTITION": "dynamic", "POSTPONE_MODE": "postponed"}.get(
        t.bucket_mode, str(t.buckets))


def _role(info, column: str) -> str:
    """What a column is to the table, besides data: a key, or where Paimon reads each row's kind."""
    roles = [name for name, holds in (("primary", column in info.primary_keys),
                                      ("partition", column in info.partition_keys),
                                      ("bucket", column in info.options.get("bucket-key", "").split(",")),
                                      ("row kind", column == info.options.get("rowkind.field"))) if holds]
    return ", ".join(roles)


def _when(time_ms: int, now: float) -> str:
    """``2026-11-26 14:55:12 (3 s ago)``: local time, as ``--from timestamp:`` takes it."""
    return f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(time_ms / 1000))} ({_ago(time_ms, now)})"


def _ago(time_ms: int, now: float) -> str:
    ago = max(0.0, now - time_ms / 1000)
    for unit, seconds in (("d", 86400), ("h", 3600), ("min", 60)):
        if ago >= seconds:
            return f"{ago / seconds:.0f} {unit} ago"
    return f"{ago:.0f} s ago"


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


__all__ = ["describe_command", "tables_command"]
