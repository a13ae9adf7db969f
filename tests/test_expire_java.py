"""``paimon_tail.expire`` on tables Paimon Java 0.9 wrote (deletion vectors: index files; changelog-producer=lookup:
changelog files; partitions; compactions): Java reads every kept snapshot, and streams from the oldest, exactly as
before; every file a kept snapshot needs is still there, and the only files left besides are those no snapshot
ever referenced."""
from __future__ import annotations

import os

import pytest

from tests.java import javafix as jf

pytestmark = pytest.mark.java

_reason = jf.java_missing_reason()
if _reason:
    pytest.skip(f"PAIMON JAVA COMPATIBILITY TESTS SKIPPED: {_reason}", allow_module_level=True)

TABLES = ["pk_dv", "pk_changelog_lookup", "pk_partitioned", "append_fixed"]
RETAIN = 2


def _open(wh: str, name: str):
    from paimon_tail.catalog import open_table

    return open_table(f"db.{name}", warehouse=wh)


def _files(table) -> set:
    """Data, changelog and index files on disk (relative paths)."""
    out = set()
    for root, _, names in os.walk(table.table_path):
        rel = os.path.relpath(root, table.table_path)
        top = rel.split(os.sep)[0]
        if top in ("snapshot", "schema", "manifest", "consumer", "tag", "service", "."):
            continue
        out.update(os.path.join(rel, n) for n in names if not n.startswith("."))
    return out


def _referenced(table, snapshots) -> set:
    """Every data, changelog and index file ``snapshots`` need (relative paths)."""
    from paimon_tail.expire import _Expiration

    exp = _Expiration(table, table.snapshot_manager())
    out = set()
    for snapshot in snapshots:
        entries = exp._entries(exp._list(snapshot.base_manifest_list) + exp._list(snapshot.delta_manifest_list))
        live = {}
        for e in entries:
            key = (tuple(e.partition.values), e.bucket, e.file.file_name)
            if e.kind == 0:
                live[key] = e
            else:
                live.pop(key, None)
        changelog = [e for e in exp._entries(exp._list(snapshot.changelog_manifest_list)) if e.kind == 0]
        for e in list(live.values()) + changelog:
            out.update(os.path.relpath(p, table.table_path) for p in exp._data_paths(e))
        if snapshot.index_manifest:
            factory = table.path_factory()
            for e in exp.index.read(snapshot.index_manifest):
                path = factory.bucket_index_path(tuple(e.partition.values), e.bucket, e.index_file)
                out.add(os.path.relpath(path, table.table_path))
    return out


def test_java_tables_expire_as_paimon_would(java_env, java_warehouse):
    from paimon_tail.expire import expire_snapshots

    wh = java_warehouse(*TABLES)
    before = {}
    for name in TABLES:
        table = _open(wh, name)
        snapshots = table.snapshot_manager()
        latest = snapshots.get_latest_snapshot().id
        every = [snapshots.get_snapshot_by_id(i) for i in range(snapshots.try_get_earliest_snapshot().id, latest + 1)]
        assert len(every) >= RETAIN + 3, name
        kept = list(range(latest - RETAIN + 1, latest + 1))
        oracles = jf.run_java(jf.oracle_command(wh, name, None, kept[0]),
                              *[jf.oracle_command(wh, name, sid) for sid in kept[:-1]])
        on_disk = _files(table)
        ever = _referenced(table, every)
        before[name] = (kept, oracles, on_disk - ever)  # (files no snapshot references: not expiration's)
        assert ever <= on_disk, (name, sorted(ever - on_disk)[:5])

        done = expire_snapshots(table, RETAIN)
        assert (done.snapshots, done.earliest) == (len(every) - RETAIN, kept[0]), (name, done)
        assert done.data_files > 0 and done.manifests > 0, (name, done)
        if name == "pk_dv":
            assert done.index_files > 0, done  # deletion vectors of files compacted away
        if name == "pk_changelog_lookup":
            assert done.changelog_files > 0, done

    for name in TABLES:
        table = _open(wh, name)
        kept, oracles, orphans = before[name]
        snapshots = table.snapshot_manager()
        assert snapshots.try_get_earliest_snapshot().id == kept[0]
        needed = _referenced(table, [snapshots.get_snapshot_by_id(i) for i in kept])
        on_disk = _files(table)
        assert needed <= on_disk, (name, sorted(needed - on_disk)[:5])
        assert on_disk - needed <= orphans, (name, sorted(on_disk - needed - orphans)[:5])
        after = jf.run_java(jf.oracle_command(wh, name, None, kept[0]),
                            *[jf.oracle_command(wh, name, sid) for sid in kept[:-1]])
        for b, a in zip(oracles, after):
            assert jf.canonical(a["batch"]) == jf.canonical(b["batch"]), name
        assert [(p["snapshot"], jf.canonical(p["rows"])) for p in after[0]["stream"]] == \
            [(p["snapshot"], jf.canonical(p["rows"])) for p in oracles[0]["stream"]], name
    assert any(before[name][2] == set() for name in TABLES)
