"""The ``approx-pageviews`` example on local Spark against a ``riverbed broker`` process.

Stream = batch: seeded views arriving up to 10 min (less 1 ms) out of event-time order,
in two ``availableNow`` runs on one checkpoint (a restart in between, small micro-batches
in the first), give per final window exactly what the same aggregates compute over the
whole input as a batch (HLL++ and percentile_approx are deterministic for a set of
values), and the top urls equal the exact counts (at most 50 distinct urls per window,
so the Misra-Gries summary never trims).  The approximations are checked against the
exact answers within their documented bounds.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from pyspark.sql import SparkSession

import riverbed.pipelines.approx_pageviews as example
from riverbed.testing.broker_process import BrokerProcess

from .conftest import RunExample, create_topics, drain, produce_json
from .contract import DELAY_MS, MINUTE_MS, T0, max_disorder_ms, shuffle_within

pytestmark = [pytest.mark.time_examples, pytest.mark.timeout(900)]  # two Spark runs

WINDOW_MS = 5 * MINUTE_MS


def _views(rng: random.Random, count: int) -> list[dict[str, Any]]:
    urls = [f"/u{i}" for i in range(30)]
    weights = [1 / (i + 1) for i in range(30)]
    out = []
    for _ in range(count):
        out.append(
            {
                "user_id": f"user{rng.randrange(40)}",
                "url": rng.choices(urls, weights)[0],
                "ts": T0 + rng.randrange(60 * MINUTE_MS),
                "load_ms": None if rng.random() < 0.1 else rng.randrange(20, 3000),
            }
        )
    return out


def _expected_stats(spark: SparkSession, views: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from pyspark.sql import functions as F

    frame = spark.createDataFrame(
        views, "user_id string, url string, ts long, load_ms long"
    ).withColumn("event_time", F.timestamp_millis("ts"))
    watermark = max(v["ts"] for v in views) - DELAY_MS
    rows = example.window_stats(frame).collect()
    return sorted(
        (row.asDict() for row in rows if row.window_end <= watermark),
        key=lambda r: r["window_start"],
    )


def _expected_top(views: list[dict[str, Any]]) -> list[dict[str, Any]]:
    watermark = max(v["ts"] for v in views) - DELAY_MS
    by_window: dict[int, Counter[str]] = {}
    for view in views:
        start = view["ts"] - view["ts"] % WINDOW_MS
        by_window.setdefault(start, Counter())[view["url"]] += 1
    out = []
    for start, counts in sorted(by_window.items()):
        if start + WINDOW_MS > watermark:
            continue
        n = sum(counts.values())
        top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[: example.TOP_K]
        out.append(
            {
                "window_start": start,
                "window_end": start + WINDOW_MS,
                "views": n,
                "top": [{"url": u, "views": c} for u, c in top],
                "max_undercount": n // (example.CAPACITY + 1),
            }
        )
    return out


def _values(bootstrap: str, topic: str) -> list[dict[str, Any]]:
    out = drain(bootstrap, topic)
    assert all(key == str(value["window_start"]).encode() for key, value in out)
    return sorted((v for _, v in out), key=lambda v: v["window_start"])


def test_stream_equals_batch_with_disorder_and_restart(
    spark: SparkSession, broker: BrokerProcess, run_example: RunExample
) -> None:
    bootstrap = broker.bootstrap_servers
    create_topics(bootstrap, ["pageviews", example.STATS_TOPIC, example.TOP_TOPIC])
    rng = random.Random(17)
    views = _views(rng, 400)
    arrivals = shuffle_within(views, rng, DELAY_MS - 1)
    assert 5 * MINUTE_MS < max_disorder_ms(arrivals) < DELAY_MS
    half = len(arrivals) // 2
    produce_json(bootstrap, "pageviews", arrivals[:half])
    run_example(example, bootstrap, extra_source_options=(("maxOffsetsPerTrigger", "60"),))
    assert _values(bootstrap, example.STATS_TOPIC) == _expected_stats(spark, arrivals[:half])
    assert _values(bootstrap, example.TOP_TOPIC) == _expected_top(arrivals[:half])
    produce_json(bootstrap, "pageviews", arrivals[half:])
    run_example(example, bootstrap)
    stats = _values(bootstrap, example.STATS_TOPIC)
    assert len(stats) >= 9
    assert stats == _expected_stats(spark, views)
    assert _values(bootstrap, example.TOP_TOPIC) == _expected_top(views)
    # the approximations within their bounds of the exact answers
    for window in stats:
        inside = [v for v in views if window["window_start"] <= v["ts"] < window["window_end"]]
        users = len({v["user_id"] for v in inside})
        assert abs(window["distinct_users"] - users) <= 3 * 0.05 * users
        loads = sorted(v["load_ms"] for v in inside if v["load_ms"] is not None)
        for p, got in ((0.5, window["p50_load_ms"]), (0.99, window["p99_load_ms"])):
            rank = sum(1 for x in loads if x <= got)
            assert abs(rank - p * len(loads)) <= len(loads) / 1000 + 1
