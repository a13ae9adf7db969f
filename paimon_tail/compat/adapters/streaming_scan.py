"""The planning pieces of pypaimon's streaming scan, driven one snapshot at a time by ``stream/planner.py``.

Uses (pypaimon private API)
    ``AsyncStreamingTableScan._create_initial_plan`` and ``._create_follow_up_plan`` (the plan of one given
    snapshot), its ``._snapshot_manager``, ``._manifest_list_manager``, ``._query_auth_fn`` and ``._read_type``
    (REST query auth of the plans made here, as pypaimon's own scans authorize theirs: ``table_scan.authorize``,
    ``prune_scanner_by_auth``, ``query_auth_split.wrap_plan_with_auth``), and
    ``pypaimon.read.scanner.file_scanner.FileScanner._filter_manifest_entry`` (to keep some files: of some
    levels, created after a time, removed or added by an overwrite).

Why
    pypaimon's streaming scan plans snapshots from its own loop (sleeping between polls, its own start positions);
    paimon-tail's loop differs (start positions, notification, gaps, consumer positions written after output), so
    it asks the scan for the plan of each snapshot it chose. ``METHODS`` and ``ATTRIBUTES`` are checked by a test
    (tests/stream/test_stream_parts.py), so a pypaimon upgrade that renames one fails loudly.

Delete when
    pypaimon's streaming scan plans a given snapshot through public methods (initial and follow-up plan, a level
    filter for the initial plan) and exposes its snapshot manager.
"""
from __future__ import annotations

from typing import Callable

METHODS = ("_create_initial_plan", "_create_follow_up_plan")
ATTRIBUTES = ("_snapshot_manager", "_manifest_list_manager", "predicate", "follow_up_scanner", "_query_auth_fn",
              "_read_type")


def snapshot_manager(scan):
    """The scan's ``SnapshotManager``."""
    return scan._snapshot_manager


def initial_plan(scan, snapshot):
    """Every row of the table at ``snapshot`` (merged for primary-key tables), as the scan's first plan."""
    return scan._create_initial_plan(snapshot)


def follow_up_plan(scan, snapshot):
    """The changes ``snapshot`` committed: its delta files, or its changelog files with a changelog producer."""
    return scan._create_follow_up_plan(snapshot)


def manifest_lists(scan):
    """The scan's ``ManifestListManager`` (base, delta and changelog manifests of a snapshot)."""
    return scan._manifest_list_manager


def filtered_plan(scan, snapshot, keep_entry: Callable[[object], bool], manifests=None):
    """The initial (full) plan of ``snapshot`` over the manifest entries ``keep_entry`` accepts; ``manifests``
    (default: the snapshot's own) say which files there are. REST query auth applies as in pypaimon's plans:
    partitions pruned by the row filter, splits wrapped to filter and mask the rows read."""
    from pypaimon.read.query_auth_split import wrap_plan_with_auth
    from pypaimon.read.scanner.file_scanner import FileScanner
    from pypaimon.read.table_scan import authorize, prune_scanner_by_auth

    lists = scan._manifest_list_manager
    metas = manifests if manifests is not None else lists.read_all(snapshot)

    class _FilteredScanner(FileScanner):
        def _filter_manifest_entry(self, entry, *args, **kwargs):
            return keep_entry(entry) and super()._filter_manifest_entry(entry, *args, **kwargs)

    scanner = _FilteredScanner(scan.table, lambda: (metas, snapshot), predicate=scan.predicate, limit=None)
    auth = authorize(scan.table, scan._query_auth_fn, scan._read_type)
    if auth is not None:
        prune_scanner_by_auth(scan.table, scanner, auth)
    return wrap_plan_with_auth(auth, scanner.scan())


def level_plan(scan, snapshot, keep_level: Callable[[int], bool]):
    """The initial plan of ``snapshot`` over the data files whose LSM level ``keep_level`` accepts."""
    return filtered_plan(scan, snapshot, lambda entry: keep_level(entry.file.level))


def query_auth(scan):
    """The REST catalog's row filter and column masks for this scan's reads (pypaimon's ``TableQueryAuthResult``),
    or None when the table has none (no REST catalog, ``query-auth.enabled`` off, or no restriction)."""
    from pypaimon.read.table_scan import authorize

    return authorize(scan.table, scan._query_auth_fn, scan._read_type)


__all__ = ["ATTRIBUTES", "METHODS", "filtered_plan", "follow_up_plan", "initial_plan", "level_plan",
           "manifest_lists", "query_auth", "snapshot_manager"]
