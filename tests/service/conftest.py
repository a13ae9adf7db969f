"""Real tables (written with pypaimon into temp warehouses) and real services (``paimon-tail serve`` processes)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import List, Optional

import pyarrow as pa
import pytest

from tests.cli_runs import wait_for
from tests.processes import CliProcess

PK_SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("name", pa.string()), ("amount", pa.int32()),
                       ("op", pa.string())])
PLAIN_SCHEMA = pa.schema([("k", pa.int32()), ("v", pa.string()), ("op", pa.string())])


class Warehouse:
    def __init__(self, path: str) -> None:
        from pypaimon import CatalogFactory

        self.path = path
        self.catalog = CatalogFactory.create({"warehouse": path})
        self.catalog.create_database("db", True)

    def create(self, name: str, schema: pa.Schema, primary_keys=None, partition_keys=None, **options):
        from pypaimon import Schema

        opts = {"rowkind.field": "op"} if "op" in schema.names and primary_keys else {}
        opts.update({k.replace("_", "."): str(v) for k, v in options.items()})
        self.catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(
            schema, partition_keys=partition_keys or [], primary_keys=primary_keys or [], options=opts), False)
        return self.catalog.get_table(f"db.{name}")

    def table(self, name: str):
        return self.catalog.get_table(f"db.{name}")

    def write(self, name: str, rows: List[dict]) -> int:
        table = self.table(name)
        schema = pa.schema([f for f in _arrow_schema(table)])
        wb = table.new_batch_write_builder()
        w = wb.new_write()
        c = wb.new_commit()
        w.write_arrow(pa.Table.from_pylist(rows, schema=schema))
        c.commit(w.prepare_commit())
        w.close()
        c.close()
        return table.snapshot_manager().get_latest_snapshot().id

    def batch_read(self, name: str) -> dict:
        """Primary key tuple → row, as pypaimon's batch read returns it (the oracle)."""
        table = self.table(name)
        rb = table.new_read_builder()
        rows = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
        pk = table.table_schema.primary_keys
        return {tuple(r[k] for k in pk): r for r in rows}


def _arrow_schema(table):
    from pypaimon.schema.data_types import PyarrowFieldParser

    return PyarrowFieldParser.from_paimon_schema(table.fields)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Warehouse:
    return Warehouse(str(tmp_path_factory.mktemp("wh")))


def cli_cmd(*args: str) -> List[str]:
    return [sys.executable, "-c", "from paimon_tail.cli import main; main()", *args]


class ServeProcess(CliProcess):
    """``paimon-tail serve`` in its own process group, stderr collected."""

    def __init__(self, warehouse: str, tables: List[str], *extra: str, env: Optional[dict] = None,
                 executors: int = 2) -> None:
        super().__init__(cli_cmd("serve", *tables, "--warehouse", warehouse, "--executors", str(executors), *extra),
                         "ready in", env=env)

    def wait_ready(self, timeout: float = 90) -> "ServeProcess":
        if not self.announced.wait(timeout):
            self.stop()
            raise AssertionError("service not ready: " + "\n".join(self.lines))
        return self

    def executor_pids(self) -> List[int]:
        out = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True).stdout
        pids = []
        for pid in out.split():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if b"spawn_main" in f.read():
                        pids.append(int(pid))
            except OSError:
                pass
        return pids

    def stop(self) -> int:
        """SIGTERM, as a service manager stops it: a clean stop, exit 0 (Ctrl-C exits 130: test_serve_cli.py)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill_all()
        return self.proc.returncode

    def kill_all(self, sig: int = signal.SIGKILL, timeout: float = 5) -> None:
        """SIGKILL the whole service (address server and executors): a crash."""
        super().kill_all(sig, timeout)


def run_cli(*args: str, input: Optional[str] = None, env: Optional[dict] = None, timeout: float = 60):
    e = dict(os.environ)
    e.pop("PAIMON_TAIL_TOKEN", None)
    e.update(env or {})
    return subprocess.run(cli_cmd(*args), input=input, capture_output=True, text=True, env=e, timeout=timeout)


def owner_of(client):
    """``(partition, bucket) -> executor index`` as the service routes now (its channels and owners)."""
    from paimon_tail.service.client.deadline import Deadline

    route = client.discover_sync(Deadline(10), force=True)
    return lambda partition, bucket: route.owner(client.routing.partition_hash(tuple(partition)), bucket)


def wait_until(predicate, timeout: float = 20.0, interval: float = 0.1):
    """``tests.cli_runs.wait_for`` with the service tests' pace."""
    return wait_for(predicate, timeout=timeout, interval=interval)
