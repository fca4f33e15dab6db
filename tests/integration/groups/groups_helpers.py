"""Helpers for consumer-group tests (imported by basename, so the name is unique): broker
settings for fast rebalances (no initial rebalance delay, 6 s sessions), topic creation,
producing, and waiting on a condition with a deadline (never a bare sleep)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

T = TypeVar("T")

BROKER_CONFIG = {
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.heartbeat.interval.ms": "500",
    "offsets.topic.num.partitions": "5",
}


def wait_until(
    condition: Callable[[], T],
    timeout_s: float,
    what: str,
    step: Callable[[], object] | None = None,
) -> T:
    """Call ``step`` (e.g. consumer polls) until ``condition()`` is truthy or time is up."""
    deadline = time.monotonic() + timeout_s
    while True:
        if step is not None:
            step()
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        if step is None:
            time.sleep(0.05)  # polling interval of a condition check, not synchronisation


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions)])[name].result(timeout=10)


def produce(bootstrap: str, topic: str, values: list[bytes], partitions: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1})
    for i, value in enumerate(values):
        producer.produce(topic, value, partition=i % partitions)
    assert producer.flush(10) == 0
