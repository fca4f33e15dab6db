"""Reading a test topic back: every record of partition 0, keys and values JSON-decoded."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from riverbed.testing.waiting import wait_until


def read_json_topic(
    bootstrap: str, topic: str, committed: bool = False, timeout_s: float = 60
) -> list[tuple[Any, Any]]:
    """Every record of partition 0 from the beginning up to the high watermark (the last
    stable offset when ``committed``: ``isolation.level=read_committed``), as ``(key, value)``
    JSON-decoded (``None`` for a null key or a tombstone), in offset order.

    ``[]`` while the topic does not exist or is empty.  Transaction markers and aborted
    records below the watermark are skipped (the consumer's position passes them).  Raises
    ``AssertionError`` if the records are not all read within ``timeout_s``; a fresh consumer
    group each call, nothing committed."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": uuid.uuid4().hex,
            "enable.auto.commit": False,
            "isolation.level": "read_committed" if committed else "read_uncommitted",
        }
    )
    try:
        try:
            _low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        except KafkaException:  # not created yet
            return []
        out: list[tuple[Any, Any]] = []
        if high <= 0:
            return out
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout_s
        while True:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                key, value = msg.key(), msg.value()
                out.append(
                    (
                        None if key is None else json.loads(key),
                        None if value is None else json.loads(value),
                    )
                )
                offset = msg.offset()
                if offset is not None and offset + 1 >= high:
                    return out
            elif consumer.position([TopicPartition(topic, 0)])[0].offset >= high:
                return out  # the rest were transaction markers
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out reading {topic} to offset {high}")
    finally:
        consumer.close()


def wait_json_topic(
    bootstrap: str, topic: str, count: int, timeout_s: float = 60
) -> list[tuple[Any, Any]]:
    """:func:`read_json_topic` once the topic holds at least ``count`` records (created or
    not yet); ``AssertionError`` after ``timeout_s``."""

    def enough() -> list[tuple[Any, Any]]:
        records = read_json_topic(bootstrap, topic)
        return records if len(records) >= count else []

    return wait_until(enough, timeout_s, f"{count} records in {topic}")
