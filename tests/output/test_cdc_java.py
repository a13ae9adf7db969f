"""Debezium events of tables whose changelog Paimon Java 0.9 wrote: ``changelog-producer=input`` (a CDC source's
-U/+U pairs kept as written) and ``lookup`` (pairs produced by compaction). Checked three ways: every event against
the envelope Debezium documents; the events against Java's own streaming read of the same snapshots (each adjacent
-U/+U of one key is one ``u`` with both images, everything else one event per row); and the events applied as a
replica would, equal to Java's batch read, with every update's old image being the row the replica held.
Slow (a JVM per fixture): pypaimon-written tables are tests/output/test_cdc.py.
"""
from __future__ import annotations

import asyncio
import datetime
import io
import sys
from pathlib import Path

import pytest

from tests.java import javafix as jf

from tests.cdc_check import debezium_events, fold  # noqa: E402

pytestmark = pytest.mark.java

_reason = jf.java_missing_reason()
if _reason:
    pytest.skip(f"PAIMON JAVA CDC TESTS SKIPPED: {_reason}", allow_module_level=True)

TABLES = ["pk_changelog_input", "pk_changelog_lookup"]


@pytest.fixture(scope="module")
def java_tables(java_env, tmp_path_factory):
    wh = str(tmp_path_factory.mktemp("java-cdc"))
    jf.write_scenario(wh, *TABLES)
    # lookup: the last commit's changes reach the changelog when its level-0 files are compacted
    jf.java_compact(wh, "pk_changelog_lookup")
    oracles = jf.run_java(*[jf.oracle_command(wh, n, None, "earliest") for n in TABLES])
    return wh, dict(zip(TABLES, oracles))


def _debezium(wh: str, name: str, start: str, batch_size=None) -> list:
    """paimon-tail's Debezium lines, as the CLI makes them (follower → tail → renderer)."""
    import paimon_tail
    from paimon_tail.output.cdc import DebeziumRenderer
    from paimon_tail.tail import tail

    table = paimon_tail.open_table(f"{jf.DB}.{name}", warehouse=wh)
    follower = paimon_tail.follow(table, start=start, exit_at_end=True, row_kind=True, batch_size=batch_size)
    out = io.BytesIO()
    asyncio.run(tail(follower, DebeziumRenderer(out)))
    return debezium_events(out.getvalue().splitlines())


def _norm(values: list, fields: list) -> list:
    """Java's and our JSON differ only in how a timestamp with zero microseconds is spelled."""
    return [datetime.datetime.fromisoformat(v) if f == "ts" and v is not None else v for f, v in zip(fields, values)]


def _image(row, fields):
    return None if row is None else _norm([row[f] for f in fields], fields)


def _expected_events(stream, fields):
    """Java's streaming read → the events the documented rule makes of it: adjacent -U/+U of one key is one u."""
    out = []
    for plan in stream:
        rows = plan["rows"]
        i = 0
        while i < len(rows):
            kind, values = rows[i][0], _norm(rows[i][1:], fields)
            nxt = rows[i + 1] if i + 1 < len(rows) else None
            if kind == "-U" and nxt is not None and nxt[0] == "+U" and nxt[1] == rows[i][1]:
                out.append((plan["snapshot"], "u", values, _norm(nxt[1:], fields)))
                i += 2
                continue
            op = {"+I": "c", "+U": "u", "-U": "d", "-D": "d"}[kind]
            out.append((plan["snapshot"], op, values if op == "d" else None, None if op == "d" else values))
            i += 1
    return out


def _key(event):
    return repr(event)


@pytest.mark.parametrize("name", TABLES)
def test_debezium_matches_javas_changelog_and_rebuilds_the_table(java_tables, name):
    wh, oracles = java_tables
    oracle = oracles[name]
    fields = oracle["fields"]
    events = _debezium(wh, name, "earliest")
    got = [(e["source"]["snapshot_id"], e["op"], _image(e["before"], fields), _image(e["after"], fields))
           for e in events]
    expected = _expected_events(oracle["stream"], fields)
    assert sorted(got, key=_key) == sorted(expected, key=_key)
    # real pairs: updates with both images, and the other kinds
    ops = {(op, before is not None) for _, op, before, _ in got}
    assert {("u", True), ("c", False), ("d", True)} <= ops
    assert sum(1 for _, op, before, _ in got if op == "u" and before is not None) >= 100
    # a replica built from the events is the table (Java's batch read), and no update starts from a row it lacks
    replica = fold("debezium", events, ["id"], check_before=True)
    assert sorted(_norm([r[f] for f in fields], fields) for r in replica.values()) == \
        sorted(_norm(r, fields) for r in oracle["batch"])
    # every -U/+U pair split across two batches (a batch per row) gives the same events
    assert _debezium(wh, name, "earliest", batch_size=1) == events


@pytest.mark.parametrize("name", TABLES)
def test_full_start_is_read_events_of_the_table(java_tables, name):
    wh, oracles = java_tables
    fields = oracles[name]["fields"]
    events = _debezium(wh, name, "latest-full")
    assert {e["op"] for e in events} == {"r"} and events[-1]["source"]["snapshot"] == "last"
    assert sorted(_image(e["after"], fields) for e in events) == \
        sorted(_norm(r, fields) for r in oracles[name]["batch"])
