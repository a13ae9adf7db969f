"""One scrape of ``serve``: the coordinator's own state (scanners, storage health, channels, the lease) and every
executor that joined it, from their heartbeats (``Member.stats``: an executor's counters travel in them). Names,
labels and buckets: ``service/metrics.py``."""
from __future__ import annotations

import time
from typing import Dict, Optional, Sequence

from ...storage.retry import StorageHealth
from ..metrics import STORAGE_ERRORS, STORAGE_OUTAGE, TABLE, ExecutorFamilies, families, ready_gauge
from ..protocol.probes import Probes
from .assignment import NONE
from .lease import ACTIVE, Lease
from .registry import Registry
from .scanner import TableScanner


class ServiceCollector:
    """The collector of one coordinator: its registry, its tables' scanners and storage health, its lease (None
    before it starts) and its health probes."""

    def __init__(self, registry: Registry, tables: Sequence[str], scanners: Dict[str, TableScanner],
                 health: Dict[str, StorageHealth], lease: Optional[Lease], probes: Probes) -> None:
        self.registry = registry
        self.tables = list(tables)
        self.scanners = scanners
        self.health = health
        self.lease = lease
        self.probes = probes

    def collect(self):
        counter, gauge, _ = families()
        reg = self.registry
        ex = ExecutorFamilies()
        lag = gauge("paimon_tail_lag_snapshots", "Latest snapshot minus the served one", labels=[TABLE, "executor"])
        lag_s = gauge("paimon_tail_lag_seconds", "Latest commit time minus the served one's",
                      labels=[TABLE, "executor"])
        latest = {name: s.snapshot for name, s in self.scanners.items()}
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
                               labels=[TABLE])
        errors = counter(STORAGE_ERRORS, "Failed storage calls of the scanner", labels=[TABLE])
        outage = gauge(STORAGE_OUTAGE, "1 while the table's storage does not answer", labels=[TABLE])
        for name in self.tables:
            snap = latest.get(name)
            if snap is not None:
                table_snapshot.add_metric([name], snap.id)
            health = self.health[name]
            errors.add_metric([name], health.failures)
            outage.add_metric([name], 1 if health.outage is not None else 0)
        lease = self.lease
        active = gauge("paimon_tail_coordinator_active", "1: the active coordinator, 0: standing by")
        active.add_metric([], 1 if lease is not None and lease.role == ACTIVE else 0)
        epoch = gauge("paimon_tail_coordinator_epoch", "The registration's epoch held or followed")
        epoch.add_metric([], lease.epoch if lease is not None else 0)
        standbys = gauge("paimon_tail_coordinator_standbys", "Standby coordinators connected")
        standbys.add_metric([], len(lease.standbys) if lease is not None else 0)
        yield from ex.all()
        yield from (lag, lag_s, executors, channels, table_snapshot, errors, outage, active, epoch, standbys,
                    ready_gauge(self.probes.serving))


__all__ = ["ServiceCollector"]
