"""The query service (`paimon-tail serve` + LookupClient) on tables written by Paimon Java 0.9.

Java is the oracle: every answer is compared with what Java reads at the snapshot the service
reports — Java's batch read (the service's contract: "what a batch read returns"), and Java's
``LocalTableQuery`` where it answers the same question (deduplicate tables without deletion
vectors or changelog-producer=lookup; in 0.9 it ignores deletion vectors, skips level 0 of
"lookup" tables (changelog-producer=lookup, first-row, DV) where a batch read merges it or not
consistently, and does not merge partial-update/aggregation records with older levels).

One warehouse and one ``serve`` process for the module. Java keeps writing (and compacting) the
``live_*`` tables and ``mixed`` while the service serves them.
"""
from __future__ import annotations

import json
import os
import sys

import pytest

from tests.java import javafix as jf

pytestmark = pytest.mark.java

_reason = jf.java_missing_reason()
if _reason:
    pytest.skip(f"PAIMON JAVA LOOKUP TESTS SKIPPED: {_reason}", allow_module_level=True)

from tests.service.conftest import ServeProcess, run_cli  # noqa: E402

from paimon_tail.catalog import catalog_config  # noqa: E402
from paimon_tail.service.client import LookupClient  # noqa: E402

#: Java scenarios the service supports (fixed-bucket primary-key tables) -> keys to look up
STATIC = {
    "pk_dedup": range(0, 420),
    "pk_dv": range(0, 440),
    "pk_changelog_lookup": range(0, 420),
    "pk_orc": range(0, 420),
    "pk_first_row": range(0, 280),
    "pk_partial_update": range(0, 270),
    "pk_aggregation": range(0, 170),
    "pk_expired": range(0, 200),
    "pk_schema_evolution": range(0, 170),
    "types_parquet": range(0, 100),
}
# LocalTableQuery answers what a batch read answers on these (see module docstring; it also skips
# level 0 of changelog-producer=lookup tables, where a batch read merges it)
LTQ_AGREES = {"pk_dedup", "pk_orc", "pk_expired", "pk_schema_evolution", "types_parquet",
              "live_dedup", "mixed"}
PARTITIONS = ["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"]
LIVE = jf.LIVE_SCENARIOS
TABLES = [*STATIC, "pk_partitioned", *LIVE, "mixed"]


#: the store's budgets: none, and far below the tables (rows read from the data files again and again, frame
#: files evicted and written again) — every test runs with each
BUDGETS = {"unlimited": (), "tight": ("--max-disk", "96K", "--max-memory", "512K")}


@pytest.fixture(scope="module", params=list(BUDGETS))
def served(java_env, tmp_path_factory, request):
    wh = str(tmp_path_factory.mktemp("java-lookup"))
    jf.write_scenario(wh, *STATIC, "pk_partitioned")
    jf.write_live(wh, 0)
    jf.write_mixed(wh)
    svc = ServeProcess(wh, [f"db.{t}" for t in TABLES], "--local-dir", os.path.join(wh, "_local"),
                       *BUDGETS[request.param]).wait_ready()
    clients = {}
    try:
        yield wh, svc, clients
    finally:
        for c in clients.values():
            c.close_sync()
        code = svc.stop()
        assert code == 0, "\n".join(svc.lines)


def _client(served, table):
    wh, _, clients = served
    if table not in clients:
        clients[table] = LookupClient(f"db.{table}", catalog_config(wh), timeout=30)
    return clients[table]


def _lookup(served, table, keys, min_snapshot=None):
    """Service answers as {key tuple: normalised row} plus the snapshot it served."""
    r = _client(served, table).lookup_sync(list(keys), min_snapshot=min_snapshot)
    snaps = set(r.snapshot_ids.values())
    assert len(snaps) == 1, f"executors serve different snapshots {r.snapshot_ids}"
    rows = jf.arrow_rows(r.rows)
    return rows, snaps.pop()


def _by_key(rows, width=1):
    return {tuple(r[:width]): r for r in rows}


def _check(served, table, ids, min_snapshot=None):
    return _check_many(served, [table], ids, min_snapshot)[table]


def _check_many(served, tables, ids, min_snapshot=None):
    """Service == Java batch read at the served snapshot (and == LocalTableQuery where it applies);
    the Java side of all tables in one JVM."""
    wh = served[0]
    answers, commands = {}, []
    for table in tables:
        ms = min_snapshot(table) if callable(min_snapshot) else min_snapshot
        rows, snap = _lookup(served, table, [(i,) for i in ids], ms)
        answers[table] = (rows, snap)
        commands.append(jf.oracle_command(wh, table, snap))
        if table in LTQ_AGREES:
            commands.append(jf.lookup_command(wh, table, [[i] for i in ids], None, snap))
    results = iter(jf.run_java(*commands))
    out = {}
    for table in tables:
        rows, snap = answers[table]
        oracle = next(results)
        expected = {k: r for k, r in _by_key(oracle["batch"]).items() if k[0] in set(ids)}
        assert oracle["latest_snapshot"] >= snap
        got = _by_key(rows)
        assert got == expected, f"{table}@{snap}: service != Java batch read"
        assert expected, f"{table}: nothing to compare"
        if table in LTQ_AGREES:
            ltq = next(results)["results"]
            assert {(r[0],): r for r in ltq if r is not None} == got, f"{table}@{snap}: != LocalTableQuery"
        out[table] = (snap, oracle)
    return out


@pytest.mark.parametrize("table", list(STATIC))
def test_lookup_matches_java(served, table):
    snap, oracle = _check(served, table, list(STATIC[table]))
    assert snap == oracle["latest_snapshot"]


def test_lookup_partitioned_matches_java(served):
    wh = served[0]
    keys = [(dt, i) for dt in PARTITIONS + ["2024-01-09"] for i in range(0, 125)]
    rows, snap = _lookup(served, "pk_partitioned", [{"dt": dt, "id": i} for dt, i in keys])
    oracle = jf.java_oracle(wh, "pk_partitioned", snapshot=snap)
    assert _by_key(rows, 2) == _by_key(oracle["batch"], 2)
    ltq = jf.java_lookup(wh, "pk_partitioned", [[i] for i in range(0, 125)], partition=["2024-01-02"],
                         snapshot=snap)
    assert {(r[0], r[1]): r for r in ltq if r} == {k: v for k, v in _by_key(rows, 2).items()
                                                    if k[0] == "2024-01-02"}


def test_java_compacts_while_serving(served):
    """Java writes (upserts, deletes) and compacts every live table while the service serves it:
    COMPACT snapshots replace files under the running executors, deletion vectors change, and
    every merge engine re-merges; min_snapshot lookups equal Java's answer at that snapshot."""
    wh = served[0]
    ids = list(range(0, 330))
    for step in (1, 2):
        before = {t: jf.open_table(wh, t).snapshot_manager().get_latest_snapshot().id for t in LIVE}
        jf.write_live(wh, step)
        latest = {}
        for table in LIVE:
            sm = jf.open_table(wh, table).snapshot_manager()
            latest[table] = sm.get_latest_snapshot().id
            kinds = [sm.get_snapshot_by_id(i).commit_kind for i in range(before[table] + 1, latest[table] + 1)]
            assert "COMPACT" in kinds, (table, kinds)  # files replaced while served
        checked = _check_many(served, LIVE, ids, min_snapshot=latest.get)
        assert {t: snap for t, (snap, _) in checked.items()} == latest
    rows, _ = _lookup(served, "live_dedup", [(3,), (6,), (10,)])
    assert [r[0] for r in rows] == [10]  # 3, 6 deleted by Java in steps 1, 2


def test_mixed_writers_while_serving(served):
    """db.mixed: Java and pypaimon write alternately, Java compacts — all while it is served."""
    wh = served[0]
    ids = list(range(0, 220))
    _check(served, "mixed", ids)
    jf.run_java(("write", wh, "mixed", 3))
    latest = jf.open_table(wh, "mixed").snapshot_manager().get_latest_snapshot().id
    _check(served, "mixed", ids, min_snapshot=latest)
    jf.pypaimon_write_mixed(wh, 3)
    latest = jf.open_table(wh, "mixed").snapshot_manager().get_latest_snapshot().id
    _check(served, "mixed", ids, min_snapshot=latest)
    jf.java_compact(wh, "mixed")
    latest = jf.open_table(wh, "mixed").snapshot_manager().get_latest_snapshot()
    assert latest.commit_kind == "COMPACT"
    snap, oracle = _check(served, "mixed", ids, min_snapshot=latest.id)
    names = {r[1] for r in oracle["batch"]}
    assert {"java3", "py3"} <= names


def test_cli_lookup_java_table(served):
    wh = served[0]
    r = run_cli("lookup", "db.pk_dedup", "17", "5", "250", "--missing", "null", "--warehouse", wh)
    assert r.returncode == 0, r.stderr  # key 5 was deleted by Java: --missing null answers null, exit 0
    out = [json.loads(line) for line in r.stdout.splitlines()]
    batch = _by_key(jf.java_oracle(wh, "pk_dedup")["batch"])
    assert out[1] is None
    assert [o["id"] for o in (out[0], out[2])] == [17, 250]
    assert out[2]["name"] == batch[(250,)][1] == "n250_v2"
