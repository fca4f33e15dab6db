"""Helpers shared by the queue tests (imported by module name, like groups_helpers)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

DEADLINE_S = 120.0


@dataclass(frozen=True)
class QueueNames:
    bootstrap: str
    topic: str
    group: str


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i, value in enumerate(values):
        producer.produce(topic, value=value, key=str(i).encode())
    assert producer.flush(60) == 0


def read_all(bootstrap: str, topic: str, count: int) -> list[tuple[bytes | None, dict[str, bytes]]]:
    """The first ``count`` records of ``topic`` as (value, headers), read from the start."""
    import uuid

    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    out: list[tuple[bytes | None, dict[str, bytes]]] = []

    def step() -> bool:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            out.append((message.value(), dict(message.headers() or [])))
        return len(out) >= count

    try:
        wait_until(step, f"{count} records on {topic}")
    finally:
        consumer.close()
    return out


def fail_first_delivery_of_p3(delivery: Any) -> None:
    """A picklable handler for the process workers: ``p3`` fails its first delivery."""
    if delivery.value == b"p3" and delivery.delivery_count == 1:
        raise RuntimeError("transient")
