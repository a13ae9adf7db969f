"""``paimon-tail lookup``: keys from arguments or ``--keys-from``, answered by a running query service."""
from __future__ import annotations

import sys

import click

from ..errors import EXIT_RUNTIME, UsageError
from .common import catalog_options, run, security_from_options, security_options


def _read_lines(source: str):
    if source == "-":
        return sys.stdin
    try:
        return open(source, encoding="utf-8")
    except OSError as e:
        raise UsageError(f"cannot read --keys-from {source}: {e.strerror}") from None


@click.command("lookup")
@click.argument("table", metavar="DB.TABLE")
@click.argument("keys", nargs=-1, metavar="KEY ...")
@catalog_options
@click.option("--keys-from", metavar="FILE|-", help="Read keys as JSON lines (objects with the key columns).")
@click.option("--select", metavar="COL,COL", help="Columns to print (default: all).")
@click.option("--format", "fmt", default="auto", show_default=True,
              type=click.Choice(["auto", "jsonl", "table", "csv", "tsv", "arrow"]),
              help="auto = table on a terminal, JSON lines otherwise.")
@click.option("--missing", type=click.Choice(["skip", "null"]), default="skip", show_default=True,
              help="null: print a line for a key that is not found (JSON: null; others: the key only).")
@click.option("--min-snapshot", type=click.IntRange(1), default=None,
              help="Wait until the owning executors serve at least this snapshot (bounded by --timeout).")
@click.option("--timeout", type=click.FloatRange(0.1, 3600), default=10.0, show_default=True,
              help="Seconds for the whole lookup, retries included.")
@security_options
def lookup(table, keys, catalog, keys_from, select, fmt, missing, min_snapshot, timeout, token_file, tls_cert,
           tls_key, tls_ca) -> None:
    """Look up the latest rows for KEYs: 42, or id=42,dt=2026-11-01 for composite keys. Exit 1 if any is missing."""
    from ..service.client import LookupClient

    if not keys and not keys_from:
        raise UsageError("no keys given", hint="pass KEY arguments or --keys-from FILE|-")
    columns = [c.strip() for c in select.split(",") if c.strip()] if select else None
    client = LookupClient(table, catalog, security=security_from_options(token_file, tls_cert, tls_key, tls_ca), timeout=timeout)
    parsed = [client.parser.from_text(k) for k in keys]
    if keys_from:
        stream = _read_lines(keys_from)
        try:
            parsed += list(client.parser.from_json_lines(stream, "stdin" if keys_from == "-" else keys_from))
        finally:
            if stream is not sys.stdin:
                stream.close()
    if not parsed:
        return

    async def main():
        try:
            return await client.lookup(parsed, select=columns, min_snapshot=min_snapshot, parsed=True)
        finally:
            await client.close()

    result = run(main())
    _render(result, fmt, missing, client.parser.names)
    if result.missing:
        sys.stdout.flush()
        # SystemExit, not click's Exit: with standalone_mode=False click turns Exit into a return value.
        raise SystemExit(EXIT_RUNTIME)


def _render(result, fmt: str, missing: str, key_names) -> None:
    import pyarrow as pa

    from ..output import choose_format, make_renderer

    rows = result.rows
    fmt = choose_format(fmt, sys.stdout)
    if missing == "null" and result.missing:
        aligned = result.aligned()
        if fmt == "jsonl":
            from ..output.values import dumps, plain_rows

            out = []
            plain = iter(plain_rows(rows.combine_chunks().to_batches()[0])) if rows.num_rows else iter(())
            for row in aligned:
                out.append("null" if row is None else dumps(next(plain)))
            sys.stdout.write("\n".join(out) + "\n")
            sys.stdout.flush()
            return
        filled = []
        for key, row in zip(result.keys, aligned):
            if row is None:
                row = {name: (key.get(name) if name in key else None) for name in rows.schema.names}
            filled.append(row)
        rows = pa.Table.from_pylist(filled, schema=rows.schema)
    if fmt == "table":
        from rich.console import Console
        from rich.table import Table

        from ..output.values import text

        t = Table(show_edge=False, header_style="bold")
        for name in rows.schema.names:
            t.add_column(name)
        for row in rows.to_pylist():
            t.add_row(*[text(v) for v in row.values()])
        Console().print(t)
        return
    renderer = make_renderer(fmt)
    for batch in rows.to_batches():
        renderer.write(batch)
    if fmt == "arrow" and rows.num_rows == 0 and hasattr(renderer, "begin"):
        renderer.begin(rows.schema)
    renderer.close()


__all__ = ["lookup"]
