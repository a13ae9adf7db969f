"""Shim: a primary-key table's changes of one snapshot read in the order they were committed.

Patches
    ``pypaimon.read.streaming_table_scan.AsyncStreamingTableScan._create_plan_from_manifests``

Why
    A streaming read of a primary-key table concatenates a split's files without merging them (the changelog's
    -U/+U pairs must stay), so the order of the files in a split is the order of the changes. Paimon Java keeps
    each bucket's files of a snapshot in one split, in the order of the manifest entries
    (``MergeTreeSplitGenerator.splitForStreaming``: "we don't split streaming scan files"), which is the order
    the writer produced them. pypaimon packs them like a batch read instead: sorted by key range
    (``IntervalPartition``) and cut into several splits. When one snapshot holds two changelog files of a bucket
    whose key ranges overlap (Java's ``lookup`` producer committing two compactions at once: the first one's
    ``+I k``, the second one's ``-U k``/``+U k``), the update came out before the insert it updates: a replica
    built from the events saw "an update from a row it never had" (tests/output/test_cdc_java.py, about one run
    in ten under load). Append tables are left to pypaimon (their rows have no order to keep).

Delete when
    pypaimon's streaming planner builds one split per bucket with the files in manifest order.
"""
from __future__ import annotations

import os
from typing import Dict, List, Tuple

from pypaimon.read.plan import Plan
from pypaimon.read.scanner.primary_key_table_split_generator import PrimaryKeyTableSplitGenerator
from pypaimon.read.streaming_table_scan import AsyncStreamingTableScan

NAME = "streaming_split_order"
_ORIGINAL = AsyncStreamingTableScan.__dict__["_create_plan_from_manifests"]


def _require_add(entry) -> bool:
    if entry.kind != 0:
        raise ValueError("Incremental manifests must contain only ADD entries")
    return True


def _create_plan_from_manifests(self, manifest_files: List, snapshot_id=None) -> Plan:
    if not self.table.is_primary_key_table or not manifest_files:
        return _ORIGINAL(self, manifest_files, snapshot_id)
    options = self.table.options
    entries = self._manifest_file_manager.read_entries_parallel(
        manifest_files, manifest_entry_filter=_require_add,
        max_workers=max(8, options.scan_manifest_parallelism(os.cpu_count() or 8)))
    entries = self._filter_entries_for_shard(entries) if entries else []
    buckets: Dict[Tuple, list] = {}
    for entry in entries:  # manifest order, per (partition, bucket)
        buckets.setdefault((tuple(entry.partition.values), entry.bucket), []).append(entry)
    generator = PrimaryKeyTableSplitGenerator(self.table, options.source_split_target_size(),
                                              options.source_split_open_file_cost(), deletion_files_map={},
                                              snapshot_id=snapshot_id)
    splits = []
    for group in buckets.values():
        splits += generator._build_split_from_pack([[entry.file for entry in group]], group, True)
    for split in splits:
        split.is_streaming = True
    return Plan(splits, snapshot_id=snapshot_id)


def install() -> None:
    AsyncStreamingTableScan._create_plan_from_manifests = _create_plan_from_manifests


def uninstall() -> None:
    AsyncStreamingTableScan._create_plan_from_manifests = _ORIGINAL
