"""An acknowledged offset commit is on disk: under the default per-append flush policy the
OffsetCommit answer waits for the fsync of ``__consumer_offsets`` that covers it, like an
``acks=all`` produce.  Shown by holding that fsync and watching the commit wait for it."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, TopicPartition
from groups_helpers import create_topic, wait_until

from riverbed.testing.embedded import EmbeddedBroker

_real_fsync = os.fsync


class FsyncGate:
    """Holds fsyncs of ``__consumer_offsets`` files while closed."""

    def __init__(self) -> None:
        self.closed = False
        self.held = threading.Event()
        self.opened = threading.Event()

    def fsync(self, fd: int) -> None:
        if self.closed and "__consumer_offsets" in os.readlink(f"/proc/self/fd/{fd}"):
            self.held.set()
            self.opened.wait(30)
        _real_fsync(fd)


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[FsyncGate]:
    g = FsyncGate()
    monkeypatch.setattr(os, "fsync", g.fsync)
    yield g
    g.opened.set()


def test_commit_is_answered_only_after_its_fsync(broker: EmbeddedBroker, gate: FsyncGate) -> None:
    create_topic(broker.bootstrap_servers, "t", 1)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "durable",
                         "enable.auto.commit": False})
    try:
        # A first commit finds the coordinator and warms the connection.
        consumer.commit(offsets=[TopicPartition("t", 0, 1)], asynchronous=False)
        gate.closed = True
        done = threading.Event()

        def commit() -> None:
            consumer.commit(offsets=[TopicPartition("t", 0, 7)], asynchronous=False)
            done.set()

        worker = threading.Thread(target=commit, daemon=True)
        worker.start()
        wait_until(gate.held.is_set, 20, "the commit's fsync to start")
        # The fsync is being held: the commit must not have been answered.
        assert not done.wait(1.0), "commit answered before its fsync completed"
        gate.opened.set()
        wait_until(done.is_set, 20, "the commit to be answered once the fsync completed")
        [tp] = consumer.committed([TopicPartition("t", 0)], timeout=10)
        assert tp.offset == 7
    finally:
        gate.opened.set()
        consumer.close()
