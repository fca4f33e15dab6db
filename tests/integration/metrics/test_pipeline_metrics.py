"""``serve_pipeline_metrics``: a real streaming query (rate source, event-time windows with
a watermark) reports its progress at ``/metrics``, and the figures move.

About 30 s (a SparkSession start and a few one-second micro-batches)::

    .venv/bin/python -m pytest -q -p no:cacheprovider tests/integration/metrics/test_pipeline_metrics.py
"""  # noqa: E501

from __future__ import annotations

import socket
import time
import urllib.request

import pytest

pytest.importorskip("pyspark")

from prometheus_client.parser import text_string_to_metric_families
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from riverbed.errors import ConfigError
from riverbed.spark.metrics import parse_watermark, serve_pipeline_metrics
from riverbed.spark.session import local_session
from riverbed.testing.broker_process import wait_until

WAIT_S = 180.0
QUERY = "rate-windows"


def scrape(port: int) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    url = f"http://127.0.0.1:{port}/metrics"
    with urllib.request.urlopen(url, timeout=30) as response:
        text = response.read().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def poll_interval() -> None:
    time.sleep(0.25)  # between scrapes; what we wait on is the condition


def get(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str) -> float:
    return samples.get((name, frozenset({("query", QUERY)})), 0.0)


def test_watermark_text_becomes_unix_seconds() -> None:
    assert parse_watermark("1970-01-01T00:00:10.000Z") == 10.0
    assert parse_watermark(None) is None
    assert parse_watermark("not a time") is None


@pytest.mark.slow
def test_a_streaming_query_reports_progress_watermark_and_state(tmp_path: object) -> None:
    started_here = SparkSession.getActiveSession() is None
    spark = local_session("riverbed-metrics-test", register=False)
    server = serve_pipeline_metrics(spark, "127.0.0.1", 0)
    query = None
    try:
        with pytest.raises(ConfigError, match="cannot listen"):
            serve_pipeline_metrics(spark, "127.0.0.1", server.port)
        counts = (
            spark.readStream.format("rate")
            .option("rowsPerSecond", 50)
            .load()
            .withWatermark("timestamp", "1 second")
            .groupBy(F.window("timestamp", "2 seconds"))
            .count()
        )
        query = (
            counts.writeStream.queryName(QUERY)
            .outputMode("append")
            .format("noop")
            .trigger(processingTime="1 second")
            .start()
        )

        def moved() -> bool:
            assert query is not None and query.exception() is None
            samples = scrape(server.port)
            return (
                get(samples, "riverbed_pipeline_batches_total") >= 3
                and get(samples, "riverbed_pipeline_input_rows_total") > 0
                and get(samples, "riverbed_pipeline_watermark_seconds") > 0
            )

        wait_until(moved, WAIT_S, "the query's progress at /metrics", step=poll_interval)
        samples = scrape(server.port)
        assert get(samples, "riverbed_pipeline_active") == 1
        assert get(samples, "riverbed_pipeline_batch_duration_seconds_count") >= 3
        assert get(samples, "riverbed_pipeline_input_rows_per_second") >= 0
        state = [
            value
            for (name, labels), value in samples.items()
            if name == "riverbed_pipeline_state_rows" and ("query", QUERY) in labels
        ]
        assert state, "no stateful operator reported"
        before = get(samples, "riverbed_pipeline_input_rows_total")
        wait_until(
            lambda: get(scrape(server.port), "riverbed_pipeline_input_rows_total") > before,
            WAIT_S,
            "more input rows",
            step=poll_interval,
        )
        query.stop()
        wait_until(
            lambda: get(scrape(server.port), "riverbed_pipeline_active") == 0,
            WAIT_S,
            "the terminated query to show active 0",
            step=poll_interval,
        )
    finally:
        if query is not None and query.isActive:
            query.stop()
        server.close()
        if started_here:  # later tests build their sessions with their own settings
            spark.stop()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", server.port), 1):
        pass
