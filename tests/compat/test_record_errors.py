"""A deviation librdkafka's own test 0011 found (issue 16), checked against Kafka and Riverbed.

A produce to a compacted topic with keyless records fails those records with INVALID_RECORD
and the others in the batch as another record's fault (``_INVALID_DIFFERENT_RECORD``): the
broker names the bad ones in Produce's ``record_errors``.
"""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaError, Producer


def test_keyless_records_on_a_compacted_topic_fail_alone(server: Any, new_topic: Any) -> None:
    topic = new_topic(1, {"cleanup.policy": "compact"})
    errors: list[tuple[bytes | None, int]] = []
    producer = Producer({"bootstrap.servers": server.bootstrap_servers, "linger.ms": 200})
    for key in (b"k1", None, b"k2", None):
        producer.produce(
            topic,
            value=b"v",
            key=key,
            partition=0,
            on_delivery=lambda err, msg: errors.append((msg.key(), err.code())),
        )
    assert producer.flush(30) == 0
    assert sorted(errors, key=lambda e: e[0] or b"") == [
        (None, KafkaError.INVALID_RECORD),
        (None, KafkaError.INVALID_RECORD),
        (b"k1", KafkaError._INVALID_DIFFERENT_RECORD),
        (b"k2", KafkaError._INVALID_DIFFERENT_RECORD),
    ]
