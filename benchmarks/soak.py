"""Soak: paimon-tail's processes over a long run, as an operator runs them (issue 23).

    python -m benchmarks soak --minutes 30               # the issue's scenario (docs/performance.md)
    python -m benchmarks soak --minutes 1.5 --size tiny  # CI: the same at low rates, so it keeps working
    python -m benchmarks soak --minutes 20 --product ../main  # the same against another tree (before/after)

A writer (the demo's: inserts, updates and deletes on ``shop.orders``, a primary-key table, and appends to
``shop.events``; a compaction every 60 rounds; the newest 300 snapshots kept, expired with their files) commits
every ~0.5 s, beside two live ``follow``s (``shop.events --consumer-id``, ``shop.orders --consumer-id --row-kind``)
and ``serve shop.orders`` (2 executors) under single-key lookups (200/s) and one 1,000-key batch a second.

Every ``--sample`` seconds each process's anonymous RSS, threads and open fds are read from /proc, and the
warehouse's size. After the warm-up (the first 5 minutes; a third of a shorter run) it prints, per process, the
least-squares slope per hour and the plateau (the highest sample after the warm-up, above the sample at its end).
Targets (issue 23): slope <= 10 MB/hour, plateau <= 30 MB; the warehouse bounded.

Correctness, checked as it runs and at the end: every appended event printed exactly once; the orders follower's
changes folded equal to pypaimon's read of the table; lookups without an error, and every key of a batch every
few seconds equal to pypaimon's read at the snapshot the answer reports; at the end nothing of ``serve`` left in
its --local-dir or the process table. A failed check fails the run (exit 1), a missed target does not (--strict).
"""
from __future__ import annotations

import dataclasses
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Callable, Dict, List, Optional

from .common import Row, child_env, paimon_tail_cmd

WRITER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "soak_writer.py")  # a script: the product's demo


@dataclasses.dataclass(frozen=True)
class Rates:
    interval: float  # writer: seconds between rounds (a commit to each table)
    compact_every: int
    retain: int
    singles: float  # single-key lookups a second
    batch_keys: int  # keys of the batch lookup sent every second
    sample: float  # seconds between samples
    check_every: float  # seconds between checks of a batch's answers against pypaimon


FULL = Rates(interval=0.5, compact_every=60, retain=300, singles=200, batch_keys=1000, sample=10, check_every=10)
TINY = Rates(interval=0.5, compact_every=20, retain=40, singles=40, batch_keys=200, sample=2, check_every=3)


class CheckFailed(AssertionError):
    """A correctness check of the soak failed: the run fails."""


# -- processes ------------------------------------------------------------------------------------------------
def proc_sample(pid: int) -> Optional[dict]:
    """Anonymous RSS (MiB), threads and open fds of ``pid`` (None when it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            status = dict(line.split(":", 1) for line in f if ":" in line)
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, ValueError):
        return None
    return {"anon_mib": int(status["RssAnon"].split()[0]) / 1024, "threads": int(status["Threads"]),
            "fds": fds}


def executor_pids(serve_pid: int) -> List[int]:
    """serve's executors: its spawned children (not multiprocessing's resource tracker)."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == serve_pid and b"spawn_main" in cmd:
            out.append(int(pid))
    return sorted(out)


def session_processes(sid: int) -> List[int]:
    out = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/stat") as f:
                if pid.isdigit() and int(f.read().rsplit(")", 1)[1].split()[3]) == sid:
                    out.append(int(pid))
        except (OSError, ValueError, IndexError):
            pass
    return out


def dir_usage(path: str) -> tuple:
    """(MiB, files) under ``path``."""
    size = files = 0
    for root, _, names in os.walk(path):
        for name in names:
            try:
                size += os.path.getsize(os.path.join(root, name))
                files += 1
            except OSError:
                pass
    return size / 2**20, files


class Series:
    """One process's samples: (seconds since start, anonymous RSS MiB, threads, fds)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.points: List[tuple] = []
        self.pids: List[int] = []

    def add(self, t: float, pid: int, sample: dict) -> None:
        if not self.pids or self.pids[-1] != pid:
            self.pids.append(pid)
        self.points.append((t, sample["anon_mib"], sample["threads"], sample["fds"], sample.get("cache_mib", 0.0)))

    def summary(self, warmup: float) -> dict:
        after = [p for p in self.points if p[0] >= warmup]
        if not self.points:
            return {"name": self.name, "samples": 0}
        at_warmup = after[0] if after else self.points[-1]

        def slope(i) -> Optional[float]:
            if len(after) < 3:
                return None
            ts = [p[0] for p in after]
            ys = [i(p) if callable(i) else p[i] for p in after]
            mt, my = sum(ts) / len(ts), sum(ys) / len(ys)
            den = sum((t - mt) ** 2 for t in ts)
            return sum((t - mt) * (y - my) for t, y in zip(ts, ys)) / den * 3600 if den else None

        return {
            "name": self.name, "samples": len(self.points), "restarts": len(self.pids) - 1,
            "anon_start": self.points[0][1], "anon_warmup": at_warmup[1], "anon_end": self.points[-1][1],
            "anon_max_after": max(p[1] for p in after) if after else None,
            "plateau_mib": (max(p[1] for p in after) - at_warmup[1]) if after else None,
            "slope_mib_h": slope(1), "threads": (self.points[0][2], self.points[-1][2]),
            "threads_slope_h": slope(2), "fds": (self.points[0][3], self.points[-1][3]), "fds_slope_h": slope(3),
            # an executor's memory cache (decompressed rows, bounded by --max-memory) as it reports it, and the
            # slope of what is not that cache
            "cache_end": self.points[-1][4], "slope_outside_cache_mib_h": slope(lambda p: p[1] - p[4]),
        }


class Lines:
    """A follower's JSON lines, parsed as they come (its stdout drained here, so it never waits on us)."""

    def __init__(self, proc: subprocess.Popen, on_row: Callable[[dict], None]) -> None:
        self.proc, self.rows, self.bad = proc, 0, 0
        self._on_row = on_row
        self.stderr: List[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(proc.stderr), daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                row = json.loads(line)
            except ValueError:
                self.bad += 1
                continue
            self.rows += 1
            self._on_row(row)


# -- the scenario ---------------------------------------------------------------------------------------------
class Soak:
    def __init__(self, minutes: float, rates: Rates, log: Callable[[str], None], warmup_minutes: Optional[float]):
        self.minutes, self.rates, self.log = minutes, rates, log
        self.warmup = 60 * (warmup_minutes if warmup_minutes is not None else (5 if minutes >= 15 else minutes / 3))
        self.dir = tempfile.mkdtemp(prefix="paimon-tail-soak-")
        self.wh = os.path.join(self.dir, "warehouse")
        self.local = os.path.join(self.dir, "local")
        self.procs: Dict[str, subprocess.Popen] = {}
        self.series: Dict[str, Series] = {}
        self.disk: List[tuple] = []  # (t, MiB, files)
        self.loads: List[float] = []
        self.errors: List[str] = []
        self.events: Dict[int, int] = {}  # event_id → times printed
        self.orders: Dict[int, dict] = {}  # the orders follower's changes folded
        self.order_rows = 0
        self.max_order = 0
        self.lookups = self.batches = self.keys_checked = self.mismatches = self.lookup_errors = 0
        self.service_lag: List[int] = []
        self.follower_lag = {"events": 0, "orders": 0}
        self._stop = threading.Event()
        self._batch: Optional[tuple] = None  # (keys, result) of the latest batch, for the checker
        self._lock = threading.Lock()
        self._executor_names: Dict[int, str] = {}
        self._status_client = None

    # -- start ------------------------------------------------------------------------------------------------
    def _spawn(self, name: str, cmd: List[str], **kw) -> subprocess.Popen:
        proc = subprocess.Popen(cmd, env=child_env(), start_new_session=True, **kw)
        self.procs[name] = proc
        return proc

    def start(self) -> None:
        r = self.rates
        writer = self._spawn("writer", [sys.executable, WRITER, self.wh, "--interval",
                                        str(r.interval), "--compact-every", str(r.compact_every), "--retain",
                                        str(r.retain)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if writer.stdout.readline().strip() != "ready":
            raise RuntimeError("the writer did not start: " + writer.stderr.read())
        self._writer_lines: List[str] = []
        threading.Thread(target=lambda: self._writer_lines.extend(writer.stdout), daemon=True).start()
        pt = paimon_tail_cmd()
        common = ["-w", self.wh, "--nl"]
        self.events_out = Lines(self._spawn("follow events", pt + ["follow", "shop.events", *common, "--consumer-id",
                                                                     "soak-events"], stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, text=True), self._on_event)
        self.orders_out = Lines(self._spawn("follow orders --row-kind", pt + [
            "follow", "shop.orders", *common, "--consumer-id", "soak-orders", "--row-kind"], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True), self._on_order)
        serve = self._spawn("serve", pt + ["serve", "shop.orders", "-w", self.wh, "--executors", "2", "--local-dir",
                                           self.local], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.serve_err: List[str] = []
        for line in serve.stderr:
            self.serve_err.append(line)
            if "ready in" in line:
                break
        else:
            raise RuntimeError("serve did not start: " + "".join(self.serve_err))
        threading.Thread(target=lambda: self.serve_err.extend(serve.stderr), daemon=True).start()

    def _on_event(self, row: dict) -> None:
        self.events[row["event_id"]] = self.events.get(row["event_id"], 0) + 1

    def _on_order(self, row: dict) -> None:
        self.order_rows += 1
        kind = row.pop("_row_kind")
        oid = row["order_id"]
        self.max_order = max(self.max_order, oid)
        if kind in ("+I", "+U"):
            self.orders[oid] = row
        else:  # -U (an update's before image) and -D
            self.orders.pop(oid, None)

    # -- load -------------------------------------------------------------------------------------------------
    def _client(self):
        from paimon_tail.catalog import catalog_config
        from paimon_tail.service.client import LookupClient

        return LookupClient("shop.orders", catalog_config(self.wh), timeout=30)

    def _singles(self) -> None:
        rnd = random.Random(1)
        with self._client() as client:
            t0, n = time.monotonic(), 0
            while not self._stop.is_set():
                n += 1
                delay = t0 + n / self.rates.singles - time.monotonic()
                if delay > 0:
                    self._stop.wait(delay)
                try:
                    client.get_sync(rnd.randint(1, max(1, self.max_order)))
                    self.lookups += 1
                except Exception as e:  # noqa: BLE001 - counted and reported
                    self.lookup_errors += 1
                    self.errors.append(f"single lookup: {type(e).__name__}: {e}")

    def _batches(self) -> None:
        rnd = random.Random(2)
        snapshots = self._orders_table().snapshot_manager()
        with self._client() as client:
            while not self._stop.wait(1.0):
                keys = [rnd.randint(1, max(1, self.max_order)) for _ in range(self.rates.batch_keys)]
                latest = snapshots.get_latest_snapshot().id
                try:
                    result = client.lookup_sync(keys)
                except Exception as e:  # noqa: BLE001
                    self.lookup_errors += 1
                    self.errors.append(f"batch lookup: {type(e).__name__}: {e}")
                    continue
                self.batches += 1
                if result.failed:
                    self.lookup_errors += 1
                    self.errors.append(f"batch lookup: {len(result.failed)} key(s) failed")
                self.service_lag.append(latest - result.snapshot_id)
                with self._lock:
                    self._batch = (keys, result)

    def _orders_table(self):
        from paimon_tail.catalog import open_table

        return open_table("shop.orders", warehouse=self.wh)

    def _check_batches(self) -> None:
        """A batch's every answer against pypaimon's read of the table at the snapshot that answer reports."""
        table = self._orders_table()
        while not self._stop.wait(self.rates.check_every):
            with self._lock:
                batch, self._batch = self._batch, None
            if batch is None:
                continue
            keys, result = batch
            by_snapshot: Dict[int, Dict[int, dict]] = {}
            rows = result.aligned()
            try:
                for pos, key in enumerate(keys):
                    sid = result.snapshot_of(pos)
                    if sid not in by_snapshot:
                        at = table.copy({"scan.snapshot-id": str(sid)})
                        read = at.new_read_builder()
                        data = read.new_read().to_arrow(read.new_scan().plan().splits()).to_pylist()
                        by_snapshot[sid] = {r["order_id"]: r for r in data}
                    if by_snapshot[sid].get(key) != rows[pos]:
                        self.mismatches += 1
                        self.errors.append(f"lookup {key} at snapshot {sid}: {rows[pos]} != "
                                           f"{by_snapshot[sid].get(key)}")
                    self.keys_checked += 1
            except Exception as e:  # noqa: BLE001 - the snapshot expired before we read it: not the service's fault
                self.log(f"  (a check was skipped: {type(e).__name__}: {e})")

    # -- sampling ---------------------------------------------------------------------------------------------
    def _sample(self, t: float) -> None:
        pids = {name: p.pid for name, p in self.procs.items() if p.poll() is None}
        pids.pop("serve", None)
        pids["serve (coordinator)"] = self.procs["serve"].pid
        current = executor_pids(self.procs["serve"].pid)
        for pid in current:  # an executor restarted (a new pid) goes on in the series of the one it replaced
            if pid not in self._executor_names:
                free = sorted(set(self._executor_names.values()) - {self._executor_names[p] for p in current
                                                                      if p in self._executor_names})
                self._executor_names[pid] = free[0] if free else f"executor {len(self._executor_names)}"
            pids[self._executor_names[pid]] = pid
        caches = self._executor_caches()
        for name, pid in pids.items():
            sample = proc_sample(pid)
            if sample is not None:
                if pid in caches:
                    sample["cache_mib"] = caches[pid]
                self.series.setdefault(name, Series(name)).add(t, pid, sample)
        self.disk.append((t, *dir_usage(self.wh)))
        self.loads.append(os.getloadavg()[0])
        for name in ("events", "orders"):
            table_dir = os.path.join(self.wh, "shop.db", name)
            try:
                latest = int(open(os.path.join(table_dir, "snapshot", "LATEST")).read())
                position = json.load(open(os.path.join(table_dir, "consumer", f"consumer-soak-{name}")))
                self.follower_lag[name] = max(self.follower_lag[name], latest + 1 - position["nextSnapshot"])
            except (OSError, ValueError, KeyError):
                pass

    def _executor_caches(self) -> Dict[int, float]:
        """pid → MiB of decompressed rows in that executor's memory cache (``service status``)."""
        try:
            if self._status_client is None:
                self._status_client = self._client()
            status = self._status_client.status_sync()
        except Exception as e:  # noqa: BLE001 - a missing figure, not a failed run
            self.log(f"  (service status: {type(e).__name__}: {e})")
            return {}
        return {e.info.pid: e.memory_bytes / 2**20 for e in status.executors}

    def run(self) -> dict:
        self.start()
        workers = [threading.Thread(target=f, daemon=True) for f in (self._singles, self._batches,
                                                                      self._check_batches)]
        for w in workers:
            w.start()
        t0 = time.monotonic()
        end = t0 + 60 * self.minutes
        next_report = t0 + 60
        while time.monotonic() < end:
            self._sample(time.monotonic() - t0)
            for name, p in self.procs.items():
                if p.poll() is not None:
                    raise CheckFailed(f"{name} exited (code {p.returncode}) during the soak")
            if time.monotonic() >= next_report:
                next_report += 60
                summary = ", ".join(f"{s.name} {s.points[-1][1]:.0f}" for s in self.series.values())
                self.log(f"  {(time.monotonic() - t0) / 60:.0f} min: anon RSS MiB {summary}; "
                         f"warehouse {self.disk[-1][1]:.0f} MiB / {self.disk[-1][2]} files; "
                         f"load {os.getloadavg()[0]:.1f}")
            time.sleep(max(0.0, min(self.rates.sample, end - time.monotonic())))
        self._sample(time.monotonic() - t0)
        self._stop.set()
        for w in workers:
            w.join(30)
        return self.finish()

    # -- the end ----------------------------------------------------------------------------------------------
    def finish(self) -> dict:
        writer = self.procs["writer"]
        writer.terminate()
        writer.wait(60)
        rounds = int(self._writer_lines[-1].split()[1]) if self._writer_lines else 0
        # the followers catch up with the last snapshot, then stop (Ctrl-C)
        positions = {}
        for name in ("events", "orders"):
            table_dir = os.path.join(self.wh, "shop.db", name)
            latest = int(open(os.path.join(table_dir, "snapshot", "LATEST")).read())
            deadline = time.monotonic() + 120
            while True:
                try:
                    positions[name] = json.load(open(os.path.join(table_dir, "consumer",
                                                                  f"consumer-soak-{name}")))["nextSnapshot"]
                except (OSError, ValueError):
                    positions[name] = 0
                if positions[name] > latest:
                    break
                if time.monotonic() > deadline:
                    raise CheckFailed(f"the {name} follower did not catch up with snapshot {latest} "
                                      f"(at {positions[name]})")
                time.sleep(0.2)
        time.sleep(1.0)  # (its last lines reach our reader)
        for name in ("follow events", "follow orders --row-kind", "serve"):
            self.procs[name].send_signal(signal.SIGINT)
        codes = {name: self.procs[name].wait(60) for name in ("follow events", "follow orders --row-kind", "serve")}
        left_procs = session_processes(self.procs["serve"].pid)
        left_files = os.listdir(self.local) if os.path.exists(self.local) else []
        # correctness
        from pypaimon import CatalogFactory

        catalog = CatalogFactory.create({"warehouse": self.wh})
        events = _read(catalog.get_table("shop.events"))
        orders = {r["order_id"]: r for r in _read(catalog.get_table("shop.orders"))}
        written = {r["event_id"] for r in events}
        printed = set(self.events)
        twice = sum(1 for n in self.events.values() if n > 1)
        folded = {k: _comparable(v) for k, v in self.orders.items()}
        table = {k: _comparable(v) for k, v in orders.items()}
        checks = {
            "events written": len(written), "events printed": self.events_out.rows,
            "events lost": len(written - printed), "events invented": len(printed - written),
            "events printed twice": twice,
            "orders changes printed": self.order_rows, "orders rows": len(table),
            "orders fold != table": sum(1 for k in set(folded) | set(table) if folded.get(k) != table.get(k)),
            "single lookups": self.lookups, "batch lookups": self.batches, "lookup errors": self.lookup_errors,
            "keys checked against pypaimon": self.keys_checked, "lookup mismatches": self.mismatches,
            "service max snapshots behind": max(self.service_lag, default=0),
            "followers max snapshots behind": dict(self.follower_lag),
            "writer rounds": rounds, "exit codes": codes,
            "left in --local-dir": left_files, "left in the process table": left_procs,
            "follower stderr": [line.strip() for line in self.events_out.stderr + self.orders_out.stderr][:5],
        }
        failed = []
        if checks["events lost"] or checks["events invented"] or twice or self.events_out.bad:
            failed.append("events not printed exactly once")
        if checks["orders fold != table"]:
            failed.append("the orders follower's changes do not fold to the table")
        if self.lookup_errors or self.mismatches or not self.keys_checked:
            failed.append(f"lookups: {self.lookup_errors} errors, {self.mismatches} mismatches, "
                          f"{self.keys_checked} keys checked")
        if left_files or left_procs:
            failed.append(f"serve left {left_files} in --local-dir, processes {left_procs}")
        if any(code not in (0, 130) for code in codes.values()):
            failed.append(f"exit codes {codes}")
        checks["failed"] = failed + self.errors[:5]
        return checks

    def close(self) -> None:
        if self._status_client is not None:
            self._status_client.close_sync()
        for p in self.procs.values():
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait(10)
        import shutil

        shutil.rmtree(self.dir, ignore_errors=True)


def _files_at(disk: List[tuple], t: float) -> int:
    after = [files for at, _, files in disk if at >= t]
    return after[0] if after else (disk[-1][2] if disk else 0)


def _read(table) -> List[dict]:
    read = table.new_read_builder()
    return read.new_read().to_arrow(read.new_scan().plan().splits()).to_pylist()


def _comparable(row: dict) -> tuple:
    """An orders row as the follower's JSON and pypaimon's read both give it (amount as text, no timestamps)."""
    return (row["order_id"], row["customer"], row["status"], None if row["amount"] is None else str(row["amount"]),
            row["op"])


# -- results --------------------------------------------------------------------------------------------------
def run(minutes: float, tiny: bool, log, warmup_minutes: Optional[float] = None) -> tuple:
    soak = Soak(minutes, TINY if tiny else FULL, log, warmup_minutes)
    log(f"  {minutes:g} min at {'tiny' if tiny else 'full'} rates ({soak.rates}); warm-up {soak.warmup / 60:g} min; "
        f"in {soak.dir}")
    try:
        checks = soak.run()
        series = dict(soak.series)
        summaries = [s.summary(soak.warmup) for s in series.values()]
        disk = Series("warehouse")
        disk.points = [(t, mib, files, files, 0.0) for t, mib, files in soak.disk]
        disk_summary = disk.summary(soak.warmup)
    finally:
        soak.close()
    judged = not tiny and minutes >= 15
    rows = []
    for s in summaries:
        if not s.get("samples"):
            continue
        rows.append(Row("soak", f"{s['name']}: anon RSS slope after warm-up", s["slope_mib_h"] or 0.0, None, "",
                        "MiB/h", False, "<= 10 MiB/h",
                        (s["slope_mib_h"] or 0.0) <= 10 if judged else None,
                        note=f"{s['anon_start']:.0f} -> {s['anon_warmup']:.0f} (warm-up) -> {s['anon_end']:.0f} MiB "
                             f"(max {s['anon_max_after']:.0f}); threads {s['threads'][0]} -> {s['threads'][1]}, "
                             f"fds {s['fds'][0]} -> {s['fds'][1]}"
                             + (f"; {s['restarts']} restart(s)" if s["restarts"] else "")))
        rows.append(Row("soak", f"{s['name']}: plateau above the warm-up", s["plateau_mib"] or 0.0, None, "", "MiB",
                        False, "<= 30 MiB", (s["plateau_mib"] or 0.0) <= 30 if judged else None))
        if s["cache_end"]:
            rows.append(Row("soak", f"{s['name']}: slope outside its --max-memory cache", s["slope_outside_cache_mib_h"]
                            or 0.0, None, "", "MiB/h", False, "", None,
                            note=f"the cache (decompressed rows of the served table) held {s['cache_end']:.1f} MiB "
                                 "at the end"))
    rows.append(Row("soak", "warehouse size slope after warm-up", disk_summary["slope_mib_h"] or 0.0, None, "",
                    "MiB/h", False, "bounded (~0)", None,
                    note=f"{disk_summary['anon_warmup']:.1f} MiB / {_files_at(soak.disk, soak.warmup)} files at the "
                         f"warm-up -> {disk_summary['anon_end']:.1f} MiB / {disk_summary['threads'][1]} files; "
                         f"files slope {disk_summary['threads_slope_h'] or 0:+.0f}/h"))
    load = sum(soak.loads) / len(soak.loads) if soak.loads else 0.0
    details = {"processes": summaries, "warehouse": disk_summary, "checks": checks, "load_average_mean": load,
               "series": {name: {"pids": s.pids, "t_anon_threads_fds_cache": s.points} for name, s in series.items()},
               "disk": soak.disk, "loads": soak.loads,
               "rates": dataclasses.asdict(soak.rates), "minutes": minutes, "warmup_minutes": soak.warmup / 60}
    print_report(summaries, disk_summary, checks, load, soak.warmup)
    if checks["failed"]:
        raise CheckFailed("; ".join(checks["failed"]))
    return rows, details


def print_report(summaries: List[dict], disk: dict, checks: dict, load: float, warmup: float) -> None:
    def f(v, spec=".0f"):
        return "-" if v is None else format(v, spec)

    print(f"\nsoak: per process, anonymous RSS in MiB (warm-up {warmup / 60:g} min); load average {load:.1f} (mean)")
    header = ("process", "start", "warm-up", "end", "max after", "slope/h", "plateau", "threads", "fds",
              "cache", "ex-cache/h")
    print("  ".join(f"{h:>10}" if i else f"{h:<26}" for i, h in enumerate(header)))
    for s in summaries:
        if not s.get("samples"):
            continue
        cells = (s["name"], f(s["anon_start"]), f(s["anon_warmup"]), f(s["anon_end"]), f(s["anon_max_after"]),
                 f(s["slope_mib_h"], "+.1f"), f(s["plateau_mib"], "+.1f"), "{}->{}".format(*s["threads"]),
                 "{}->{}".format(*s["fds"]), f(s["cache_end"], ".1f") if s["cache_end"] else "-",
                 f(s["slope_outside_cache_mib_h"], "+.1f") if s["cache_end"] else "-")
        print("  ".join(f"{c:>10}" if i else f"{c:<26}" for i, c in enumerate(cells)))
    print(f"warehouse: {f(disk.get('anon_warmup'), '.1f')} MiB at the warm-up, {f(disk.get('anon_end'), '.1f')} MiB / "
          f"{disk.get('threads', ('-', '-'))[1]} files at the end (slope {f(disk.get('slope_mib_h'), '+.1f')} MiB/h)")
    print("checks: " + json.dumps({k: v for k, v in checks.items() if k != "failed"}, default=str))
    if checks["failed"]:
        print("FAILED: " + "; ".join(checks["failed"]))


