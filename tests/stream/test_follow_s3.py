"""``follow`` on an S3 warehouse: a real S3-protocol server (moto) behind our proxy, driven through the CLI.

What an object store charges for is counted by the proxy: an idle follower makes one request per poll and no
LIST; a consumer position is one PUT. Bad endpoints, credentials and buckets are named in one line, fast.
"""
from __future__ import annotations

import json
import signal
import time

import pytest

from tests.conftest import append_rows, run_cli, start_cli
from tests.objectstore import S3Server, _free_port
from tests.cli_runs import json_lines, start_cli_to_file, wait_for
from tests.objectstore import via


def _ids(lines) -> list:
    return [row["id"] for row in lines]


def test_follow_on_s3_every_row_exactly_once(s3wh, proxy, tmp_path):
    s3wh.create("log")
    for c in range(3):
        s3wh.commit("log", append_rows(c, 5))
    out = str(tmp_path / "out.jsonl")
    p = start_cli_to_file(["follow", "db.log", *via(proxy, s3wh), "--from", "earliest", "--nl",
                           "--poll-interval", "0.05"], out)
    try:
        for c in range(3, 15):  # a live writer while it follows
            s3wh.commit("log", append_rows(c, 5))
        expected = {r["id"] for c in range(15) for r in append_rows(c, 5)}
        wait_for(lambda: set(_ids(json_lines(out))) >= expected, timeout=60)
    finally:
        p.send_signal(signal.SIGINT)
        assert p.wait(20) == 130, p.stderr.read()
    ids = _ids(json_lines(out))
    assert sorted(ids) == sorted(expected)  # nothing lost, nothing twice


def test_idle_follow_costs_one_request_per_poll_and_no_list(s3wh, proxy):
    s3wh.create("log")
    s3wh.commit("log", append_rows(0, 3))
    p = start_cli(["follow", "db.log", *via(proxy, s3wh), "--nl", "--poll-interval", "0.2"])
    try:
        assert json.loads(p.stdout.readline())["id"] == 0  # the table as it is, then idle
        time.sleep(1.0)
        since = time.monotonic()
        time.sleep(4.0)
        counts = proxy.count(since)
        paths = {r.path.rsplit("/", 1)[-1] for r in proxy.requests(since)}
    finally:
        p.kill()
        p.wait(10)
    polls = 4.0 / 0.2
    assert "LIST" not in counts, counts
    # One request per poll, plus at most one gap/drop check (every 10 s: EARLIEST, one HEAD, and the snapshot after
    # the next: one missing from the middle of the history is a gap too).
    assert sum(counts.values()) <= polls + 3, counts
    assert sum(counts.values()) >= polls / 2, counts  # it really polls
    assert paths <= {"snapshot-2", "EARLIEST", "snapshot-1", "schema-0", "snapshot-3"}, paths


def test_consumer_position_is_one_put_per_snapshot_and_resumes(s3wh, proxy, tmp_path):
    s3wh.create("log")
    for c in range(4):
        s3wh.commit("log", append_rows(c, 5))
    args = ["follow", "db.log", *via(proxy, s3wh), "--from", "earliest", "--consumer-id", "billing", "--nl"]
    proxy.reset()
    first = run_cli(args + ["-e"], timeout=60)
    assert first.returncode == 0, first.stderr
    assert len(first.stdout.splitlines()) == 20
    writes = [r for r in proxy.requests() if r.method in ("PUT", "POST", "DELETE")]
    probe = [r for r in writes if "/consumer/.writable-" in r.path]  # the write check before the first row
    assert [r.method for r in probe] == ["PUT", "DELETE"], writes
    positions = [r for r in writes if r not in probe]
    assert all(r.method == "PUT" and r.path.endswith("/consumer/consumer-billing") for r in positions), writes
    assert len(positions) == 4  # one PUT per snapshot: no multipart upload, no directory markers
    # SIGKILL a live consumer mid-way while a writer commits: a restart delivers every row, at most the
    # snapshot in flight twice.
    out = str(tmp_path / "run.jsonl")
    p = start_cli_to_file(args, out)
    for c in range(4, 10):
        s3wh.commit("log", append_rows(c, 5))
    wait_for(lambda: len(json_lines(out)) >= 10, timeout=60)
    p.send_signal(signal.SIGKILL)
    p.wait(10)
    killed = _ids(json_lines(out))
    rest = run_cli(args + ["-e"], timeout=60)
    assert rest.returncode == 0, rest.stderr
    resumed = _ids(json.loads(line) for line in rest.stdout.splitlines())
    assert set(killed) | set(resumed) == {r["id"] for c in range(4, 10) for r in append_rows(c, 5)}
    assert len(set(killed) & set(resumed)) <= 5


@pytest.mark.parametrize("case", ["refused", "no-scheme", "no-bucket", "wrong-table"])
def test_bad_endpoint_or_bucket_is_named_in_one_line(s3wh, s3, case):
    s3wh.create("log")
    options = dict(s3wh.options)
    expect = {
        "refused": "connection refused",
        "no-scheme": "a plain-HTTP endpoint must be written http://HOST:PORT",
        "no-bucket": "bucket no-such-lake does not exist",
        "wrong-table": "table db.nope does not exist",
    }[case]
    table = "db.nope" if case == "wrong-table" else "db.log"
    if case == "refused":
        options["fs.s3.endpoint"] = f"http://127.0.0.1:{_free_port()}"
    elif case == "no-scheme":
        options["fs.s3.endpoint"] = s3.endpoint[len("http://"):]
    elif case == "no-bucket":
        options["warehouse"] = "s3://no-such-lake/warehouse"
    started = time.monotonic()
    r = run_cli(["follow", table, *s3wh.cli_args(options), "-e"], timeout=60)
    elapsed = time.monotonic() - started
    err = r.stderr.decode()
    assert r.returncode == 1 and r.stdout == b""
    assert len(err.strip().splitlines()) == 1 and expect in err, err
    assert "Traceback" not in err
    assert elapsed < 15  # not pyarrow's 10 attempts of a minute each


@pytest.mark.parametrize("case", ["wrong-secret", "unknown-key"])
def test_bad_credentials_are_named(tmp_path, case):
    from tests.conftest import TestWarehouse

    with S3Server(auth=True) as server:  # checks signatures against the keys it issued
        server.create_bucket("lake")
        wh = TestWarehouse("s3://lake/warehouse", server.catalog_options("s3://lake/warehouse"))
        wh.create("log")
        wh.commit("log", append_rows(0, 2))
        good = run_cli(["follow", "db.log", *wh.cli_args(), "-e"], timeout=60)
        assert good.returncode == 0 and len(good.stdout.splitlines()) == 2, good.stderr
        options = dict(wh.options)
        if case == "wrong-secret":
            options["fs.s3.accessKeySecret"] = "not-the-secret"
        else:
            options["fs.s3.accessKeyId"] = "AKIAUNKNOWNKEY000000"
        r = run_cli(["follow", "db.log", *wh.cli_args(options), "-e"], timeout=60)
    err = r.stderr.decode()
    expect = {"wrong-secret": "rejected the request signature: check the secret key (fs.s3.accessKeySecret)",
              "unknown-key": "does not know this access key id: check fs.s3.accessKeyId"}[case]
    assert r.returncode == 1 and expect in err and len(err.strip().splitlines()) == 1, err


def test_storage_down_at_start_is_one_line_at_once(s3wh, proxy):
    s3wh.create("log")
    s3wh.commit("log", append_rows(0, 2))
    proxy.go_down("refuse")
    try:
        started = time.monotonic()
        r = run_cli(["follow", "db.log", *via(proxy, s3wh), "-e"], timeout=60)
    finally:
        proxy.come_back()
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert len(err.strip().splitlines()) == 1 and "connection refused" in err, err
    assert time.monotonic() - started < 15


def test_storage_timeout_ends_a_follow_with_one_line(s3wh, proxy):
    """An outage mid-run: waited out (the status line says so) until --storage-timeout, then one line, exit 1."""
    s3wh.create("log")
    s3wh.commit("log", append_rows(0, 2))
    p = start_cli(["follow", "db.log", *via(proxy, s3wh), "--nl", "--storage-timeout", "3", "--stats",
                   "--poll-interval", "0.1"])
    try:
        assert json.loads(p.stdout.readline())["id"] == 0
        proxy.go_down("refuse")
        went_down = time.monotonic()
        code = p.wait(30)
        took = time.monotonic() - went_down
    finally:
        proxy.come_back()
        if p.poll() is None:
            p.kill()
    err = p.stderr.read().decode().strip().splitlines()
    assert code == 1, err
    assert any("storage unreachable since" in line and "connection refused" in line for line in err[:-1]), err
    assert err[-1].startswith("paimon-tail: storage unreachable for 3 s: cannot connect to"), err
    assert 3 <= took < 15
