"""Prometheus metrics of a running follow (``follow --metrics-port N``), for consumers that run for days: the text
format of ``prometheus_client``, built at each scrape from the follow's ``FollowStats`` (one per table), with the
names and labels of ``service/metrics.py`` (``paimon_tail_`` prefix, ``table`` label; docs/follow.md#metrics):

=============================================== ====================================================================
``paimon_tail_follow_rows_total``                rows handed to the output {table}
``paimon_tail_follow_snapshots_total``           snapshots read {table}
``paimon_tail_follow_snapshot``                  the last snapshot whose rows were all handed out {table}
``paimon_tail_follow_latest_snapshot``           the table's latest snapshot, as last seen {table}
``paimon_tail_follow_lag_snapshots``             latest snapshot - the follow's {table}
``paimon_tail_follow_lag_seconds``               latest commit time - the follow's snapshot's {table}
``paimon_tail_follow_caught_up``                 1 when nothing is waiting to be read {table}
``paimon_tail_follow_consumer_next_snapshot``    next snapshot in the consumer file (--consumer-id) {table, consumer}
``paimon_tail_follow_progress_age_seconds``      seconds since the follow last read a snapshot or wrote a row {table}
``paimon_tail_follow_stalled``                   1 while behind with no progress for ``STALL_SECONDS`` {table}
``paimon_tail_follow_stalls_total``              times it became stalled, as scrapes saw it {table}
``paimon_tail_storage_errors_total``             failed storage calls {table}
``paimon_tail_storage_outage``                   1 while the table's storage does not answer {table}
=============================================== ====================================================================

A stall is a follow that is behind (``lag_snapshots`` > 0) and has not moved for a while: its storage does not
answer, or what reads its output has stopped reading (a full pipe), or a snapshot is too big to read in time.
"""
from __future__ import annotations

import threading
import time
from typing import Dict, Optional, Tuple

from .service.metrics import STORAGE_ERRORS, STORAGE_OUTAGE, TABLE

STALL_SECONDS = 60.0


class FollowCollector:
    """One scrape of a follow: a ``Follower``'s or ``MultiFollower``'s stats."""

    def __init__(self, stats, table: str = "", consumer_id: Optional[str] = None, clock=time.monotonic) -> None:
        self.stats = stats
        self.table = table  # the table of a one-table follow's stats (a MultiFollower's name theirs)
        self.consumer_id = consumer_id
        self.clock = clock
        self._lock = threading.Lock()  # scrapes come from prometheus_client's threads
        self._progress: Dict[str, Tuple[tuple, float]] = {}  # table → (what it had done, when that last changed)
        self._stalled: Dict[str, bool] = {}
        self._stalls: Dict[str, int] = {}

    def _tables(self) -> Dict[str, object]:
        tables = getattr(self.stats, "tables", None)
        return dict(tables) if tables is not None else {self.table: self.stats}

    def collect(self):
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        def gauge(name, doc, labels=(TABLE,)):
            return GaugeMetricFamily(name, doc, labels=list(labels))

        rows = CounterMetricFamily("paimon_tail_follow_rows", "Rows handed to the output", labels=["table"])
        snapshots = CounterMetricFamily("paimon_tail_follow_snapshots", "Snapshots read", labels=["table"])
        snapshot = gauge("paimon_tail_follow_snapshot", "The last snapshot whose rows were all handed out")
        latest = gauge("paimon_tail_follow_latest_snapshot", "The table's latest snapshot, as last seen")
        lag = gauge("paimon_tail_follow_lag_snapshots", "Latest snapshot minus the follow's")
        lag_s = gauge("paimon_tail_follow_lag_seconds", "Latest commit time minus the follow's snapshot's")
        caught_up = gauge("paimon_tail_follow_caught_up", "1 when nothing is waiting to be read")
        consumer = gauge("paimon_tail_follow_consumer_next_snapshot", "The next snapshot in the consumer file",
                         ("table", "consumer"))
        age = gauge("paimon_tail_follow_progress_age_seconds",
                    "Seconds since the follow last finished a snapshot or wrote a row")
        stalled = gauge("paimon_tail_follow_stalled", f"1 while behind with no progress for {STALL_SECONDS:g} s")
        stalls = CounterMetricFamily("paimon_tail_follow_stalls", "Times the follow became stalled",
                                     labels=["table"])
        errors = CounterMetricFamily(STORAGE_ERRORS, "Failed storage calls", labels=[TABLE])
        outage = gauge(STORAGE_OUTAGE, "1 while the table's storage does not answer")
        now = self.clock()
        with self._lock:
            for name, s in self._tables().items():
                label = [name]
                rows.add_metric(label, s.rows)
                snapshots.add_metric(label, s.snapshots)
                if s.snapshot_id is not None:
                    snapshot.add_metric(label, s.snapshot_id)
                    if self.consumer_id:
                        consumer.add_metric([name, self.consumer_id], s.snapshot_id + 1)
                if s.latest_id is not None:
                    latest.add_metric(label, s.latest_id)
                lag.add_metric(label, s.lag_snapshots)
                lag_s.add_metric(label, s.lag_seconds)
                caught_up.add_metric(label, 1 if s.caught_up else 0)
                done = (s.snapshot_id, s.rows, s.snapshots)
                before, since = self._progress.get(name, (None, now))
                if done != before:
                    since = now
                self._progress[name] = (done, since)
                age.add_metric(label, now - since)
                stuck = s.lag_snapshots > 0 and now - since >= STALL_SECONDS or s.outage is not None
                if stuck and not self._stalled.get(name):
                    self._stalls[name] = self._stalls.get(name, 0) + 1
                self._stalled[name] = stuck
                stalled.add_metric(label, 1 if stuck else 0)
                stalls.add_metric(label, self._stalls.get(name, 0))
                errors.add_metric(label, s.health.failures)
                outage.add_metric(label, 1 if s.outage is not None else 0)
        yield from (rows, snapshots, snapshot, latest, lag, lag_s, caught_up, consumer, age, stalled, stalls, errors,
                    outage)


def collector_for(follower, consumer_id: Optional[str] = None) -> FollowCollector:
    """The collector of a ``Follower`` (its table named) or a ``MultiFollower`` (each table its own)."""
    ref = getattr(follower, "ref", None)
    return FollowCollector(follower.stats, ref.full_name if ref is not None else "", consumer_id)


def serve_metrics(collector: FollowCollector, host: str, port: int):
    """The collector's text format at http://host:port/metrics, from a thread of prometheus_client; returns the
    server and the port it bound (``port`` 0: any free one)."""
    from prometheus_client import start_http_server
    from prometheus_client.registry import CollectorRegistry

    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    server, _ = start_http_server(port, addr=host, registry=registry)
    return server, server.server_address[1]


__all__ = ["FollowCollector", "STALL_SECONDS", "collector_for", "serve_metrics"]
