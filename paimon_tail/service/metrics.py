"""Prometheus metrics of the query service (``serve --metrics-port N``, ``executor --metrics-port N``), what both
sides share: the names, labels and histogram buckets, the per-executor families, and the scrape server. Each side
exports its own collectors from its own state (``coordinator/coordinator_metrics.py``: one scrape of serve;
``executor/executor_metrics.py``: an executor's counters and its own scrape); this module imports neither side
(``follow_metrics.py`` uses its names too). The text format of ``prometheus_client``, built at each scrape from
what the processes already keep.

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

from typing import Iterable, List

PREFIX = "paimon_tail_"
# the names both sides (and follow_metrics.py) export
READY = "paimon_tail_ready"
STORAGE_ERRORS = "paimon_tail_storage_errors"
STORAGE_OUTAGE = "paimon_tail_storage_outage"
TABLE, EXECUTOR = "table", "executor"  # labels

# lookups take well under a millisecond to seconds (a min_snapshot wait); commit -> visible tens of ms to minutes
LOOKUP_BOUNDS = (0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
VISIBLE_BOUNDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


def families():
    """prometheus_client's (counter, gauge, histogram) families, imported at the first scrape."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

    return CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily


def ready_gauge(serving: bool):
    """``paimon_tail_ready``: 1 when the health check says SERVING."""
    ready = families()[1](READY, "1 when the health check says SERVING")
    ready.add_metric([], 1 if serving else 0)
    return ready


def _histogram(family, labels: List[str], h) -> None:
    """Add a ``lookup_pb2.Histogram`` (cumulative counts) to ``family``."""
    if not h.counts:
        return
    buckets = [(repr(float(b)), c) for b, c in zip(h.bounds, h.counts)] + [("+Inf", h.counts[-1])]
    family.add_metric(labels, buckets, h.sum)


class ExecutorFamilies:
    """The per-executor families, filled from ``ExecutorStats`` and ``TableServing`` (a heartbeat's content, as the
    coordinator receives it and as an executor sends it)."""

    def __init__(self) -> None:
        counter, gauge, histogram = families()
        self.requests = counter("paimon_tail_lookup_requests", "Lookup calls answered", labels=[EXECUTOR])
        self.refused = counter("paimon_tail_lookup_requests_refused", "Lookup calls refused as a whole",
                               labels=[EXECUTOR])
        self.keys = counter("paimon_tail_lookup_keys", "Keys looked up, by result", labels=[EXECUTOR, "result"])
        self.latency = histogram("paimon_tail_lookup_duration_seconds", "Server-side time of a Lookup call",
                                 labels=[EXECUTOR])
        self.visible = histogram("paimon_tail_commit_visible_seconds",
                                 "Commit time to the snapshot answered by an executor", labels=[EXECUTOR])
        self.loaded = gauge("paimon_tail_files_loaded", "Data files whose rows are on the executor's disk",
                            labels=[TABLE, EXECUTOR])
        self.files = gauge("paimon_tail_files", "Data files the executor's key indexes point into",
                           labels=[TABLE, EXECUTOR])
        self.disk = gauge("paimon_tail_disk_bytes", "Row files and key indexes on local disk",
                          labels=[TABLE, EXECUTOR])
        self.memory = gauge("paimon_tail_memory_bytes", "Decompressed rows in the executor's memory cache",
                            labels=[EXECUTOR])
        self.snapshot = gauge("paimon_tail_served_snapshot", "Snapshot an executor answers at",
                              labels=[TABLE, EXECUTOR])
        self.held = gauge("paimon_tail_served_keys", "Keys an executor holds", labels=[TABLE, EXECUTOR])

    def add(self, executor: str, requests: int, stats, tables: Iterable, memory_bytes: int) -> None:
        """One executor: ``stats`` an ``ExecutorStats``, ``tables`` its ``TableServing``s."""
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


def serve_metrics(collector, host: str, port: int):
    """Serve ``collector`` on http://host:port/metrics (a thread of prometheus_client): (server, port bound)."""
    from prometheus_client import start_http_server
    from prometheus_client.registry import CollectorRegistry

    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    server, _ = start_http_server(port, addr=host.strip("[]"), registry=registry)
    return server, server.server_address[1]


__all__ = ["EXECUTOR", "ExecutorFamilies", "LOOKUP_BOUNDS", "PREFIX", "READY", "STORAGE_ERRORS", "STORAGE_OUTAGE",
           "TABLE", "VISIBLE_BOUNDS", "families", "ready_gauge", "serve_metrics"]
