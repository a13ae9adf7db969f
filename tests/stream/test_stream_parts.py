"""The streaming core's parts on their own: positions grammar, notifier, consumer store, pypaimon contract."""
from __future__ import annotations

import asyncio
import os
import time

import pytest

import paimon_tail
from paimon_tail.errors import UsageError
from paimon_tail.stream.notify import ChangeNotifier, InotifyNotifier, notifier_for
from paimon_tail.compat.adapters.streaming_scan import ATTRIBUTES as _PYPAIMON_SCAN_ATTRIBUTES
from paimon_tail.compat.adapters.streaming_scan import METHODS as _PYPAIMON_SCAN_METHODS
from paimon_tail.stream.positions import parse_end, parse_start, parse_timestamp

from tests.conftest import append_rows


@pytest.mark.parametrize("text, kind, sid", [
    ("latest-full", "latest-full", None), ("latest", "latest", None), ("earliest", "earliest", None),
    ("snapshot:7", "snapshot", 7), ("snapshot-full:3", "snapshot-full", 3), ("compacted-full", "compacted-full", None),
    ("file-creation-time:1790000000000", "file-creation-time", None),
    ("creation-timestamp:1790000000000", "creation-timestamp", None), ("tag:t1", "tag", None),
])
def test_parse_start(text, kind, sid):
    p = parse_start(text)
    assert (p.kind, p.snapshot_id) == (kind, sid) and str(p) == text


def test_every_paimon_scan_mode_has_its_form():
    """Paimon's scan.mode values, each with its --from form (``full`` is Paimon's deprecated latest-full)."""
    assert parse_start("full") == parse_start("latest-full")
    assert parse_start("file-creation-time:2026-11-01T00:00:00Z").timestamp_ms == 1793491200000
    assert parse_start("tag:nightly").tag == "nightly"
    assert parse_end("tag:nightly").tag == "nightly" and str(parse_end("tag:nightly")) == "tag:nightly"


@pytest.mark.parametrize("text", ["", "snapshot:0", "snapshot:-1", "snapshot:", "fuller", "timestamp:soon", "-5x",
                                  "tag:", "tag:12", "tag:a/b", "file-creation-time:soon", "compacted"])
def test_parse_start_rejects(text):
    with pytest.raises(UsageError):
        parse_start(text)


def test_timestamps_and_durations():
    now = time.time() * 1000
    assert parse_timestamp("1790000000000") == 1790000000000
    assert parse_timestamp("2026-11-01T00:00:00Z") == 1793491200000
    assert abs(parse_timestamp("-1h") - (now - 3_600_000)) < 5_000
    assert abs(parse_start("-15m").timestamp_ms - (now - 900_000)) < 5_000
    assert parse_end("snapshot:5").snapshot_id == 5
    assert parse_end("timestamp:1790000000000").timestamp_ms == 1790000000000


def test_notifier_inotify_on_local_dirs_and_polling_backs_off(tmp_path):
    n = notifier_for(str(tmp_path))
    assert isinstance(n, InotifyNotifier)

    async def woken_by_file() -> float:
        t = time.monotonic()
        loop = asyncio.get_running_loop()
        loop.call_later(0.05, lambda: (tmp_path / "snapshot-1").write_text("x"))
        await n.wait()
        return time.monotonic() - t

    assert asyncio.run(woken_by_file()) < 0.5  # the fallback re-check is 1 s
    n.close()
    missing = notifier_for(str(tmp_path / "not-yet"))
    assert missing.mechanism == "poll" and not missing.upgradeable()
    (tmp_path / "not-yet").mkdir()
    assert missing.upgradeable()
    remote = notifier_for("s3://bucket/wh/db.db/t/snapshot", poll_interval=0.04)
    assert isinstance(remote, ChangeNotifier) and not remote.upgradeable()

    async def intervals():
        for _ in range(5):
            await remote.wait()
        return remote._interval

    assert asyncio.run(intervals()) == pytest.approx(0.04)  # backed off to the max while nothing happens
    remote.activity()
    assert remote._interval == remote.min_interval


def test_consumer_store_is_atomic_and_paimon_compatible(wh):
    wh.create("log")
    wh.commit("log", append_rows(0))
    table = paimon_tail.open_table("db.log", warehouse=wh.path)
    store = paimon_tail.stream.ConsumerStore(table)
    for n in range(1, 50):
        store.set("c", n)
    assert store.get("c") == 49 and store.all() == {"c": 49}
    files = os.listdir(f"{table.table_path}/consumer")
    assert files == ["consumer-c"], "no temporary files left behind"
    from pypaimon.consumer.consumer_manager import ConsumerManager

    assert ConsumerManager(table.file_io, table.table_path).consumer("c").next_snapshot == 49
    with pytest.raises(UsageError):
        store.set("../x", 1)


def test_pypaimon_scan_pieces_we_drive_exist(wh):
    """planner.py drives (through compat/adapters/streaming_scan.py) these private parts of pypaimon's AsyncStreamingTableScan: fail loudly if renamed."""
    from pypaimon.read.streaming_table_scan import AsyncStreamingTableScan

    for name in _PYPAIMON_SCAN_METHODS:
        assert callable(getattr(AsyncStreamingTableScan, name, None)), name
    scan = wh.create("log").new_stream_read_builder().new_streaming_scan()
    for name in _PYPAIMON_SCAN_ATTRIBUTES:
        assert hasattr(scan, name), name


def test_small_batches_are_put_together_in_order():
    """``coalesced``: runs of small batches (pypaimon's Rust reader hands out 1,024 rows at a time) become batches
    of at least ``rows`` rows; a big one passes untouched; a new schema starts a new batch; nothing is lost."""
    import pyarrow as pa

    from paimon_tail.stream.reader import coalesced

    def batch(start, n, name="id"):
        return pa.record_batch([pa.array(range(start, start + n), pa.int64())], names=[name])

    parts = [batch(0, 1024), batch(1024, 1024), batch(2048, 5000), batch(7048, 10), batch(7058, 9000),
             batch(16058, 3, "other"), batch(16061, 4, "other")]
    big = parts[4]
    out = list(coalesced(iter(parts), 2500))
    assert [b.num_rows for b in out] == [7048, 9010, 7]
    assert [b.schema.names for b in out] == [["id"], ["id"], ["other"]]
    assert pa.Table.from_batches(out[:2]).column("id").to_pylist() == list(range(16058))
    assert out[2].column(0).to_pylist() == list(range(16058, 16065))
    assert list(coalesced(iter([big]), 2500))[0] is big
    assert list(coalesced(iter([]), 10)) == []
