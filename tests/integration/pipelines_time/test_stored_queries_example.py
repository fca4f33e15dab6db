"""The ``stored-queries`` example on local Spark against a ``riverbed broker`` process.

Stream = batch: the matches of every document equal those of the query set in force when
its micro-batch was read, computed with :class:`QueryIndex` in plain Python; after a
restart, a deleted query stops matching, an added one and a replaced one match from the
next run on, without touching the pipeline's code or state by hand.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from confluent_kafka import Producer

import riverbed.pipelines.stored_queries_example as example
from riverbed.pipelines.stored_queries import QueryIndex
from riverbed.testing.broker_process import BrokerProcess

from .conftest import RunExample, create_topics, drain

pytestmark = [pytest.mark.time_examples, pytest.mark.timeout(900)]  # two Spark runs

WORDS = ["disk", "full", "cpu", "hot", "fan", "ok", "net", "down"]
LEVELS = ["info", "warn", "error"]


def _produce(bootstrap: str, topic: str, records: list[tuple[str, str | None]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for key, value in records:
        producer.produce(topic, key=key, value=value)
    assert producer.flush(60) == 0


def _documents(rng: random.Random, first: int, count: int) -> list[dict[str, Any]]:
    return [
        {
            "doc_id": n,
            "text": " ".join(
                rng.choice(WORDS).upper() if rng.random() < 0.2 else rng.choice(WORDS)
                for _ in range(4)
            ),
            "level": rng.choice(LEVELS),
            "size": rng.randrange(100),
        }
        for n in range(first, first + count)
    ]


def _query(terms: list[str], *conditions: tuple[str, str, Any]) -> str:
    return json.dumps(
        {
            "terms": terms,
            "conditions": [{"field": f, "op": o, "value": v} for f, o, v in conditions],
        }
    )


def _expected(index: QueryIndex, documents: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return sorted((q, d["doc_id"]) for d in documents for q in index.match(d))


def _matches(bootstrap: str) -> list[tuple[str, int]]:
    out = drain(bootstrap, example.OUTPUT_TOPIC)
    assert all(key == value["query_id"].encode() for key, value in out)
    return sorted((value["query_id"], value["event"]["doc_id"]) for _, value in out)


def test_stream_equals_batch_and_query_changes_without_restart_of_logic(
    broker: BrokerProcess, run_example: RunExample
) -> None:
    bootstrap = broker.bootstrap_servers
    create_topics(bootstrap, [example.QUERIES_TOPIC, example.DOCUMENTS_TOPIC, example.OUTPUT_TOPIC])
    rng = random.Random(7)
    index = QueryIndex()
    changes: list[tuple[str, str | None]] = [
        ("disk-full", _query(["disk", "full"])),
        ("errors", _query([], ("level", "=", "error"))),
        ("hot-big", _query(["hot"], ("size", ">=", 50))),
        ("bad", "not json"),
    ]
    _produce(bootstrap, example.QUERIES_TOPIC, changes)
    for qid, text in changes:
        index.apply(qid, text)
    first = _documents(rng, 0, 60)
    _produce(bootstrap, example.DOCUMENTS_TOPIC, [(str(d["doc_id"]), json.dumps(d)) for d in first])
    run_example(example, bootstrap)
    expected = _expected(index, first)
    assert len(expected) > 20
    assert _matches(bootstrap) == expected

    # while the pipeline is stopped: delete one query, replace one, add one
    more: list[tuple[str, str | None]] = [
        ("disk-full", None),
        ("errors", _query([], ("level", "in", ["error", "warn"]))),
        ("net-down", _query(["net", "down"])),
    ]
    _produce(bootstrap, example.QUERIES_TOPIC, more)
    for qid, text in more:
        index.apply(qid, text)
    second = _documents(rng, 60, 60)
    _produce(
        bootstrap, example.DOCUMENTS_TOPIC, [(str(d["doc_id"]), json.dumps(d)) for d in second]
    )
    run_example(example, bootstrap)
    later = _expected(index, second)
    assert {q for q, _ in later} == {"errors", "hot-big", "net-down"}
    assert _matches(bootstrap) == sorted(expected + later)
