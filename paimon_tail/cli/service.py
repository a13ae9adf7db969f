"""``paimon-tail serve``, ``paimon-tail lookup`` and ``paimon-tail service status``: thin over paimon_tail.service."""
from __future__ import annotations

import asyncio
import signal
import sys
import time

import click

from ..errors import UsageError

from ..output import choose_format, make_renderer
from .common import catalog_options, run
from .missing import missing_exit_code, missing_option


def _security_options(f):
    f = click.option("--tls-ca", type=click.Path(dir_okay=False), help="CA certificate: the server requires client "
                     "certificates signed by it (mutual TLS); clients trust servers signed by it.")(f)
    f = click.option("--tls-key", type=click.Path(dir_okay=False), help="Private key for --tls-cert.")(f)
    f = click.option("--tls-cert", type=click.Path(dir_okay=False),
                     help="Certificate (PEM): the server's, or the client's for mutual TLS.")(f)
    f = click.option("--token-file", type=click.Path(dir_okay=False),
                     help="File holding the bearer token (default: env PAIMON_TAIL_TOKEN).")(f)
    return f


def _security(token_file, tls_cert, tls_key, tls_ca):
    from ..service.security import Security

    return Security.from_options(token_file=token_file, tls_cert=tls_cert, tls_key=tls_key, tls_ca=tls_ca)


# ------------------------------------------------------------------------------------------------------ serve
@click.command("serve")
@click.argument("tables", nargs=-1, required=True, metavar="DB.TABLE [DB.TABLE ...]")
@catalog_options
@click.option("--executors", type=click.IntRange(1, 256), default=None,
              help="Executor processes (default: one per core, minus one on machines with more than two).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback by default).")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Address server port (0 = any free port).")
@click.option("--local-dir", type=click.Path(file_okay=False),
              help="Where executors keep file copies and indexes (default: a private temp dir, removed on exit).")
@click.option("--lease", type=click.FloatRange(2, 3600), default=10.0, show_default=True,
              help="Seconds a registration stays valid without a refresh.")
@click.option("--poll-interval", type=click.FloatRange(min=0.001), metavar="SECONDS",
              help="Idle polling of each table: one request a poll on object stores [default: 0.3 there; "
              "inotify locally].")
@click.option("--max-batch-keys", type=click.IntRange(1, 10_000_000), default=100_000, show_default=True)
@click.option("--max-message-mb", type=click.IntRange(1, 2047), default=64, show_default=True)
@click.option("--spark", "use_spark", is_flag=True,
              help="Run the executors as the tasks of one Spark barrier job (this process is the driver).")
@click.option("--master", metavar="URL", help="Spark master for --spark (default: Spark's own, e.g. local[*]).")
@click.option("--spark-conf", "spark_conf", multiple=True, metavar="KEY=VALUE",
              help="Spark setting for --spark (repeatable).")
@_security_options
def serve(tables, catalog, executors, host, port, local_dir, lease, poll_interval, max_batch_keys, max_message_mb,
          use_spark, master, spark_conf, token_file, tls_cert, tls_key, tls_ca) -> None:
    """Serve point lookups for primary-key tables (fixed buckets) until interrupted."""
    from ..service.security import is_loopback
    from ..service.server import QueryService, ServeOptions

    security = _security(token_file, tls_cert, tls_key, tls_ca)
    launcher = None
    if (master or spark_conf) and not use_spark:
        raise UsageError("--master and --spark-conf need --spark")
    if use_spark:
        launcher = _spark_launcher(tables, master, spark_conf, host, executors)
        executors = executors or 2
    if not is_loopback(host):
        click.echo(
            f"paimon-tail: WARNING: serving on {host}, reachable beyond this machine"
            + ("" if security.token else " WITHOUT a token (set PAIMON_TAIL_TOKEN or --token-file)")
            + ("" if security.tls else " and WITHOUT TLS"), err=True)
    options = ServeOptions(
        tables=list(tables), catalog=catalog, executors=executors, host=host, port=port, local_dir=local_dir,
        security=security, lease_seconds=lease, max_batch_keys=max_batch_keys,
        max_message_bytes=max_message_mb << 20, launcher=launcher, poll_interval=poll_interval,
    )

    stopped_by: list = []  # the signal that asked us to stop

    def stop_on(sig: int, service) -> None:
        stopped_by.append(sig)
        service.request_stop()

    async def main() -> None:
        service = QueryService(options)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, stop_on, sig, service)
            except (NotImplementedError, RuntimeError):  # pragma: no cover
                pass
        try:
            await service.start()
            where = f" in Spark job group {launcher.group}" if launcher is not None else ""
            click.echo(f"paimon-tail: serving {', '.join(tables)} at {service.address} with "
                       f"{service.num_executors} executor(s){where}; loading…", err=True)
            t0 = time.monotonic()
            ready = asyncio.ensure_future(service.wait_ready(3600))
            forever = asyncio.ensure_future(service.serve_forever())
            done, _ = await asyncio.wait({ready, forever}, return_when=asyncio.FIRST_COMPLETED)
            if ready in done and ready.exception() is None:
                click.echo(f"paimon-tail: ready in {time.monotonic() - t0:.1f}s", err=True)
                await forever
            else:
                ready.cancel()
                await forever
        finally:
            await service.stop()

    run(main())
    if stopped_by and stopped_by[0] == signal.SIGINT:
        raise KeyboardInterrupt  # after the clean stop: exit 130 like every command; SIGTERM is a normal stop (0)


def _spark_launcher(tables, master, spark_conf, host, executors):
    from ..service.security import is_loopback
    from ..spark.service_job import SparkExecutors, parse_conf

    conf = parse_conf(spark_conf)
    launcher = SparkExecutors(master=master, conf=conf, app_name=f"paimon-tail serve {' '.join(tables)}", host=host)
    if not launcher._local() and is_loopback(host):
        raise UsageError("--spark on a cluster needs a routable --host for the address server",
                         hint="e.g. --host 0.0.0.0 with a token (PAIMON_TAIL_TOKEN) and TLS")
    launcher.open_session()  # before gRPC starts any thread in this process
    return launcher


# ------------------------------------------------------------------------------------------------------ lookup
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
@missing_option
@click.option("--min-snapshot", type=click.IntRange(1), default=None,
              help="Wait until the owning executors serve at least this snapshot (bounded by --timeout).")
@click.option("--timeout", type=click.FloatRange(0.1, 3600), default=10.0, show_default=True,
              help="Seconds for the whole lookup, retries included.")
@_security_options
def lookup(table, keys, catalog, keys_from, select, fmt, missing, min_snapshot, timeout, token_file, tls_cert,
           tls_key, tls_ca) -> None:
    """Look up the latest rows for KEYs: 42, or id=42,dt=2026-11-01 for composite keys.

    A key not found: exit 1 with a count on stderr (--missing error), or exit 0 (--missing skip|null)."""
    from ..service.client import LookupClient

    if not keys and not keys_from:
        raise UsageError("no keys given", hint="pass KEY arguments or --keys-from FILE|-")
    columns = [c.strip() for c in select.split(",") if c.strip()] if select else None
    client = LookupClient(table, catalog, security=_security(token_file, tls_cert, tls_key, tls_ca), timeout=timeout)
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
    code = missing_exit_code(result, missing)
    if code:
        # SystemExit, not click's Exit: with standalone_mode=False click turns Exit into a return value.
        raise SystemExit(code)


def _render(result, fmt: str, missing: str, key_names) -> None:
    import pyarrow as pa

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


# ------------------------------------------------------------------------------------------------------ status
@click.group("service")
def service() -> None:
    """Inspect a running query service."""


@service.command("status")
@click.argument("table", metavar="DB.TABLE")
@catalog_options
@click.option("--json", "as_json", is_flag=True,
              help="Print the status as one JSON object (piped, the default is a JSON line per executor).")
@click.option("--timeout", type=click.FloatRange(0.1, 600), default=5.0, show_default=True)
@_security_options
def status(table, catalog, as_json, timeout, token_file, tls_cert, tls_key, tls_ca) -> None:
    """Address server, executors, buckets per executor, served snapshot vs latest, lag, keys, requests/s.

    A table on a terminal; piped, a JSON line per executor (like follow and consumers)."""
    from ..service.client import LookupClient

    client = LookupClient(table, catalog, security=_security(token_file, tls_cert, tls_key, tls_ca), timeout=timeout)

    async def main():
        try:
            return await client.status()
        finally:
            await client.close()

    st = run(main())
    latest = client.table.snapshot_manager().get_latest_snapshot()
    latest_id = latest.id if latest else 0
    latest_ms = latest.time_millis if latest else 0
    data = {
        "table": table, "address": st.address, "version": st.version, "executors": st.num_executors,
        "latest_snapshot": latest_id, "tables": list(st.tables),
        "storage_error": st.storage_error or None,
        "storage_error_since_ms": st.storage_error_since_ms or None,
        "executor": [
            {
                "index": e.info.index, "address": e.info.address, "alive": e.info.alive, "pid": e.info.pid,
                "restarts": e.info.restarts, "snapshot": e.info.snapshot_id,
                "lag_snapshots": max(0, latest_id - e.info.snapshot_id) if e.info.snapshot_id else None,
                "lag_seconds": round(max(0, latest_ms - e.commit_time_ms) / 1000, 3) if e.commit_time_ms else None,
                "buckets": len(e.buckets), "keys": e.keys,
                "requests_per_second": round(e.requests_per_second, 1),
                "keys_per_second": round(e.keys_per_second, 1),
                "bucket_list": [{"partition": b.partition, "bucket": b.bucket, "rows": b.rows} for b in e.buckets],
            }
            for e in st.executors
        ],
    }
    if as_json or not sys.stdout.isatty():
        import json

        if as_json:
            click.echo(json.dumps(data))
            return
        for e in data["executor"]:  # flat records for jq; the bucket list stays in --json
            row = {"table": table, "address_server": st.address, "latest_snapshot": latest_id}
            row.update((k, v) for k, v in e.items() if k != "bucket_list")
            click.echo(json.dumps(row))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"[bold]{table}[/] served by {st.address} (paimon-tail {st.version}), "
                  f"{st.num_executors} executor(s); latest snapshot {latest_id}")
    if st.storage_error:
        from ..storage.retry import Outage

        outage = Outage(st.storage_error_since_ms / 1000, st.storage_error, 0)
        console.print(f"[bold red]{outage.describe()}[/] (retrying; lookups answer at the snapshots below)")
    t = Table(show_edge=False, header_style="bold")
    for col in ("executor", "address", "alive", "snapshot", "lag", "buckets", "keys", "req/s", "keys/s", "restarts"):
        t.add_column(col)
    for e in data["executor"]:
        lag = "-" if e["lag_snapshots"] is None else f"{e['lag_snapshots']} ({e['lag_seconds']}s)"
        t.add_row(str(e["index"]), e["address"] or "-", "yes" if e["alive"] else "NO", str(e["snapshot"]), lag,
                  str(e["buckets"]), str(e["keys"]), str(e["requests_per_second"]), str(e["keys_per_second"]),
                  str(e["restarts"]))
    console.print(t)


__all__ = ["serve", "lookup", "service"]
