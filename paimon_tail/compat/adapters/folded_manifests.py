"""Stand-in: a COMPACT commit of a table's rewritten files, whose snapshot starts from one manifest of the live
files (manifest full compaction).

Uses
    ``FileStoreCommit`` (``commit.file_store_commit``) and its managers: ``_write_manifest_files``,
    ``_collect_manifest_entries`` and ``_try_commit`` (private), ``manifest_file_manager.read_entries_parallel``,
    and ``manifest_list_manager.read_all`` replaced for one commit

Why
    pypaimon writes no compaction: its commits are APPEND, or OVERWRITE when they remove files, and Paimon's
    streaming readers skip the one and read the other. The demo's compaction (``demo.compact``) rewrites a table's
    rows into fewer files; committed as an OVERWRITE it would be a change that readers skip only by default (with
    ``streaming-read-overwrite`` they would read every row as removed and added again). Paimon commits a
    compaction as a COMPACT snapshot, which no streaming reader reads; here the same, through the commit's own
    retrying ``_try_commit`` with the kind Paimon uses. And pypaimon's commit makes a snapshot's base manifest list
    from every manifest of the latest snapshot and never folds them: a table committed to every second (the demo's
    writer) gains a manifest per commit and each plan reads them all. Paimon Java folds them
    (``manifest.full-compaction-threshold-size``); the compaction's commit does it here, through the commit's own
    manifest writer. If another writer commits in between, the compaction is not committed (its files are
    removed): it rewrote the snapshot it read. Demo upkeep only.

Delete when
    pypaimon writes compactions (a COMPACT commit of its own, with manifest compaction), or takes the base
    manifests and the commit kind to commit with publicly.
"""
from __future__ import annotations

import uuid

COMPACT = "COMPACT"


def commit_compacted(commit, messages, base, top_level: int = 0) -> bool:
    """Commit ``messages`` (every row of the table at snapshot ``base``, written again) as a COMPACT snapshot that
    removes every file of ``base`` and adds theirs at ``top_level`` (Paimon's full compaction writes the highest
    level of a primary-key table), with the new snapshot's base manifests folded into one. False (nothing
    committed, the new files removed) when another commit came after ``base``."""
    from pypaimon.manifest.schema.manifest_entry import ManifestEntry

    store = commit.file_store_commit
    lists, files = store.manifest_list_manager, store.manifest_file_manager
    added = store._collect_manifest_entries(messages)
    for entry in added:
        entry.file.level = top_level
    live = files.read_entries_parallel(lists.read_all(base), drop_stats=False)
    removed = [ManifestEntry(kind=1, partition=e.partition, bucket=e.bucket, total_buckets=e.total_buckets,
                             file=e.file) for e in live]
    raced = []

    def entries(latest):
        if latest is None or latest.id != base.id:
            raced.append(latest)
            return []
        return removed + added

    original = lists.read_all
    folded = store._write_manifest_files(live, f"manifest-{uuid.uuid4()}")

    def read_all(snapshot):
        return folded if snapshot is not None and snapshot.id == base.id else original(snapshot)

    lists.read_all = read_all
    try:
        store._try_commit(commit_kind=COMPACT, commit_identifier=2 ** 63 - 1, commit_entries_plan=entries,
                          detect_conflicts=True)
    finally:
        lists.__dict__.pop("read_all", None)
    if raced:
        commit.abort(messages)
        return False
    return True


__all__ = ["COMPACT", "commit_compacted"]
