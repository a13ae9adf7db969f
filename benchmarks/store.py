"""The query service at production size (issues 18, 34): start, footprint, freshness under upserts, memory, budgets,
on fixed-bucket and dynamic-bucket tables of the same rows.

    python -m benchmarks store --size tiny|5m|20m [--kind both|fixed|dynamic] [--before PATH]

Writes (once, cached under benchmarks/results/data/) a primary-key table with pypaimon: ``id BIGINT`` key, ``name``,
``amount``, ``payload`` (~80 characters: random letters, or a compressible text for 5m), in ``files`` commits of
sequential ids (so ``files`` files per bucket). Then, with ``paimon-tail serve`` and 2 executors:

* spawn → the first right answers for 1,000 random keys (every name checked) and → full speed (every data file's
  rows on local disk, from ``service status``), against pyarrow reading every data file of the table once;
* local disk (``--local-dir``) against the table's data files;
* one key p50/p99 and 10k-key batches against a gRPC echo with the same clients (the transport's floor);
* commit → visible on every executor (``min_snapshot``, 32 of the commit's keys) while a writer upserts
  ``upserts`` random keys per commit, and each executor's anonymous memory after those commits against after start;
* ``--max-disk`` at a quarter of the table's files: every answer checked, p50 of a warm working set (the keys of
  the last commits) and of keys drawn from the whole table (every one a row file written again).

``--kind``: the table with ``bucket`` = the scale's buckets (``fixed``), Paimon's default primary-key table
(``dynamic``: no ``bucket`` option, ``dynamic-bucket.target-row-num`` = rows / buckets, so the same rows land in as
many buckets, written by pypaimon's hash-index assigner), or ``both`` (the default): the same phases on each, in one
run, and the dynamic table's figures against the fixed one's. On the dynamic table half of each upsert commit's
keys are new, so buckets are added while the freshness is measured.

``--before PATH`` also starts the source tree at PATH (e.g. ``git worktree add /tmp/before <commit>``) on the same
table for the start and footprint rows. Results: benchmarks/results/store-<size>-<time>.json and a table.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np
import pyarrow as pa

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "benchmarks"

from benchmarks.common import DATA, RESULTS, commit_arrow, machine  # noqa: E402

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64()), ("payload", pa.string())])
ALPHABET = np.frombuffer(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", dtype=np.uint8)


@dataclasses.dataclass(frozen=True)
class Scale:
    name: str
    rows: int
    buckets: int
    files: int  # commits of the initial load = files per bucket
    compressible: bool
    upserts: int  # random keys per upsert commit
    commits: int  # upsert commits while serving
    period: float  # seconds between upsert commits (at least)


SCALES = {
    "tiny": Scale("tiny", 200_000, 4, 4, False, 20_000, 5, 0.5),
    "5m": Scale("5m", 5_000_000, 8, 5, True, 150_000, 12, 3.0),
    "20m": Scale("20m", 20_000_000, 16, 20, False, 200_000, 50, 3.0),
}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def loadavg() -> float:
    return os.getloadavg()[0]


# ------------------------------------------------------------------------------------------------ the table
def rows_of(ids: np.ndarray, version: int, compressible: bool) -> pa.Table:
    n = len(ids)
    import pyarrow.compute as pc

    if compressible:
        payload = pc.binary_join_element_wise("order note for customer #", pc.cast(pa.array(ids % 5000), pa.string()),
                                              " shipped to warehouse north-east, priority normal", "")
    else:
        rng = np.random.default_rng(int(version) * 1_000_003 + int(ids[0]) if n else 0)
        raw = ALPHABET[rng.integers(0, len(ALPHABET), size=(n, 80))]
        payload = pa.StringArray.from_buffers(n, pa.py_buffer(np.arange(0, (n + 1) * 80, 80, dtype=np.int32).tobytes()),
                                              pa.py_buffer(raw.tobytes()))
    names = pc.binary_join_element_wise(f"v{version}-", pc.cast(pa.array(ids), pa.string()), "")
    return pa.table({"id": pa.array(ids, pa.int64()), "name": names, "amount": pa.array(ids + version / 10),
                     "payload": payload}, schema=SCHEMA)


def expected_name(key: int, version: int) -> str:
    return f"v{version}-{key}"


KINDS = ("fixed", "dynamic")


def table_options(scale: Scale, kind: str) -> Dict[str, str]:
    """Fixed buckets, or Paimon's default (dynamic) with buckets of rows / buckets keys: as many as the fixed."""
    if kind == "fixed":
        return {"bucket": str(scale.buckets)}
    return {"dynamic-bucket.target-row-num": str(-(-scale.rows // scale.buckets))}


def scale_warehouse(scale: Scale, kind: str = "fixed") -> str:
    from pypaimon import CatalogFactory, Schema

    suffix = "" if kind == "fixed" else f"-{kind}"
    base = DATA / f"store-{scale.name}-{scale.rows}-{scale.buckets}-{scale.files}{suffix}"
    wh = base / "warehouse"
    if (base / "done.json").exists():
        return str(wh)
    if base.exists():
        shutil.rmtree(base)
    wh.mkdir(parents=True)
    log(f"writing db.t ({kind}): {scale.rows:,} rows, {scale.buckets} buckets, {scale.files} commits (once, in "
        f"{base})")
    cat = CatalogFactory.create({"warehouse": str(wh)})
    cat.create_database("db", True)
    cat.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"],
                                                        options=table_options(scale, kind)), False)
    table = cat.get_table("db.t")
    per = scale.rows // scale.files
    t0 = time.time()
    for c in range(scale.files):
        ids = np.arange(c * per, scale.rows if c == scale.files - 1 else (c + 1) * per, dtype=np.int64)
        commit_arrow(table, rows_of(ids, 0, scale.compressible))
        log(f"  commit {c + 1}/{scale.files} ({time.time() - t0:.0f}s)")
    (base / "done.json").write_text(json.dumps(dataclasses.asdict(scale)))
    return str(wh)


def copy_warehouse(src: str) -> str:
    """A private copy (the upserts must not touch the cached table): hard links for the immutable data files."""
    dst = tempfile.mkdtemp(prefix="paimon-tail-store-bench-")
    shutil.copytree(src, dst, dirs_exist_ok=True, copy_function=os.link)
    # snapshot hints and schema are rewritten by writers: real copies
    for d, _, files in os.walk(dst):
        for f in files:
            p = os.path.join(d, f)
            if "snapshot" in d or "schema" in d or f in ("LATEST", "EARLIEST"):
                data = open(p, "rb").read()
                os.unlink(p)
                with open(p, "wb") as out:
                    out.write(data)
    return dst


def bucket_count(wh: str) -> int:
    """Bucket directories of the table (a dynamic-bucket table adds them as keys arrive)."""
    return sum(1 for d, _, _ in os.walk(os.path.join(wh, "db.db", "t")) if os.path.basename(d).startswith("bucket-"))


def data_bytes(wh: str) -> int:
    total = 0
    for d, _, files in os.walk(os.path.join(wh, "db.db", "t")):
        if "/bucket-" in d + "/":
            total += sum(os.path.getsize(os.path.join(d, f)) for f in files)
    return total


def dir_bytes(path: str) -> int:
    out = subprocess.run(["du", "-sb", path], capture_output=True, text=True).stdout.split()
    return int(out[0]) if out else 0


def pyarrow_read_all(wh: str):
    """(wall seconds for pyarrow to read every data file of the table once — the floor of any start —, the bytes
    they decode to)."""
    import pyarrow.parquet as pq

    paths = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(wh, "db.db", "t")) for f in fs
             if f.endswith(".parquet")]
    t0 = time.perf_counter()
    nbytes = 0
    for p in paths:
        nbytes += pq.read_table(p).nbytes
    return time.perf_counter() - t0, nbytes


# ------------------------------------------------------------------------------------------------ processes
def anon_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def children(pid: int) -> List[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    pids = []
    for p in out:
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                if b"spawn_main" in f.read():
                    pids.append(int(p))
        except OSError:
            pass
    return pids


class Serve:
    def __init__(self, wh: str, local_dir: str, *extra: str, src: Optional[str] = None) -> None:
        env = dict(os.environ)
        env.pop("PAIMON_WAREHOUSE", None)
        if src:
            env["PYTHONPATH"] = src
            env["PYTHONSAFEPATH"] = "1"
        self.spawned = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "paimon_tail", "serve", "db.t", "-w", wh, "--executors", "2", "--local-dir",
             local_dir, *extra], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env,
            start_new_session=True, cwd="/")
        self.lines: List[str] = []
        self.ready_s: Optional[float] = None
        self._ready = threading.Event()
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        for line in self.proc.stderr:
            self.lines.append(line)
            if "ready in" in line and self.ready_s is None:
                self.ready_s = time.perf_counter() - self.spawned
                self._ready.set()
        self._ready.set()

    def wait_ready(self, timeout: float) -> float:
        self._ready.wait(timeout)
        if self.ready_s is None:
            raise RuntimeError("serve did not get ready: " + "".join(self.lines[-20:]))
        return self.ready_s

    def executor_pids(self) -> List[int]:
        return children(self.proc.pid)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)


def client_for(wh: str):
    from paimon_tail.catalog import catalog_config
    from paimon_tail.service.client import LookupClient

    return LookupClient("db.t", catalog_config(wh), timeout=120)


WRONG: List[Dict] = []  # the first wrong answers of the run, for its results file


def check(r, keys: List[int], versions: np.ndarray) -> int:
    """How many of ``keys`` came back wrong or missing (every key exists); the first few are kept in ``WRONG``."""
    got = {row["id"]: row["name"] for row in r.rows.to_pylist()} if r.rows is not None else {}
    wrong = [k for k in keys if got.get(k) != expected_name(k, int(versions[k]))]
    for k in wrong[:max(0, 20 - len(WRONG))]:
        WRONG.append({"key": k, "expected": expected_name(k, int(versions[k])), "got": got.get(k),
                      "failed": sorted(set(r.failed.values()))[:3], "snapshots": r.snapshot_ids,
                      "keys_asked": len(keys)})
    return len(wrong)


def first_right_answers(wh: str, keys: List[int], versions: np.ndarray, serve: Serve, timeout: float) -> float:
    """Seconds from spawn until one lookup of ``keys`` answers every one right."""
    client = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if client is None:
                client = client_for(wh)
            r = client.lookup_sync(keys)
            if check(r, keys, versions) == 0:
                return time.perf_counter() - serve.spawned
        except Exception:
            time.sleep(0.2)
            continue
    raise RuntimeError("no right answers in time")


def full_speed(client, serve: Serve, timeout: float) -> Dict:
    """Seconds from spawn until every executor has every data file's rows on disk (``service status``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = client.status_sync()
        ex = list(st.executors)
        if ex and all(e.files and e.files_loaded >= e.files for e in ex):
            return {"full_speed_s": round(time.perf_counter() - serve.spawned, 1),
                    "disk_bytes_status": sum(e.disk_bytes for e in ex),
                    "memory_bytes_status": sum(e.memory_bytes for e in ex)}
        time.sleep(0.5)
    return {"full_speed_s": None}


def pct(values: List[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(len(s) * q))] if s else float("nan")


def single_keys(client, n_rows: int, versions: np.ndarray, count: int, pool: Optional[np.ndarray] = None) -> Dict:
    rnd = random.Random(7)
    lat, wrong = [], 0
    for _ in range(count):
        k = int(pool[rnd.randrange(len(pool))]) if pool is not None else rnd.randrange(n_rows)
        t = time.perf_counter()
        row = client.get_sync(k)
        lat.append((time.perf_counter() - t) * 1000)
        if row is None or row["name"] != expected_name(k, int(versions[k])):
            wrong += 1
    return {"p50_ms": round(pct(lat, 0.5), 3), "p99_ms": round(pct(lat, 0.99), 3), "wrong": wrong}


def batches(client, n_rows: int, versions: np.ndarray, size: int, reps: int) -> Dict:
    rnd = random.Random(11)
    keys = [rnd.randrange(n_rows) for _ in range(size)]
    r = client.lookup_sync(keys)
    wrong = check(r, keys, versions)
    t = time.perf_counter()
    for _ in range(reps):
        client.lookup_sync(keys)
    return {"keys_per_s": int(size * reps / (time.perf_counter() - t)), "wrong": wrong}


# ------------------------------------------------------------------------------------------------ phases
def start_phase(wh: str, scale: Scale, versions: np.ndarray, src: Optional[str], extra=()) -> Dict:
    local = tempfile.mkdtemp(prefix="paimon-tail-store-local-")
    serve = Serve(wh, local, *extra, src=src)
    rnd = random.Random(5)
    keys = [rnd.randrange(scale.rows) for _ in range(1000)]
    out: Dict = {"load_start": round(loadavg(), 2)}
    try:
        out["right_answers_s"] = round(first_right_answers(wh, keys, versions, serve, 3600), 1)
        serve.wait_ready(3600)
        out["ready_s"] = round(serve.ready_s, 1)
        client = client_for(wh)
        if src is None:
            out.update(full_speed(client, serve, 3600))
        else:  # the tree before had no loading: ready is loaded
            out["full_speed_s"] = out["ready_s"]
        if src is None:  # then the memory cache fills from the row files: lookups after it are at full speed
            out["cache_mb_warm"] = settled(lambda: cache_mb(client), 300)
            out["settled"] = all_settled(client, 300)  # and the background is done (sheets built)
            out["warm_s"] = round(time.perf_counter() - serve.spawned, 1)
        out["local_disk_bytes"] = dir_bytes(local)
        out["executor_anon_mb"] = round(sum(anon_mb(p) for p in serve.executor_pids()), 1)
        out["single"] = single_keys(client, scale.rows, versions, 2000 if scale.name != "tiny" else 300)
        out["batch_10k"] = batches(client, scale.rows, versions, 10_000, 30 if scale.name != "tiny" else 5)
        out["load_end"] = round(loadavg(), 2)
        client.close_sync()
    finally:
        serve.stop()
        shutil.rmtree(local, ignore_errors=True)
    return out


def cache_mb(client) -> float:
    return round(sum(e.memory_bytes for e in client.status_sync().executors) / 2 ** 20, 1)


def all_settled(client, timeout: float) -> bool:
    """Until every executor says its background is done with the served snapshot (``service status``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        executors = list(client.status_sync().executors)
        if executors and all(e.settled for e in executors):
            return True
        time.sleep(0.5)
    return False


def settled(read, timeout: float) -> float:
    """``read()`` once two readings 2 s apart agree within 1 % (or at ``timeout``)."""
    deadline = time.monotonic() + timeout
    last = read()
    while time.monotonic() < deadline:
        time.sleep(2)
        now = read()
        if abs(now - last) <= 0.01 * max(last, 1.0):
            return now
        last = now
    return last


def upsert_phase(wh: str, scale: Scale, versions: np.ndarray, max_memory: str, new_keys: bool = False) -> Dict:
    """Serve while a writer upserts: commit → visible per commit, executor memory before and after (all of it,
    and what is not the memory cache, whose budget ``max_memory`` bounds). ``new_keys``: half of each commit's
    keys are new (beyond every key written), so a dynamic-bucket table adds buckets meanwhile."""
    from pypaimon import CatalogFactory

    local = tempfile.mkdtemp(prefix="paimon-tail-store-local-")
    serve = Serve(wh, local, "--max-memory", max_memory)
    out: Dict = {"load_start": round(loadavg(), 2), "max_memory": max_memory}
    try:
        serve.wait_ready(3600)
        client = client_for(wh)
        full_speed(client, serve, 3600)
        settled(lambda: cache_mb(client), 120)  # the background fills the cache after the last file
        pids = serve.executor_pids()
        out["anon_mb_after_start"] = round(sum(anon_mb(p) for p in pids), 1)
        out["cache_mb_after_start"] = cache_mb(client)
        table = CatalogFactory.create({"warehouse": wh}).get_table("db.t")
        rng = np.random.default_rng(99)
        visible, wrong = [], 0
        probe = random.Random(3)
        buckets_before = bucket_count(wh)
        next_new = scale.rows
        for c in range(scale.commits):
            t_start = time.monotonic()
            ids = np.unique(rng.integers(0, scale.rows, scale.upserts // 2 if new_keys else scale.upserts))
            if new_keys:
                ids = np.concatenate([ids, np.arange(next_new, next_new + scale.upserts // 2, dtype=np.int64)])
                next_new += scale.upserts // 2
            version = int(versions.max()) + 1
            sid = commit_arrow(table, rows_of(ids, version, scale.compressible))
            committed = time.perf_counter()
            versions[ids] = version
            # keys of the commit on every executor (32 random ones): visible means visible to every reader
            ks = [int(ids[probe.randrange(len(ids))]) for _ in range(32)]
            r = client.lookup_sync(ks, min_snapshot=sid)
            visible.append(time.perf_counter() - committed)
            wrong += check(r, ks, versions)
            if (c + 1) % 10 == 0:
                log(f"  upsert commit {c + 1}/{scale.commits}: visible after {visible[-1]:.2f}s")
            time.sleep(max(0.0, scale.period - (time.monotonic() - t_start)))
        sample = [probe.randrange(scale.rows) for _ in range(2000)]
        r = client.lookup_sync(sample)
        wrong += check(r, sample, versions)
        out["visible_p50_s"] = round(pct(visible, 0.5), 3)
        out["visible_worst_s"] = round(max(visible), 3)
        out["buckets_before"], out["buckets_after"] = buckets_before, bucket_count(wh)
        out["wrong"] = wrong
        if wrong:  # what serve said meanwhile, to tell why
            out["serve_log"] = serve.lines[-40:]
        time.sleep(2)
        out["anon_mb_after_commits"] = round(sum(anon_mb(p) for p in pids), 1)
        out["cache_mb_after_commits"] = cache_mb(client)
        out["table_bytes_after_commits"] = data_bytes(wh)
        out["local_disk_bytes"] = dir_bytes(local)
        out["load_end"] = round(loadavg(), 2)
        client.close_sync()
    finally:
        serve.stop()
        shutil.rmtree(local, ignore_errors=True)
    return out


def budget_phase(wh: str, scale: Scale, versions: np.ndarray, table_bytes: int, recent: np.ndarray) -> Dict:
    """--max-disk at a quarter of the table's files (each executor: an eighth, with 2 executors)."""
    local = tempfile.mkdtemp(prefix="paimon-tail-store-local-")
    per_executor = max(1 << 20, table_bytes // 8)
    serve = Serve(wh, local, "--max-disk", str(per_executor))
    out: Dict = {"max_disk_per_executor": per_executor, "load_start": round(loadavg(), 2)}
    try:
        serve.wait_ready(3600)
        client = client_for(wh)
        count = 2000 if scale.name != "tiny" else 300
        single_keys(client, scale.rows, versions, count, recent)  # warm up the working set
        out["warm_set"] = single_keys(client, scale.rows, versions, count, recent)
        out["warm_set_keys"] = int(len(recent))
        out["whole_table"] = single_keys(client, scale.rows, versions, max(100, count // 10))
        out["local_disk_bytes"] = dir_bytes(local)
        out["load_end"] = round(loadavg(), 2)
        client.close_sync()
    finally:
        serve.stop()
        shutil.rmtree(local, ignore_errors=True)
    return out


def echo_floor(count: int) -> Dict:
    from benchmarks.lookup import bench_echo

    e = bench_echo(count)
    return {"p50_ms": e.get("echo_sync_p50_ms"), "p99_ms": e.get("echo_sync_p99_ms")}


# ------------------------------------------------------------------------------------------------ report
def ratio(a, b) -> Optional[float]:
    return round(a / b, 2) if a and b else None


def report(res: Dict, echo: Dict) -> List[List[str]]:
    """One kind's rows (``res``: its phases), against pyarrow, the echo floor and the tree before."""
    s, u, b = res["start"], res.get("upserts", {}), res.get("budget", {})
    tb = res["table_bytes"]
    rows = [
        ["spawn → 1,000 keys right", f"{s['right_answers_s']} s", f"pyarrow reads the files {res['pyarrow_read_s']:.1f} s",
         f"{ratio(s['right_answers_s'], res['pyarrow_read_s'])}x"],
        ["spawn → full speed (every file's rows on disk)", f"{s.get('full_speed_s')} s", "", ""],
        ["spawn → memory cache warm, background settled", f"{s.get('warm_s')} s", f"{s.get('cache_mb_warm')} MiB cached", ""],
        ["local disk / table files", f"{s['local_disk_bytes'] / 2**20:.0f} MiB", f"{tb / 2**20:.0f} MiB",
         f"{ratio(s['local_disk_bytes'], tb)}x"],
        ["one key p50 / p99", f"{s['single']['p50_ms']} / {s['single']['p99_ms']} ms",
         f"echo {echo['p50_ms']} / {echo['p99_ms']} ms",
         f"{ratio(s['single']['p50_ms'], echo['p50_ms'])}x / {ratio(s['single']['p99_ms'], echo['p99_ms'])}x"],
        ["10k-key batches", f"{s['batch_10k']['keys_per_s']:,} keys/s", "", ""],
    ]
    if "before" in res:
        bf = res["before"]
        rows += [["before: spawn → right / ready", f"{bf['right_answers_s']} / {bf['ready_s']} s", "",
                  f"{ratio(s['right_answers_s'], bf['right_answers_s'])}x"],
                 ["before: local disk / table", f"{bf['local_disk_bytes'] / 2**20:.0f} MiB", "",
                  f"{ratio(bf['local_disk_bytes'], tb)}x"],
                 ["before: one key p50 / p99", f"{bf['single']['p50_ms']} / {bf['single']['p99_ms']} ms", "", ""],
                 ["before: 10k-key batches", f"{bf['batch_10k']['keys_per_s']:,} keys/s", "",
                  f"{ratio(s['batch_10k']['keys_per_s'], bf['batch_10k']['keys_per_s'])}x"]]
    if u:
        rest = [u["anon_mb_after_start"] - u["cache_mb_after_start"],
                u["anon_mb_after_commits"] - u["cache_mb_after_commits"]]
        added = u.get("buckets_after", 0) - u.get("buckets_before", 0)
        rows += [["commit → visible p50 / worst", f"{u['visible_p50_s']} / {u['visible_worst_s']} s",
                  f"{added} buckets added meanwhile" if added else "", ""],
                 [f"executors' anon memory: after commits / after start (--max-memory {u['max_memory']})",
                  f"{u['anon_mb_after_commits']} / {u['anon_mb_after_start']} MiB", "",
                  f"{ratio(u['anon_mb_after_commits'], u['anon_mb_after_start'])}x"],
                 ["  of which not the cache", f"{rest[1]:.0f} / {rest[0]:.0f} MiB", "", f"{ratio(rest[1], rest[0])}x"],
                 ["local disk / table files, after commits", f"{u['local_disk_bytes'] / 2**20:.0f} MiB",
                  f"{u['table_bytes_after_commits'] / 2**20:.0f} MiB",
                  f"{ratio(u['local_disk_bytes'], u['table_bytes_after_commits'])}x"]]
    if b:
        rows += [["--max-disk 1/4: warm set p50 / p99", f"{b['warm_set']['p50_ms']} / {b['warm_set']['p99_ms']} ms",
                  f"{b['warm_set_keys']:,} keys", ""],
                 ["--max-disk 1/4: any key p50 / p99", f"{b['whole_table']['p50_ms']} / {b['whole_table']['p99_ms']} ms",
                  "", ""],
                 ["--max-disk 1/4: local disk / table", f"{b['local_disk_bytes'] / 2**20:.0f} MiB", "",
                  f"{ratio(b['local_disk_bytes'], tb)}x"]]
    return rows


def compare(fixed: Dict, dynamic: Dict) -> List[List[str]]:
    """The dynamic-bucket table's figures against the fixed-bucket table's, same rows, same run."""
    fs, ds = fixed["start"], dynamic["start"]
    rows = [["dynamic vs fixed: spawn → 1,000 keys right", f"{ds['right_answers_s']} s", f"{fs['right_answers_s']} s",
             f"{ratio(ds['right_answers_s'], fs['right_answers_s'])}x"],
            ["dynamic vs fixed: one key p50", f"{ds['single']['p50_ms']} ms", f"{fs['single']['p50_ms']} ms",
             f"{ratio(ds['single']['p50_ms'], fs['single']['p50_ms'])}x"],
            ["dynamic vs fixed: 10k-key batches", f"{ds['batch_10k']['keys_per_s']:,} keys/s",
             f"{fs['batch_10k']['keys_per_s']:,} keys/s",
             f"{ratio(ds['batch_10k']['keys_per_s'], fs['batch_10k']['keys_per_s'])}x"],
            ["dynamic vs fixed: executors' anon memory after start", f"{ds['executor_anon_mb']} MiB",
             f"{fs['executor_anon_mb']} MiB", f"{ratio(ds['executor_anon_mb'], fs['executor_anon_mb'])}x"]]
    du, fu = dynamic.get("upserts"), fixed.get("upserts")
    if du and fu:
        rows.append(["dynamic vs fixed: commit → visible p50 / worst", f"{du['visible_p50_s']} / "
                     f"{du['visible_worst_s']} s", f"{fu['visible_p50_s']} / {fu['visible_worst_s']} s", ""])
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks store", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=list(SCALES), default="tiny")
    ap.add_argument("--kind", choices=["both", *KINDS], default="both",
                    help="fixed buckets, Paimon's default dynamic buckets, or both in one run [default: both]")
    ap.add_argument("--before", metavar="PATH", help="also start the source tree at PATH on the same table")
    ap.add_argument("--skip", action="append", default=[], choices=["upserts", "budget"])
    ap.add_argument("--max-memory", default=None, help="each executor's --max-memory in the upsert phase "
                    "[default: half the table's decompressed size per executor: a budget that binds]")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)
    scale = SCALES[args.size]
    kinds = KINDS if args.kind == "both" else (args.kind,)
    info = machine()
    log(f"store benchmark {scale.name}: {scale.rows:,} rows, {' and '.join(kinds)} buckets; {info['cpus']} CPUs, "
        f"load {loadavg():.2f}")
    res: Dict = {"benchmark": "store", "size": scale.name, "scale": dataclasses.asdict(scale), "machine": info,
                 "kinds": {}}
    res["echo"] = echo_floor(2000 if scale.name != "tiny" else 300)
    errors = 0
    for n, kind in enumerate(kinds):
        kr, wrong = run_kind(scale, kind, args, budget=n == 0)
        res["kinds"][kind] = kr
        errors += wrong
    res["wrong_answers"] = errors
    res["first_wrong"] = WRONG
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = Path(args.json) if args.json else RESULTS / f"store-{scale.name}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(res, indent=1, default=str))
    for kind, kr in res["kinds"].items():
        table = report(kr, res["echo"])
        if kind == "dynamic" and "fixed" in res["kinds"]:
            table += compare(res["kinds"]["fixed"], kr)
        width = [max(len(r[i]) for r in table + [["what", "measured", "baseline", "ratio"]]) for i in range(4)]
        print(f"\nquery service store, {scale.name}, {kind} buckets: {scale.rows:,} rows, {scale.buckets} buckets x "
              f"{scale.files} files, 2 executors; load {kr['start']['load_start']} → {kr['start']['load_end']}")
        for r in [["what", "measured", "baseline", "ratio"]] + table:
            print("  ".join(c.ljust(w) for c, w in zip(r, width)))
    print(f"wrong answers: {errors}; results in {path}")
    return 1 if errors else 0


def run_kind(scale: Scale, kind: str, args, budget: bool):
    """Every phase on the ``kind`` table; (its results, its wrong answers)."""
    cached = scale_warehouse(scale, kind)
    wh = copy_warehouse(cached)
    versions = np.zeros(scale.rows + scale.commits * scale.upserts, dtype=np.int32)
    res: Dict = {"kind": kind}
    errors = 0
    try:
        res["table_bytes"] = data_bytes(wh)
        res["buckets"] = bucket_count(wh)
        seconds, decoded = pyarrow_read_all(wh)
        res["pyarrow_read_s"], res["decoded_bytes"] = round(seconds, 2), decoded
        log(f"{kind}: start phase")
        res["start"] = start_phase(wh, scale, versions, None)
        errors += res["start"]["single"]["wrong"] + res["start"]["batch_10k"]["wrong"]
        if args.before:
            log(f"{kind}: start phase, tree at {args.before}")
            res["before"] = start_phase(wh, scale, versions, args.before)
        if "upserts" not in args.skip:
            log(f"{kind}: upsert phase")
            # a budget that binds (half of each executor's decoded share): the cache is full after the start and
            # stays full, so what grows besides it is what the commits cost
            memory = args.max_memory or str(max(64 << 20, int(res["decoded_bytes"] / 2 * 0.5)))
            res["upserts"] = upsert_phase(wh, scale, versions, memory, new_keys=kind == "dynamic")
            errors += res["upserts"]["wrong"]
        if budget and "budget" not in args.skip:
            log(f"{kind}: --max-disk phase")
            recent = np.nonzero(versions == versions.max())[0] if versions.max() > 0 else np.arange(scale.rows // 20)
            recent = recent[recent < scale.rows]
            res["budget"] = budget_phase(wh, scale, versions, res["table_bytes"], recent)
            errors += res["budget"]["warm_set"]["wrong"] + res["budget"]["whole_table"]["wrong"]
    finally:
        shutil.rmtree(wh, ignore_errors=True)
    return res, errors


if __name__ == "__main__":
    sys.exit(main())
