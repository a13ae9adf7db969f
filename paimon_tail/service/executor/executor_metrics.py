"""An executor's metrics: its lookup counters (``LookupStats``, kept on its event loop and sent with every
heartbeat as ``ExecutorStats``, so one scrape of serve covers every executor that joined it) and, for
``executor --metrics-port``, its own collector. Names, labels and buckets: ``service/metrics.py``."""
from __future__ import annotations

import bisect
from typing import Sequence

from ..metrics import LOOKUP_BOUNDS, VISIBLE_BOUNDS, ExecutorFamilies, ready_gauge
from ..protocol import lookup_pb2 as pb
from ..protocol.probes import Probes


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


class ExecutorCollector:
    """``executor --metrics-port``: this executor's own counters, from what it holds (``holding.Holding``)."""

    def __init__(self, holding, probes: Probes) -> None:
        self.holding = holding
        self.probes = probes

    def collect(self):
        h = self.holding
        ex = ExecutorFamilies()
        ex.add(str(h.index), h.requests, h.stats.message(), h.serving(), h.stores.cache.bytes)
        yield from ex.all()
        yield ready_gauge(self.probes.serving)


__all__ = ["ExecutorCollector", "Histogram", "LookupStats"]
