"""The compat stand-ins over pypaimon's private API (compat/adapters/row_hash, commit_user, consumer_files,
folded_manifests): each does what its caller needs, on real tables; a pypaimon upgrade that renames what they
use fails here."""
from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal

import pyarrow as pa
import pytest
from pypaimon.schema.data_types import AtomicType, DataField

from paimon_tail.compat.adapters.commit_user import batch_write_builder, stream_write_builder
from paimon_tail.compat.adapters.consumer_files import consumer_directory, consumer_path, validate_consumer_id
from paimon_tail.compat.adapters.row_hash import binary_row_hash_code
from paimon_tail.service.keys.binary_row import row_hash, to_int32

PK = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def test_row_hash_is_paimons_binary_row_hash():
    """Equal to our plain-Python BinaryRow hash wherever that has one (which tests/service/test_bucket_hash.py
    checks against Paimon's own bytes)."""
    cases = [(["BIGINT"], [7]), (["BIGINT"], [-(1 << 62)]), (["INT", "STRING"], [3, "héllo wörld, long"]),
             (["STRING"], [""]), (["DECIMAL(10, 2)"], [Decimal("12.34")]), (["DATE"], [dt.date(2024, 2, 29)])]
    for types, values in cases:
        fields = [DataField(i, f"c{i}", AtomicType(t)) for i, t in enumerate(types)]
        assert to_int32(binary_row_hash_code(values, fields)) == row_hash(values, types), (types, values)


def _write(builder, rows, *identifier):
    write = builder.new_write()
    try:
        write.write_arrow(pa.Table.from_pylist(rows, schema=PK))
        return write.prepare_commit(*identifier)
    finally:
        write.close()


def test_commit_user_is_in_the_snapshot(wh):
    table = wh.create("t", PK, primary_keys=["id"], options={"bucket": "1"})
    builder = batch_write_builder(table, "paimon-tail-test-batch")
    commit = builder.new_commit()
    try:
        commit.commit(_write(builder, [{"id": 1, "v": "a"}]))
    finally:
        commit.close()
    snap = table.snapshot_manager().get_latest_snapshot()
    assert snap.commit_user == "paimon-tail-test-batch"

    builder = stream_write_builder(table, "paimon-tail-test-stream")
    commit = builder.new_commit()
    try:
        commit.commit(_write(builder, [{"id": 2, "v": "b"}], 41), 41)
    finally:
        commit.close()
    snap = wh.table("t").snapshot_manager().get_latest_snapshot()
    assert (snap.commit_user, snap.commit_identifier) == ("paimon-tail-test-stream", 41)


def test_consumer_files_where_paimon_keeps_them(wh):
    from pypaimon.consumer.consumer import Consumer
    from pypaimon.consumer.consumer_manager import ConsumerManager

    table = wh.create("c", PK, primary_keys=["id"], options={"bucket": "1"})
    manager = ConsumerManager(table.file_io, table.table_path)
    directory = consumer_directory(manager)
    assert directory.rstrip("/").endswith("/consumer") and str(table.table_path) in directory
    assert consumer_path(manager, "app-1") == f"{directory}/consumer-app-1"
    validate_consumer_id("app-1")
    for bad in ("", "a/b", "..", "a\\b"):
        with pytest.raises(ValueError):
            validate_consumer_id(bad)
    manager.reset_consumer("app-1", Consumer(next_snapshot=5))  # what pypaimon itself writes is where we say
    assert os.path.exists(consumer_path(manager, "app-1").replace("file://", ""))


def test_compaction_commit_is_compact_with_one_base_manifest(wh):
    """The demo's compaction: a COMPACT snapshot (not an OVERWRITE: no streaming reader reads it, with or without
    streaming-read-overwrite) that removes every live file, adds one per bucket at the top level, and starts from
    one folded manifest; the same rows."""
    from paimon_tail.demo import compact

    wh.create("f", PK, primary_keys=["id"], options={"bucket": "1"})
    for i in range(4):
        wh.commit("f", [{"id": i, "v": f"x{i}"}])
    table = wh.table("f")
    before = table.snapshot_manager().get_latest_snapshot()
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    lists = ManifestListManager(table)
    assert len(lists.read_all(before)) > 1
    assert compact(table)
    table = wh.table("f")
    after = table.snapshot_manager().get_latest_snapshot()
    assert after.id == before.id + 1 and after.commit_kind == "COMPACT"
    assert len(lists.read_base(after)) == 1  # folded: one manifest of the live files
    assert sorted(r["v"] for r in wh.batch_rows("f")) == ["x0", "x1", "x2", "x3"]
    splits = table.new_read_builder().new_scan().plan().splits()
    assert [f.level for s in splits for f in s.files] == [5]  # Paimon's full compaction: the highest level
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager

    delta = [e for m in lists.read_delta(after) for e in ManifestFileManager(table).read(m.file_name)]
    assert sorted(e.kind for e in delta) == [0] + [1] * 4  # every file of the snapshot read replaced by one
    # another commit after the snapshot it read: nothing committed
    wh.commit("f", [{"id": 9, "v": "x9"}])
    stale = wh.table("f").snapshot_manager().get_latest_snapshot()
    from paimon_tail.compat.adapters.folded_manifests import commit_compacted

    builder = table.new_batch_write_builder()
    write, commit = builder.new_write(), builder.new_commit()
    write.write_arrow(pa.Table.from_pylist([{"id": 1, "v": "x1"}], schema=PK))
    assert commit_compacted(commit, write.prepare_commit(), after) is False
    write.close(), commit.close()
    assert wh.table("f").snapshot_manager().get_latest_snapshot().id == stale.id
