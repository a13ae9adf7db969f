"""`paimon-tail follow` on tables written by Paimon Java 0.9, with Java's own streaming read as the oracle.

For every Java scenario and start position (earliest, latest-full, snapshot:N, snapshot-full:N,
timestamp:T) the follower's output (library API, ``row_kind=True``) is compared with Java's
``scan.mode`` streaming read of the same snapshots:

* changes after the start (deltas, changelog): per snapshot, rows *and* row kinds, exactly;
* the initial full read (``*-full``, and ``earliest`` once snapshots expired): the same rows.
  Kinds differ on purpose: paimon-tail emits the table content as ``+I``; Java 0.9 passes on the
  kind of each key's newest record (``+U``). On deletion-vector tables Java attributes the
  uncompacted part of the full snapshot to a delta, so there the *state* after the full snapshot
  (full read folded with the deltas up to it) is compared, and with Java's stream of every snapshot.
* first-row tables: Java 0.9 drops the level-0 rows of the full snapshot (they never reach its
  stream); paimon-tail keeps them, checked against Java's own stream of every snapshot up to it.

Plus catch-up (replay vs diff) on a 18-snapshot backlog and one real CLI run.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.java import javafix as jf

pytestmark = pytest.mark.java

_reason = jf.java_missing_reason()
if _reason:
    pytest.skip(f"PAIMON JAVA FOLLOW TESTS SKIPPED: {_reason}", allow_module_level=True)

SCENARIOS = [*jf.SCENARIOS, "pk_changelog_full", "pk_backlog"]
APPEND = {"append_fixed", "append_unaware"}
KEY_WIDTH = {"pk_partitioned": 2}
# Paimon 0.9 cannot stream its files written before an ALTER TABLE (see test_java_tables.py)
FIRST_STREAMABLE = {"pk_schema_evolution": 2}
POSITIONS = ["earliest", "latest-full", "snapshot", "snapshot-full", "timestamp"]


@pytest.fixture(scope="module")
def java_tables(java_env, tmp_path_factory):
    wh = str(tmp_path_factory.mktemp("java-follow"))
    jf.write_scenario(wh, *SCENARIOS)
    meta = dict(zip(SCENARIOS, jf.run_java(*[jf.oracle_command(wh, n) for n in SCENARIOS])))
    cases, commands = [], []
    for name in SCENARIOS:
        for pos in POSITIONS:
            case = _case(wh, name, pos, meta[name])
            if case is not None:
                cases.append((name, pos, case))
                commands.append(jf.oracle_command(wh, name, None, case[1]))
    oracles = jf.run_java(*commands)
    streams = {(name, pos): (case[0], case[2], o["stream"]) for (name, pos, case), o in zip(cases, oracles)}
    return wh, meta, streams


def _case(wh, name, pos, meta):
    """(paimon-tail start, Java stream start, snapshot of the full read or None)."""
    earliest, latest = meta["earliest_snapshot"], meta["latest_snapshot"]
    mid = max(earliest, FIRST_STREAMABLE.get(name, 0), (earliest + latest) // 2)
    if pos == "earliest":
        if name in FIRST_STREAMABLE:
            return None
        return ("earliest", "earliest", None) if earliest == 1 else ("earliest", f"full:{earliest}", earliest)
    if pos == "latest-full":
        return "latest-full", f"full:{latest}", latest
    if pos == "snapshot":
        return f"snapshot:{mid}", str(mid), None
    if pos == "snapshot-full":
        return f"snapshot-full:{mid}", f"full:{mid}", mid
    # timestamp: exactly the commit time of snapshot `mid` (Paimon: that snapshot is included)
    t = jf.open_table(wh, name).snapshot_manager().get_snapshot_by_id(mid).time_millis
    return f"timestamp:{t}", f"ts:{t}", None


def _fold(plans, width, first_row=False):
    """Key -> row after applying the plans' rows (upsert on +I/+U, delete on -U/-D)."""
    state = {}
    for p in plans:
        for r in p["rows"]:
            key = tuple(r[1:1 + width])
            if r[0] in ("-D", "-U"):
                state.pop(key, None)
            elif not (first_row and key in state):
                state[key] = r[1:]
    return state


def _as_inserts(rows):
    return jf.canonical(["+I", *r[1:]] for r in rows)


@pytest.mark.parametrize("name", SCENARIOS)
@pytest.mark.parametrize("pos", POSITIONS)
def test_follow_matches_java(java_tables, name, pos):
    wh, meta, streams = java_tables
    if (name, pos) not in streams:
        pytest.skip("Java cannot stream this table from there")
    start, full_id, java = streams[(name, pos)]
    got = jf.follow_rows(wh, name, start)
    if name == "pk_backlog" and pos == "earliest":
        assert len(got) > 10  # replayed snapshot by snapshot
    # every change after the start: per snapshot, with row kinds
    after = full_id or 0
    j_delta = {p["snapshot"]: jf.canonical(p["rows"]) for p in java if p["snapshot"] > after}
    p_delta = {p["snapshot"]: jf.canonical(p["rows"]) for p in got if p["snapshot"] > after}
    assert p_delta == j_delta, f"{name} from {start}: changes differ"
    assert all(p["kind"] == "delta" for p in got if p["snapshot"] > after)
    if full_id is None:
        assert java or name in ("pk_expired",) or pos == "timestamp", "Java streamed nothing"
        return
    # the full read
    j_full = [p for p in java if p["snapshot"] <= full_id]
    p_full = [p for p in got if p["snapshot"] <= full_id]
    if not j_full and name == "pk_changelog_full":
        assert not p_full  # nothing at the top level yet: Java's full read is empty as well
        return
    assert [p["snapshot"] for p in p_full] == [full_id] and p_full[0]["kind"] == "full"
    assert {r[0] for r in p_full[0]["rows"]} == {"+I"}
    width = KEY_WIDTH.get(name, 1)
    if name == "pk_first_row":
        # Java drops the full snapshot's level-0 rows; its own stream of every snapshot keeps them
        everything = jf.java_oracle(wh, name, stream_from="earliest")["stream"]
        upto = [p for p in everything if p["snapshot"] <= full_id]
        assert _fold(p_full, width) == _fold(upto, width, first_row=True)
        assert len(_fold(p_full, width)) >= len(_fold(j_full, width))
    elif name in ("pk_dv",):
        # Java's full read of a DV table skips level 0 (its next delta may bring some of it back); the
        # truth is Java's stream of every snapshot up to the full one
        everything = jf.java_oracle(wh, name, stream_from="earliest")["stream"]
        upto = [p for p in everything if p["snapshot"] <= full_id]
        assert _fold(p_full, width) == _fold(upto, width) == _fold(j_full, width)
    else:
        assert len(j_full) == 1
        assert _as_inserts(p_full[0]["rows"]) == _as_inserts(j_full[0]["rows"])


def test_changelog_lookup_follows_the_changelog(java_tables):
    """changelog-producer=lookup: changes arrive on COMPACT snapshots as -U/+U/-D changelog, and the
    full read holds only compacted rows (so nothing is delivered twice) — as Java does."""
    wh, meta, streams = java_tables
    kinds = {s["id"]: s["commit_kind"] for s in meta["pk_changelog_lookup"]["snapshots"]}
    got = jf.follow_rows(wh, "pk_changelog_lookup", "earliest")
    assert got and all(kinds[p["snapshot"]] == "COMPACT" for p in got)
    assert {"-U", "+U", "-D"} <= {r[0] for p in got for r in p["rows"]}
    # latest-full: the compacted content, not the level-0 commit on top of it
    start, full_id, java = streams[("pk_changelog_lookup", "latest-full")]
    full = jf.follow_rows(wh, "pk_changelog_lookup", start)[0]["rows"]
    batch = {r[0]: r for r in jf.java_oracle(wh, "pk_changelog_lookup")["batch"]}
    assert len(full) < len(batch) and {r[1] for r in full} < set(range(400))  # 300..399 still in level 0


# ---------------------------------------------------------------- catch-up

def test_replay_catch_up_keeps_every_snapshot(java_tables):
    """A backlog of 17 snapshots: replayed one by one (pypaimon's own streaming scan collapses it)."""
    wh, meta, _ = java_tables
    o = jf.java_oracle(wh, "pk_backlog", stream_from=2)
    assert o["latest_snapshot"] - 2 > 10
    got = jf.follow_rows(wh, "pk_backlog", "snapshot:2")  # catch_up="replay" is the default
    assert [p["snapshot"] for p in got] == [p["snapshot"] for p in o["stream"]]
    assert len(got) > 10 and {p["kind"] for p in got} == {"delta"}
    for mine, java in zip(got, o["stream"]):
        assert jf.canonical(mine["rows"]) == jf.canonical(java["rows"]), mine["snapshot"]
    # what paimon-tail avoids: pypaimon's streaming scan folds a > 10 snapshot gap into one plan
    collapsed = jf.pypaimon_stream(wh, "pk_backlog", 2, o["latest_snapshot"])
    assert len(collapsed) < len(got)


def _state_diff(before, after, width):
    """Java batch reads at two snapshots -> the net change by key."""
    b = {tuple(r[:width]): r for r in before}
    a = {tuple(r[:width]): r for r in after}
    gone = sorted(k for k in b if k not in a)
    upserts = {k: r for k, r in a.items() if b.get(k) != r}
    return gone, upserts


@pytest.mark.parametrize("name,start,end", [
    ("pk_backlog", 5, None), ("pk_dedup", 2, None), ("pk_partitioned", 2, None),
    ("pk_partial_update", 2, None), ("pk_aggregation", 3, None), ("pk_dv", 4, 7), ("pk_orc", 4, None)])
def test_diff_catch_up_on_pk_is_the_net_change(java_tables, name, start, end):
    """catch_up="diff" on a primary-key table: per changed bucket, merged before vs after by key —
    equal to comparing Java's batch reads at both ends (-D for keys gone, new rows for the rest)."""
    wh, meta, _ = java_tables
    end = end or meta[name]["latest_snapshot"]
    width = KEY_WIDTH.get(name, 1)
    before, after = jf.run_java(jf.oracle_command(wh, name, start - 1), jf.oracle_command(wh, name, end))
    gone, upserts = _state_diff(before["batch"], after["batch"], width)
    assert gone or upserts
    got = jf.follow_rows(wh, name, f"snapshot:{start}", catch_up="diff", until=f"snapshot:{end}")
    assert [(p["snapshot"], p["kind"]) for p in got] == [(end, "diff")]
    rows = got[0]["rows"]
    assert sorted(tuple(r[1:1 + width]) for r in rows if r[0] == "-D") == gone
    assert {tuple(r[1:1 + width]): r[1:] for r in rows if r[0] != "-D"} == upserts
    assert len(rows) == len(gone) + len(upserts)


def test_diff_from_scratch_is_the_table(java_tables):
    wh, meta, _ = java_tables
    got = jf.follow_rows(wh, "pk_backlog", "earliest", catch_up="diff")
    batch = jf.java_oracle(wh, "pk_backlog")["batch"]
    assert len(got) == 1 and jf.canonical(r[1:] for r in got[0]["rows"]) == jf.canonical(batch)


def test_diff_catch_up_on_append_skips_compaction_rewrites(java_tables):
    """append_fixed is compacted by Java inside the range: diff = the appended rows, once each."""
    wh, meta, _ = java_tables
    kinds = [s["commit_kind"] for s in meta["append_fixed"]["snapshots"]]
    assert "COMPACT" in kinds[2:]
    replay = jf.follow_rows(wh, "append_fixed", "snapshot:3")
    diff = jf.follow_rows(wh, "append_fixed", "snapshot:3", catch_up="diff")
    assert len(diff) == 1 and diff[0]["kind"] == "diff"
    assert jf.canonical(diff[0]["rows"]) == jf.canonical(r for p in replay for r in p["rows"])


def test_follow_mixed_writers(java_env, tmp_path):
    """db.mixed, written alternately by Java and pypaimon (Java compacts): follow == Java's stream."""
    wh = str(tmp_path)
    jf.write_mixed(wh)
    o, full = jf.run_java(jf.oracle_command(wh, "mixed", None, "earliest"),
                          jf.oracle_command(wh, "mixed", None, "full:4"))
    got = jf.follow_rows(wh, "mixed", "earliest")
    assert {p["snapshot"]: jf.canonical(p["rows"]) for p in got} == \
        {p["snapshot"]: jf.canonical(p["rows"]) for p in o["stream"]}
    assert {r[2] for p in got for r in p["rows"]} >= {"java0", "py0", "java2", "py2"}
    got = jf.follow_rows(wh, "mixed", "snapshot-full:4")
    assert _as_inserts(got[0]["rows"]) == _as_inserts(full["stream"][0]["rows"])
    assert {p["snapshot"]: jf.canonical(p["rows"]) for p in got[1:]} == \
        {p["snapshot"]: jf.canonical(p["rows"]) for p in full["stream"][1:]}


# ---------------------------------------------------------------------- CLI

def _json_row(row):
    """A JSON-lines row of the CLI -> Java's normalised values (timestamps with microseconds)."""
    import datetime
    import re

    out = []
    for v in row:
        if isinstance(v, str) and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?", v):
            v = jf.normalise(datetime.datetime.fromisoformat(v))
        out.append(v)
    return out

def test_cli_follow_matches_java(java_tables):
    """`python -m paimon_tail follow db.T -w WH --from earliest -e --row-kind` (a real process)."""
    wh, _, streams = java_tables
    for name in ("pk_changelog_lookup", "pk_dedup"):
        proc = subprocess.run(
            [sys.executable, "-m", "paimon_tail", "follow", f"db.{name}", "-w", wh, "--from", "earliest", "-e",
             "--row-kind", "--meta", "--format", "jsonl"], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        lines = [json.loads(line) for line in proc.stdout.splitlines()]
        by_snap = {}
        for row in lines:
            sid = row.pop("_snapshot_id")
            for m in ("_commit_time", "_bucket", "_partition"):
                row.pop(m)
            by_snap.setdefault(sid, []).append(list(row.values()))
        java = {p["snapshot"]: jf.canonical(p["rows"]) for p in streams[(name, "earliest")][2]}
        assert java and {s: jf.canonical(_json_row(r) for r in rows)
                         for s, rows in by_snap.items()} == java
