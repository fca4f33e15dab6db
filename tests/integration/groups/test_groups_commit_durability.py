"""An acknowledged offset commit is on disk: under the default per-append flush policy the
OffsetCommit answer waits for the fsync of ``__consumer_offsets`` that covers it, like an
``acks=all`` produce.  Shown by holding that fsync at the ``segment.fsync`` failure point
(:mod:`riverbed.storage.faults`) and watching the commit wait for it."""

from __future__ import annotations

import threading

from confluent_kafka import Consumer, TopicPartition
from groups_helpers import create_topic, wait_until

from riverbed.storage import faults
from riverbed.testing.embedded import EmbeddedBroker


def test_commit_is_answered_only_after_its_fsync(broker: EmbeddedBroker) -> None:
    create_topic(broker.bootstrap_servers, "t", 1)
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": "durable",
            "enable.auto.commit": False,
        }
    )
    try:
        # A first commit finds the coordinator and warms the connection.
        consumer.commit(offsets=[TopicPartition("t", 0, 1)], asynchronous=False)
        done = threading.Event()

        def commit() -> None:
            consumer.commit(offsets=[TopicPartition("t", 0, 7)], asynchronous=False)
            done.set()

        with faults.inject("segment.fsync", block=True, match="__consumer_offsets") as fsync:
            worker = threading.Thread(target=commit, daemon=True)
            worker.start()
            wait_until(fsync.reached.is_set, 20, "the commit's fsync to start")
            # The fsync is being held: the commit must not have been answered.
            assert not done.wait(1.0), "commit answered before its fsync completed"
            fsync.release()
            wait_until(done.is_set, 20, "the commit to be answered once the fsync completed")
        [tp] = consumer.committed([TopicPartition("t", 0)], timeout=10)
        assert tp.offset == 7
    finally:
        consumer.close()
