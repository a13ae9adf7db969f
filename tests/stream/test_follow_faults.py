"""``paimon-tail follow`` under real faults: SIGKILL with a live writer, snapshot expiration under a stopped
follower, schema evolution and a dropped table while following. All through the CLI, as a user runs it.

Library-level versions of the gap and schema tests are in tests/stream/test_follow.py; the SIGKILL resume test without a
concurrent writer is tests/cli/test_cli.py::test_consumer_resume_after_sigkill_loses_nothing.
"""
from __future__ import annotations

import collections
import json
import random
import signal
import threading
import time

import pyarrow as pa
import pytest

from tests.conftest import append_rows, run_cli
from tests.cli_runs import expire_snapshots, file_size, json_lines, start_cli_to_file, wait_for


class LiveWriter(threading.Thread):
    """Commits ``size`` rows every ``pause`` seconds until stopped; remembers which rows each snapshot holds."""

    def __init__(self, wh, name: str, size: int = 10, pause: float = 0.05, first: int = 0) -> None:
        super().__init__(daemon=True)
        self.wh, self.table, self.size, self.pause, self.next = wh, name, size, pause, first
        self.by_snapshot: dict = {}
        self.stop_event = threading.Event()
        self.error = None

    def run(self) -> None:
        try:
            while not self.stop_event.is_set():
                rows = append_rows(self.next, self.size)
                sid = self.wh.commit(self.table, rows)  # the only writer: the new latest is our snapshot
                self.by_snapshot[sid] = [r["id"] for r in rows]
                self.next += 1
                time.sleep(self.pause)
        except BaseException as e:  # surfaced by the test
            self.error = e

    def stop(self) -> None:
        self.stop_event.set()
        self.join(30)
        assert self.error is None, self.error

    @property
    def ids(self) -> set:
        return {i for ids in self.by_snapshot.values() for i in ids}


@pytest.mark.slow
def test_sigkill_20_times_with_a_concurrent_writer(wh, tmp_path, reaper):
    """20 SIGKILLs at random moments while a writer commits: 0 rows lost; a kill re-delivers at most the one
    snapshot that was in flight (the last one the killed run printed), and at most that snapshot's rows."""
    wh.create("log")
    for c in range(5):
        wh.commit("log", append_rows(c, 10))
    writer = LiveWriter(wh, "log", size=10, pause=0.04, first=5)
    writer.start()
    rng = random.Random(6)
    args = ["follow", "db.log", "-w", wh.path, "--from", "earliest", "--consumer-id", "k", "--meta", "--nl"]
    runs = []
    kills = 0
    try:
        for attempt in range(20):
            out = str(tmp_path / f"run-{attempt}.jsonl")
            p = start_cli_to_file(args, out)
            reaper(p)
            if attempt % 2:  # kill while it is printing: shortly after its first row
                wait_for(lambda: file_size(out) > 0 or p.poll() is not None, timeout=30, interval=0.01)
                time.sleep(rng.uniform(0.0, 0.4))
            else:  # kill anywhere: start-up, catch-up, idle wait, mid-snapshot
                time.sleep(rng.uniform(0.3, 2.5))
            assert p.poll() is None, p.stderr.read()  # it was running: this is a real kill
            p.send_signal(signal.SIGKILL)
            p.wait(10)
            kills += 1
            runs.append(json_lines(out))
    finally:
        writer.stop()
    final = run_cli(["follow", "db.log", "-w", wh.path, "-e", "--consumer-id", "k", "--meta"], timeout=120)
    assert final.returncode == 0, final.stderr
    runs.append([json.loads(line) for line in final.stdout.splitlines()])

    committed = {sid: ids for sid, ids in writer.by_snapshot.items()}
    for c in range(5):
        committed[c + 1] = [r["id"] for r in append_rows(c, 10)]
    all_ids = {i for ids in committed.values() for i in ids}
    seen = collections.Counter(r["id"] for run in runs for r in run)
    assert kills == 20 and len(writer.by_snapshot) > 50, "the writer was not live during the kills"
    assert set(seen) == all_ids, f"rows lost: {sorted(all_ids - set(seen))[:10]}"

    # Duplicates: every re-delivered row belongs to the snapshot in flight when its run was killed.
    dup_rows = 0
    for i, run in enumerate(runs[:-1]):
        later = {r["_snapshot_id"] for other in runs[i + 1:] for r in other}
        mine = collections.Counter(r["_snapshot_id"] for r in run)
        assert all(v <= len(committed[s]) for s, v in mine.items()), "a run printed a snapshot twice"
        again = set(mine) & later
        assert len(again) <= 1, f"run {i} re-delivered snapshots {sorted(again)}: more than the one in flight"
        if again:
            (sid,) = again
            assert sid == max(mine), f"run {i}: re-delivered snapshot {sid} was not the one in flight"
            dup_rows += mine[sid]
    total = sum(seen.values())
    assert total - len(all_ids) == dup_rows
    assert dup_rows <= kills * 10  # at most one snapshot (10 rows) per kill


def _follow_until_caught_up(args, out, reaper, rows: int):
    p = start_cli_to_file(args, out)
    reaper(p)
    wait_for(lambda: len(json_lines(out)) >= rows or p.poll() is not None, timeout=60)
    assert p.poll() is None, p.stderr.read()
    return p


@pytest.mark.slow
@pytest.mark.parametrize("on_gap", ["error", "skip"])
def test_follower_behind_expiration(wh, tmp_path, reaper, on_gap):
    """SIGSTOP a follower, let the writer commit and expire what it has not read, SIGCONT it: never a silent
    gap. --on-gap error (default): one line naming the missing snapshots, exit 1. --on-gap skip: the gap is
    reported on stderr and following goes on from the earliest kept snapshot."""
    wh.create("log")
    for c in range(3):
        wh.commit("log", append_rows(c, 5))
    out = str(tmp_path / "out.jsonl")
    p = _follow_until_caught_up(["follow", "db.log", "-w", wh.path, "--from", "earliest", "--meta",
                                 "--on-gap", on_gap, "--until", "snapshot:9"], out, reaper, 15)
    p.send_signal(signal.SIGSTOP)
    for c in range(3, 9):  # snapshots 4..9
        wh.commit("log", append_rows(c, 5))
    removed = expire_snapshots(f"{wh.path}/db.db/log", keep_from=7)
    assert removed == list(range(1, 7))
    p.send_signal(signal.SIGCONT)
    code = p.wait(30)
    err = p.stderr.read().decode()
    rows = json_lines(out)
    if on_gap == "error":
        assert code == 1, err
        assert err.strip().splitlines() == [
            "paimon-tail: snapshots 4..6 expired before they were read (rows in them are lost to this follower; "
            "rerun with --on-gap skip to continue from snapshot 7, or --from earliest)"]
        assert {r["_snapshot_id"] for r in rows} == {1, 2, 3}
    else:
        assert code == 0, err
        assert "paimon-tail: snapshots 4..6 expired before they were read; skipped to 7 (--on-gap skip)" in err
        assert {r["_snapshot_id"] for r in rows} == {1, 2, 3, 7, 8, 9}
        assert len(rows) == 30


def test_consumer_behind_expiration_cli(wh):
    """A consumer whose position has expired: one line with the reset command, exit 1 (not a silent jump)."""
    wh.create("log")
    for c in range(4):
        wh.commit("log", append_rows(c, 2))
    assert run_cli(["consumers", "db.log", "-w", wh.path, "--reset", "k", "--to", "2"]).returncode == 0
    expire_snapshots(f"{wh.path}/db.db/log", keep_from=4)
    out = run_cli(["follow", "db.log", "-w", wh.path, "-e", "--consumer-id", "k"])
    assert out.returncode == 1 and out.stdout == b""
    assert out.stderr.decode().strip() == (
        "paimon-tail: consumer k is at snapshot 2, which has expired (earliest kept is 4) (reset it with: "
        "paimon-tail consumers db.log --reset k --to 4)")


def _commit_arrow(wh, name, table: pa.Table) -> int:
    t = wh.table(name)
    builder = t.new_batch_write_builder()
    write, commit = builder.new_write(), builder.new_commit()
    try:
        write.write_arrow(table)
        commit.commit(write.prepare_commit())
    finally:
        write.close()
        commit.close()
    return wh.latest(name)


@pytest.mark.slow
def test_schema_evolution_while_following_cli(wh, tmp_path, reaper):
    """A column added and a type widened (INT -> BIGINT) under a running follow: it continues, every row is
    printed with its values, and stderr says what changed, once per change."""
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange

    wh.create("log")
    wh.commit("log", append_rows(0, 3))
    out = str(tmp_path / "out.jsonl")
    p = _follow_until_caught_up(["follow", "db.log", "-w", wh.path, "--from", "earliest", "--meta",
                                 "--until", "snapshot:3"], out, reaper, 3)
    wh.catalog.alter_table("db.log", [SchemaChange.add_column("extra", AtomicType("STRING"))], False)
    _commit_arrow(wh, "log", pa.table({"id": pa.array([10], pa.int64()), "writer": ["w"], "n": pa.array([1], pa.int32()),
                                       "extra": ["hello"]}))
    wait_for(lambda: len(json_lines(out)) >= 4, timeout=30)
    wh.catalog.alter_table("db.log", [SchemaChange.update_column_type("n", AtomicType("BIGINT"))], False)
    _commit_arrow(wh, "log", pa.table({"id": pa.array([11], pa.int64()), "writer": ["w"],
                                       "n": pa.array([2**40], pa.int64()), "extra": ["big"]}))
    code = p.wait(30)
    err = p.stderr.read().decode()
    assert code == 0, err
    rows = json_lines(out)
    assert [(r["id"], r.get("extra"), r["n"]) for r in rows[3:]] == [(10, "hello", 1), (11, "big", 2**40)]
    lines = err.strip().splitlines()
    assert lines == [
        "paimon-tail: schema changed at snapshot 2 (schema 0 -> 1); "
        "columns now: id, writer, n, extra, _snapshot_id, _commit_time, _bucket, _partition",
        "paimon-tail: schema changed at snapshot 3 (schema 1 -> 2); "
        "columns now: id, writer, n, extra, _snapshot_id, _commit_time, _bucket, _partition",
    ], err


@pytest.mark.slow
def test_table_dropped_under_follower(wh, tmp_path, reaper):
    """The followed table is dropped: one line, exit 1, within a few seconds (not an endless wait)."""
    wh.create("log")
    wh.commit("log", append_rows(0, 3))
    out = str(tmp_path / "out.jsonl")
    p = _follow_until_caught_up(["follow", "db.log", "-w", wh.path, "--from", "earliest"], out, reaper, 3)
    wh.catalog.drop_table("db.log", False)
    t0 = time.monotonic()
    try:
        code = p.wait(10)
    except Exception:
        pytest.fail("follow kept waiting on a dropped table")
    err = p.stderr.read().decode()
    assert code == 1 and time.monotonic() - t0 < 5, err
    assert err.strip().splitlines() == ["paimon-tail: table db.log was dropped while being followed"]
