"""pypaimon 2.1 (+ paimon_tail.compat) against real tables written by Paimon Java 0.9.

Java is the oracle: every comparison is against what Paimon Java 0.9 itself reads
from the same files (batch read, and its own streaming read per snapshot).
"""

from __future__ import annotations

import contextlib
import glob
import json
import os

import pytest

from tests.java import javafix as jf

from paimon_tail.errors import UnreadableFile

pytestmark = pytest.mark.java

_reason = jf.java_missing_reason()
if _reason:
    pytest.skip(f"PAIMON JAVA COMPATIBILITY TESTS SKIPPED: {_reason}", allow_module_level=True)

import paimon_tail.compat.patches as patches  # noqa: E402
from paimon_tail.compat.patches import orc_char_padding, value_stats_cols  # noqa: E402

JAVA_SCENARIOS = list(jf.SCENARIOS)
# Paimon 0.9's own streaming read of files written before an ALTER TABLE fails
# (ArrayIndexOutOfBounds in ColumnarRow), so Java's stream oracle starts at the
# first snapshot written with the final schema; test_stream_schema_evolution_old_files
# checks pypaimon on the older snapshots against the rows the scenario wrote.
STREAM_FROM = {"pk_schema_evolution": 3}


@pytest.fixture(scope="module")
def java_tables(java_env, tmp_path_factory):
    wh = str(tmp_path_factory.mktemp("java-tables"))
    jf.write_scenario(wh, *JAVA_SCENARIOS)
    oracles = jf.run_java(*[
        jf.oracle_command(wh, name, None, STREAM_FROM.get(name, "earliest"))
        for name in JAVA_SCENARIOS])
    return wh, dict(zip(JAVA_SCENARIOS, oracles))


@pytest.fixture(scope="module")
def py_tables(java_env, tmp_path_factory):
    wh = str(tmp_path_factory.mktemp("py-tables"))
    for name in jf.PY_SCENARIOS:
        jf.write_pypaimon_scenario(wh, name)
    oracles = jf.run_java(*[jf.oracle_command(wh, name, None, 1) for name in jf.PY_SCENARIOS])
    return wh, dict(zip(jf.PY_SCENARIOS, oracles))


def _by_snapshot(plans):
    return {p["snapshot"]: jf.canonical(p["rows"]) for p in plans}


def _assert_stream_matches(wh, name, oracle, start):
    got = jf.pypaimon_stream(wh, name, start, oracle["latest_snapshot"])
    java = _by_snapshot(oracle["stream"])
    py = _by_snapshot(got)
    assert java, f"{name}: Java streamed nothing, the scenario is broken"
    assert sorted(py) == sorted(java), f"{name}: snapshots with data differ"
    for snap in java:
        assert py[snap] == java[snap], f"{name}: rows of snapshot {snap} differ"
    return got


@contextlib.contextmanager
def without(shim):
    patches.install()
    shim.uninstall()
    try:
        yield
    finally:
        shim.install()


# ------------------------------------------------------------------ scenarios

def _table_dir(wh, name):
    return os.path.join(wh, "db.db", name)


def _files(wh, name, pattern):
    return glob.glob(os.path.join(_table_dir(wh, name), "**", pattern), recursive=True)


def _kinds(oracle):
    return [s["commit_kind"] for s in oracle["snapshots"]]


def _stream_kinds(oracle):
    return {r[0] for p in oracle["stream"] for r in p["rows"]}


SHAPE_CHECKS = {
    "pk_dedup": lambda wh, o: "COMPACT" in _kinds(o) and {"+I", "+U", "-D"} <= _stream_kinds(o),
    "pk_dv": lambda wh, o: bool(_files(wh, "pk_dv", "index-*")) and _kinds(o).count("COMPACT") >= 2,
    "pk_changelog_lookup": lambda wh, o: bool(_files(wh, "pk_changelog_lookup", "changelog-*"))
    and all(s["commit_kind"] == "COMPACT" for s in o["snapshots"] if s["has_changelog"])
    and {"-U", "+U", "-D"} <= _stream_kinds(o),
    "pk_orc": lambda wh, o: bool(_files(wh, "pk_orc", "data-*.orc"))
    and not _files(wh, "pk_orc", "data-*.parquet"),
    "pk_partitioned": lambda wh, o: len(glob.glob(os.path.join(_table_dir(wh, "pk_partitioned"), "dt=*"))) == 4,
    # the last commit (240..259) stays in level 0, which a first-row batch read skips
    "pk_first_row": lambda wh, o: sorted(r[0] for r in o["batch"]) == list(range(250))
    and all(r[1].startswith("first") for r in o["batch"] if r[0] < 200),
    "pk_partial_update": lambda wh, o: any(r[1] and r[2] is not None for r in o["batch"]),
    "pk_aggregation": lambda wh, o: all(r[2] == 3 * r[0] + 3 for r in o["batch"]),
    "append_fixed": lambda wh, o: len(glob.glob(os.path.join(_table_dir(wh, "append_fixed"), "bucket-*"))) == 2,
    "append_unaware": lambda wh, o: bool(glob.glob(os.path.join(_table_dir(wh, "append_unaware"), "bucket-0"))),
    "pk_expired": lambda wh, o: o["earliest_snapshot"] > 1 and len(o["snapshots"]) == 3,
    "pk_schema_evolution": lambda wh, o: o["fields"] == ["id", "label", "n", "extra"]
    and len(glob.glob(os.path.join(_table_dir(wh, "pk_schema_evolution"), "schema", "schema-*"))) == 3,
    "types_parquet": lambda wh, o: len(o["fields"]) == 19,
    "types_orc": lambda wh, o: bool(_files(wh, "types_orc", "data-*.orc"))
    and any(r[7] is not None and len(r[7]) < 4 for r in o["batch"]),
}


def test_every_scenario_has_a_shape_check():
    assert set(SHAPE_CHECKS) == set(JAVA_SCENARIOS)


@pytest.mark.parametrize("name", JAVA_SCENARIOS)
def test_scenario_shape(java_tables, name):
    """The Java scenario really exercises what it is named after."""
    wh, oracles = java_tables
    assert SHAPE_CHECKS[name](wh, oracles[name]), json.dumps(oracles[name]["snapshots"])


# ------------------------------------------------------------ Java-written

@pytest.mark.parametrize("name", JAVA_SCENARIOS)
def test_batch_matches_java(java_tables, name):
    wh, oracles = java_tables
    expected = oracles[name]["batch"]
    assert expected, f"{name}: Java reads no rows"
    assert jf.canonical(jf.pypaimon_batch(wh, name)) == jf.canonical(expected)


@pytest.mark.parametrize("name", JAVA_SCENARIOS)
def test_stream_matches_java(java_tables, name):
    wh, oracles = java_tables
    o = oracles[name]
    start = STREAM_FROM.get(name, o["earliest_snapshot"])
    assert o["latest_snapshot"] - start < 10
    _assert_stream_matches(wh, name, o, start)


def test_stream_schema_evolution_old_files(java_tables):
    """Snapshots 1 and 2 were written with older schemas (before ADD COLUMN / RENAME)."""
    wh, _ = java_tables
    got = {p["snapshot"]: p["rows"] for p in jf.pypaimon_stream(wh, "pk_schema_evolution", 1, 2)}
    assert jf.canonical(got[1]) == jf.canonical(["+I", i, f"a{i}", i, None] for i in range(100))
    assert jf.canonical(got[2]) == jf.canonical(["+I", i, f"b{i}", 2 * i, f"x{i}"] for i in range(50, 150))


@pytest.mark.parametrize("name", ["pk_dedup", "pk_dv", "pk_changelog_lookup", "append_fixed"])
def test_time_travel_matches_java(java_tables, name):
    """Batch read at every snapshot, not only the latest."""
    wh, oracles = java_tables
    o = oracles[name]
    ids = list(range(o["earliest_snapshot"], o["latest_snapshot"] + 1))
    java = jf.run_java(*[jf.oracle_command(wh, name, i) for i in ids])
    for snap, jo in zip(ids, java):
        assert jf.canonical(jf.pypaimon_batch(wh, name, snap)) == jf.canonical(jo["batch"]), snap


@pytest.mark.parametrize("name,column,low", [
    ("pk_dedup", "v", 2000), ("pk_orc", "v", 2000), ("append_fixed", "v", 300),
    ("pk_aggregation", "mx", 40), ("types_parquet", "t64", 0)])
def test_filtered_read_matches_java(java_tables, name, column, low):
    """A predicate on a value column: pypaimon prunes files with Java-written value stats."""
    wh, oracles = java_tables
    o = oracles[name]
    idx = o["fields"].index(column)
    expected = [r for r in o["batch"] if r[idx] is not None and r[idx] >= low]
    assert 0 < len(expected) < len(o["batch"])
    t = jf.open_table(wh, name)
    rb = t.new_read_builder()
    rb = rb.with_filter(rb.new_predicate_builder().greater_or_equal(column, low))
    got = jf.arrow_rows(rb.new_read().to_arrow(rb.new_scan().plan().splits()))
    got = [r for r in got if r[idx] is not None and r[idx] >= low]
    assert jf.canonical(got) == jf.canonical(expected)


def test_java_lookup_oracle(java_tables):
    """LocalTableQuery (the point-lookup oracle for colleagues) agrees with batch reads."""
    wh, oracles = java_tables
    batch = {r[0]: r for r in oracles["pk_dedup"]["batch"]}
    keys = [0, 5, 17, 150, 210, 255, 399, 1000]
    got = jf.java_lookup(wh, "pk_dedup", [[k] for k in keys])
    assert got == [batch.get(k) for k in keys]
    part = {(r[0], r[1]): r for r in oracles["pk_partitioned"]["batch"]}
    got = jf.java_lookup(wh, "pk_partitioned", [[3], [30], [10]], partition=["2024-01-02"])
    assert got == [part.get(("2024-01-02", k)) for k in (3, 30, 10)]


# ---------------------------------------------------------------- shims

def test_compat_install_is_idempotent():
    first = patches.install()
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    patched = ManifestFileManager._get_value_stats_fields
    assert patches.install() == first == patches.installed()
    assert ManifestFileManager._get_value_stats_fields is patched
    assert set(first) == {value_stats_cols.NAME, orc_char_padding.NAME, "s3_client", "known_size_reads",
                          "prefetched_reads", "schema_reads", "streaming_split_order", "metadata_cache", "file_errors"}


def test_shim_value_stats_cols_is_needed(java_tables):
    wh, oracles = java_tables
    with without(value_stats_cols):
        # (pypaimon's KeyError, named with its manifest by compat/patches/file_errors.py)
        with pytest.raises(UnreadableFile, match="cannot read manifest .* it has no '_VALUE_STATS_COLS'"):
            jf.pypaimon_batch(wh, "pk_dedup")
    assert jf.canonical(jf.pypaimon_batch(wh, "pk_dedup")) == jf.canonical(oracles["pk_dedup"]["batch"])


def test_shim_orc_char_padding_is_needed(java_tables):
    wh, oracles = java_tables
    idx = oracles["types_orc"]["fields"].index("c4")
    with without(orc_char_padding):
        raw = jf.pypaimon_batch(wh, "types_orc")
    padded = [r[idx] for r in raw if r[idx] is not None]
    assert padded and all(len(v) == 4 for v in padded), "pyarrow no longer pads ORC CHAR: drop the shim"
    assert jf.canonical(raw) != jf.canonical(oracles["types_orc"]["batch"])
    fixed = jf.pypaimon_batch(wh, "types_orc")
    assert jf.canonical(fixed) == jf.canonical(oracles["types_orc"]["batch"])


# ------------------------------------------------------ pypaimon-written

@pytest.mark.parametrize("name", list(jf.PY_SCENARIOS))
def test_pypaimon_written_batch_matches_java(py_tables, name):
    wh, oracles = py_tables
    o = oracles[name]
    assert [s["commit_kind"] for s in o["snapshots"]] == ["APPEND"] * 3
    assert jf.canonical(jf.pypaimon_batch(wh, name)) == jf.canonical(o["batch"])
    # pypaimon 2.1 never compacts: for deletion-vector and first-row tables a batch
    # read (Java's and pypaimon's alike) skips level-0 files, so nothing is visible.
    if name in ("py_pk_dv", "py_pk_first_row"):
        assert o["batch"] == []
    else:
        assert o["batch"]


@pytest.mark.parametrize("name", list(jf.PY_SCENARIOS))
def test_pypaimon_written_stream_matches_java(py_tables, name):
    wh, oracles = py_tables
    got = _assert_stream_matches(wh, name, oracles[name], 1)
    assert [p["snapshot"] for p in got] == [1, 2, 3]


def test_mixed_writers(java_env, tmp_path):
    """Java and pypaimon alternately write one PK table; both read it the same way."""
    wh = str(tmp_path / "mixed-wh")
    order = jf.write_mixed(wh)
    assert order == ["java", "pypaimon"] * 3
    o = jf.java_oracle(wh, "mixed", stream_from=1)
    names = {r[1] for r in o["batch"]}
    assert {"java0", "java1", "java2", "py0", "py1", "py2"} <= names
    assert "COMPACT" in _kinds(o)
    assert jf.canonical(jf.pypaimon_batch(wh, "mixed")) == jf.canonical(o["batch"])
    _assert_stream_matches(wh, "mixed", o, 1)


def test_java_warehouse_fixture(java_warehouse):
    """The fixture colleagues use: a fresh warehouse holding one Java scenario."""
    wh = java_warehouse("append_unaware")
    o = jf.java_oracle(wh, "append_unaware")
    assert len(o["batch"]) == 460
    assert jf.canonical(jf.pypaimon_batch(wh, "append_unaware")) == jf.canonical(o["batch"])
