"""REST query auth: the row filter and column masks a REST catalog returns are applied on every read path (follow's
full and delta reads and the plans paimon-tail makes itself, the diff catch-up, overwrites, the Spark source's
tasks), or the path refuses (serve; a diff over a masked key). No REST server can be reached here: the catalog is
``tests/authcat.py``, a filesystem catalog that answers ``auth_table_query`` as pypaimon asks a REST catalog, with
tables carrying ``query-auth.enabled`` as a REST catalog's do. The rules: only ``id > 2``, and ``v`` masked."""
from __future__ import annotations

import json
import os
import subprocess

import pyarrow as pa
import pytest

import paimon_tail
from paimon_tail.errors import UsageError

from tests import authcat

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
RULES = authcat.rules([authcat.leaf("id", "BIGINT", "GREATER_THAN", 2)], {"v": authcat.constant_mask("***")})


@pytest.fixture
def auth(tmp_path, monkeypatch):
    """A warehouse of the auth catalog with db.pk (primary key) and db.log (append): 0..5 in one commit, 6..8 and an
    update of 4 in a second. Written without rules (a writer may), read under them."""
    from pypaimon import CatalogFactory, Schema

    monkeypatch.delenv(authcat.ENV, raising=False)
    wh = str(tmp_path / "wh")
    options = {"warehouse": wh, "metastore": "authtest"}
    catalog = CatalogFactory.create(options)
    catalog.create_database("db", True)
    for name, keys in (("pk", ["id"]), ("log", [])):
        catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(
            SCHEMA, primary_keys=keys, options={"bucket": "1" if keys else "-1", "query-auth.enabled": "true"}),
            False)
        for batch in ([{"id": i, "v": f"s{i}"} for i in range(6)],
                      [{"id": i, "v": f"t{i}"} for i in (6, 7, 8)] + [{"id": 4, "v": "u4"}]):
            table = catalog.get_table(f"db.{name}")
            builder = table.new_batch_write_builder()
            w, c = builder.new_write(), builder.new_commit()
            w.write_arrow(pa.Table.from_pylist(batch, schema=SCHEMA))
            c.commit(w.prepare_commit())
            w.close(), c.close()
    # the fixture holds what the rules hide: rows with id <= 2 and plain values
    plain = [r for item in paimon_tail.follow_sync(catalog.get_table("db.pk"), start="earliest", exit_at_end=True)
             for r in item.batch.to_pylist()]
    assert {0, 1, 2} <= {r["id"] for r in plain} and "s5" in {r["v"] for r in plain}
    monkeypatch.setenv(authcat.ENV, RULES)
    return options


def seen(rows) -> set:
    return {(r["id"], r["v"]) for r in rows}


def restricted(rows) -> None:
    assert rows, "nothing read"
    assert all(r["id"] > 2 for r in rows), "a row the filter hides"
    assert {r["v"] for r in rows} == {"***"}, "a value the mask hides"


def follow_rows(options, name="db.pk", **kw) -> list:
    from pypaimon import CatalogFactory

    table = CatalogFactory.create(options).get_table(name)
    return [r for item in paimon_tail.follow_sync(table, exit_at_end=True, row_kind=True, **kw)
            for r in item.batch.to_pylist()]


@pytest.mark.parametrize("name", ["db.pk", "db.log"])
@pytest.mark.parametrize("start", ["latest-full", "earliest", "snapshot:2", "file-creation-time:2000-01-01T00:00:00"])
def test_follow_full_and_delta_reads(auth, name, start):
    restricted(follow_rows(auth, name, start=start))


@pytest.mark.parametrize("name", ["db.pk", "db.log"])
def test_diff_catch_up(auth, name):
    rows = follow_rows(auth, name, start="snapshot:2", catch_up="diff")
    restricted(rows)
    assert {r["id"] for r in rows} >= {6, 7, 8}


def test_diff_catch_up_refuses_a_masked_key(auth, monkeypatch):
    monkeypatch.setenv(authcat.ENV, authcat.rules([], {"id": json.dumps({"name": "NULL"})}))
    with pytest.raises(UsageError, match="column mask on primary-key column id"):
        follow_rows(auth, "db.pk", start="snapshot:2", catch_up="diff")
    assert follow_rows(auth, "db.pk", start="snapshot:2")  # replay pairs nothing: it reads


def test_overwrite_changes(auth, monkeypatch):
    from pypaimon import CatalogFactory

    monkeypatch.delenv(authcat.ENV)
    table = CatalogFactory.create(auth).get_table("db.pk")
    builder = table.new_batch_write_builder().overwrite({})
    w, c = builder.new_write(), builder.new_commit()
    w.write_arrow(pa.Table.from_pylist([{"id": 1, "v": "o1"}, {"id": 9, "v": "o9"}], schema=SCHEMA))
    c.commit(w.prepare_commit())
    w.close(), c.close()
    monkeypatch.setenv(authcat.ENV, RULES)
    rows = follow_rows(auth, "db.pk", start="snapshot:3", read_overwrite=True)
    restricted(rows)
    assert {(r["_row_kind"], r["id"]) for r in rows} == {("-D", i) for i in range(3, 9)} | {("+I", 9)}


def test_the_cli_applies_them(auth):
    """The real command (the auth catalog registered first: tests/authcat.CLI)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run(authcat.CLI + ["follow", "db.pk", "-w", auth["warehouse"], "-O", "metastore=authtest",
                                        "--from", "earliest", "-e"], capture_output=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    restricted([json.loads(line) for line in out.stdout.splitlines()])
    serve = subprocess.run(authcat.CLI + ["serve", "db.pk", "-w", auth["warehouse"], "-O", "metastore=authtest"],
                           capture_output=True, timeout=120, env=env)
    assert serve.returncode == 2
    assert b"serve cannot apply the REST catalog's row filter and column masks of db.pk" in serve.stderr


def test_spark_source_tasks_apply_them(auth):
    """The Spark source's driver planning and task reads (run here, without Spark): a split reaches a task without
    its wrapping, and the task asks the catalog again; the batch read too."""
    from paimon_tail.spark.source_options import parse_options
    from paimon_tail.spark.runtime import ReadSpec, SplitTask, get_table, output_arrow_schema, read_task, \
        serialize_split
    from paimon_tail.spark.stream import StreamPlanner, limits_from

    options = parse_options({"warehouse": auth["warehouse"], "catalog.metastore": "authtest", "table": "db.pk",
                             "scan.mode": "from-snapshot", "scan.snapshot-id": "1", "read.changelog": "true",
                             "consumer-id": "s"})
    table = get_table(options.catalog, "db.pk", fresh=True)
    schema = output_arrow_schema(table, ["id", "v"], True)
    spec = ReadSpec(("id", "v"), row_kind=True, streaming=True)
    planner = StreamPlanner(options, spec)
    start = planner.initial_offset()
    end = planner.latest_offset(start, limits_from(options))
    restricted([r for task in planner.tasks(start, end) for b in read_task(task, schema) for r in b.to_pylist()])
    batch = ReadSpec(("id", "v"))
    splits = batch.builder(table).new_scan().plan().splits()
    assert type(splits[0]).__name__ == "QueryAuthSplit"  # pypaimon wraps on the driver; the bytes carry no rules
    task = SplitTask(options.catalog, "db.pk", table.table_schema.id, batch, [serialize_split(s) for s in splits])
    restricted([r for b in read_task(task, output_arrow_schema(table, ["id", "v"], False)) for r in b.to_pylist()])
