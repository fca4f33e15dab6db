"""The broker's Prometheus metrics: counters and histograms fed by cheap hooks.

One :class:`BrokerMetrics` per broker, created only when ``metrics.listen`` (the
``--metrics-listen`` flag) is set; a broker without it pays nothing but a ``None`` check
per request.  It owns a private :class:`~prometheus_client.CollectorRegistry` (two
brokers in one process do not mix their figures) holding:

* :attr:`BrokerMetrics.requests` (:class:`~riverbed.broker.metrics_requests.RequestStats`),
  fed once per *request* by the connection (:meth:`BrokerMetrics.request_done` /
  :meth:`BrokerMetrics.task_done`): request counts by API and error, latency histograms,
  bytes and records per topic;
* prometheus-client instruments updated per connection opened or closed;
* :attr:`BrokerMetrics.flushes` (:class:`~riverbed.broker.metrics_flush.FlushStats`),
  fed per fsync and per group-commit round by the flusher thread
  (:class:`~riverbed.storage.flusher.FlushObserver`);
* a :class:`~riverbed.broker.metrics_collector.BrokerStateCollector` that computes the
  gauges read from broker state (log offsets and sizes, consumer-group lag) at scrape
  time, registered by the broker when it binds the endpoint.

Every metric is documented in ``docs/metrics.md``; names follow Prometheus conventions
under the ``riverbed_`` prefix (``_total`` counters, ``_seconds`` and ``_bytes`` units).

Cost on the hot path: per request one ``perf_counter`` pair and a few additions under
one uncontended lock (:class:`~riverbed.broker.metrics_requests.RequestStats`, turned into
Prometheus families only at scrape time); a Produce or Fetch adds, per topic in it, its
byte count and its record count read from record-batch headers
(:mod:`riverbed.broker.metrics_traffic`), never per record.

Thread-safety: the request and connection hooks run on the event loop only; the flush
hooks run on the flusher thread; prometheus-client instruments and RequestStats are
thread-safe, and the HTTP thread reads them at scrape time.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge

from riverbed.broker.metrics_flush import FlushStats
from riverbed.broker.metrics_requests import RequestStats
from riverbed.broker.metrics_traffic import (
    TopicName,
    fetch_traffic,
    produce_error,
    produce_traffic,
    response_error,
)
from riverbed.protocol.api import API_BY_KEY
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.framing import RequestHeader
from riverbed.protocol.messages import FetchResponse, ProduceRequest, ProduceResponse

log = logging.getLogger(__name__)

PRODUCE_KEY = 0
FETCH_KEY = 1


def api_name(api_key: int) -> str:
    """Kafka's name of an API key (``Produce``), or the key as text if unknown."""
    spec = API_BY_KEY.get(api_key)
    return spec.name if spec is not None else str(api_key)


def error_name(code: int) -> str:
    """Kafka's name of an error code (``UNKNOWN_TOPIC_OR_PARTITION``), or the number."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


class BrokerMetrics:
    """Live instruments of one broker (see the module docstring)."""

    def __init__(self, topic_name: TopicName) -> None:
        """``topic_name`` resolves topic ids (Produce/Fetch v13+) on the event loop."""
        self.registry = CollectorRegistry(auto_describe=True)
        self._topic_name = topic_name
        r = self.registry
        self.requests = RequestStats()
        r.register(self.requests)
        self._error_names: dict[int, str] = {}
        self._api_names: dict[int, str] = {}
        self._connections = Gauge(
            "riverbed_connections",
            "Client connections open now, per listener.",
            ["listener"],
            registry=r,
        )
        self._connections_accepted = Counter(
            "riverbed_connections_accepted",
            "Client connections accepted since start, per listener.",
            ["listener"],
            registry=r,
        )
        self.flushes = FlushStats()
        r.register(self.flushes)

    # -- requests (event loop) ----------------------------------------------------------
    def request_done(
        self, header: RequestHeader, request: Any, response: Any, started: float
    ) -> None:
        """A request's response is known; ``started`` is its ``time.perf_counter()``."""
        elapsed = time.perf_counter() - started
        api_key = header.api_key
        produced = response if isinstance(response, ProduceResponse) else None
        code = produce_error(produced) if produced is not None else response_error(response)
        traffic_in = traffic_out = None
        if api_key == PRODUCE_KEY and isinstance(request, ProduceRequest):
            traffic_in = produce_traffic(request, produced, self._topic_name, code)
        elif api_key == FETCH_KEY and isinstance(response, FetchResponse):
            traffic_out = fetch_traffic(response, self._topic_name)
        self.requests.record(
            api_key,
            self._api_name(api_key),
            self._error_name(code),
            elapsed,
            traffic_in,
            traffic_out,
        )

    def _api_name(self, api_key: int) -> str:
        name = self._api_names.get(api_key)
        if name is None:
            name = self._api_names[api_key] = api_name(api_key)
        return name

    def _error_name(self, code: int) -> str:
        name = self._error_names.get(code)
        if name is None:
            name = self._error_names[code] = error_name(code)
        return name

    def task_done(
        self, task: asyncio.Future[Any], header: RequestHeader, request: Any, started: float
    ) -> None:
        """The awaitable a handler returned is done: record its request.  A handler that
        raised counts as UNKNOWN_SERVER_ERROR; a cancelled one (connection closed) is not
        counted."""
        if task.cancelled():
            return
        if task.exception() is not None:
            self._failed(header, started)
            return
        self.request_done(header, request, task.result(), started)

    def _failed(self, header: RequestHeader, started: float) -> None:
        elapsed = time.perf_counter() - started
        name = self._api_name(header.api_key)
        self.requests.record(header.api_key, name, ErrorCode.UNKNOWN_SERVER_ERROR.name, elapsed)

    # -- connections (event loop) -------------------------------------------------------
    def connection_opened(self, listener: str) -> None:
        self._connections.labels(listener).inc()
        self._connections_accepted.labels(listener).inc()

    def connection_closed(self, listener: str) -> None:
        self._connections.labels(listener).dec()

    # -- group commit (flusher thread; riverbed.storage.flusher.FlushObserver) ----------
    def fsync_done(self, seconds: float, *, on_ring: bool = False) -> None:
        self.flushes.fsync_done(seconds, on_ring=on_ring)

    def round_done(self, logs: int, requests: int) -> None:
        self.flushes.round_done(logs, requests)
