"""The ``repartition-sessions`` example on local Spark against a ``riverbed broker`` process.

Views keyed by url (so one user's views are spread over partitions) arrive up to 10 min
(less 1 ms) out of order.  Stream = batch: after two ``availableNow`` runs on one
checkpoint (a restart in between), the intermediate topic holds every view once, each
user's in one partition, and ``sessions-by-user`` holds exactly the sessions the
``sessions`` contract computes in plain Python over the whole input.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from confluent_kafka import Producer

import riverbed.pipelines.repartition_sessions as example
from riverbed.testing.broker_process import BrokerProcess

from .conftest import RunExample, create_topics, drain
from .contract import DELAY_MS, T0, final_sessions, generate_pageviews, shuffle_within

pytestmark = [pytest.mark.time_examples, pytest.mark.timeout(900)]  # two Spark runs


def _produce_by_url(bootstrap: str, views: list[dict[str, Any]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for view in views:
        producer.produce(example.INPUT_TOPIC, key=view["url"], value=json.dumps(view))
    assert producer.flush(60) == 0


def _sorted(values: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(values, key=lambda s: (s["user_id"], s["session_start"]))


def test_two_stages_stream_equals_batch_with_restart(
    broker: BrokerProcess, run_example: RunExample
) -> None:
    bootstrap = broker.bootstrap_servers
    create_topics(
        bootstrap, [example.INPUT_TOPIC, example.INTERMEDIATE_TOPIC, example.OUTPUT_TOPIC]
    )
    rng = random.Random(29)
    views = generate_pageviews(rng, users=6, count=120, start_ms=T0)
    arrivals = shuffle_within(views, rng, DELAY_MS - 1)
    half = len(arrivals) // 2
    _produce_by_url(bootstrap, arrivals[:half])
    run_example(example, bootstrap, extra_source_options=(("maxOffsetsPerTrigger", "40"),))
    watermark = max(v["ts"] for v in arrivals[:half]) - DELAY_MS
    first = [v for _, v in drain(bootstrap, example.OUTPUT_TOPIC)]
    assert _sorted(first) == _sorted(final_sessions(arrivals[:half], watermark))
    _produce_by_url(bootstrap, arrivals[half:])
    run_example(example, bootstrap)

    intermediate = drain(bootstrap, example.INTERMEDIATE_TOPIC)
    assert sorted((v["ts"], v["url"]) for _, v in intermediate) == sorted(
        (v["ts"], v["url"]) for v in views
    )
    assert all(key == value["user_id"].encode() for key, value in intermediate)
    out = drain(bootstrap, example.OUTPUT_TOPIC)
    expected = final_sessions(views, max(v["ts"] for v in views) - DELAY_MS)
    assert len(expected) > 30
    assert _sorted([v for _, v in out]) == _sorted(expected)
    assert all(key == value["user_id"].encode() for key, value in out)
