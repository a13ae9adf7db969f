"""``follow -n N``: the last N rows, then the follow (``tail -n N -f``); ``-c N`` stops after N rows (kcat's -c,
``-n``'s old meaning, also ``--max-rows``)."""
from __future__ import annotations

import json
import re
import threading
import time

import pytest

from paimon_tail.stream.last import start_for, start_for_tables

from tests.conftest import ORDERS, append_rows, run_cli, start_cli
from tests.terminal import Terminal


@pytest.fixture
def log(wh):
    """db.log: 10 commits of 4 rows (ids c*1000 + i)."""
    wh.create("log")
    for c in range(10):
        wh.commit("log", append_rows(c, 4))
    return wh


def ids(out) -> list:
    return [json.loads(line)["id"] for line in out.stdout.splitlines()]


def test_the_last_rows_are_those_tail_prints(log):
    everything = ids(run_cli(["follow", "db.log", "-w", log.path, "--from", "earliest", "-e"]))
    assert len(everything) == 40
    for n, start in ((6, []), (6, ["--from", "earliest"]), (100, [])):  # `follow --from earliest -e | tail -n N`
        assert ids(run_cli(["follow", "db.log", "-w", log.path, "-n", str(n), "-e", *start])) == everything[-n:], n
    # without --from, the follow starts where the newest commits hold n rows: not a read of the whole table
    table = log.table("log")
    assert start_for(table, 6)[0] == "snapshot:9" and start_for(table, 8)[0] == "snapshot:9"
    assert start_for(table, 9)[0] == "snapshot:8" and start_for(table, 41)[0] == "earliest"
    assert start_for(table, 0)[0] == "latest"
    nothing = run_cli(["follow", "db.log", "-w", log.path, "-n", "0", "-e"])
    assert (nothing.returncode, nothing.stdout) == (0, b"")
    # a primary-key table: the newest changes, with their kinds
    log.create("kv", ORDERS, primary_keys=["id"], options={"bucket": "2"})
    log.commit("kv", [{"id": i, "status": "new", "amount": None, "op": "+I"} for i in range(5)])
    log.commit("kv", [{"id": 1, "status": "paid", "amount": None, "op": "+U"},
                      {"id": 2, "status": None, "amount": None, "op": "-D"}])
    kinds = run_cli(["follow", "db.kv", "-w", log.path, "-n", "2", "-e", "--row-kind"])
    assert sorted((r["_row_kind"], r["id"]) for r in map(json.loads, kinds.stdout.splitlines())) == \
        [("+U", 1), ("-D", 2)]
    # several tables: their newest rows together
    both = run_cli(["follow", "db.*", "-w", log.path, "-n", "3", "-e"])
    assert both.returncode == 0 and len(both.stdout.splitlines()) == 3, both.stderr
    assert start_for_tables([log.table("log"), log.table("kv")], 3).startswith("timestamp:")


def test_the_last_rows_then_the_follow(log):
    """Live: the last 3 rows at once (the table is idle: no commit has to come first), then each new commit."""
    p = start_cli(["follow", "db.log", "-w", log.path, "-n", "3"])
    lines: list = []
    got = threading.Event()

    def read():
        for line in p.stdout:
            lines.append(json.loads(line)["id"])
            if len(lines) >= 3:
                got.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert got.wait(60), p.stderr.read1() if p.poll() is not None else lines
        assert lines == [9001, 9002, 9003]
        log.commit("log", append_rows(10, 2))
        deadline = time.monotonic() + 60
        while len(lines) < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert lines == [9001, 9002, 9003, 10000, 10001]
    finally:
        p.kill()
        p.wait(30)


def test_n_and_consumer_id_and_count_on_a_terminal(log):
    refused = run_cli(["follow", "db.log", "-w", log.path, "-n", "3", "--consumer-id", "me"])
    assert refused.returncode == 2 and refused.stderr.decode() == \
        "paimon-tail: -n does not go with --consumer-id: a consumer resumes where it stopped\n"
    with Terminal(["follow", "db.log", "-w", log.path, "-n", "5", "-e"], 80, 24) as t:
        assert t.wait_exit() == 0
        shown = t.history()
    assert re.findall(r"^(\d+) +w ", shown, re.M) == ["8003", "9000", "9001", "9002", "9003"], shown
    assert re.search(r"snapshot 10/10 · .* · 5 rows · .*done: caught up", shown), shown
    # -c stops within a snapshot: the footer names it (it said "snapshot -")
    with Terminal(["follow", "db.log", "-w", log.path, "--from", "earliest", "-c", "6"], 80, 24) as t:
        assert t.wait_exit() == 0
        shown = t.history()
    assert len(re.findall(r"^\d+ +w ", shown, re.M)) == 6 and "snapshot 2 (part)" in shown, shown
