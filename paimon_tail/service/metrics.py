"""Prometheus metrics of the query service (``serve --metrics-port N``, ``executor --metrics-port N``): the text
format of ``prometheus_client``, built at each scrape from what the processes already keep.

An executor counts its lookups (``LookupStats``) and sends the counters with every heartbeat (``ExecutorStats``
in ``lookup.proto``), so one scrape of ``serve`` covers the coordinator and every executor that joined it —
serve's own processes, Spark tasks and ``executor --join`` alike — without a scrape target per process. An
executor with ``--metrics-port`` also shows its own. Names and labels (docs/query-service.md#metrics):

=============================================  ======================================================================
``paimon_tail_lookup_requests_total``           Lookup calls answered {executor}
``paimon_tail_lookup_requests_refused_total``   Lookup calls refused whole (bad request, still loading) {executor}
``paimon_tail_lookup_keys_total``               keys looked up {executor, result=found|missing|failed}
``paimon_tail_lookup_duration_seconds``         histogram: server-side time of a Lookup call {executor}
``paimon_tail_commit_visible_seconds``          histogram: commit -> answered by an executor {executor}
``paimon_tail_served_snapshot``                 snapshot an executor answers at {table, executor}
``paimon_tail_served_keys``                     keys an executor holds {table, executor}
``paimon_tail_lag_snapshots``                   latest snapshot - served snapshot {table, executor} (serve)
``paimon_tail_lag_seconds``                     latest commit time - served commit time {table, executor} (serve)
``paimon_tail_table_snapshot``                  latest snapshot the coordinator has seen {table} (serve)
``paimon_tail_files_loaded``                    data files whose rows are on an executor's disk {table, executor}
``paimon_tail_files``                           data files its key indexes point into {table, executor}
``paimon_tail_disk_bytes``                      row files and key indexes on local disk {table, executor}
``paimon_tail_memory_bytes``                    decompressed rows in an executor's memory cache {executor}
``paimon_tail_storage_errors_total``            failed storage calls of the coordinator's scanner {table} (serve)
``paimon_tail_storage_outage``                  1 while the table's storage does not answer {table} (serve)
``paimon_tail_executors``                       executors {state=alive|silent|expected} (serve)
``paimon_tail_channels``                        channels {state=served|moving|unowned} (serve)
``paimon_tail_coordinator_active``              1 active, 0 standing by (serve); ``..._epoch``, ``..._standbys``
``paimon_tail_ready``                           1 when the health check says SERVING
=============================================  ======================================================================
"""
from __future__ import annotations

import bisect
import time
from typing import TYPE_CHECKING, Iterable, List, Sequence

from .protocol import lookup_pb2 as pb

if TYPE_CHECKING:  # pragma: no cover
    from .coordinator.service import QueryService
    from .executor.runner import Executor

# lookups take well under a millisecond to seconds (a min_snapshot wait); commit -> visible tens of ms to minutes
LOOKUP_BOUNDS = (0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
VISIBLE_BOUNDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Histogram:
    """Cumulative buckets, cheap to observe from the event loop, sent as ``lookup_pb2.Histogram``."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)  # per bucket (not cumulative); last: above every bound
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value

    def message(self) -> pb.Histogram:
        cumulative, total = [], 0
        for c in self.counts:
            total += c
            cumulative.append(total)
        return pb.Histogram(bounds=self.bounds, counts=cumulative, sum=self.sum)


class LookupStats:
    """An executor's counters (kept on its event loop)."""

    def __init__(self) -> None:
        self.found = self.missing = self.failed = self.refused = 0
        self.latency = Histogram(LOOKUP_BOUNDS)
        self.visible = Histogram(VISIBLE_BOUNDS)

    def answered(self, keys: int, found: int, failed: int, seconds: float) -> None:
        self.found += found
        self.failed += failed
        self.missing += max(0, keys - found - failed)
        self.latency.observe(seconds)

    def message(self) -> pb.ExecutorStats:
        return pb.ExecutorStats(keys_found=self.found, keys_missing=self.missing, keys_failed=self.failed,
                                requests_refused=self.refused, lookup_seconds=self.latency.message(),
                                visible_seconds=self.visible.message())


# -- exposition ---------------------------------------------------------------------------------------------
def _families():
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

    return CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily


def _histogram(family, labels: List[str], h: pb.Histogram) -> None:
    if not h.counts:
        return
    buckets = [(repr(float(b)), c) for b, c in zip(h.bounds, h.counts)] + [("+Inf", h.counts[-1])]
    family.add_metric(labels, buckets, h.sum)


class _ExecutorFamilies:
    """The per-executor families, filled from ``ExecutorStats`` and ``TableServing`` (a heartbeat's content)."""

    def __init__(self) -> None:
        counter, gauge, histogram = _families()
        self.requests = counter("paimon_tail_lookup_requests", "Lookup calls answered", labels=["executor"])
        self.refused = counter("paimon_tail_lookup_requests_refused", "Lookup calls refused as a whole",
                               labels=["executor"])
        self.keys = counter("paimon_tail_lookup_keys", "Keys looked up, by result", labels=["executor", "result"])
        self.latency = histogram("paimon_tail_lookup_duration_seconds", "Server-side time of a Lookup call",
                                 labels=["executor"])
        self.visible = histogram("paimon_tail_commit_visible_seconds",
                                 "Commit time to the snapshot answered by an executor", labels=["executor"])
        self.loaded = gauge("paimon_tail_files_loaded", "Data files whose rows are on the executor's disk",
                            labels=["table", "executor"])
        self.files = gauge("paimon_tail_files", "Data files the executor's key indexes point into",
                           labels=["table", "executor"])
        self.disk = gauge("paimon_tail_disk_bytes", "Row files and key indexes on local disk",
                          labels=["table", "executor"])
        self.memory = gauge("paimon_tail_memory_bytes", "Decompressed rows in the executor's memory cache",
                            labels=["executor"])
        self.snapshot = gauge("paimon_tail_served_snapshot", "Snapshot an executor answers at",
                              labels=["table", "executor"])
        self.held = gauge("paimon_tail_served_keys", "Keys an executor holds", labels=["table", "executor"])

    def add(self, executor: str, requests: int, stats: pb.ExecutorStats, tables: Iterable[pb.TableServing],
            memory_bytes: int) -> None:
        self.requests.add_metric([executor], requests)
        self.refused.add_metric([executor], stats.requests_refused)
        for result, value in (("found", stats.keys_found), ("missing", stats.keys_missing),
                              ("failed", stats.keys_failed)):
            self.keys.add_metric([executor, result], value)
        _histogram(self.latency, [executor], stats.lookup_seconds)
        _histogram(self.visible, [executor], stats.visible_seconds)
        self.memory.add_metric([executor], memory_bytes)
        for t in tables:
            self.snapshot.add_metric([t.table, executor], t.snapshot_id)
            self.held.add_metric([t.table, executor], t.keys)
            self.loaded.add_metric([t.table, executor], t.files_loaded)
            self.files.add_metric([t.table, executor], t.files)
            self.disk.add_metric([t.table, executor], t.disk_bytes)

    def all(self) -> list:
        return [self.requests, self.refused, self.keys, self.latency, self.visible, self.loaded, self.files,
                self.disk, self.memory, self.snapshot, self.held]


class ServiceCollector:
    """One scrape of ``serve``: the coordinator and every executor that joined it (from their heartbeats)."""

    def __init__(self, service: "QueryService") -> None:
        self.service = service

    def collect(self):
        from ..service.coordinator.assignment import NONE

        _, gauge, _ = _families()
        counter = _families()[0]
        svc = self.service
        reg = svc.registry
        ex = _ExecutorFamilies()
        lag = gauge("paimon_tail_lag_snapshots", "Latest snapshot minus the served one", labels=["table", "executor"])
        lag_s = gauge("paimon_tail_lag_seconds", "Latest commit time minus the served one's",
                      labels=["table", "executor"])
        latest = {name: s.snapshot for name, s in svc.scanners.items()}
        now = time.monotonic()
        executors = gauge("paimon_tail_executors", "Executors by state", labels=["state"])
        states = {"alive": 0, "silent": 0, "expected": len(reg.reserved)}
        for index, member in list(reg.members.items()):
            states["alive" if member.alive(reg.heartbeat_timeout, now) else "silent"] += 1
            label = str(index)
            ex.add(label, member.requests, member.stats, member.tables.values(), member.memory_bytes)
            for name, serving in member.tables.items():
                snap = latest.get(name)
                if snap is not None and serving.snapshot_id:
                    lag.add_metric([name, label], max(0, snap.id - serving.snapshot_id))
                    lag_s.add_metric([name, label], max(0.0, (snap.time_millis - serving.commit_time_ms) / 1000))
        for state, n in states.items():
            executors.add_metric([state], n)
        channels = gauge("paimon_tail_channels", "Channels by state", labels=["state"])
        owners = reg.assignment.owners
        channels.add_metric(["served"], sum(1 for o in owners if o != NONE))
        channels.add_metric(["unowned"], sum(1 for o in owners if o == NONE))
        channels.add_metric(["moving"], len(reg.warm))
        table_snapshot = gauge("paimon_tail_table_snapshot", "Latest snapshot the coordinator has seen",
                               labels=["table"])
        errors = counter("paimon_tail_storage_errors", "Failed storage calls of the scanner", labels=["table"])
        outage = gauge("paimon_tail_storage_outage", "1 while the table's storage does not answer", labels=["table"])
        for name in svc.options.tables:
            snap = latest.get(name)
            if snap is not None:
                table_snapshot.add_metric([name], snap.id)
            health = svc.health[name]
            errors.add_metric([name], health.failures)
            outage.add_metric([name], 1 if health.outage is not None else 0)
        lease = svc.lease
        active = gauge("paimon_tail_coordinator_active", "1: the active coordinator, 0: standing by")
        active.add_metric([], 1 if svc.role == "active" else 0)
        epoch = gauge("paimon_tail_coordinator_epoch", "The registration's epoch held or followed")
        epoch.add_metric([], lease.epoch if lease is not None else 0)
        standbys = gauge("paimon_tail_coordinator_standbys", "Standby coordinators connected")
        standbys.add_metric([], len(lease.standbys) if lease is not None else 0)
        ready = gauge("paimon_tail_ready", "1 when the health check says SERVING")
        ready.add_metric([], 1 if svc.probes.serving else 0)
        yield from ex.all()
        yield from (lag, lag_s, executors, channels, table_snapshot, errors, outage, active, epoch, standbys, ready)


class ExecutorCollector:
    """``executor --metrics-port``: this executor's own counters."""

    def __init__(self, executor: "Executor") -> None:
        self.executor = executor

    def collect(self):
        _, gauge, _ = _families()
        e = self.executor
        ex = _ExecutorFamilies()
        ex.add(str(e.index), e.requests, e.stats.message(), e._serving(), e.stores.cache.bytes)
        ready = gauge("paimon_tail_ready", "1 when the health check says SERVING")
        ready.add_metric([], 1 if e.probes.serving else 0)
        yield from ex.all()
        yield ready


def serve_metrics(collector, host: str, port: int):
    """Serve ``collector`` on http://host:port/metrics (a thread of prometheus_client): (server, port bound)."""
    from prometheus_client import start_http_server
    from prometheus_client.registry import CollectorRegistry

    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    server, _ = start_http_server(port, addr=host.strip("[]"), registry=registry)
    return server, server.server_address[1]


__all__ = ["ExecutorCollector", "Histogram", "LookupStats", "ServiceCollector", "serve_metrics"]
