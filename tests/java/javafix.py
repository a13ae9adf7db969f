"""Real Paimon tables written by Paimon Java 0.9, and Java as the read oracle.

What this module does
    * fetches the Paimon Java 0.9 jar (inside the ``pypaimon==0.2.0`` sdist) and
      Hadoop's shaded client jars and RocksDB's (``rocksdbjni``: Paimon's cross-partition
      bucket assigner keeps its key index in RocksDB) from inside the ``pyspark``
      distribution (or the venv's installed pyspark) from the package index, once, into
      ``<repo>/.cache/java/jars`` (git-ignored);
    * compiles ``tests/java/src/PaimonFixtures.java`` with ``javac`` into
      ``<repo>/.cache/java/classes-<source hash>``;
    * runs it to write named scenarios (database ``db``, filesystem catalog) and to
      read tables back with Java: batch read at a snapshot, Java's own streaming
      read per snapshot (``scan.mode=from-snapshot``) with row kinds, and
      ``LocalTableQuery`` point lookups;
    * reads the same tables with pypaimon (batch, per-snapshot streaming) and
      normalises both sides to the same JSON-like values so tests can compare.

For colleagues
    ``java_env``           session fixture; skips the test when Java is missing.
    ``java_warehouse``     fixture, a factory: ``java_warehouse("pk_dv")`` returns a
                           fresh warehouse directory holding that scenario.
    ``java_oracle(...)``   Java batch read (+ optional streaming read) as a dict.
    ``java_lookup(...)``   Java point lookups.
    ``write_mixed(...)``   table written alternately by Java and pypaimon.
    ``pypaimon_batch`` / ``pypaimon_stream``  the pypaimon side, normalised.

Scenarios: see ``SCENARIOS`` (scenario name == table name).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import decimal
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence

import pytest

REPO = Path(__file__).resolve().parents[2]
SRC = Path(__file__).resolve().parent / "src" / "PaimonFixtures.java"
CACHE = REPO / ".cache" / "java"
JARS = CACHE / "jars"

PYPAIMON_SDIST = "pypaimon==0.2.0"
PAIMON_JAR = "paimon-python-java-bridge-0.9.0.jar"
PYSPARK = "pyspark==4.3.0"
HADOOP_JARS = ("hadoop-client-api-", "hadoop-client-runtime-")
#: jars taken from PySpark's distribution: Hadoop's client, and RocksDB for GlobalIndexAssigner
SPARK_JARS = (*HADOOP_JARS, "rocksdbjni-")

DB = "db"

#: scenario name -> one-line description (table name == scenario name).
SCENARIOS: Dict[str, str] = {
    "pk_dedup": "PK, deduplicate, bucket=2, wide types; insert/update/delete + full compaction",
    "pk_dv": "as pk_dedup with deletion-vectors.enabled=true",
    "pk_changelog_lookup": "as pk_dedup with changelog-producer=lookup",
    "pk_orc": "as pk_dedup with file.format=orc",
    "pk_partitioned": "PK (dt, id) partitioned by dt, bucket=2; updates, deletes, compaction",
    "pk_first_row": "merge-engine=first-row; later duplicates ignored; compaction",
    "pk_partial_update": "merge-engine=partial-update; column-wise updates; compaction",
    "pk_aggregation": "merge-engine=aggregation (sum, max, last_non_null_value); compaction",
    "append_fixed": "append table, bucket=2 (bucket-key id); compaction",
    "append_unaware": "append table, bucket=-1",
    "pk_expired": "PK, 8 commits, snapshot.num-retained.max=3 (Java expires snapshots)",
    "pk_schema_evolution": "PK; Java adds a column, renames one and widens INT->BIGINT between commits",
    "types_parquet": "PK, every common type incl. ARRAY/MAP/ROW, DECIMAL(24,4), LTZ; parquet",
    "types_orc": "as types_parquet with file.format=orc",
}


class JavaUnavailable(RuntimeError):
    pass


def java_missing_reason() -> Optional[str]:
    for tool in ("java", "javac"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not on PATH: Paimon Java fixtures need a JDK (17 works)"
    return None


@contextlib.contextmanager
def _lock(name: str):
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f".{name}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _pip_download(spec: str, dest: Path, extra: Sequence[str] = ()) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", *extra, spec, "-d", str(dest)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise JavaUnavailable(f"`{' '.join(cmd)}` failed:\n{proc.stderr[-2000:]}")
    name = spec.split("==")[0]
    found = sorted(p for p in dest.iterdir() if p.name.lower().startswith(name.lower()))
    if not found:
        raise JavaUnavailable(f"pip download {spec} produced nothing in {dest}")
    return found[-1]


def _extract(archive: Path, wanted, dest: Path) -> List[Path]:
    """Extract members whose basename satisfies ``wanted`` into ``dest`` (flat)."""
    out = []
    if archive.name.endswith((".tar.gz", ".tgz")):
        with tarfile.open(archive) as tf:
            for m in tf.getmembers():
                base = os.path.basename(m.name)
                if m.isfile() and wanted(base):
                    with tf.extractfile(m) as src, open(dest / base, "wb") as dst:
                        shutil.copyfileobj(src, dst)
                    out.append(dest / base)
    else:
        with zipfile.ZipFile(archive) as zf:
            for n in zf.namelist():
                base = os.path.basename(n)
                if base and wanted(base):
                    with zf.open(n) as src, open(dest / base, "wb") as dst:
                        shutil.copyfileobj(src, dst)
                    out.append(dest / base)
    return out


def _spark_jars(directory: Path) -> List[Path]:
    """The ``SPARK_JARS`` in ``directory``, one per prefix, or [] unless every one is there."""
    found = []
    for prefix in SPARK_JARS:
        jars = sorted(directory.glob(f"{prefix}*.jar"))
        if not jars:
            return []
        found.append(jars[-1])
    return found


def _spark_jars_in_venv() -> List[Path]:
    try:
        import pyspark  # type: ignore
    except Exception:
        return []
    return _spark_jars(Path(pyspark.__file__).parent / "jars")


def ensure_jars() -> List[Path]:
    """Return the classpath jars, downloading them into .cache/java/jars once."""
    with _lock("jars"):
        JARS.mkdir(parents=True, exist_ok=True)
        paimon = JARS / PAIMON_JAR
        if not paimon.exists():
            with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
                sdist = _pip_download(PYPAIMON_SDIST, Path(tmp), ["--no-binary", ":all:"])
                got = _extract(sdist, lambda b: b == PAIMON_JAR, Path(tmp))
                if not got:
                    raise JavaUnavailable(f"{PAIMON_JAR} not found in {sdist.name}")
                shutil.move(str(got[0]), paimon)
        spark = _spark_jars(JARS)
        if not spark:
            venv = _spark_jars_in_venv()
            if venv:
                for p in venv:
                    shutil.copy(p, JARS / p.name)
            else:
                with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
                    dist = _pip_download(PYSPARK, Path(tmp))
                    _extract(dist, lambda b: b.startswith(SPARK_JARS) and b.endswith(".jar"), JARS)
            spark = _spark_jars(JARS)
            if not spark:
                raise JavaUnavailable(f"{', '.join(SPARK_JARS)} jars not found in pyspark")
        return [paimon, *spark]


def ensure_compiled() -> str:
    """Compile PaimonFixtures.java (once per source version); return the classpath."""
    reason = java_missing_reason()
    if reason:
        raise JavaUnavailable(reason)
    jars = ensure_jars()
    digest = hashlib.sha256(SRC.read_bytes()).hexdigest()[:12]
    classes = CACHE / f"classes-{digest}"
    jar_cp = os.pathsep.join(str(j) for j in jars)
    with _lock("javac"):
        if not (classes / "PaimonFixtures.class").exists():
            tmp = Path(tempfile.mkdtemp(dir=CACHE, prefix="classes-tmp-"))
            proc = subprocess.run(
                ["javac", "-nowarn", "-encoding", "UTF-8", "-cp", jar_cp, "-d", str(tmp), str(SRC)],
                capture_output=True, text=True,
            )
            if proc.returncode != 0:
                shutil.rmtree(tmp, ignore_errors=True)
                raise RuntimeError(f"javac failed:\n{proc.stderr}")
            if classes.exists():
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                tmp.rename(classes)
    return os.pathsep.join([str(classes), jar_cp])


_CLASSPATH: Optional[str] = None


def classpath() -> str:
    global _CLASSPATH
    if _CLASSPATH is None:
        _CLASSPATH = ensure_compiled()
    return _CLASSPATH


def run_java(*commands: Sequence[Any], timeout: float = 300) -> List[Any]:
    """Run several PaimonFixtures commands in one JVM; one parsed JSON result each."""
    args: List[str] = []
    for i, cmd in enumerate(commands):
        if i:
            args.append(";;")
        args.extend(str(a) for a in cmd)
    proc = subprocess.run(
        ["java", "-Xmx1g", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", classpath(),
         "PaimonFixtures", *args],
        capture_output=True, text=True, timeout=timeout,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"Paimon Java failed ({proc.returncode}) for {args}:\n{proc.stderr[-6000:]}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(("{", "["))]
    if len(lines) != len(commands):
        raise RuntimeError(f"expected {len(commands)} JSON lines, got:\n{proc.stdout[-3000:]}")
    return [json.loads(ln) for ln in lines]


# ---------------------------------------------------------------- Java side

def write_scenario(warehouse, *scenarios: str) -> None:
    """Write one or more scenarios into ``warehouse`` (one JVM)."""
    run_java(*[("write", warehouse, s) for s in scenarios])


def java_oracle(warehouse, table: str, snapshot: Optional[int] = None,
                stream_from: Optional[Any] = None) -> Dict[str, Any]:
    """Java batch read of ``db.table`` at ``snapshot`` (default latest).

    With ``stream_from`` (a snapshot id or ``"earliest"``) also Java's streaming read
    from that snapshot: ``result["stream"]`` is a list of
    ``{"snapshot": id, "rows": [[row_kind, *values], ...]}`` for snapshots that produced
    data.  Also returns ``fields``, ``latest_snapshot``, ``earliest_snapshot`` and
    ``snapshots`` (id, commit_kind, has_changelog).
    """
    return run_java(oracle_command(warehouse, table, snapshot, stream_from))[0]


def oracle_command(warehouse, table, snapshot=None, stream_from=None):
    """``stream_from``: ``"earliest"``, a snapshot id (from-snapshot), ``"full:N"``
    (from-snapshot-full) or ``"ts:MILLIS"`` (from-timestamp)."""
    return ("oracle", warehouse, table, "-" if snapshot is None else snapshot,
            "-" if stream_from is None else stream_from)


def java_lookup(warehouse, table: str, keys: Iterable[Sequence[Any]],
                partition: Optional[Sequence[Any]] = None,
                snapshot: Optional[int] = None) -> List[Optional[List[Any]]]:
    """Point lookups with Java's ``LocalTableQuery`` at the latest snapshot (or ``snapshot``).

    ``keys`` are trimmed primary keys (primary key minus partition fields) as lists of
    JSON values (dates/decimals as strings).  Returns one normalised row (or None) per
    key.  NOTE: Paimon 0.9's LocalTableQuery ignores deletion vectors; for DV tables
    use ``java_oracle`` (batch read) as the oracle instead.  It also returns the newest
    record of a key without merging it (partial-update / aggregation rows are not merged
    with older levels), and reads level 0 (first-row batch reads do not).
    """
    return run_java(lookup_command(warehouse, table, keys, partition, snapshot))[0]["results"]


def lookup_command(warehouse, table, keys, partition=None, snapshot=None):
    return ("lookup", warehouse, table, json.dumps([list(k) for k in keys]),
            "-" if partition is None else json.dumps(list(partition)),
            "-" if snapshot is None else snapshot)


#: Java scenarios outside ``SCENARIOS`` (written on demand by the follow/lookup tests).
#: ``pk_backlog``: 15 snapshots of upserts/deletes on one PK table (a catch-up backlog);
#: ``live_*``: tables written step by step (``write_live``) while paimon-tail serves them.
EXTRA_SCENARIOS: Dict[str, str] = {
    "pk_changelog_full": "as pk_dedup with changelog-producer=full-compaction",
    "pk_changelog_input": "as pk_dedup with changelog-producer=input; updates written as -U/+U pairs",
    "pk_backlog": "PK, 14 commits (upserts, +U, deletes) + a full compaction: 15 snapshots",
    "live_dedup": "PK deduplicate, written in steps: upserts, a delete, full compaction per step",
    "live_dv": "as live_dedup with deletion-vectors.enabled (compaction on commit + full)",
    "live_partial_update": "merge-engine=partial-update, written in steps, compacted per step",
    "live_aggregation": "merge-engine=aggregation (last_non_null_value, sum, max), in steps",
    "live_first_row": "merge-engine=first-row, written in steps, compacted per step",
}
LIVE_SCENARIOS = [n for n in EXTRA_SCENARIOS if n.startswith("live_")]


def write_live(warehouse, step: int, names: Sequence[str] = LIVE_SCENARIOS) -> None:
    """Step ``step`` of the ``live_*`` tables (step 0 creates them), one JVM."""
    run_java(*[("write", warehouse, n, step) for n in names])


def java_incremental(warehouse, table: str, start: int, end: int) -> List[List[Any]]:
    """Java's ``incremental-between=start,end`` batch read (start exclusive), rows with kinds.
    On primary-key tables Paimon 0.9 diffs merged buckets: ``-D`` for keys gone, the new
    row for keys added or changed."""
    return run_java(("incremental", warehouse, table, start, end))[0]["rows"]


def java_compact(warehouse, table: str) -> None:
    """A full compaction of ``db.table`` by Java (one COMPACT snapshot)."""
    run_java(("compact", warehouse, table))


def follow_rows(warehouse, table: str, start: str, catch_up: str = "replay",
                row_kind: bool = True, **options) -> List[Dict[str, Any]]:
    """paimon-tail's follower (library API) until the end: per snapshot
    ``{"snapshot": id, "kind": full|delta|diff, "rows": [[row_kind, *values], ...]}`` in the
    order it was delivered (the shape of ``java_oracle(...)["stream"]`` plus ``kind``)."""
    import paimon_tail

    t = paimon_tail.open_table(f"{DB}.{table}", warehouse=str(warehouse))
    out: List[Dict[str, Any]] = []
    for item in paimon_tail.follow_sync(t, start=start, exit_at_end=True, row_kind=row_kind,
                                        catch_up=catch_up, **options):
        rows = arrow_rows(pa_table(item.batch))
        if out and out[-1]["snapshot"] == item.snapshot_id and out[-1]["kind"] == item.kind:
            out[-1]["rows"].extend(rows)
        else:
            out.append({"snapshot": item.snapshot_id, "kind": item.kind, "rows": rows})
    return [p for p in out if p["rows"]]


def pa_table(batch):
    import pyarrow as pa

    return pa.Table.from_batches([batch])


def write_mixed(warehouse, steps: int = 3) -> List[str]:
    """Table ``db.mixed`` written alternately: Java step i, then pypaimon step i.

    Java step i upserts ids [40i, 40i+80) with name "java<i>", deletes id i, and step 2
    also fully compacts.  pypaimon step i (``new_batch_write_builder``) upserts ids
    [40i+20, 40i+50) with name "py<i>".  Returns the writer of each snapshot-producing
    step in order.
    """
    order = []
    for step in range(steps):
        run_java(("write", warehouse, "mixed", step))
        order.append("java")
        pypaimon_write_mixed(warehouse, step)
        order.append("pypaimon")
    return order


def pypaimon_write_mixed(warehouse, step: int) -> None:
    import pyarrow as pa

    table = open_table(warehouse, "mixed")
    ids = list(range(step * 40 + 20, step * 40 + 50))
    data = pa.table({
        "id": pa.array(ids, pa.int32()),
        "name": pa.array([f"py{step}"] * len(ids), pa.string()),
        "v": pa.array([100 + step] * len(ids), pa.int64()),
        "mx": pa.array([i * 10 for i in ids], pa.int32()),
    }, schema=pa.schema([
        pa.field("id", pa.int32(), nullable=False), ("name", pa.string()),
        ("v", pa.int64()), ("mx", pa.int32())]))
    wb = table.new_batch_write_builder()
    w = wb.new_write()
    c = wb.new_commit()
    try:
        w.write_arrow(data)
        c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()


# ------------------------------------------- tables written by pypaimon 2.1

#: pypaimon-written scenarios: name -> (primary keys, partition keys, options)
PY_SCENARIOS: Dict[str, tuple] = {
    "py_pk_dedup": (["id"], [], {"bucket": "2"}),
    "py_pk_dv": (["id"], [], {"bucket": "2", "deletion-vectors.enabled": "true"}),
    "py_pk_orc": (["id"], [], {"bucket": "2", "file.format": "orc"}),
    "py_pk_partitioned": (["dt", "id"], ["dt"], {"bucket": "2"}),
    "py_pk_first_row": (["id"], [], {"bucket": "2", "merge-engine": "first-row"}),
    "py_pk_partial_update": (["id"], [], {"bucket": "2", "merge-engine": "partial-update"}),
    "py_pk_aggregation": (["id"], [], {
        "bucket": "2", "merge-engine": "aggregation",
        "fields.name.aggregate-function": "last_non_null_value",
        "fields.v.aggregate-function": "sum", "fields.mx.aggregate-function": "max"}),
    "py_append_fixed": ([], [], {"bucket": "2", "bucket-key": "id"}),
    "py_append_unaware": ([], [], {"bucket": "-1"}),
}


def write_pypaimon_scenario(warehouse, name: str) -> None:
    """Create ``db.<name>`` with pypaimon 2.1 and write three commits with
    ``new_batch_write_builder`` (overlapping ids, nulls in later commits, so merge
    engines have something to merge).  Schema: dt STRING, id INT, name STRING,
    v BIGINT, mx INT."""
    import pyarrow as pa
    from pypaimon import CatalogFactory, Schema

    import paimon_tail.compat.patches
    paimon_tail.compat.patches.install()
    pks, parts, options = PY_SCENARIOS[name]
    schema = pa.schema([
        pa.field("dt", pa.string(), nullable=not pks),
        pa.field("id", pa.int32(), nullable=not pks),
        ("name", pa.string()), ("v", pa.int64()), ("mx", pa.int32())])
    catalog = CatalogFactory.create({"warehouse": str(warehouse)})
    catalog.create_database(DB, True)
    catalog.create_table(f"{DB}.{name}", Schema.from_pyarrow_schema(
        schema, partition_keys=parts or None, primary_keys=pks or None, options=dict(options)), False)
    table = catalog.get_table(f"{DB}.{name}")
    for c in range(3):
        ids = list(range(c * 60, c * 60 + 100))
        data = pa.table({
            "dt": [f"2024-01-0{1 + i % 2}" for i in ids],
            "id": pa.array(ids, pa.int32()),
            "name": [None if (c == 1 and i % 2) else f"c{c}_{i}" for i in ids],
            "v": pa.array([i + c for i in ids], pa.int64()),
            "mx": pa.array([(i * 7 + c * 13) % 50 for i in ids], pa.int32()),
        }, schema=schema)
        wb = table.new_batch_write_builder()
        w = wb.new_write()
        cm = wb.new_commit()
        try:
            w.write_arrow(data)
            cm.commit(w.prepare_commit())
        finally:
            w.close()
            cm.close()


# ------------------------------------------------------------ pypaimon side

def open_table(warehouse, table: str):
    import paimon_tail.compat.patches
    from pypaimon import CatalogFactory

    paimon_tail.compat.patches.install()
    catalog = CatalogFactory.create({"warehouse": str(warehouse)})
    return catalog.get_table(f"{DB}.{table}")


def normalise(value: Any) -> Any:
    """Python/pyarrow value -> the JSON value Java prints for it."""
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, datetime.datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%S.%f")
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, (list, tuple)):  # arrays; map entries are (key, value) tuples
        return [normalise(v) for v in value]
    if isinstance(value, dict):  # struct -> values in field order
        return [normalise(v) for v in value.values()]
    return value


def arrow_rows(table, with_kind: bool = False) -> List[List[Any]]:
    cols = [[normalise(v) for v in col.to_pylist()] for col in table.columns]
    rows = [list(r) for r in zip(*cols)] if cols else []
    return rows


def pypaimon_batch(warehouse, table: str, snapshot: Optional[int] = None) -> List[List[Any]]:
    """pypaimon batch read (latest, or at ``snapshot``), normalised rows."""
    t = open_table(warehouse, table)
    if snapshot is not None:
        t = t.copy({"scan.snapshot-id": str(snapshot)})
    rb = t.new_read_builder()
    splits = rb.new_scan().plan().splits()
    return arrow_rows(rb.new_read().to_arrow(splits))


def pypaimon_stream(warehouse, table: str, start: int, latest: Optional[int] = None,
                    idle_timeout: float = 1.0) -> List[Dict[str, Any]]:
    """pypaimon streaming read from snapshot ``start`` up to the latest snapshot.

    Returns ``[{"snapshot": id, "rows": [[row_kind, *values], ...]}]`` for plans with
    rows -- the same shape as ``java_oracle(...)["stream"]``.  Keep ``latest - start``
    under 10: beyond that pypaimon collapses the gap into one catch-up diff plan.
    """
    t = open_table(warehouse, table)
    if latest is None:
        latest = t.snapshot_manager().get_latest_snapshot().id
    builder = t.new_stream_read_builder().with_include_row_kind(True).with_poll_interval_ms(20)
    scan = builder.new_streaming_scan()
    scan.next_snapshot_id = start
    read = builder.new_read()
    out: List[Dict[str, Any]] = []

    async def consume():
        agen = scan.stream()
        try:
            while True:
                try:
                    plan = await asyncio.wait_for(agen.__anext__(), timeout=idle_timeout)
                except asyncio.TimeoutError:
                    if scan.next_snapshot_id > latest:
                        return
                    raise
                splits = plan.splits()
                if not splits:
                    continue
                rows = arrow_rows(read.to_arrow(splits))
                if rows:
                    out.append({"snapshot": plan.snapshot_id, "rows": rows})
                if plan.snapshot_id is not None and plan.snapshot_id >= latest:
                    return
        finally:
            with contextlib.suppress(Exception):
                await agen.aclose()

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(consume())
    finally:
        loop.close()
        if scan._prefetch_executor is not None:
            scan._prefetch_executor.shutdown(wait=True)
    return out


def canonical(rows: Iterable[Sequence[Any]]) -> List[str]:
    """Order-insensitive, type-exact comparison key for a list of rows."""
    return sorted(json.dumps(list(r), sort_keys=True) for r in rows)


# ------------------------------------------------------------------ fixtures

@pytest.fixture(scope="session")
def java_env() -> str:
    """Jars fetched and PaimonFixtures compiled; skips loudly when Java is missing."""
    reason = java_missing_reason()
    if reason:
        pytest.skip(f"PAIMON JAVA FIXTURES SKIPPED: {reason}")
    try:
        return classpath()
    except JavaUnavailable as e:  # no network / index unreachable
        pytest.skip(f"PAIMON JAVA FIXTURES SKIPPED: {e}")


@pytest.fixture
def java_warehouse(java_env, tmp_path_factory):
    """Factory: ``java_warehouse("pk_dedup", "pk_dv")`` -> fresh warehouse path (str)."""

    def make(*scenarios: str) -> str:
        wh = tmp_path_factory.mktemp("java-wh")
        write_scenario(str(wh), *scenarios)
        return str(wh)

    return make
