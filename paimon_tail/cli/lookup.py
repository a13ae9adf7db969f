"""``paimon-tail lookup``: keys from arguments or ``--keys-from``, answered by a running query service.

Keys from ``--keys-from`` stream through in chunks: parsing a chunk (a thread), looking it up (the event loop,
several chunks in flight) and writing the rows of an earlier one (a thread) overlap, and memory stays bounded
whatever the input's size. Output is in input order, the same bytes as for the keys given one by one.
"""
from __future__ import annotations

import sys
import time
from typing import Any, BinaryIO, List

import click

from ..errors import UsageError
from .common import catalog_options, complete_tables, run, security_from_options, security_options
from .missing import MissingKeys, missing_option

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
@click.option("--keys-from", metavar="FILE|-", help="Read keys from a file or stdin: JSON lines (objects with the "
              "key columns) or an Arrow IPC stream (with the key columns).")
@click.option("--keys-format", type=click.Choice(["auto", "jsonl", "arrow"]), default="auto", show_default=True,
              help="Format of --keys-from; auto tells an Arrow IPC stream by its first bytes.")
@click.option("--select", metavar="COL,COL", help="Columns to print (default: all).")
@click.option("--format", "-f", "fmt", default="auto", show_default=True,
              type=click.Choice(["auto", "jsonl", "table", "csv", "tsv", "arrow"]),
              help="auto = table on a terminal, JSON lines otherwise; arrow: an Arrow IPC stream (not to a terminal).")
@click.option("--force-binary", is_flag=True, help="Write -f arrow even when stdout is a terminal.")
@missing_option
@click.option("--min-snapshot", type=click.IntRange(1), default=None,
              help="Wait until the owning executors serve at least this snapshot (bounded by --timeout).")
@click.option("--timeout", type=click.FloatRange(0.1, 3600), default=10.0, show_default=True,
              help="Seconds for the whole lookup, retries included (per chunk of --keys-from).")
@security_options
def lookup(table, keys, catalog, keys_from, keys_format, select, fmt, force_binary, missing, min_snapshot, timeout,
           token_file, tls_cert, tls_key, tls_ca) -> None:
    """Look up the latest rows for KEYs: 42, or id=42,dt=2026-11-01 for composite keys.

    A key not found: exit 1 with a count on stderr (--missing error), or exit 0 (--missing skip|null)."""
    if not keys and not keys_from:
        raise UsageError("no keys given", hint="pass KEY arguments or --keys-from FILE|-")
    from ..output.formats import refuse_binary_terminal

    refuse_binary_terminal(fmt, sys.stdout, force_binary)
    columns = [c.strip() for c in select.split(",") if c.strip()] if select else None
    security = security_from_options(token_file, tls_cert, tls_key, tls_ca)
    started = time.monotonic()
    if keys and not keys_from and min_snapshot is None and _quick(table, keys, catalog, security, columns, fmt,
                                                                   missing, timeout / 2):
        return
    from ..service.client import LookupClient

    client = LookupClient(table, catalog, security=security, timeout=max(0.1, timeout - (time.monotonic() - started)))
    parsed = [client.parser.from_text(k) for k in keys]
    stream = _open_keys(keys_from) if keys_from else None
    out = RowsOutput(fmt, missing)

    async def main() -> None:
        import asyncio

        try:
            if parsed:
                out.write(await client.lookup(parsed, select=columns, min_snapshot=min_snapshot, parsed=True))
            if stream is not None:
                source = "stdin" if keys_from == "-" else keys_from
                tables = iter(key_tables(client.parser, stream, source, keys_format))

                async def chunks():
                    while True:
                        chunk = await asyncio.to_thread(next, tables, None)
                        if chunk is None:
                            return
                        yield chunk

                async for result in client.lookup_batches(chunks(), select=columns, min_snapshot=min_snapshot):
                    await asyncio.to_thread(out.write, result)
        finally:
            await client.close()

    try:
        run(main())
    finally:
        if stream is not None and stream is not sys.stdin.buffer:
            stream.close()
    out.close()
    out.missing.finish()


def _quick(table: str, keys, catalog, security, columns, fmt: str, missing: str, timeout: float) -> bool:
    """The keys of the command line through ``service/quick.py`` (no pyarrow, no pypaimon): True when answered
    and printed; False when ``LookupClient`` must do it (any other catalog, format or trouble)."""
    from ..compat.table_meta import read_local
    from ..output.formats import choose_format

    fmt = choose_format(fmt, sys.stdout)
    if fmt not in ("jsonl", "table"):
        return False
    from ..service.keys.parse import KeyParser
    from ..service.client.quick import lookup_few, servable

    meta = read_local(table, dict(catalog.options))
    if meta is None or not servable(meta):
        return False

    parsed = [KeyParser(meta).from_text(k) for k in keys]
    answer = lookup_few(meta, parsed, security=security, select=columns, timeout=timeout)
    if answer is None:
        return False
    gone = MissingKeys(missing)
    gone.add(len(parsed), answer.missing, parsed.__getitem__)
    rows = dict(zip(answer.found, answer.rows))
    names = [name for name, _ in answer.columns]
    if fmt == "jsonl":
        from ..output.plain import json_line

        lines = [json_line(answer.columns, rows[i]) if i in rows else "null" for i in range(len(parsed))
                 if i in rows or gone.printed]
        if lines:
            sys.stdout.write("\n".join(lines) + "\n")
    else:
        table_rows = [rows[i] if i in rows else [key.get(n) for n in names] for i, key in enumerate(parsed)
                      if i in rows or gone.printed]
        if table_rows:
            _print_rows(names, table_rows)
    gone.finish()
    return True


class RowsOutput:
    """Lookup results → stdout in one format, in request order; missing keys as ``MissingKeys`` says."""

    def __init__(self, fmt: str, missing: str) -> None:
        from ..output import choose_format, make_renderer

        self.fmt = choose_format(fmt, sys.stdout)
        self.missing = MissingKeys(missing)
        self._renderer = None if self.fmt == "table" else make_renderer(self.fmt)
        self._tables: List[Any] = []  # the terminal table is drawn once, at the end
        self._schema = None

    def write(self, result) -> None:
        rows = result.rows
        self._schema = rows.schema
        self.missing.add(len(result), result.missing, result.key)
        if result.failed:
            self.missing.add_failed(result.failed, result.key)
        if self.missing.printed and result.missing:
            if self.fmt == "jsonl":
                return self._jsonl_with_nulls(result)
            rows = _with_missing_keys(result)
        if self._renderer is None:
            self._tables.append(rows)
            return
        for batch in rows.to_batches():
            self._renderer.write(batch)
        self._renderer.flush()

    def _jsonl_with_nulls(self, result) -> None:
        """JSON lines, ``null`` for each key not found: the rows rendered as usual, then interleaved."""
        import io

        from ..output import make_renderer

        buf = io.BytesIO()
        renderer = make_renderer("jsonl", buf)
        for batch in result.rows.to_batches():
            renderer.write(batch)
        lines: List[bytes] = [b"null"] * len(result)
        for pos, line in zip(result.found, buf.getvalue().split(b"\n")):
            lines[pos] = line
        if result.failed:  # no line for a key the service could not answer (it is named on stderr)
            lines = [line for pos, line in enumerate(lines) if pos not in result.failed]
        self._renderer.stream.write(b"\n".join(lines) + b"\n")
        self._renderer.flush()

    def close(self) -> None:
        if self._renderer is not None:
            if self.fmt == "arrow" and self._renderer.rows == 0 and self._schema is not None:
                self._renderer.begin(self._schema)  # an empty answer is still a readable stream
            self._renderer.close()
            return
        if self._tables:
            _print_table(self._tables)


def _with_missing_keys(result):
    """The rows with one row per requested key: a key not found shows its key columns, the rest null."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rows, keys = result.rows, result.key_table
    position = np.full(len(result), -1, dtype=np.int64)
    position[np.asarray(result.found, dtype=np.int64)] = np.arange(len(result.found))
    found = pa.array(position >= 0)
    taken = rows.take(pa.array(position, mask=position < 0))
    columns = [pc.if_else(found, taken.column(f.name), keys.column(f.name).cast(f.type))
               if f.name in keys.column_names else taken.column(f.name) for f in rows.schema]
    table = pa.Table.from_arrays(columns, schema=rows.schema)
    if result.failed:  # no row for a key the service could not answer (it is named on stderr)
        keep = np.ones(len(result), dtype=bool)
        keep[list(result.failed)] = False
        table = table.filter(pa.array(keep))
    return table


def _print_table(tables: List[Any]) -> None:
    import pyarrow as pa

    rows = pa.concat_tables(tables)
    _print_rows(rows.schema.names, [list(row.values()) for row in rows.to_pylist()])


def _print_rows(names: List[str], rows: List[List[Any]]) -> None:
    from rich.console import Console

    from ..output.plain import text
    from ..output.terminal_tables import report

    console = Console()
    console.print(report(names, [[text(v) for v in row] for row in rows], console))


__all__ = ["RowsOutput", "key_tables", "lookup"]
