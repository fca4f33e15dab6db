"""Reading a whole topic back with a plain Kafka client (assign, no group)."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from confluent_kafka import Consumer, TopicPartition


@dataclass(frozen=True)
class Record:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: dict[str, bytes]


def read_topic(bootstrap: str, topic: str, timeout_s: float = 30) -> list[Record]:
    """Every record of ``topic`` up to its current high watermarks."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"read-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        metadata = consumer.list_topics(topic, timeout=timeout_s)
        partitions = sorted(metadata.topics[topic].partitions)
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout_s)[1]
            for p in partitions
        }
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions if ends[p] > 0])
        out: list[Record] = []
        position = dict.fromkeys(partitions, 0)
        deadline = time.monotonic() + timeout_s
        while any(position[p] < ends[p] for p in partitions):
            assert time.monotonic() < deadline, f"timed out reading {topic}: {position} of {ends}"
            for message in consumer.consume(500, 0.2):
                assert message.error() is None, message.error()
                p, offset = message.partition(), message.offset()
                if offset < ends[p]:
                    out.append(
                        Record(
                            p, offset, message.key(), message.value(), dict(message.headers() or [])
                        )
                    )
                position[p] = max(position[p], offset + 1)
        return out
    finally:
        consumer.close()
