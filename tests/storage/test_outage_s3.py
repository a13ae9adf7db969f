"""A storage outage of minutes, with a writer committing throughout (directly to the store, which stays up for
it): ``follow`` and ``serve`` both sit behind the proxy, which refuses every connection meanwhile.

Both keep running and say "storage unreachable since T: cause" (the follower's status line, ``service status``);
the service keeps answering, from its local copies, at the snapshot it admits; when storage returns the follower
delivers every row committed during the outage exactly once and the service catches up and registers again.
``PAIMON_TAIL_OUTAGE_SECONDS`` sets the outage (default 150).
"""
from __future__ import annotations

import json
import os
import threading
import time

import pytest

from tests.conftest import append_rows
from tests.cli_runs import json_lines, start_cli_to_file, wait_for
from tests.service.conftest import PK_SCHEMA, ServeProcess, run_cli as service_cli
from tests.objectstore import via

OUTAGE = float(os.environ.get("PAIMON_TAIL_OUTAGE_SECONDS", "150"))


class Writer(threading.Thread):
    """Commits to ``log`` (append) and ``orders`` (primary key) every ``pause`` s until stopped."""

    def __init__(self, wh, pause: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.wh, self.pause = wh, pause
        self.n = 0
        self.log_ids: list = []
        self.stop_event = threading.Event()
        self.error = None

    def run(self) -> None:
        try:
            while not self.stop_event.is_set():
                rows = append_rows(self.n, 3)
                self.wh.commit("log", rows)
                self.log_ids += [r["id"] for r in rows]
                self.wh.commit("orders", [{"id": self.n % 50, "dt": "d", "name": f"v{self.n}", "amount": self.n,
                                           "op": "+I"}], schema=PK_SCHEMA)
                self.n += 1
                time.sleep(self.pause)
        except BaseException as e:  # surfaced by the test
            self.error = e

    def stop(self) -> None:
        self.stop_event.set()
        self.join(60)
        assert self.error is None, self.error


def _orders_at(wh, snapshot_id: int) -> dict:
    """The oracle: pypaimon's batch read of ``orders`` at ``snapshot_id``."""
    table = wh.table("orders").copy({"scan.snapshot-id": str(snapshot_id)})
    rb = table.new_read_builder()
    return {r["id"]: r for r in rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()}


@pytest.mark.slow
def test_outage_of_minutes_follow_and_serve_survive(s3wh, proxy, tmp_path):
    from paimon_tail import LookupClient
    from paimon_tail.catalog import CatalogConfig
    from paimon_tail.service.protocol import registration

    s3wh.create("log")
    s3wh.create("orders", PK_SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    writer = Writer(s3wh)
    writer.start()
    out = str(tmp_path / "follow.jsonl")
    behind_proxy = via(proxy, s3wh)
    follow = start_cli_to_file(["follow", "db.log", *behind_proxy, "--from", "earliest", "--nl", "--stats",
                                "--consumer-id", "outage", "--poll-interval", "0.1"], out)
    serve = ServeProcess(behind_proxy[1], ["db.orders"], *behind_proxy[2:], "--lease", "6")
    stderr: list = []
    threading.Thread(target=lambda: stderr.extend(line.decode() for line in follow.stderr), daemon=True).start()
    client = None
    try:
        serve.wait_ready(120)
        wait_for(lambda: len(json_lines(out)) >= 9, timeout=60)
        # A client that found the service before the outage (it reads the registration from the store directly).
        client = LookupClient("db.orders", CatalogConfig(s3wh.options), timeout=10)
        assert client.get_sync(0) is not None

        proxy.go_down("refuse")
        down_at = time.monotonic()
        time.sleep(5)
        mid = []
        while time.monotonic() - down_at < OUTAGE:
            assert follow.poll() is None, stderr
            assert serve.proc.poll() is None, serve.lines
            # The service answers what it admits: every answer equals the table at the snapshot it reports.
            answer = client.lookup_sync(list(range(50)))
            assert len(set(answer.snapshot_ids.values())) == 1, answer  # storage is down: nobody moves on
            expected = _orders_at(s3wh, answer.snapshot_id)
            assert answer.aligned() == [expected.get(k) for k in range(50)]
            mid.append(answer.snapshot_id)
            time.sleep(10)
        assert len(set(mid)) == 1  # it admits one snapshot throughout: storage is unreachable
        status = service_cli("service", "status", "db.orders", *s3wh.cli_args(), "--json")
        assert status.returncode == 0, status.stderr
        assert "connection refused" in (json.loads(status.stdout)["storage_error"] or ""), status.stdout
        outage_lines = [line for line in stderr if "storage unreachable since" in line]
        assert outage_lines and "connection refused" in outage_lines[-1], stderr[-3:]
        stuck_rows = len(json_lines(out))

        proxy.come_back()
        time.sleep(5)
        writer.stop()
        expected = sorted(writer.log_ids)
        wait_for(lambda: sorted(r["id"] for r in json_lines(out)) == expected, timeout=120)
        assert len(json_lines(out)) > stuck_rows  # what was committed during the outage arrived after it
        # The service caught up and is registered again.
        latest = s3wh.latest("orders")
        wait_for(lambda: client.lookup_sync(list(range(50))).snapshot_id == latest, timeout=60)
        final = client.lookup_sync(list(range(50)))
        expected_final = _orders_at(s3wh, latest)
        assert final.aligned() == [expected_final.get(k) for k in range(50)]
        table = s3wh.table("orders")
        wait_for(lambda: (registration.read(table) or registration.Registration.from_json("{}")).is_live(), 30)
        assert service_cli("lookup", "db.orders", "1", *s3wh.cli_args()).returncode == 0
    finally:
        if writer.is_alive():
            writer.stop_event.set()
        proxy.come_back()
        if client is not None:
            client.close_sync()
        follow.terminate()
        follow.wait(20)
        assert serve.stop() in (0, 130), serve.lines
    ids = [r["id"] for r in json_lines(out)]
    assert len(ids) == len(set(ids))  # no duplicates: nothing was killed, nothing re-read
