"""Group-commit figures kept as plain counts, exposed as Prometheus histograms at scrape.

:class:`FlushStats` is the broker's :class:`~riverbed.storage.flusher.FlushObserver`: the
flusher thread reports each log flush's duration and each round's size; each report is a
``bisect`` and two additions under one lock (prometheus-client's histograms take a lock
per bucket and per sum and scan their buckets, and the flusher thread competes with the
event loop for the GIL).  :meth:`FlushStats.collect` (the scrape thread) copies the counts
under the lock and builds:

* ``riverbed_fsync_duration_seconds`` -- one partition log flush (the fsync of its active
  segment, plus any segments rolled since the last flush and the directory, plus the
  zeros kept ahead of the log, :mod:`riverbed.storage.preallocate`), counted when the
  flush returns: after its waiters were answered, so a client can see its acks before
  the count moves; a flush on the io_uring (:mod:`riverbed.storage.uring`) counts from
  its submission to the loop reading its last completion (the zeros' fsync included);
* ``riverbed_group_commit_batch_size`` -- flush requests (durable appends, forced
  flushes) served by one round;
* ``riverbed_group_commit_logs`` -- partition logs fsynced by one round;
* ``riverbed_log_flushes_total{thread}`` -- log flushes by where their fsync ran:
  ``event_loop`` (submitted to the io_uring, completed on the loop) or ``helper`` (a
  flusher helper thread: the fallback, and every flush when io_uring is off).

Thread-safety: any thread may report or collect.  Counts only grow; nothing survives a
restart.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from riverbed.broker.metrics_requests import cumulative_buckets

FSYNC_BUCKETS = (
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
    0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
)  # fmt: skip
"""fsync buckets (seconds): ~110-160 µs p50 and up to 5 ms p99.9 measured here."""

BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096)
"""Group-commit batch sizes (flush requests or logs per round)."""


class _Counts:
    __slots__ = ("buckets", "total")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.buckets = [0] * (len(bounds) + 1)
        self.total = 0.0


class FlushStats(Collector):
    """fsync durations and group-commit round sizes (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fsync = _Counts(FSYNC_BUCKETS)
        self._requests = _Counts(BATCH_BUCKETS)
        self._logs = _Counts(BATCH_BUCKETS)
        self._on_loop = 0
        self._on_helper = 0

    def fsync_done(self, seconds: float, *, on_ring: bool = False) -> None:
        bucket = bisect.bisect_left(FSYNC_BUCKETS, seconds)
        with self._lock:
            self._fsync.buckets[bucket] += 1
            self._fsync.total += seconds
            if on_ring:
                self._on_loop += 1
            else:
                self._on_helper += 1

    def round_done(self, logs: int, requests: int) -> None:
        by_logs = bisect.bisect_left(BATCH_BUCKETS, logs)
        by_requests = bisect.bisect_left(BATCH_BUCKETS, requests)
        with self._lock:
            self._logs.buckets[by_logs] += 1
            self._logs.total += logs
            self._requests.buckets[by_requests] += 1
            self._requests.total += requests

    def describe(self) -> Iterable[Metric]:
        return []  # computed per scrape

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            copies = [
                (c.buckets.copy(), c.total) for c in (self._fsync, self._requests, self._logs)
            ]
            on_loop, on_helper = self._on_loop, self._on_helper
        (fsync, fsync_sum), (requests, requests_sum), (logs, logs_sum) = copies
        yield _histogram(
            "riverbed_fsync_duration_seconds",
            "Duration of one partition log flush by the group-commit thread "
            "(fsync of its active segment and of any segments rolled since the last one).",
            FSYNC_BUCKETS,
            fsync,
            fsync_sum,
        )
        yield _histogram(
            "riverbed_group_commit_batch_size",
            "Flush requests (durable appends, forced flushes) served by one group-commit round.",
            BATCH_BUCKETS,
            requests,
            requests_sum,
        )
        yield _histogram(
            "riverbed_group_commit_logs",
            "Partition logs fsynced by one group-commit round.",
            BATCH_BUCKETS,
            logs,
            logs_sum,
        )
        flushes = CounterMetricFamily(
            "riverbed_log_flushes",
            "Partition log flushes by the thread their fsync ran on: event_loop (io_uring) "
            "or helper (a flusher helper thread).",
            labels=["thread"],
        )
        flushes.add_metric(["event_loop"], on_loop)
        flushes.add_metric(["helper"], on_helper)
        yield flushes


def _histogram(
    name: str, documentation: str, bounds: tuple[float, ...], counts: list[int], total: float
) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, documentation)
    family.add_metric([], cumulative_buckets(bounds, counts), total)
    return family
