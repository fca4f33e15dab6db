"""Request figures kept as plain counters come out as well-formed Prometheus families."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from riverbed.broker.metrics_flush import FlushStats
from riverbed.broker.metrics_requests import RequestStats


def _samples(stats: RequestStats) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    registry = CollectorRegistry()
    registry.register(stats)
    text = generate_latest(registry).decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_histogram_buckets_are_cumulative_and_errors_counted_by_name() -> None:
    stats = RequestStats()
    stats.record(0, "Produce", "NONE", 0.0002, {"t": [100, 3]})
    stats.record(0, "Produce", "NONE", 0.002, {"t": [50, 2]})
    stats.record(0, "Produce", "MESSAGE_TOO_LARGE", 45.0)
    stats.record(1, "Fetch", "NONE", 0.5, traffic_out={"t": [70, 4]})
    samples = _samples(stats)

    def get(name: str, **labels: str) -> float:
        return samples[(name, frozenset(labels.items()))]

    assert get("riverbed_requests_total", api="Produce", error="NONE") == 2
    assert get("riverbed_requests_total", api="Produce", error="MESSAGE_TOO_LARGE") == 1
    bucket = "riverbed_request_duration_seconds_bucket"
    assert get(bucket, api="Produce", le="0.0001") == 0
    assert get(bucket, api="Produce", le="0.00025") == 1
    assert get(bucket, api="Produce", le="0.0025") == 2
    assert get(bucket, api="Produce", le="30.0") == 2
    assert get(bucket, api="Produce", le="+Inf") == 3
    assert get("riverbed_request_duration_seconds_count", api="Produce") == 3
    assert abs(get("riverbed_request_duration_seconds_sum", api="Produce") - 45.0022) < 1e-9
    assert get(bucket, api="Fetch", le="0.5") == 1  # le is inclusive
    assert get("riverbed_topic_bytes_in_total", topic="t") == 150
    assert get("riverbed_topic_records_in_total", topic="t") == 5
    assert get("riverbed_topic_bytes_out_total", topic="t") == 70
    assert get("riverbed_topic_records_out_total", topic="t") == 4


def test_flush_stats_become_three_histograms_and_a_counter() -> None:
    stats = FlushStats()
    stats.fsync_done(0.0002)
    stats.fsync_done(0.003, on_ring=True)
    stats.round_done(logs=2, requests=7)
    registry = CollectorRegistry()
    registry.register(stats)
    text = generate_latest(registry).decode()
    assert 'riverbed_fsync_duration_seconds_bucket{le="0.00025"} 1.0' in text
    assert 'riverbed_fsync_duration_seconds_bucket{le="+Inf"} 2.0' in text
    assert "riverbed_fsync_duration_seconds_count 2.0" in text
    assert 'riverbed_group_commit_batch_size_bucket{le="4.0"} 0.0' in text
    assert 'riverbed_group_commit_batch_size_bucket{le="8.0"} 1.0' in text
    assert "riverbed_group_commit_batch_size_sum 7.0" in text
    assert 'riverbed_group_commit_logs_bucket{le="2.0"} 1.0' in text
    assert 'riverbed_log_flushes_total{thread="event_loop"} 1.0' in text
    assert 'riverbed_log_flushes_total{thread="helper"} 1.0' in text
