"""Per-request figures kept in plain counters, exposed as Prometheus families at scrape.

The request path is the broker's hottest: prometheus-client's own instruments take a lock
per increment (a histogram observation takes two and scans its buckets), about 2.5 µs for
the five updates a Produce makes.  :class:`RequestStats` keeps instead, per API, a bucket
count list (``bisect`` picks the bucket), a sum and a count per error code, and per topic
``[bytes, records]`` in and out, all updated under **one** uncontended lock per request;
:meth:`RequestStats.collect` (prometheus-client's scrape thread) copies them under that
lock and builds the families:

* ``riverbed_requests_total{api,error}`` (counter),
* ``riverbed_request_duration_seconds{api}`` (histogram: ``_bucket{le}``, ``_sum``,
  ``_count``),
* ``riverbed_topic_bytes_in_total``, ``riverbed_topic_records_in_total``,
  ``riverbed_topic_bytes_out_total``, ``riverbed_topic_records_out_total`` (``{topic}``).

Thread-safety: :meth:`RequestStats.record` from one thread at a time (the event loop),
:meth:`RequestStats.collect` from any; the lock is held for a few additions or for the
copy, never for I/O.  Counts only grow; nothing survives a restart.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from riverbed.broker.metrics_traffic import Traffic

REQUEST_BUCKETS = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
)  # fmt: skip
"""Request latency buckets (seconds): 100 µs up to a long-poll Fetch or a join wait."""


def cumulative_buckets(bounds: tuple[float, ...], counts: list[int]) -> list[tuple[str, float]]:
    """Prometheus ``le`` points from per-bucket counts (``counts[i]``: values ``<=
    bounds[i]`` and above the bound before; the last one: above every bound)."""
    points = []
    cumulative = 0
    for le, count in zip([*(repr(float(b)) for b in bounds), "+Inf"], counts, strict=True):
        cumulative += count
        points.append((le, float(cumulative)))
    return points


class _Api:
    """One API's figures: bucket counts (the last is +Inf), their sum, counts per error."""

    __slots__ = ("buckets", "errors", "name", "total")

    def __init__(self, name: str) -> None:
        self.name = name
        self.buckets = [0] * (len(REQUEST_BUCKETS) + 1)
        self.total = 0.0
        self.errors: dict[str, int] = {}


class RequestStats(Collector):
    """Request counts, latencies and per-topic traffic (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._apis: dict[int, _Api] = {}
        self._in: dict[str, list[int]] = {}
        self._out: dict[str, list[int]] = {}

    def record(
        self,
        api_key: int,
        api_name: str,
        error: str,
        seconds: float,
        traffic_in: Traffic | None = None,
        traffic_out: Traffic | None = None,
    ) -> None:
        """One request answered with ``error`` after ``seconds``; bytes and records it
        appended (``traffic_in``) or returned (``traffic_out``), per topic."""
        bucket = bisect.bisect_left(REQUEST_BUCKETS, seconds)
        with self._lock:
            api = self._apis.get(api_key)
            if api is None:
                api = self._apis[api_key] = _Api(api_name)
            api.buckets[bucket] += 1
            api.total += seconds
            api.errors[error] = api.errors.get(error, 0) + 1
            if traffic_in:
                _add(self._in, traffic_in)
            if traffic_out:
                _add(self._out, traffic_out)

    def describe(self) -> Iterable[Metric]:
        return []  # computed per scrape

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            apis = [(a.name, list(a.buckets), a.total, dict(a.errors)) for a in self._apis.values()]
            traffic_in = {topic: list(counts) for topic, counts in self._in.items()}
            traffic_out = {topic: list(counts) for topic, counts in self._out.items()}
        requests = CounterMetricFamily(
            "riverbed_requests",
            "Requests answered, by API and by the error code the response reports "
            "(the first non-zero error_code in it, NONE otherwise).",
            labels=["api", "error"],
        )
        duration = HistogramMetricFamily(
            "riverbed_request_duration_seconds",
            "Time from dispatching a request to its handler until its response is known.",
            labels=["api"],
        )
        for name, buckets, total, errors in sorted(apis):
            for error, count in sorted(errors.items()):
                requests.add_metric([name, error], count)
            duration.add_metric([name], cumulative_buckets(REQUEST_BUCKETS, buckets), total)
        yield requests
        yield duration
        yield from _traffic_families("in", "appended by Produce requests", traffic_in)
        yield from _traffic_families("out", "returned by Fetch responses", traffic_out)


def _add(totals: dict[str, list[int]], traffic: Traffic) -> None:
    for topic, (nbytes, nrecords) in traffic.items():
        counts = totals.get(topic)
        if counts is None:
            totals[topic] = [nbytes, nrecords]
        else:
            counts[0] += nbytes
            counts[1] += nrecords


def _traffic_families(direction: str, what: str, traffic: dict[str, list[int]]) -> Iterable[Metric]:
    nbytes = CounterMetricFamily(
        f"riverbed_topic_bytes_{direction}",
        f"Record-batch bytes {what}, per topic.",
        labels=["topic"],
    )
    records = CounterMetricFamily(
        f"riverbed_topic_records_{direction}",
        f"Records (in complete record batches) {what}, per topic.",
        labels=["topic"],
    )
    for topic, (b, r) in sorted(traffic.items()):
        nbytes.add_metric([topic], b)
        records.add_metric([topic], r)
    yield nbytes
    yield records
