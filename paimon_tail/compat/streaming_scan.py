"""The planning pieces of pypaimon's streaming scan, driven one snapshot at a time by ``stream/planner.py``.

Uses (pypaimon private API)
    ``AsyncStreamingTableScan._create_initial_plan`` and ``._create_follow_up_plan`` (the plan of one given
    snapshot), its ``._snapshot_manager`` and ``._manifest_list_manager``, and
    ``pypaimon.read.scanner.file_scanner.FileScanner._filter_manifest_entry`` (to keep files of some levels).

Why
    pypaimon's streaming scan plans snapshots from its own loop (sleeping between polls, its own start positions);
    paimon-tail's loop differs (start positions, notification, gaps, consumer positions written after output), so
    it asks the scan for the plan of each snapshot it chose. ``METHODS`` and ``ATTRIBUTES`` are checked by a test
    (tests/test_stream_parts.py), so a pypaimon upgrade that renames one fails loudly.

Delete when
    pypaimon's streaming scan plans a given snapshot through public methods (initial and follow-up plan, a level
    filter for the initial plan) and exposes its snapshot manager.
"""
from __future__ import annotations

from typing import Callable

METHODS = ("_create_initial_plan", "_create_follow_up_plan")
ATTRIBUTES = ("_snapshot_manager", "_manifest_list_manager", "predicate", "follow_up_scanner")


def snapshot_manager(scan):
    """The scan's ``SnapshotManager``."""
    return scan._snapshot_manager


def initial_plan(scan, snapshot):
    """Every row of the table at ``snapshot`` (merged for primary-key tables), as the scan's first plan."""
    return scan._create_initial_plan(snapshot)


def follow_up_plan(scan, snapshot):
    """The changes ``snapshot`` committed: its delta files, or its changelog files with a changelog producer."""
    return scan._create_follow_up_plan(snapshot)


def level_plan(scan, snapshot, keep_level: Callable[[int], bool]):
    """The initial plan of ``snapshot`` over the data files whose LSM level ``keep_level`` accepts."""
    from pypaimon.read.scanner.file_scanner import FileScanner

    manifests = scan._manifest_list_manager

    class _LevelScanner(FileScanner):
        def _filter_manifest_entry(self, entry, *args, **kwargs):
            return keep_level(entry.file.level) and super()._filter_manifest_entry(entry, *args, **kwargs)

    scanner = _LevelScanner(scan.table, lambda: (manifests.read_all(snapshot), snapshot),
                            predicate=scan.predicate, limit=None)
    return scanner.scan()


__all__ = ["ATTRIBUTES", "METHODS", "follow_up_plan", "initial_plan", "level_plan", "snapshot_manager"]
