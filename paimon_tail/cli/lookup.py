"""``paimon-tail lookup``: keys from arguments or ``--keys-from``, answered by a running query service.

Keys from ``--keys-from`` stream through in chunks: parsing a chunk (a thread), looking it up (the event loop,
several chunks in flight) and writing the rows of an earlier one (a thread) overlap, and memory stays bounded
whatever the input's size. Output is in input order, the same bytes as for the keys given one by one.
"""
from __future__ import annotations

import sys
from typing import BinaryIO

import click

from ..errors import UsageError
from ..output.formats import choices
from .common import catalog_options, complete_tables, run, security_from_options, security_options
from .missing import MissingKeys, missing_option
from .types import SNAPSHOT_ID_MAX, Columns, Seconds, Text

ARROW_STREAM_START = b"\xff\xff\xff\xff"  # an Arrow IPC stream's first message starts with this continuation marker


def _open_keys(source: str) -> BinaryIO:
    if source == "-":
        return sys.stdin.buffer
    try:
        return open(source, "rb")
    except OSError as e:
        raise UsageError(f"cannot read --keys-from {source}: {e.strerror}") from None


def key_tables(parser, stream: BinaryIO, source: str, keys_format: str):
    """The key tables of ``--keys-from``: an Arrow IPC stream (detected by its first bytes, or asked for), or JSON
    lines."""
    if keys_format == "auto":
        keys_format = "arrow" if stream.peek(4)[:4] == ARROW_STREAM_START else "jsonl"
    if keys_format == "arrow":
        return parser.arrow_batches(stream, source)
    return parser.json_batches(stream, source)


@click.command("lookup")
@click.argument("table", metavar="DB.TABLE", shell_complete=complete_tables)
@click.argument("keys", nargs=-1, metavar="KEY ...")
@catalog_options
@click.option("--keys-from", metavar="FILE|-", type=Text(), help="Read keys from a file or stdin: JSON lines (objects with the "
              "key columns) or an Arrow IPC stream (with the key columns).")
@click.option("--keys-format", type=click.Choice(["auto", "jsonl", "arrow"]), default="auto", show_default=True,
              help="Format of --keys-from; auto tells an Arrow IPC stream by its first bytes.")
@click.option("--select", metavar="COL,COL", type=Columns(), help="Columns to print (default: all).")
@click.option("--format", "-f", "fmt", default="auto", show_default=True,
              type=click.Choice(choices(("auto", "jsonl", "table", "csv", "tsv", "arrow"))),
              help="auto = table on a terminal, JSON lines otherwise; json is jsonl; arrow: an Arrow IPC stream (not "
              "to a terminal).")
@click.option("--force-binary", is_flag=True, help="Write -f arrow even when stdout is a terminal.")
@missing_option
@click.option("--min-snapshot", type=click.IntRange(1, SNAPSHOT_ID_MAX), default=None,
              help="Wait until the owning executors serve at least this snapshot (bounded by --timeout).")
@click.option("--timeout", type=Seconds(0.1, 3600), default=10.0, show_default=True,
              help="Seconds for the whole lookup, retries included (per chunk of --keys-from).")
@security_options
def lookup(table, keys, catalog, keys_from, keys_format, select, fmt, force_binary, missing, min_snapshot, timeout,
           token_file, tls_cert, tls_key, tls_ca) -> None:
    """Look up the latest rows for KEYs: 42, or id=42,dt=2026-11-01 for composite keys.

    A key not found: exit 1 with a count on stderr (--missing error), or exit 0 (--missing skip|null)."""
    if not keys and not keys_from:
        raise UsageError("no keys given", hint="pass KEY arguments or --keys-from FILE|-")
    from ..catalog import check_qualified

    check_qualified([table], catalog)
    from ..output.command_output import Output
    from ..output.lookup_rows import LookupRows

    out = Output.choose(fmt, force_binary=force_binary)
    columns = select  # a list (types.Columns) or None
    security = security_from_options(token_file, tls_cert, tls_key, tls_ca)
    rows = LookupRows(out, MissingKeys(missing))
    if keys and not keys_from:  # the library picks the path (service/client/few_keys.py: lookup_keys)
        from ..service.client.few_keys import FewRows, lookup_keys

        answer = lookup_keys(table, keys, catalog, security=security, select=columns, min_snapshot=min_snapshot,
                             timeout=timeout, values=out.takes_values, on_wait=_waiting)
        if isinstance(answer, FewRows):
            rows.write_values(answer)
        else:
            rows.write(answer)
    else:
        _lookup_stream(table, keys, catalog, security, columns, min_snapshot, timeout, keys_from, keys_format, rows)
    rows.close()
    rows.missing.finish()


def _lookup_stream(table, keys, catalog, security, columns, min_snapshot, timeout, keys_from, keys_format,
                   rows) -> None:
    """The keys of the command line and then those of ``--keys-from``, chunk by chunk, several in flight."""
    from ..service.client import LookupClient

    client = LookupClient(table, catalog, security=security, timeout=timeout, on_wait=_waiting)
    parsed = [client.parser.from_text(k) for k in keys]
    stream = _open_keys(keys_from)

    async def main() -> None:
        import asyncio

        try:
            if parsed:
                rows.write(await client.lookup(parsed, select=columns, min_snapshot=min_snapshot, parsed=True))
            source = "stdin" if keys_from == "-" else keys_from
            tables = iter(key_tables(client.parser, stream, source, keys_format))

            async def chunks():
                while True:
                    chunk = await asyncio.to_thread(next, tables, None)
                    if chunk is None:
                        return
                    yield chunk

            async for result in client.lookup_batches(chunks(), select=columns, min_snapshot=min_snapshot):
                await asyncio.to_thread(rows.write, result)
        finally:
            await client.close()

    try:
        run(main())
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()




def _waiting(message: str) -> None:
    """On a terminal, say that the lookup waits (for a service that is starting), as kcat says it waits for a
    broker; piped, say nothing: the answer or the error line follows."""
    if sys.stderr.isatty():
        click.echo(f"{message}…", err=True)


__all__ = ["key_tables", "lookup"]
