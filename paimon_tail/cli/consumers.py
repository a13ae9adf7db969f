"""``paimon-tail consumers``: list, reset and delete the consumer positions of a table."""
from __future__ import annotations

from typing import Optional

import click

from ..catalog import CatalogConfig
from ..errors import PaimonTailError, UsageError
from .common import catalog_options, complete_tables
from .types import SNAPSHOT_ID_MAX, ConsumerId


@click.command("consumers")
@click.argument("table", shell_complete=complete_tables)
@catalog_options
@click.option("--reset", "reset_id", metavar="ID", type=ConsumerId(), help="Set consumer ID's position (with --to).")
@click.option("--to", "to_snapshot", type=click.IntRange(1, SNAPSHOT_ID_MAX), metavar="N", help="Next snapshot for --reset.")
@click.option("--delete", "delete_id", metavar="ID", type=ConsumerId(), help="Delete consumer ID.")
@click.option("--json", "as_json", is_flag=True, help="List as JSON lines.")
def consumers_command(table: str, catalog: CatalogConfig, reset_id: Optional[str], to_snapshot: Optional[int],
                      delete_id: Optional[str], as_json: bool) -> None:
    """List the consumers of TABLE (Paimon consumer files), or reset / delete one."""
    from ..catalog import check_qualified, open_table
    from ..output.command_output import Output
    from ..stream import ConsumerStore

    if reset_id and to_snapshot is None:
        raise UsageError("--reset needs --to N (the next snapshot the consumer will read)")
    if to_snapshot is not None and not reset_id:
        raise UsageError("--to goes with --reset ID")
    if reset_id and delete_id:
        raise UsageError("--reset and --delete go one at a time")
    check_qualified([table], catalog)
    store = ConsumerStore(open_table(table, catalog))
    if reset_id:
        store.reset(ConsumerStore.validate_id(reset_id), to_snapshot)
        click.echo(f"consumer {reset_id} will read from snapshot {to_snapshot}", err=True)
        return
    if delete_id:
        if not store.delete(ConsumerStore.validate_id(delete_id)):
            raise PaimonTailError(f"consumer {delete_id} does not exist")
        click.echo(f"consumer {delete_id} deleted", err=True)
        return
    from ..storage.snapshots import SnapshotFiles

    files = SnapshotFiles(store.table.snapshot_manager())  # (an unreadable EARLIEST hint is no hint, as in Paimon)
    try:
        latest = files.latest()
        earliest = files.earliest_id() if latest is not None else None
    finally:
        files.close()
    positions = store.all()
    # Expiration that honours consumers (Paimon's, the demo writer's) keeps every snapshot from the oldest
    # consumer's position on: that consumer holds the table's history back, however long it stays idle.
    oldest = min(positions.values(), default=None)
    holding = oldest is not None and earliest is not None and oldest <= earliest
    rows = [{"consumer": cid, "next_snapshot": nxt, "behind": max(0, (latest.id if latest else 0) - nxt + 1),
             "holds_back_expiry": holding and nxt == oldest} for cid, nxt in positions.items()]
    out = Output.choose("jsonl" if as_json else "auto")
    if not out.terminal:
        out.records(rows)
        return
    if not rows:
        out.say(f"no consumers of {table}")
        return
    out.report(("consumer", "next snapshot", "snapshots behind"),
               [[row["consumer"] + (" *" if row["holds_back_expiry"] else ""), str(row["next_snapshot"]),
                 str(row["behind"])] for row in rows],
               title=f"{table} (latest {latest.id if latest else '-'})")
    if holding:
        from rich.markup import escape

        held = [row["consumer"] for row in rows if row["holds_back_expiry"]]
        out.say(escape(f"* holds back snapshot expiry: {latest.id - earliest + 1:,} snapshots are kept "
                       f"({earliest}..{latest.id}) because expiration keeps what a consumer has still to read. "
                       f"A consumer that is gone for good: paimon-tail consumers {table} --delete {held[0]}"))
