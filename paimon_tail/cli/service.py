"""``paimon-tail serve``, ``paimon-tail executor`` and ``paimon-tail service status``: thin over paimon_tail.service."""
from __future__ import annotations

import click

from ..errors import UsageError
from .common import (catalog_options, complete_tables, run, security_from_options, security_options,
                     store_options)
from .types import Address, DirPath, Host, KeyValue, Seconds, Text


# ------------------------------------------------------------------------------------------------------ serve
@click.command("serve")
@click.argument("tables", nargs=-1, required=True, metavar="DB.TABLE [DB.TABLE ...]")
@catalog_options
@click.option("--executors", type=click.IntRange(0, 256), default=None,
              help="Executor processes of this service (default: one per core, minus one on machines with more "
              "than two); 0: only executors that join (paimon-tail executor --join).")
@click.option("--channels", type=click.IntRange(1, 4096), default=None,
              help="Routing channels the executors share (Paimon's ChannelComputer over them) [default: "
              "max(16, --executors)].")
@click.option("--host", default="127.0.0.1", show_default=True, type=Host(),
              help="Address to bind (loopback by default).")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Address server port (0 = any free port).")
@click.option("--advertise", metavar="HOST[:PORT]", default="", type=Address(port_required=False, blank_ok=True),
              help="The address clients and executors dial, written to the registration [default: the bound "
              "address; for --host 0.0.0.0 the machine's name, or its address when the name means loopback].")
@click.option("--local-dir", type=DirPath(),
              help="Where executors keep row files and key indexes (default: a private temp dir, removed on exit).")
@click.option("--lease", type=Seconds(2, 3600), default=10.0, show_default=True,
              help="Seconds a registration stays valid without a refresh.")
@click.option("--poll-interval", type=Seconds(min=0.001), metavar="SECONDS",
              help="Idle polling of each table: one request a poll on object stores [default: 0.3 there; "
              "inotify locally].")
@click.option("--max-batch-keys", type=click.IntRange(1, 10_000_000), default=100_000, show_default=True,
              help="Most keys one lookup request may carry; a bigger batch is refused (INVALID_ARGUMENT). Clients "
              "split --keys-from into requests below it.")
@click.option("--max-message-mb", type=click.IntRange(1, 2047), default=64, show_default=True,
              help="Largest gRPC message, in MiB, the servers accept and send (a request's keys, an answer's "
              "rows); beyond it, RESOURCE_EXHAUSTED.")
@click.option("--metrics-port", type=click.IntRange(0, 65535), default=None, metavar="PORT",
              help="Serve Prometheus metrics (text format) on http://HOST:PORT/metrics, the coordinator's and every "
              "executor's (0 = any free port).")
@click.option("--log-format", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="json: one JSON object per line on stderr (for log shippers).")
@click.option("--spark", "use_spark", is_flag=True,
              help="Run the executors as Spark tasks, one job each (this process is the driver).")
@click.option("--master", metavar="URL", type=Text(name=True), help="Spark master for --spark (default: Spark's own, e.g. local[*]).")
@click.option("--spark-conf", "spark_conf", multiple=True, metavar="KEY=VALUE", type=KeyValue(),
              help="Spark setting for --spark (repeatable).")
@click.option("--spark-start-timeout", type=Seconds(1, 86400), default=120.0, show_default=True,
              metavar="SECONDS", help="--spark: seconds for every executor task to start and join; then serve "
              "ends with the reason (e.g. fewer free cores than --executors).")
@store_options
@security_options
def serve(tables, catalog, executors, channels, host, port, advertise, local_dir, lease, poll_interval,
          max_batch_keys, max_message_mb, metrics_port, log_format, use_spark, master, spark_conf,
          spark_start_timeout, max_memory, max_disk, token_file, tls_cert, tls_key, tls_ca) -> None:
    """Serve point lookups for primary-key tables (every bucket mode) until interrupted."""
    from ..concurrency import on_signals
    from ..log_format import configure, say
    from ..service.coordinator.query_service import QueryService
    from ..service.coordinator.serve_options import ServeOptions
    from ..service.protocol.security import exposure_warning

    import asyncio
    import signal
    import time

    configure(log_format, "serve")
    _check_resolves(host, port)
    from ..catalog import check_qualified

    check_qualified(tables, catalog)
    security = security_from_options(token_file, tls_cert, tls_key, tls_ca)
    launcher = None
    if (master or spark_conf) and not use_spark:
        raise UsageError("--master and --spark-conf need --spark")
    if use_spark:
        if executors == 0:
            raise UsageError("--spark needs at least one executor")
        launcher = _spark_launcher(tables, master, spark_conf, host, spark_start_timeout)
        executors = executors or 2
    warning = exposure_warning("serving", host, security)
    if warning:
        say(warning, "warning")
    options = ServeOptions(
        tables=list(tables), catalog=catalog, executors=executors, channels=channels, host=host, port=port,
        advertise=advertise, local_dir=local_dir, security=security, lease_seconds=lease,
        max_batch_keys=max_batch_keys, max_message_bytes=max_message_mb << 20, launcher=launcher,
        poll_interval=poll_interval, max_memory=max_memory, max_disk=max_disk, metrics_port=metrics_port,
        log_format=log_format,
    )
    stopped_by: list = []  # the signal that asked us to stop

    def stop_on(sig: int, service) -> None:
        stopped_by.append(sig)
        service.request_stop()

    async def main() -> None:
        service = QueryService(options)
        service.announce = say
        on_signals(lambda sig: stop_on(sig, service))
        try:
            await service.start()
            where = f" in Spark job group {launcher.group}" if launcher is not None else ""
            standby = service.role != "active"
            waiting = "" if service.num_executors or standby else \
                f"; waiting for executors: paimon-tail executor --join {service.address} ..."
            metrics = f"; metrics at http://{service.metrics_address}/metrics" if service.metrics_address else ""
            say(f"{'standby for' if standby else 'serving'} {', '.join(tables)} at {service.address} with "
                f"{service.num_executors} executor(s){where}{metrics}{waiting}; loading…")
            t0 = time.monotonic()
            ready = asyncio.ensure_future(service.wait_ready(3600 * 24))
            forever = asyncio.ensure_future(service.serve_forever())
            done, _ = await asyncio.wait({ready, forever}, return_when=asyncio.FIRST_COMPLETED)
            if ready in done and ready.exception() is None:
                say(f"ready in {time.monotonic() - t0:.1f}s" + ("" if service.role == "active" else " (standing by)"))
                await forever
            else:
                ready.cancel()
                await forever
        finally:
            await service.stop()

    run(main())
    if stopped_by and stopped_by[0] == signal.SIGINT:
        raise KeyboardInterrupt  # after the clean stop: exit 130 like every command; SIGTERM is a normal stop (0)


def _check_resolves(host: str, port: int) -> None:
    """A host name that does not resolve fails now, named, in one line (gRPC would log its own lines first, and
    the warning about an exposed address would come before it). Addresses are not looked up."""
    import ipaddress
    import socket

    try:
        ipaddress.ip_address(host.strip("[]"))
        return
    except ValueError:
        pass
    try:
        socket.getaddrinfo(host, port or None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as e:
        from ..errors import PaimonTailError

        raise PaimonTailError(f"cannot listen on {host}:{port}: {getattr(e, 'strerror', None) or e} "
                              "(--host is not an address of this machine)") from None


def _spark_launcher(tables, master, spark_conf, host, start_timeout):
    from ..spark.service_job import SparkExecutors, parse_conf

    launcher = SparkExecutors(master=master, conf=parse_conf(spark_conf), host=host, start_timeout=start_timeout,
                              app_name=f"paimon-tail serve {' '.join(tables)}")
    launcher.check_host()  # a loopback --host only when every worker is on loopback too
    return launcher  # Spark itself starts once the tables are open (ExecutorLauncher.prepare)


# ------------------------------------------------------------------------------------------------------ executor
@click.command("executor")
@click.option("--join", "coordinator", required=True, metavar="HOST:PORT[,HOST:PORT…]", type=Address(many=True),
              help="The running service to join: its address server (the registration's address); several "
              "(an active and its standbys) are tried in turn. After a takeover the executor finds the new active "
              "from the registration.")
@catalog_options
@click.option("--host", default="127.0.0.1", show_default=True, type=Host(),
              help="Address to bind (loopback by default).")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port for lookups (0 = any free port).")
@click.option("--advertise", metavar="HOST[:PORT]", default="", type=Address(port_required=False, blank_ok=True),
              help="The address clients dial [default: the bound address; for --host 0.0.0.0 this machine's address "
              "on the route to the service].")
@click.option("--local-dir", type=DirPath(),
              help="Where row files and key indexes go (default: a private temp dir, removed on exit).")
@click.option("--metrics-port", type=click.IntRange(0, 65535), default=None, metavar="PORT",
              help="Serve this executor's Prometheus metrics on http://HOST:PORT/metrics (0 = any free port).")
@click.option("--log-format", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="json: one JSON object per line on stderr (for log shippers).")
@click.option("--drain-timeout", type=Seconds(0, 3600), default=30.0, show_default=True,
              help="SIGTERM: seconds to hand the channels over to other executors before leaving.")
@click.option("--orphan-timeout", type=Seconds(1, 86400), default=30.0, show_default=True,
              help="Seconds to keep trying to join again when no coordinator can be reached (answering lookups "
              "from what it holds meanwhile).")
@store_options
@security_options
def executor_command(coordinator, catalog, host, port, advertise, local_dir, metrics_port, log_format, drain_timeout,
                     orphan_timeout, max_memory, max_disk, token_file, tls_cert, tls_key, tls_ca) -> None:
    """Join a running service as one more executor: it takes a share of the buckets, indexes their files from the
    warehouse and answers lookups at its advertised address, until the service stops it."""
    from ..service.protocol.executor_allocator import executor_environment

    executor_environment()  # before pyarrow loads (the imports below): its allocator reads it then
    import signal

    from ..errors import ServiceError
    from ..log_format import configure, say
    from ..service.executor.entry import JoinRefused, run_executor
    from ..service.protocol.executor_spec import ExecutorSpec
    from ..service.protocol.security import exposure_warning

    configure(log_format, "executor")
    _check_resolves(host, port)
    security = security_from_options(token_file, tls_cert, tls_key, tls_ca)
    if not catalog.warehouse:
        from ..catalog import NO_WAREHOUSE_HINT

        raise UsageError("no warehouse given", hint=NO_WAREHOUSE_HINT)
    warning = exposure_warning("executor", host, security)
    if warning:
        say(warning, "warning")
    spec = ExecutorSpec(catalog=catalog, coordinator=coordinator, local_dir=local_dir or "", host=host, port=port,
                        advertise=advertise, security=security, rejoin=True, orphan_timeout=orphan_timeout,
                        max_memory=max_memory, max_disk=max_disk, drain_timeout=drain_timeout)
    try:
        ended = run_executor(spec, announce=say, signals=True, metrics_port=metrics_port)
    except JoinRefused as e:
        raise ServiceError(str(e)) from None
    if ended.signal == signal.SIGINT:
        raise KeyboardInterrupt
    if not ended.stopped:
        raise ServiceError(f"the executor stopped: {ended.reason}")


# ------------------------------------------------------------------------------------------------------ status
@click.group("service")
def service() -> None:
    """Inspect a running query service."""


@service.command("status")
@click.argument("table", metavar="DB.TABLE", shell_complete=complete_tables)
@catalog_options
@click.option("--json", "as_json", is_flag=True,
              help="Print the status as one JSON object (piped, the default is a JSON line per executor).")
@click.option("--timeout", type=Seconds(0.1, 600), default=5.0, show_default=True,
              help="Seconds to wait for the service's answer.")
@security_options
def status(table, catalog, as_json, timeout, token_file, tls_cert, tls_key, tls_ca) -> None:
    """Address server, executors, buckets per executor, served snapshot vs latest, lag, keys, requests/s.

    A table on a terminal; piped, a JSON line per executor (like follow and consumers)."""
    from ..catalog import check_qualified, open_table
    from ..output.command_output import Output
    from ..output.plain import size_text
    from ..service.client import LookupClient

    check_qualified([table], catalog)
    client = LookupClient(open_table(table, catalog), security=security_from_options(token_file, tls_cert, tls_key,
                                                                                    tls_ca), timeout=timeout)
    try:
        st = client.status_sync()
    finally:
        client.close_sync()
    latest = client.table.snapshot_manager().get_latest_snapshot()
    latest_id = latest.id if latest else 0
    latest_ms = latest.time_millis if latest else 0
    data = {
        "table": table, "address": st.address, "version": st.version, "executors": st.num_executors,
        "channels": st.channels, "latest_snapshot": latest_id, "schema_id": st.schema_id, "tables": list(st.tables),
        "storage_error": st.storage_error or None,
        "storage_error_since_ms": st.storage_error_since_ms or None,
        "table_kind": st.table_kind, "buckets": st.buckets, "partitions": st.partitions,
        "postponed_files": st.postponed_files,
        "executor": [
            {
                "index": e.info.index, "address": e.info.address, "host": e.info.host, "joined": e.info.joined,
                "alive": e.info.alive, "pid": e.info.pid, "restarts": e.info.restarts, "snapshot": e.info.snapshot_id,
                "schema_id": e.schema_id, "channels": list(e.channels),
                "lag_snapshots": max(0, latest_id - e.info.snapshot_id) if e.info.snapshot_id else None,
                "lag_seconds": round(max(0, latest_ms - e.commit_time_ms) / 1000, 3) if e.commit_time_ms else None,
                "buckets": len(e.buckets), "keys": e.keys,
                "files_loaded": e.files_loaded, "files": e.files, "disk_bytes": e.disk_bytes,
                "memory_bytes": e.memory_bytes, "settled": e.settled,
                "requests_per_second": round(e.requests_per_second, 1),
                "keys_per_second": round(e.keys_per_second, 1),
                "bucket_list": [{"partition": b.partition, "bucket": b.bucket, "rows": b.rows} for b in e.buckets],
            }
            for e in st.executors
        ],
    }
    out = Output.choose("jsonl" if as_json else "auto")
    if not out.terminal:
        if as_json:
            out.json(data)
            return
        out.records(dict({"table": table, "table_kind": st.table_kind, "address_server": st.address,
                          "latest_snapshot": latest_id, "storage_error": data["storage_error"]},
                         **{k: v for k, v in e.items() if k != "bucket_list"})
                    for e in data["executor"])  # flat records for jq; the bucket list stays in --json
        return
    out.say(f"[bold]{table}[/] served by {st.address} (paimon-tail {st.version}), "
            f"{st.num_executors} executor(s), {st.channels} channels; latest snapshot {latest_id} "
            f"(schema {st.schema_id}); {_layout_text(st)}")
    if st.storage_error:
        from ..storage.retry import Outage

        outage = Outage(st.storage_error_since_ms / 1000, st.storage_error, 0)
        out.say(f"[bold red]{outage.describe()}[/] (retrying; lookups answer at the snapshots below)")
    rows = []
    for e in data["executor"]:
        lag = "-" if e["lag_snapshots"] is None else f"{e['lag_snapshots']} ({e['lag_seconds']}s)"
        index = f"{e['index']} (joined)" if e["joined"] else str(e["index"])
        loaded = f"{e['files_loaded']}/{e['files']}" if e["files"] else "-"
        rows.append([index, e["address"] or "-", e["host"] or "-", "yes" if e["alive"] else "NO", str(e["snapshot"]),
                     str(e["schema_id"]), lag, str(len(e["channels"])), str(e["buckets"]), str(e["keys"]), loaded,
                     size_text(e["disk_bytes"]), size_text(e["memory_bytes"]), str(e["requests_per_second"]),
                     str(e["keys_per_second"]), str(e["restarts"])])
    # at 80 columns: executor, address, alive, snapshot, lag, keys; the others named under the table
    out.report(("executor", "address", "host", "alive", "snapshot", "schema", "lag", "channels", "buckets", "keys",
                "loaded", "disk", "memory", "req/s", "keys/s", "restarts"), rows,
               optional=("host", "schema", "restarts", "keys/s", "channels", "memory", "disk", "loaded", "req/s",
                         "buckets", "address"))


def _layout_text(st) -> str:
    """The table's kind and buckets, as the coordinator's scanner sees them."""
    if st.table_kind == "fixed":
        text = f"{st.buckets} fixed buckets"
    else:
        kind = {"dynamic": "dynamic", "cross-partition": "dynamic, keys across partitions",
                "postpone": "postpone"}.get(st.table_kind, st.table_kind or "unknown kind")
        text = f"{st.buckets} {kind} buckets"
    if st.partitions > 1:
        text += f" in {st.partitions} partitions"
    if st.postponed_files:
        text += f"; {st.postponed_files} data files wait in bucket-postpone (invisible until compacted)"
    return text


__all__ = ["executor_command", "serve", "service"]
