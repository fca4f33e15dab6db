"""Dead letters (KIP-1191) on the wire: Riverbed writes what Apache Kafka 4.4 writes.

The same scenario runs on both brokers, with the same topic and group names: a record
REJECTed at its first delivery, and one RELEASEd until the group's delivery-count limit
(2) archives it.  Both dead letters' values and every header (names, order-free values)
must be equal on the two brokers.  ~40 s (Kafka's share group start dominates).
"""

from __future__ import annotations

import itertools

import pytest
from queue_helpers import produce, read_all, wait_until

from riverbed.queue import Delivery, QueueWorkers, RejectDelivery, WorkerSettings
from riverbed.testing.kafka_share_reference import (
    create_topic,
    enable_dead_letters,
    set_share_group_config,
)

_run = itertools.count()


def _dead_letters(bootstrap: str, topic: str, group: str) -> dict[bytes, dict[str, bytes]]:
    create_topic(bootstrap, topic, 1)
    set_share_group_config(
        bootstrap, group, {"share.auto.offset.reset": "earliest", "share.delivery.count.limit": "2"}
    )
    enable_dead_letters(bootstrap, group, f"dlq.{topic}")
    produce(bootstrap, topic, [b"ok", b"rejected", b"limited"])

    def handle(delivery: Delivery) -> None:
        if delivery.value == b"rejected":
            raise RejectDelivery()
        if delivery.value == b"limited":
            raise RuntimeError("always fails")  # RELEASE until the broker archives it

    settings = WorkerSettings(bootstrap, group, (topic,), max_attempts=10, retry_backoff_ms=50)
    with QueueWorkers(settings, handle) as workers:
        wait_until(
            lambda: (
                workers.stats.snapshot()["accept"] == 1
                and workers.stats.snapshot()["reject"] == 1
                and workers.stats.snapshot()["release"] >= 2
            ),
            "one accept, one reject, two releases",
        )
        got = read_all(bootstrap, f"dlq.{topic}", 2)
    return {value or b"": headers for value, headers in got}


@pytest.mark.kafka
def test_dead_letter_headers_match_kafka(
    kafka_share_bootstrap: str, riverbed_share_bootstrap: str
) -> None:
    n = next(_run)
    topic, group = f"dlh-source-{n}", f"dlh-group-{n}"
    kafka = _dead_letters(kafka_share_bootstrap, topic, group)
    riverbed = _dead_letters(riverbed_share_bootstrap, topic, group)
    assert set(kafka) == {b"rejected", b"limited"}
    assert kafka[b"rejected"]["__dlq.errors.delivery.count"] == b"1"
    assert kafka[b"limited"]["__dlq.errors.delivery.count"] == b"2"
    for value, headers in kafka.items():
        for name, expected in headers.items():
            assert riverbed[value].get(name) == expected, (value, name)
    assert riverbed == kafka
