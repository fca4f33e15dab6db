"""Structured Streaming progress as Prometheus metrics: a listener and its endpoint.

:func:`serve_pipeline_metrics` is the one call a pipeline runner makes (``riverbed
pipeline run --metrics-listen HOST:PORT``)::

    server = serve_pipeline_metrics(spark, "127.0.0.1", 9405)
    ...  # start queries; Prometheus scrapes http://127.0.0.1:9405/metrics
    server.close()

It registers a :class:`ProgressListener` (a ``StreamingQueryListener``) on the session
and serves a private registry with prometheus-client's HTTP server on its own thread.
Every query of the session reports, labelled ``query`` (its name, else its id):

============================================== ===========================================
``riverbed_pipeline_active``                   1 while the query runs, 0 once terminated
``riverbed_pipeline_batches_total``            micro-batches completed
``riverbed_pipeline_batch_id``                 id of the last completed micro-batch
``riverbed_pipeline_input_rows_total``         rows read from the sources
``riverbed_pipeline_input_rows_per_second``    Spark's ``inputRowsPerSecond`` (last batch)
``riverbed_pipeline_processed_rows_per_second`` Spark's ``processedRowsPerSecond``
``riverbed_pipeline_batch_duration_seconds``   histogram of ``batchDuration``
``riverbed_pipeline_watermark_seconds``        event-time watermark (Unix seconds; only
                                               for queries with a watermark)
``riverbed_pipeline_state_rows``               ``numRowsTotal`` per stateful operator
                                               (``operator`` label: its index and name)
``riverbed_pipeline_state_memory_bytes``       ``memoryUsedBytes`` per stateful operator
============================================== ===========================================

Thread-safety: Spark calls the listener on its listener-bus thread (through py4j in
classic PySpark); prometheus-client instruments are thread-safe and the HTTP server reads
them from its own thread.  The listener never raises into Spark (a malformed progress is
logged and skipped).  Driver only.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from pyspark.sql.streaming.listener import StreamingQueryListener

from riverbed.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

BATCH_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
"""Micro-batch durations (seconds): ~0.5 s is the floor measured on 2 cores."""


def parse_watermark(text: str | None) -> float | None:
    """Spark's ``eventTime["watermark"]`` (``2024-01-01T00:00:00.000Z``) as Unix seconds."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class PipelineMetrics:
    """The instruments pipelines report into, in ``registry``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        q = ["query"]
        self.active = Gauge(
            "riverbed_pipeline_active", "1 while the query runs.", q, registry=registry
        )
        self.batches = Counter(
            "riverbed_pipeline_batches", "Micro-batches completed.", q, registry=registry
        )
        self.batch_id = Gauge(
            "riverbed_pipeline_batch_id", "Last completed micro-batch id.", q, registry=registry
        )
        self.input_rows = Counter(
            "riverbed_pipeline_input_rows", "Rows read from the sources.", q, registry=registry
        )
        self.input_rate = Gauge(
            "riverbed_pipeline_input_rows_per_second",
            "Input rows per second over the last micro-batch (Spark's inputRowsPerSecond).",
            q,
            registry=registry,
        )
        self.processed_rate = Gauge(
            "riverbed_pipeline_processed_rows_per_second",
            "Rows processed per second in the last micro-batch (processedRowsPerSecond).",
            q,
            registry=registry,
        )
        self.batch_duration = Histogram(
            "riverbed_pipeline_batch_duration_seconds",
            "Micro-batch duration (Spark's batchDuration).",
            q,
            buckets=BATCH_BUCKETS,
            registry=registry,
        )
        self.watermark = Gauge(
            "riverbed_pipeline_watermark_seconds",
            "Event-time watermark of the query, as Unix seconds.",
            q,
            registry=registry,
        )
        self.state_rows = Gauge(
            "riverbed_pipeline_state_rows",
            "Rows held in a stateful operator's state store (numRowsTotal).",
            ["query", "operator"],
            registry=registry,
        )
        self.state_memory = Gauge(
            "riverbed_pipeline_state_memory_bytes",
            "Memory used by a stateful operator's state store (memoryUsedBytes).",
            ["query", "operator"],
            registry=registry,
        )

    def progress(self, query: str, progress: Any) -> None:
        """Record one ``StreamingQueryProgress`` of ``query``."""
        self.active.labels(query).set(1)
        self.batches.labels(query).inc()
        self.batch_id.labels(query).set(progress.batchId)
        self.input_rows.labels(query).inc(max(int(progress.numInputRows or 0), 0))
        self.input_rate.labels(query).set(float(progress.inputRowsPerSecond or 0.0))
        self.processed_rate.labels(query).set(float(progress.processedRowsPerSecond or 0.0))
        self.batch_duration.labels(query).observe(max(progress.batchDuration, 0) / 1000)
        watermark = parse_watermark((progress.eventTime or {}).get("watermark"))
        if watermark is not None:
            self.watermark.labels(query).set(watermark)
        for index, operator in enumerate(progress.stateOperators or ()):
            name = f"{index}:{operator.operatorName}"
            self.state_rows.labels(query, name).set(operator.numRowsTotal)
            self.state_memory.labels(query, name).set(operator.memoryUsedBytes)


class ProgressListener(StreamingQueryListener):
    """Feeds :class:`PipelineMetrics` from a session's streaming query events."""

    def __init__(self, metrics: PipelineMetrics) -> None:
        self._metrics = metrics
        self._names: dict[str, str] = {}  # query id -> label
        self._lock = threading.Lock()

    def _label(self, query_id: object, name: str | None) -> str:
        key = str(query_id)
        with self._lock:
            if name:
                self._names[key] = name
            return self._names.get(key, key)

    def onQueryStarted(self, event: Any) -> None:
        try:
            self._metrics.active.labels(self._label(event.id, event.name)).set(1)
        except Exception:
            log.exception("recording a query start failed")

    def onQueryProgress(self, event: Any) -> None:
        try:
            progress = event.progress
            self._metrics.progress(self._label(progress.id, progress.name), progress)
        except Exception:
            log.exception("recording a query's progress failed")

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        try:
            self._metrics.active.labels(self._label(event.id, None)).set(0)
        except Exception:
            log.exception("recording a query's end failed")


class PipelineMetricsServer:
    """What :func:`serve_pipeline_metrics` started; :meth:`close` undoes it."""

    def __init__(
        self,
        spark: SparkSession,
        listener: ProgressListener,
        metrics: PipelineMetrics,
        server: WSGIServer,
        thread: threading.Thread,
    ) -> None:
        self.metrics = metrics
        self.port = int(server.server_address[1])
        self._spark = spark
        self._listener: ProgressListener | None = listener
        self._server = server
        self._thread = thread

    def close(self) -> None:
        """Remove the listener and stop serving (blocks up to ~0.5 s; idempotent)."""
        listener, self._listener = self._listener, None
        if listener is None:
            return
        try:
            self._spark.streams.removeListener(listener)
        except Exception:  # the session is already stopped
            log.debug("removing the progress listener failed", exc_info=True)
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def serve_pipeline_metrics(spark: SparkSession, host: str, port: int) -> PipelineMetricsServer:
    """Report every streaming query of ``spark`` at ``http://host:port/metrics`` (port 0
    picks a free one: see ``.port``); a port in use is a one-line ConfigError."""
    registry = CollectorRegistry()
    metrics = PipelineMetrics(registry)
    try:
        server, thread = start_http_server(port, addr=host, registry=registry)
    except OSError as exc:
        raise ConfigError(
            f"cannot listen on {host}:{port} (--metrics-listen): {exc.strerror}"
        ) from None
    listener = ProgressListener(metrics)
    try:
        spark.streams.addListener(listener)
    except BaseException:
        server.shutdown()
        server.server_close()
        raise
    log.info("pipeline metrics at http://%s:%d/metrics", host, int(server.server_address[1]))
    return PipelineMetricsServer(spark, listener, metrics, server, thread)
