"""``log.retention.check.interval.ms`` is honoured (it used to be accepted and ignored,
with retention running every 30 s whatever it said): records older than ``retention.ms``
go within one interval of a broker that checks every 100 ms, as a real client sees
(the partition's earliest offset moves to its end), while a topic within its retention
keeps its records."""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from riverbed.broker.config import BrokerConfig
from riverbed.storage.config import DEFAULT_RETENTION_CHECK_INTERVAL_MS
from riverbed.testing.embedded import EmbeddedBroker

TIMEOUT_S = 30.0
HOUR_MS = 3_600_000


def _produce(bootstrap: str, topic: str, timestamp_ms: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1})
    for i in range(5):
        producer.produce(topic, value=b"v%d" % i, timestamp=timestamp_ms)
    assert producer.flush(TIMEOUT_S) == 0


def _watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "wm"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT_S)
        return low, high
    finally:
        consumer.close()


def test_the_default_is_kafkas() -> None:
    assert BrokerConfig.from_props({}).log_retention_check_interval_ms == 300_000
    assert DEFAULT_RETENTION_CHECK_INTERVAL_MS == 300_000


def test_expired_records_go_within_the_configured_interval(tmp_path: Path) -> None:
    config = {"log.retention.check.interval.ms": "100"}
    with EmbeddedBroker(tmp_path / "data", config) as broker:
        bootstrap = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topics = [
            NewTopic("old", 1, config={"retention.ms": str(HOUR_MS)}),
            NewTopic("fresh", 1, config={"retention.ms": str(HOUR_MS)}),
        ]
        for future in admin.create_topics(topics).values():
            future.result(TIMEOUT_S)
        now_ms = int(time.time() * 1000)
        _produce(bootstrap, "fresh", now_ms)
        _produce(bootstrap, "old", now_ms - 2 * HOUR_MS)
        deadline = time.monotonic() + TIMEOUT_S
        while _watermarks(bootstrap, "old") != (5, 5):
            assert time.monotonic() < deadline, f"old: {_watermarks(bootstrap, 'old')}"
            time.sleep(0.1)
        # The fresh topic has been through the same checks (each 100 ms) and keeps all.
        assert _watermarks(bootstrap, "fresh") == (0, 5)
