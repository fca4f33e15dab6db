"""A fresh broker creates no internal topic (Kafka creates them on first use), so its start
costs a handful of fsyncs; the first FindCoordinator for a group creates
``__consumer_offsets``, and a restart replays only the internal topics that exist.

The fsync bound counts calls (``os.fsync``/``os.fdatasync`` wrapped process-wide while
the embedded broker starts), never time."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from riverbed.coordinator import OFFSETS_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME
from riverbed.testing.embedded import EmbeddedBroker

TIMEOUT_S = 60.0
MAX_FRESH_START_FSYNCS = 10


class FsyncCounter:
    """Counts ``os.fsync`` and ``os.fdatasync`` calls from every thread."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def wrap(self, real: Callable[[Any], None]) -> Callable[[Any], None]:
        def counted(fd: Any) -> None:
            with self._lock:
                self.count += 1
            real(fd)

        return counted


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> Iterator[FsyncCounter]:
    counter = FsyncCounter()
    monkeypatch.setattr(os, "fsync", counter.wrap(os.fsync))
    monkeypatch.setattr(os, "fdatasync", counter.wrap(os.fdatasync))
    yield counter


def test_fresh_start_creates_no_internal_topic_and_few_fsyncs(
    tmp_path: Path, fsyncs: FsyncCounter
) -> None:
    with EmbeddedBroker(tmp_path / "data") as running:
        started_with = fsyncs.count
        topics = running.broker.topics
        assert topics.get(OFFSETS_TOPIC_NAME) is None
        assert topics.get(TRANSACTION_STATE_TOPIC_NAME) is None
        assert not running.broker.groups.ready
    assert started_with <= MAX_FRESH_START_FSYNCS, started_with
    names = {p.name for p in (tmp_path / "data").iterdir()}
    assert not any(n.startswith(("__consumer_offsets", "__transaction_state")) for n in names)


def test_restart_of_an_unused_broker_still_creates_nothing(tmp_path: Path) -> None:
    running = EmbeddedBroker(tmp_path / "data").start()
    try:
        running.restart()
        assert running.broker.topics.get(OFFSETS_TOPIC_NAME) is None
    finally:
        running.stop()


def _commit_and_read(bootstrap: str, group: str, offset: int | None) -> int:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "socket.timeout.ms": 30000,
        }
    )
    try:
        tp = TopicPartition("t", 0, offset) if offset is not None else TopicPartition("t", 0)
        if offset is not None:
            consumer.commit(offsets=[tp], asynchronous=False)
        [got] = consumer.committed([TopicPartition("t", 0)], timeout=TIMEOUT_S)
        return int(got.offset)
    finally:
        consumer.close()


def test_first_group_use_creates_offsets_topic_and_survives_restart(tmp_path: Path) -> None:
    running = EmbeddedBroker(tmp_path / "data").start()
    try:
        producer = Producer({"bootstrap.servers": running.bootstrap_servers})
        for i in range(5):
            producer.produce("t", value=b"%d" % i)
        assert producer.flush(TIMEOUT_S) == 0
        assert running.broker.topics.get(OFFSETS_TOPIC_NAME) is None
        assert _commit_and_read(running.bootstrap_servers, "g1", 3) == 3
        created = running.broker.topics.get(OFFSETS_TOPIC_NAME)
        assert created is not None and created.partitions == 50
        assert running.broker.groups.ready
        running.restart()
        assert running.broker.groups.ready
        assert _commit_and_read(running.bootstrap_servers, "g1", None) == 3
    finally:
        running.stop()


def test_clean_restart_fsyncs_each_partition_directory_at_most_once(
    tmp_path: Path, fsyncs: FsyncCounter
) -> None:
    running = EmbeddedBroker(tmp_path / "data").start()
    try:
        running.call(lambda b: b.groups.ensure_topic())
        partitions = len(running.broker.logs.logs())
        running.stop()
        before = fsyncs.count
        running.start()
        # the clean-shutdown marker's removal, one per partition; load_segments adds none
        assert fsyncs.count - before <= partitions + MAX_FRESH_START_FSYNCS
    finally:
        running.stop()
