"""``follow --metrics-port``: a long-running consumer's Prometheus metrics (rows, snapshots, lag, consumer position,
progress and stalls), scraped over loopback from the real command while its output is blocked and after."""
from __future__ import annotations

import os
import re
import subprocess
import threading
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from paimon_tail.follow_metrics import STALL_SECONDS, FollowCollector
from paimon_tail.stream import Follower

from tests.conftest import CLI, append_rows


def scrape(port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_metrics_of_a_follow_whose_reader_stops_then_reads(wh):
    wh.create("log")
    for c in range(6):
        wh.commit("log", append_rows(c, 4000))  # ~100 KB of JSON a snapshot: more than a pipe holds
    env = {k: v for k, v in os.environ.items() if k != "PAIMON_WAREHOUSE"}
    p = subprocess.Popen(CLI + ["follow", "db.log", "-w", wh.path, "--from", "earliest", "--metrics-port", "0",
                                "--consumer-id", "billing", "--read-threads", "1"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        said = p.stderr.readline().decode()
        port = int(re.fullmatch(r"paimon-tail: metrics at http://127\.0\.0\.1:(\d+)/metrics\n", said).group(1))
        table = (("table", "db.log"),)
        deadline = time.monotonic() + 60
        while True:  # nobody reads its output: the follow is stuck behind with a full pipe
            m = scrape(port)
            if m.get(("paimon_tail_follow_progress_age_seconds", table), 0) >= 1.5 or time.monotonic() > deadline:
                break
            time.sleep(0.25)
        assert m[("paimon_tail_follow_latest_snapshot", table)] == 6
        assert m[("paimon_tail_follow_lag_snapshots", table)] >= 4 and m[("paimon_tail_follow_caught_up", table)] == 0
        assert m[("paimon_tail_follow_progress_age_seconds", table)] >= 1.5  # no progress while blocked
        assert m[("paimon_tail_follow_stalled", table)] == 0  # not for STALL_SECONDS yet
        assert m[("paimon_tail_storage_outage", table)] == 0 and m[("paimon_tail_storage_errors_total", table)] == 0

        lines = []
        reader = threading.Thread(target=lambda: lines.extend(p.stdout), daemon=True)
        reader.start()  # the reader comes back: the follow catches up
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            m = scrape(port)
            if m.get(("paimon_tail_follow_caught_up", table)) == 1 and len(lines) == 24000:
                break
            time.sleep(0.25)
        assert len(lines) == 24000
        assert m[("paimon_tail_follow_rows_total", table)] == 24000
        assert m[("paimon_tail_follow_snapshots_total", table)] == 6
        assert m[("paimon_tail_follow_snapshot", table)] == 6 and m[("paimon_tail_follow_lag_snapshots", table)] == 0
        assert m[("paimon_tail_follow_lag_seconds", table)] == 0
        assert m[("paimon_tail_follow_consumer_next_snapshot", (("consumer", "billing"), ("table", "db.log")))] == 7
        wh.commit("log", append_rows(6, 10))
        deadline = time.monotonic() + 60
        while scrape(port).get(("paimon_tail_follow_rows_total", table)) != 24010 and time.monotonic() < deadline:
            time.sleep(0.25)
        m = scrape(port)
        assert m[("paimon_tail_follow_rows_total", table)] == 24010 and m[("paimon_tail_follow_snapshot", table)] == 7
    finally:
        p.terminate()
        p.wait(30)


def test_a_stall_is_behind_without_progress_for_a_while(wh):
    """The stall logic over a real follower's stats, on a clock the test moves."""
    wh.create("log")
    wh.commit("log", append_rows(0, 3))
    follower = Follower(wh.table("log"), start="earliest")
    now = [1000.0]
    collector = FollowCollector(follower.stats, "db.log", clock=lambda: now[0])

    def sample(name):
        family = next(f for f in collector.collect() if f.name == name)
        return family.samples[0].value

    stats = follower.stats
    stats.latest_id, stats.snapshot_id, stats.rows = 5, 2, 10  # behind by 3
    assert sample("paimon_tail_follow_stalled") == 0
    now[0] += STALL_SECONDS - 1
    assert sample("paimon_tail_follow_stalled") == 0 and sample("paimon_tail_follow_progress_age_seconds") == 59
    now[0] += 1
    assert sample("paimon_tail_follow_stalled") == 1 and sample("paimon_tail_follow_stalls") == 1
    stats.snapshot_id, stats.rows = 5, 20  # it moved, and caught up
    assert sample("paimon_tail_follow_stalled") == 0 and sample("paimon_tail_follow_progress_age_seconds") == 0
    now[0] += 600
    assert sample("paimon_tail_follow_stalled") == 0  # idle, not behind: not a stall
    stats.latest_id = 6
    now[0] += 1
    assert sample("paimon_tail_follow_stalled") == 1 and sample("paimon_tail_follow_stalls") == 2
    follower.close()
