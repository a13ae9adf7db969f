"""``follow -e`` with nothing to read (stream/quick.py): the same bytes and exit code as the follower, without
loading pypaimon's catalog or read path; and every case it does not cover goes to the follower."""
from __future__ import annotations

import asyncio
import dataclasses
import io

import pyarrow as pa
import pytest

from paimon_tail.catalog import CatalogConfig
from paimon_tail.compat.adapters.local_snapshots import LocalSnapshotManager, ReadOnlyLocalFileIO
from paimon_tail.output.renderers import make_renderer
from paimon_tail.stream.options import FollowOptions
from paimon_tail.stream.positions import parse_start
from paimon_tail.stream.quick import nothing_to_read

from tests.conftest import ORDERS, append_rows, run_cli
from tests.cli.test_startup import loaded_modules

FORMATS = ["jsonl", "csv", "tsv", "arrow", "debezium", "canal", "maxwell"]


@pytest.fixture
def tables(wh):
    wh.create("events")
    for c in range(3):
        wh.commit("events", append_rows(c))
    wh.create("orders", ORDERS, primary_keys=["id"], options={"bucket": "2"})
    wh.commit("orders", [{"id": 1, "status": "new", "amount": None, "op": "+I"}])
    wh.create("empty")
    return wh


def _library_output(wh, name: str, fmt: str, **options) -> bytes:
    """What the follower itself writes for ``follow`` with these options (the path quick.py stands in for)."""
    import paimon_tail
    from paimon_tail.tail import tail

    follower = paimon_tail.follow(wh.table(name), exit_at_end=True, **options)
    sink = io.BytesIO()
    renderer = make_renderer(fmt, sink)
    asyncio.run(tail(follower, renderer))
    return sink.getvalue()


CASES = [
    ("events", ["--from", "latest"], {"start": "latest"}),
    ("events", ["--from", "latest", "--row-kind", "--meta"], {"start": "latest", "row_kind": True, "meta": True}),
    ("events", ["--from", "latest", "--select", "n,id"], {"start": "latest", "select": ["n", "id"]}),
    ("events", ["--from", "snapshot:4"], {"start": "snapshot:4"}),
    ("events", ["--from", "timestamp:2099-01-01T00:00:00", "--catch-up", "diff"],
     {"start": "timestamp:2099-01-01T00:00:00", "catch_up": "diff"}),
    ("orders", ["--from", "latest", "--row-kind"], {"start": "latest", "row_kind": True}),
    ("empty", ["--from", "latest"], {"start": "latest"}),
    ("empty", ["--from", "earliest"], {"start": "earliest"}),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_nothing_to_read_prints_what_the_follower_prints(tables, fmt, case):
    name, args, options = CASES[case]
    if fmt in ("debezium", "canal", "maxwell") and ("--meta" in args or name != "orders"):
        return  # change events need a primary key and go without --meta (both paths refuse it alike)
    catalog = CatalogConfig({"warehouse": tables.path})
    assert nothing_to_read(catalog, [f"db.{name}"], FollowOptions(exit_at_end=True, **options).normalized(), fmt)
    out = run_cli(["follow", f"db.{name}", *tables.cli_args(), "-e", "-f", fmt, *args])
    assert out.returncode == 0 and out.stderr == b"", out.stderr
    if fmt in ("debezium", "canal", "maxwell"):
        options = dict(options, row_kind=True)
    assert out.stdout == _library_output(tables, name, fmt, **options)
    if fmt == "arrow":
        assert pa.ipc.open_stream(out.stdout).read_all().num_rows == 0


def test_nothing_to_read_loads_no_read_path(tables):
    code, stdout, modules = loaded_modules("follow", "db.events", "-w", tables.path, "--from", "latest", "-e")
    assert code == 0 and stdout == ""
    heavy = sorted(m for m in modules if m.split(".")[0] in ("pandas", "polars", "requests", "pypaimon_rust")
                   or m.startswith(("pyarrow.dataset", "pypaimon.catalog", "pypaimon.read", "pypaimon.table",
                                    "pypaimon.branch", "pypaimon.filesystem")))
    assert not heavy, heavy
    # the same command with rows to read loads the follower (the probe can tell the difference)
    code, stdout, modules = loaded_modules("follow", "db.events", "-w", tables.path, "--from", "earliest", "-e")
    assert code == 0 and len(stdout.splitlines()) == 30 and "pypaimon.read.table_read" in modules


@pytest.mark.parametrize("options, fmt, catalog, why", [
    ({"start": "earliest"}, "jsonl", {}, "rows to read"),
    ({"start": "latest-full"}, "jsonl", {}, "a full read"),
    ({"start": "snapshot:3"}, "jsonl", {}, "snapshot 3 to read"),
    ({"start": "latest", "consumer_id": "c1"}, "jsonl", {}, "a consumer"),
    ({"start": "latest", "where": "n > 1"}, "jsonl", {}, "a filter"),
    ({"start": "latest", "shard": (0, 1)}, "jsonl", {}, "a shard"),
    ({"start": "latest", "buckets": [0]}, "jsonl", {}, "buckets"),
    ({"start": "latest", "until": "snapshot:3"}, "jsonl", {}, "an end"),
    ({"start": "latest"}, "jsonl", {"cache-enabled": "false"}, "a catalog option"),
    ({"start": "latest", "select": ["nope"]}, "jsonl", {}, "an unknown column"),
    ({"start": "snapshot:9"}, "jsonl", {}, "a position that is an error"),
    ({"start": "latest"}, "table", {}, "the live table"),
    ({"start": "latest", "exit_at_end": False}, "jsonl", {}, "a live follow"),
])
def test_what_the_quick_path_leaves_to_the_follower(tables, options, fmt, catalog, why):
    follow = FollowOptions(**{"exit_at_end": True, **options}).normalized()
    config = CatalogConfig({"warehouse": tables.path, **catalog})
    assert nothing_to_read(config, ["db.events"], follow, fmt) is None, why
    assert nothing_to_read(config, ["db.*"], dataclasses.replace(follow, start=parse_start("latest")), "jsonl") is None


def test_errors_are_the_followers(tables):
    """A wrong column or position through the quick path's door: the follower's one-line error and exit code."""
    bad = run_cli(["follow", "db.events", "-w", tables.path, "--from", "latest", "-e", "--select", "nope"])
    assert bad.returncode == 2 and b"unknown column nope in --select" in bad.stderr
    gone = run_cli(["follow", "db.events", "-w", tables.path, "--from", "snapshot:9", "-e"])
    assert gone.returncode != 0 and b"snapshot 9 does not exist yet (latest is 3)" in gone.stderr
    missing = run_cli(["follow", "db.nope", "-w", tables.path, "--from", "latest", "-e"])
    assert missing.returncode == 1 and b"table db.nope does not exist" in missing.stderr


def test_local_snapshot_manager_is_pypaimons(tables):
    """The constructor we skip sets what pypaimon's sets; the files give the same latest and earliest."""
    from pypaimon.snapshot.snapshot_manager import SnapshotManager

    from paimon_tail.storage.snapshots import SnapshotFiles

    table = tables.table("events")
    ours = LocalSnapshotManager(str(table.table_path))
    theirs = SnapshotManager(table.file_io, str(table.table_path))
    assert set(vars(ours)) == set(vars(theirs))
    assert {k: v for k, v in vars(ours).items() if k != "file_io"} == \
        {k: v for k, v in vars(theirs).items() if k != "file_io"}
    assert ours.get_latest_snapshot().id == theirs.get_latest_snapshot().id == 3
    a, b = SnapshotFiles(ours), SnapshotFiles(theirs)
    assert (a.latest().id, a.earliest_id(), a.read(2).id, a.read(4)) == (b.latest().id, b.earliest_id(), 2, None)
    with pytest.raises(PermissionError):
        ReadOnlyLocalFileIO().delete(str(table.table_path))
