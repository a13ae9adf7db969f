"""Several tables in one ``follow`` under SIGKILL: one consumer file per table, each resumed on its own, nothing
lost, and a kill re-delivers at most the snapshot in flight of each table (the single-table guarantee, per table).
"""
from __future__ import annotations

import collections
import json
import os
import random
import signal
import time

import pytest

from tests.conftest import append_rows, run_cli
from tests.cli_runs import file_size, json_lines, start_cli_to_file, wait_for
from tests.stream.test_follow_faults import LiveWriter

TABLES = ("a", "b")


@pytest.mark.slow
def test_sigkill_resumes_each_table_from_its_own_consumer_file(wh, tmp_path, reaper):
    committed = {}
    writers = []
    for i, name in enumerate(TABLES):
        wh.create(name)
        committed[name] = {}
        for c in range(5):
            committed[name][wh.commit(name, append_rows(c, 10))] = [r["id"] for r in append_rows(c, 10)]
        writers.append(LiveWriter(wh, name, size=10, pause=0.03 + 0.03 * i, first=5))
    for w in writers:
        w.start()
    rng = random.Random(14)
    args = ["follow", *(f"db.{n}" for n in TABLES), "-w", wh.path, "--from", "earliest", "--consumer-id", "k",
            "--meta", "--nl"]
    runs = []
    try:
        for attempt in range(12):
            out = str(tmp_path / f"run-{attempt}.jsonl")
            p = start_cli_to_file(args, out)
            reaper(p)
            if attempt % 2:
                wait_for(lambda: file_size(out) > 0 or p.poll() is not None, timeout=30, interval=0.01)
                time.sleep(rng.uniform(0.0, 0.4))
            else:
                time.sleep(rng.uniform(0.3, 2.0))
            assert p.poll() is None, p.stderr.read()
            p.send_signal(signal.SIGKILL)
            p.wait(10)
            runs.append(json_lines(out))
    finally:
        for w in writers:
            w.stop()
    final = run_cli(["follow", *(f"db.{n}" for n in TABLES), "-w", wh.path, "-e", "--consumer-id", "k", "--meta"],
                    timeout=120)
    assert final.returncode == 0, final.stderr
    runs.append([json.loads(line) for line in final.stdout.splitlines()])

    for name, w in zip(TABLES, writers):
        committed[name].update(w.by_snapshot)
        assert len(w.by_snapshot) > 20, "the writer was not live during the kills"
    for name in TABLES:
        table = f"db.{name}"
        mine_runs = [[r for r in run if r["_table"] == table] for run in runs]
        all_ids = {i for ids in committed[name].values() for i in ids}
        seen = collections.Counter(r["id"] for run in mine_runs for r in run)
        assert set(seen) == all_ids, f"{table}: rows lost: {sorted(all_ids - set(seen))[:10]}"
        dup_rows = 0
        for i, run in enumerate(mine_runs[:-1]):
            later = {r["_snapshot_id"] for other in mine_runs[i + 1:] for r in other}
            printed = collections.Counter(r["_snapshot_id"] for r in run)
            again = set(printed) & later
            assert len(again) <= 1, f"{table}, run {i}: re-delivered {sorted(again)}, more than the one in flight"
            if again:
                (sid,) = again
                assert sid == max(printed), f"{table}, run {i}: re-delivered {sid}, not the one in flight"
                dup_rows += printed[sid]
        assert sum(seen.values()) - len(all_ids) == dup_rows
        # its own consumer file, at the end of its own table
        path = os.path.join(wh.path, "db.db", name, "consumer", "consumer-k")
        with open(path) as f:
            assert json.load(f) == {"nextSnapshot": max(committed[name]) + 1}
