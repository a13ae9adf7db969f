"""Stand-in: a commit whose new snapshot starts from one manifest of the live files (manifest full compaction).

Uses
    ``FileStoreCommit`` (``commit.file_store_commit``) and its managers: ``_write_manifest_files`` (private),
    ``manifest_file_manager.read_entries_parallel``, and ``manifest_list_manager.read_all`` replaced for one
    commit

Why
    pypaimon's commit makes a snapshot's base manifest list from every manifest of the latest snapshot and never
    folds them: a table committed to every second (the demo's writer) gains a manifest per commit and each plan
    reads them all. Paimon Java folds them (``manifest.full-compaction-threshold-size``); the demo's compaction
    (``demo.compact``) does it here, through the commit's own manifest writer. If another writer commits in
    between, the commit sees another latest snapshot and gets its manifests unchanged. Demo upkeep only.

Delete when
    pypaimon's commit compacts manifests (a manifest merge or full compaction of its own), or takes the base
    manifests to commit on publicly.
"""
from __future__ import annotations

import uuid


def commit_folded(commit, messages) -> None:
    """``commit.commit(messages)`` with the new snapshot's base manifests folded into one."""
    store = commit.file_store_commit
    lists, original = store.manifest_list_manager, store.manifest_list_manager.read_all
    base = store.snapshot_manager.get_latest_snapshot()
    if base is not None:
        live = store.manifest_file_manager.read_entries_parallel(original(base), drop_stats=False)
        folded = store._write_manifest_files(live, f"manifest-{uuid.uuid4()}")

        def read_all(snapshot):
            return folded if snapshot is not None and snapshot.id == base.id else original(snapshot)

        lists.read_all = read_all
    try:
        commit.commit(messages)
    finally:
        lists.__dict__.pop("read_all", None)


__all__ = ["commit_folded"]
