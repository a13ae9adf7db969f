"""What every benchmark shares: sizes, the data set, child processes, CPU and memory readings, results."""
from __future__ import annotations

import dataclasses
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional

import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
DATA = RESULTS / "data"
CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclasses.dataclass(frozen=True)
class Size:
    name: str
    # catch-up data set
    rows: int
    commits: int
    # latency
    lat_commits: int
    lat_rows: int
    lat_min_gap: float
    lat_max_gap: float
    idle_seconds: float
    repeat: int


SIZES = {
    "tiny": Size("tiny", rows=50_000, commits=10, lat_commits=25, lat_rows=5, lat_min_gap=0.02, lat_max_gap=0.12,
                 idle_seconds=2.0, repeat=1),
    "full": Size("full", rows=5_000_000, commits=100, lat_commits=200, lat_rows=5, lat_min_gap=0.02,
                 lat_max_gap=0.25, idle_seconds=10.0, repeat=3),
    # a table of a few million rows, where start-up is a large share of a catch-up (issue 11's 2M / 40 commits)
    "medium": Size("medium", rows=2_000_000, commits=40, lat_commits=50, lat_rows=5, lat_min_gap=0.02,
                   lat_max_gap=0.12, idle_seconds=2.0, repeat=5),
}


# -- the product under test -----------------------------------------------------------------------------------
def product_src() -> Optional[str]:
    """``--product PATH``: measure the paimon-tail source tree at PATH (e.g. a git worktree of an older commit)."""
    return os.environ.get("PAIMON_TAIL_BENCH_SRC") or None


def paimon_tail_cmd() -> List[str]:
    """The installed console script next to this interpreter (what a user runs), else ``-m paimon_tail``."""
    script = Path(sys.executable).parent / "paimon-tail"
    if product_src():
        return [sys.executable, "-m", "paimon_tail"]
    return [str(script)] if script.exists() else [sys.executable, "-m", "paimon_tail"]


def baseline_cmd(*args: str) -> List[str]:
    return [sys.executable, "-m", "benchmarks.baselines", *args]


def child_env() -> dict:
    env = dict(os.environ)
    env.pop("PAIMON_WAREHOUSE", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (product_src(), str(ROOT), env.get("PYTHONPATH", "")) if p)
    if product_src():
        # `python -m paimon_tail` puts the working directory first on sys.path: run from this repository, it would
        # measure this tree instead of --product's (Python >= 3.11 honours this; run from elsewhere on 3.10)
        env["PYTHONSAFEPATH"] = "1"
    return env


# -- the catch-up data set: 7 columns, ``rows`` rows in ``commits`` commits, cached under results/data ----------
SCHEMA = pa.schema([
    ("id", pa.int64()), ("commit_no", pa.int32()), ("ts_ms", pa.int64()), ("user", pa.string()),
    ("event", pa.string()), ("amount", pa.float64()), ("note", pa.string()),
])
EVENTS = ["view", "click", "add_to_cart", "purchase", "refund", "login", "logout", "search"]


def commit_arrow(table, data: pa.Table) -> int:
    wb = table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    try:
        w.write_arrow(data)
        c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()
    return table.snapshot_manager().get_latest_snapshot().id


def make_batch(commit_no: int, start: int, n: int) -> pa.Table:
    import numpy as np
    import pyarrow.compute as pc

    rng = np.random.default_rng(commit_no)
    ids = np.arange(start, start + n, dtype=np.int64)
    users = pc.binary_join_element_wise("user-", pc.cast(pa.array(rng.integers(0, 100_000, n)), pa.string()), "")
    events = pa.array(np.array(EVENTS, dtype=object)[rng.integers(0, len(EVENTS), n)], pa.string())
    notes = pc.binary_join_element_wise("order note #", pc.cast(pa.array(ids), pa.string()), "")
    return pa.table({
        "id": ids, "commit_no": pa.array(np.full(n, commit_no, np.int32)),
        "ts_ms": pa.array(1_780_000_000_000 + ids * 7, pa.int64()), "user": users, "event": events,
        "amount": pa.array(np.round(rng.random(n) * 1000, 2)), "note": notes,
    }, schema=SCHEMA)


@dataclasses.dataclass
class DataSet:
    warehouse: str
    table: str  # db.name
    rows: int
    commits: int
    table_dir: str


def catchup_dataset(size: Size, log: Callable[[str], None]) -> DataSet:
    """The append table of ``size.rows`` rows in ``size.commits`` commits (built once, then reused)."""
    from pypaimon import CatalogFactory, Schema

    base = DATA / f"{size.name}-{size.rows}-{size.commits}"
    marker = base / "done.json"
    wh = base / "warehouse"
    ds = DataSet(str(wh), "db.events", size.rows, size.commits, str(wh / "db.db" / "events"))
    if marker.exists():
        return ds
    if base.exists():
        shutil.rmtree(base)
    wh.mkdir(parents=True)
    log(f"building data set {size.rows:,} rows / {size.commits} commits in {base} (once)")
    t0 = time.perf_counter()
    cat = CatalogFactory.create({"warehouse": str(wh)})
    cat.create_database("db", True)
    cat.create_table("db.events", Schema.from_pyarrow_schema(SCHEMA, options={"bucket": "-1"}), False)
    table = cat.get_table("db.events")
    per = size.rows // size.commits
    for c in range(size.commits):
        commit_arrow(table, make_batch(c, c * per, per if c < size.commits - 1 else size.rows - c * per))
    marker.write_text(json.dumps({"rows": size.rows, "commits": size.commits}))
    log(f"  built in {time.perf_counter() - t0:.1f}s")
    return ds


def temp_warehouse(prefix: str) -> str:
    return tempfile.mkdtemp(prefix=prefix)


# -- processes ------------------------------------------------------------------------------------------------
def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads) from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def vm_hwm_mib(pid: int) -> float:
    """Peak RSS so far of a live process (VmHWM, which exec resets: the fork's copy of our memory is not in it)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError):
        pass
    return 0.0


class PeakRss:
    """Samples a child's VmHWM every 10 ms until it exits (wait4's ru_maxrss would count the pre-exec fork)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, 0.0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, vm_hwm_mib(self.pid))
            self._stop.wait(0.01)

    def stop(self) -> float:
        self.peak = max(self.peak, vm_hwm_mib(self.pid))
        self._stop.set()
        self._thread.join()
        return self.peak


def wait_rusage(proc: subprocess.Popen, timeout: float, peak: "PeakRss") -> tuple:
    """Wait for ``proc``; return (returncode, peak RSS in MiB of the program it exec'd)."""
    deadline = time.monotonic() + timeout
    while proc.poll() is None:
        peak.peak = max(peak.peak, vm_hwm_mib(proc.pid))
        if time.monotonic() > deadline:
            proc.kill()
            raise TimeoutError(f"{proc.args} did not finish in {timeout}s")
        time.sleep(0.002)
    return proc.returncode, peak.stop()


def drain_stderr(proc: subprocess.Popen) -> List[bytes]:
    out: List[bytes] = []

    def run() -> None:
        for line in proc.stderr:
            out.append(line)

    threading.Thread(target=run, daemon=True).start()
    return out


# -- statistics -----------------------------------------------------------------------------------------------
def percentile(values: List[float], p: float) -> float:
    if not values:
        return float("nan")
    xs = sorted(values)
    k = (len(xs) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def median(values: List[float]) -> float:
    return statistics.median(values) if values else float("nan")


def spread(values: List[float]) -> Optional[float]:
    """(max - min) / median: how noisy repeated runs were."""
    if len(values) < 2:
        return None
    m = statistics.median(values)
    return (max(values) - min(values)) / m if m else None


# -- machine and results --------------------------------------------------------------------------------------
def machine() -> dict:
    import polars
    import pypaimon

    mem = ""
    try:
        with open("/proc/meminfo") as f:
            mem = f"{int(f.readline().split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    return {
        "cpus": os.cpu_count(), "cpu": cpu, "memory": mem, "python": platform.python_version(),
        "pypaimon": getattr(pypaimon, "__version__", "?"), "pyarrow": pa.__version__, "polars": polars.__version__,
        "loadavg_start": os.getloadavg()[0],
    }


@dataclasses.dataclass
class Row:
    """One line of the results table: our figure, the baseline's, their ratio and the target."""

    bench: str
    metric: str
    ours: float
    baseline: Optional[float] = None
    baseline_name: str = ""
    unit: str = ""
    higher_is_better: bool = True
    target: str = ""
    ok: Optional[bool] = None
    note: str = ""

    @property
    def ratio(self) -> Optional[float]:
        if self.baseline is None or not self.baseline or self.ours is None:
            return None
        return self.ours / self.baseline

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["ratio"] = self.ratio
        return d


def fmt(v: Optional[float], unit: str = "") -> str:
    if v is None or (isinstance(v, float) and v != v):
        return "-"
    if unit in ("rows/s",):
        return f"{v / 1e6:.2f}M" if v >= 1e6 else f"{v / 1e3:.0f}k"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def print_table(rows: List[Row], out=None) -> None:
    out = out or sys.stdout
    header = ["benchmark", "metric", "paimon-tail", "baseline", "ratio", "target", "ok"]
    lines = []
    for r in rows:
        ratio = r.ratio
        base = f"{fmt(r.baseline, r.unit)} ({r.baseline_name})" if r.baseline is not None else "-"
        lines.append([r.bench, f"{r.metric} [{r.unit}]" if r.unit else r.metric, fmt(r.ours, r.unit), base,
                      f"{ratio:.2f}x" if ratio is not None else "-", r.target or "-",
                      "-" if r.ok is None else ("yes" if r.ok else "NO")])
    widths = [max(len(h), *(len(line[i]) for line in lines)) if lines else len(h) for i, h in enumerate(header)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)), file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for line in lines:
        print("  ".join(c.ljust(w) for c, w in zip(line, widths)), file=out)
    notes = [f"  {r.bench}/{r.metric}: {r.note}" for r in rows if r.note]
    if notes:
        print("notes:", file=out)
        for n in notes:
            print(n, file=out)


def save(name: str, size: Size, rows: List[Row], details: Dict, info: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    info = dict(info, loadavg_end=os.getloadavg()[0])
    doc = {"benchmark": name, "size": size.name, "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "machine": info,
           "rows": [r.as_dict() for r in rows], "details": details}
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = RESULTS / f"{name}-{size.name}-{stamp}.json"
    path.write_text(json.dumps(doc, indent=2, default=str))
    (RESULTS / f"{name}-{size.name}-latest.json").write_text(json.dumps(doc, indent=2, default=str))
    return path


# -- a primary-key table and a running query service (start-up and CLI lookup benchmarks) -----------------------
KV_SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64())])


def kv_warehouse(rows: int, log: Callable[[str], None]) -> str:
    """A warehouse with ``db.kv`` (id BIGINT primary key, name, amount; 4 buckets; ``rows`` rows) and
    ``db.small`` (an append table of 10 rows), built once under results/data."""
    import numpy as np
    import pyarrow.compute as pc
    from pypaimon import CatalogFactory, Schema

    base = DATA / f"kv-{rows}"
    wh = base / "warehouse"
    if (base / "done.json").exists():
        return str(wh)
    if base.exists():
        shutil.rmtree(base)
    wh.mkdir(parents=True)
    log(f"building db.kv ({rows:,} rows) and db.small in {base} (once)")
    cat = CatalogFactory.create({"warehouse": str(wh)})
    cat.create_database("db", True)
    cat.create_table("db.kv", Schema.from_pyarrow_schema(KV_SCHEMA, primary_keys=["id"], options={"bucket": "4"}),
                     False)
    ids = np.arange(rows, dtype=np.int64)
    commit_arrow(cat.get_table("db.kv"), pa.table({
        "id": ids, "name": pc.binary_join_element_wise("name-", pc.cast(pa.array(ids), pa.string()), ""),
        "amount": pa.array(ids * 0.5)}, schema=KV_SCHEMA))
    small = pa.schema([("id", pa.int64()), ("v", pa.string())])
    cat.create_table("db.small", Schema.from_pyarrow_schema(small), False)
    commit_arrow(cat.get_table("db.small"), pa.table({"id": np.arange(10), "v": [f"v{i}" for i in range(10)]},
                                                     schema=small))
    (base / "done.json").write_text(json.dumps({"rows": rows}))
    return str(wh)


class Service:
    """``paimon-tail serve TABLE`` as a process (its own session), until ``stop``."""

    def __init__(self, warehouse: str, table: str, executors: int = 2) -> None:
        self.proc = subprocess.Popen(paimon_tail_cmd() + ["serve", table, "-w", warehouse, "--executors",
                                                          str(executors)],
                                     stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=child_env(),
                                     start_new_session=True)
        lines = []
        for line in self.proc.stderr:
            lines.append(line)
            if "ready in" in line:
                break
        else:
            raise RuntimeError("serve did not start: " + "".join(lines))
        threading.Thread(target=lambda: [None for _ in self.proc.stderr], daemon=True).start()

    def stop(self) -> None:
        import signal

        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)


def time_process(cmd: List[str], stdin_path: Optional[str] = None, timeout: float = 600) -> tuple:
    """(wall seconds from spawn to exit, exit code, stdout bytes) of ``cmd``, stdout drained here."""
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    try:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env())
        out, err = proc.communicate(timeout=timeout)
        wall = time.perf_counter() - t0
    finally:
        if stdin_path:
            stdin.close()
    return wall, proc.returncode, out, err
