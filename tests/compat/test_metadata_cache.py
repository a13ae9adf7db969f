"""pypaimon's file-format metadata cache (``paimon_tail/compat/patches/metadata_cache.py``): off unless asked for, the option
reaches every file IO we read with (an executor's copies too), and when on it holds what its setting says.

Memory is measured where it is spent: anonymous RSS of a fresh process that reads a few thousand Parquet files with
pypaimon's own reader in two threads (as a follower's read pool does), with and without the shim."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_tail.compat import patches
from paimon_tail.compat.patches import metadata_cache

FILES = 1500
SETTING_MIB = 8

# Reads every file of DIR once with pypaimon's FormatPyArrowReader in 2 threads; prints the growth of anonymous RSS
# (from after the first 100 files) and the cache's entries.
_READER = textwrap.dedent("""
    import gc, json, os, sys
    from concurrent.futures import ThreadPoolExecutor
    import pyarrow.parquet as pq
    from pypaimon.common.options import Options
    from pypaimon.filesystem.local_file_io import LocalFileIO
    from pypaimon.read.reader import format_pyarrow_reader as fr
    from pypaimon.schema.data_types import PyarrowFieldParser

    directory, setting, shim = sys.argv[1], sys.argv[2], sys.argv[3] == "shim"
    if shim:
        from paimon_tail.compat import patches
        patches.install()
    io = LocalFileIO(None, Options({} if setting == "unset" else {"file-format.metadata-cache.max-size": setting}))
    paths = sorted(os.path.join(directory, n) for n in os.listdir(directory))
    fields = PyarrowFieldParser.to_paimon_schema(pq.read_schema(paths[0]))

    def read(path):
        reader = fr.FormatPyArrowReader(io, "parquet", path, fields, None, file_size=os.path.getsize(path))
        rows = 0
        while (batch := reader.read_arrow_batch()) is not None:
            rows += batch.num_rows
        reader.close()
        return rows

    def anon_kib():
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("RssAnon:"))

    with ThreadPoolExecutor(2) as pool:
        assert sum(pool.map(read, paths[:100])) == 500
        gc.collect()
        before = anon_kib()
        assert sum(pool.map(read, paths[100:])) == 5 * (len(paths) - 100)
    gc.collect()
    cache = fr._FILE_FORMAT_DATASET_CACHE
    print(json.dumps({"growth_mib": (anon_kib() - before) / 1024, "entries": len(cache._entries) if cache else 0}))
""")


@pytest.fixture(scope="module", params=[6, 40], ids=["6-columns", "40-columns"])
def parquet_files(request, tmp_path_factory):
    """FILES small Parquet files of ``param`` columns (5 rows each), as a writer's many small commits leave."""
    directory = tmp_path_factory.mktemp(f"parquet{request.param}")
    schema = pa.schema([(f"c{i}", pa.string() if i % 3 == 0 else pa.int64()) for i in range(request.param)])
    columns = {f.name: pa.array([str(j) for j in range(5)]) if f.type == pa.string() else pa.array(range(5))
               for f in schema}
    for i in range(FILES):
        pq.write_table(pa.table(columns, schema=schema), directory / f"f{i:05d}.parquet")
    return str(directory)


def _read_all(directory: str, setting: str, shim: bool) -> dict:
    ran = subprocess.run([sys.executable, "-c", _READER, directory, setting, "shim" if shim else "pypaimon"],
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout)


def test_pypaimon_entry_estimate_is_low(parquet_files):
    """Without the shim the setting does not bound the cache: pypaimon counts an entry at its footer's size (at
    least 8 KiB) and it holds 2.6x (6 columns) to 13x (40 columns) that, so the cache takes well over its setting.
    When this fails, pypaimon counts entries honestly: the shim's measured sizes can go."""
    pypaimon = _read_all(parquet_files, f"{SETTING_MIB}mb", shim=False)
    assert pypaimon["entries"] > 500, pypaimon
    assert pypaimon["growth_mib"] > 1.75 * SETTING_MIB, pypaimon


def test_a_set_size_bounds_what_the_cache_holds(parquet_files):
    """With the shim the same setting is what the cache holds (entries counted at their measured cost), and the
    cache still caches."""
    ours = _read_all(parquet_files, f"{SETTING_MIB}mb", shim=True)
    assert ours["entries"] >= 40, ours
    assert ours["growth_mib"] <= SETTING_MIB + 4, ours  # (+ what the same reads hold without a cache)


def test_no_cache_unless_asked_for(parquet_files):
    """pypaimon's default caches (50 MiB as it counts); ours does not: reading thousands of files leaves nothing."""
    default = _read_all(parquet_files, "unset", shim=False)
    assert default["entries"] == FILES, default  # pypaimon caches every file it opened (under 4,096)
    ours = _read_all(parquet_files, "unset", shim=True)
    assert ours["entries"] == 0 and ours["growth_mib"] <= 4, ours


def _table(tmp_path, **options):
    import paimon_tail
    from pypaimon import CatalogFactory, Schema

    wh = str(tmp_path / "wh")
    catalog = CatalogFactory.create({"warehouse": wh})
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(pa.schema([("k", pa.int64()), ("v", pa.string())]),
                                                            primary_keys=["k"], options={"bucket": "2"}), True)
    table = catalog.get_table("db.t")
    for c in range(3):
        builder = table.new_batch_write_builder()
        write, commit = builder.new_write(), builder.new_commit()
        write.write_arrow(pa.table({"k": [c, c + 10], "v": ["a", "b"]}, schema=pa.schema(
            [pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])))
        commit.commit(write.prepare_commit())
        write.close()
        commit.close()
    return paimon_tail.open_table("db.t", warehouse=wh, options=options)


def _cached_entries() -> int:
    from pypaimon.read.reader import format_pyarrow_reader as fr

    cache = fr._FILE_FORMAT_DATASET_CACHE
    return len(cache._entries) if cache is not None else 0


@pytest.mark.parametrize("setting", [None, "1mb"])
def test_the_catalog_option_reaches_table_reads_and_the_executors_file_reads(tmp_path, setting):
    """Reads through a table opened by paimon-tail, and an executor's reads of single data files (its store's
    ``KeyValueFiles``), cache exactly when ``-O file-format.metadata-cache.max-size`` says so."""
    from pypaimon.read.reader import format_pyarrow_reader as fr

    from paimon_tail.compat.adapters.kv_files import FileRef, KeyValueFiles

    table = _table(tmp_path, **({metadata_cache.OPTION.key(): setting} if setting else {}))
    assert metadata_cache.NAME in patches.installed()
    read = table.new_read_builder()
    splits = read.new_scan().plan().splits()
    files = sum(len(split.files) for split in splits)
    assert files >= 3 and read.new_read().to_arrow(splits).num_rows == 6
    assert _cached_entries() == (files if setting else 0)

    fr._reset_file_format_dataset_cache()
    store_files = KeyValueFiles(table)
    rows = sum(store_files.read(FileRef(meta, tuple(split.partition.values), split.bucket)).num_rows
               for split in splits for meta in split.files)
    assert rows == 6
    assert _cached_entries() == (files if setting else 0)
