"""The adapters over pypaimon's private API (``compat/adapters/``): every private name each one uses is listed
here and must exist in the installed pypaimon, so an upgrade that renames one fails here, not in a command; and
row_hash, commit_user, consumer_files and folded_manifests do what their callers need, on real tables (the others
are exercised by tests/stream/test_stream_parts.py, tests/service/store/test_store.py, tests/stream/test_quick_exit.py and
tests/compat/test_native_reads.py)."""
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

#: adapter → (pypaimon module, object in it, the private names of that object the adapter uses)
PRIVATE_NAMES = {
    "row_hash": [("pypaimon.write.row_key_extractor", "RowKeyExtractor", ["_binary_row_hash_code"])],
    "commit_user": [("pypaimon.write.write_builder", "WriteBuilder", ["_with_commit_user"])],
    "consumer_files": [("pypaimon.consumer.consumer_manager", "ConsumerManager",
                        ["_validate_consumer_id", "_consumer_path", "_consumer_directory"])],
    "folded_manifests": [("pypaimon.write.file_store_commit", "FileStoreCommit",
                          ["_write_manifest_files", "_collect_manifest_entries", "_try_commit"]),
                         ("pypaimon.manifest.manifest_file_manager", "ManifestFileManager", ["read_entries_parallel"]),
                         ("pypaimon.manifest.manifest_list_manager", "ManifestListManager", ["read_all"])],
    "kv_files": [("pypaimon.read.split_read", "MergeFileSplitRead",
                  ["file_reader_supplier", "_get_final_read_data_fields"]),
                 ("pypaimon.deletionvectors.deletion_vector", "DeletionVector", ["read"])],
    "streaming_scan": [("pypaimon.read.streaming_table_scan", "AsyncStreamingTableScan",
                        ["_create_initial_plan", "_create_follow_up_plan"]),
                       ("pypaimon.read.scanner.file_scanner", "FileScanner", ["_filter_manifest_entry"]),
                       ("pypaimon.read", "table_scan", ["authorize", "prune_scanner_by_auth"]),
                       ("pypaimon.read", "query_auth_split", ["wrap_plan_with_auth"])],
    "where_tokens": [("pypaimon.common", "where_parser", ["_TOKEN_PATTERN"])],
    # the attributes SnapshotManager.__init__ sets, which it sets instead: tests/stream/test_quick_exit.py compares them
    "local_snapshots": [],
    "native_reads": [],  # its option and log line: test_native_reads_relies_on_pypaimons_option_and_log_line
}


def test_every_adapter_is_listed():
    from tests import REPO

    adapters = REPO / "paimon_tail" / "compat" / "adapters"
    assert sorted(PRIVATE_NAMES) == sorted(p.stem for p in adapters.glob("*.py") if p.stem != "__init__")


@pytest.mark.parametrize("adapter", sorted(PRIVATE_NAMES))
def test_the_private_names_an_adapter_uses_exist(adapter):
    import importlib
    import inspect

    source = inspect.getsource(importlib.import_module(f"paimon_tail.compat.adapters.{adapter}"))
    for module, owner, names in PRIVATE_NAMES[adapter]:
        obj = getattr(importlib.import_module(module), owner, None)
        if obj is None:  # a submodule
            obj = importlib.import_module(f"{module}.{owner}")
        for name in names:
            assert hasattr(obj, name), f"pypaimon renamed {module}.{owner}.{name} (used by compat/adapters/{adapter})"
            assert name in source, f"compat/adapters/{adapter}.py no longer uses {name}: update PRIVATE_NAMES"


def test_native_reads_relies_on_pypaimons_option_and_log_line():
    """``native_reads`` turns the Rust reader on by pypaimon's option and counts its fallbacks by its log line."""
    import inspect

    import pypaimon.read.table_read as table_read

    from paimon_tail.compat.adapters import native_reads

    source = inspect.getsource(table_read)
    assert native_reads.OPTION in source
    assert native_reads._FALLBACK in source


def test_row_hash_is_paimons_binary_row_hash():
    """Equal to our plain-Python BinaryRow hash wherever that has one (which tests/service/keys/test_bucket_hash.py
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
