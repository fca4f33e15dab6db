"""Deleting a topic is atomic from every client's view and survives restarts (issue 15.2).

A DeleteTopics first writes ``topics.json`` without the topic, then renames every
partition directory to ``<topic>-<p>.<hex>-delete`` (one fsync of the data dir), then
closes and removes them.  A topic re-created under the same name must never see the
deleted records: not at once, not when closing one of the old logs fails (the error that
used to stop the loop and leave directories behind), not across a restart in the middle
of the deletion.  "Never sees" is checked with a real client: high watermark 0 and no
record consumed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from riverbed.storage.log import PartitionLog
from riverbed.storage.manager import DELETE_SUFFIX, LogManager
from riverbed.testing.embedded import EmbeddedBroker

TOPIC = "doomed"
PARTITIONS = 3
RECORDS = 50
TIMEOUT_S = 30.0


def _create(broker: EmbeddedBroker) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS)])[TOPIC].result(TIMEOUT_S)


def _delete(broker: EmbeddedBroker) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.delete_topics([TOPIC])[TOPIC].result(TIMEOUT_S)


def _produce(broker: EmbeddedBroker) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 1})
    for i in range(RECORDS):
        producer.produce(TOPIC, value=b"old-%d" % i, partition=i % PARTITIONS)
    assert producer.flush(TIMEOUT_S) == 0


def _high_watermarks(broker: EmbeddedBroker) -> list[int]:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "hw"})
    try:
        return [
            consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=TIMEOUT_S)[1]
            for p in range(PARTITIONS)
        ]
    finally:
        consumer.close()


def _partition_dirs(data_dir: Path) -> list[str]:
    return sorted(p.name for p in data_dir.iterdir() if p.name.startswith(f"{TOPIC}-"))


def _failing(plog: PartitionLog, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every way of closing ``plog`` raise, like the cancelled-future bug did."""

    def boom(*_args: Any) -> None:
        raise RuntimeError("injected close failure")

    monkeypatch.setattr(plog, "close", boom)
    monkeypatch.setattr(plog, "close_unclean", boom)
    monkeypatch.setattr(plog, "close_for_deletion", boom)


def test_recreate_at_once_starts_empty(tmp_path: Path) -> None:
    with EmbeddedBroker(tmp_path) as broker:
        _create(broker)
        _produce(broker)
        assert sum(_high_watermarks(broker)) == RECORDS
        _delete(broker)
        _create(broker)
        assert _high_watermarks(broker) == [0] * PARTITIONS
        assert _partition_dirs(tmp_path) == [f"{TOPIC}-{p}" for p in range(PARTITIONS)]


def test_a_failing_close_does_not_stop_the_deletion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with EmbeddedBroker(tmp_path) as broker:
        _create(broker)
        _produce(broker)
        _failing(broker.broker.topics.partition_log(TOPIC, 0), monkeypatch)
        _delete(broker)
        _create(broker)
        assert _high_watermarks(broker) == [0] * PARTITIONS
        # every old directory went, the failing one included (renamed first, then removed)
        assert _partition_dirs(tmp_path) == [f"{TOPIC}-{p}" for p in range(PARTITIONS)]
    with EmbeddedBroker(tmp_path) as broker:
        assert _high_watermarks(broker) == [0] * PARTITIONS


def test_restart_in_the_middle_of_a_deletion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with EmbeddedBroker(tmp_path) as broker:
        _create(broker)
        _produce(broker)
        # The process "dies" after the renames: the removal step never runs.
        monkeypatch.setattr(LogManager, "remove_detached", lambda self, detached: None)
        _delete(broker)
        left = _partition_dirs(tmp_path)
        assert len(left) == PARTITIONS and all(d.endswith(DELETE_SUFFIX) for d in left)
    monkeypatch.undo()
    with EmbeddedBroker(tmp_path) as broker:
        assert _partition_dirs(tmp_path) == []  # start-up finished the deletion
        _create(broker)
        assert _high_watermarks(broker) == [0] * PARTITIONS
        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "group.id": "after",
                "auto.offset.reset": "earliest",
            }
        )
        try:
            consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
            msg = consumer.poll(1.0)
            assert msg is None or msg.error() is not None, "a deleted record came back"
        finally:
            consumer.close()
