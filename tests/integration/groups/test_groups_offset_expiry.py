"""Committed offsets of an Empty group expire end to end: a broker on a ManualClock with
``offsets.retention.minutes=1``; after the clock passes the retention OffsetFetch answers
no offset (-1), tombstones are in ``__consumer_offsets``, and a restart keeps them gone."""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition
from groups_helpers import BROKER_CONFIG, create_topic, produce, wait_until

from riverbed.clock import ManualClock
from riverbed.coordinator import OFFSETS_TOPIC_NAME, partition_for
from riverbed.coordinator.offsets_topic_records import OffsetCommitKey, decode_key
from riverbed.protocol.records import iter_batches_with_records
from riverbed.testing.embedded import EmbeddedBroker

GROUP, TOPIC = "expiring", "exp"
OFFSET_INVALID = -1001  # librdkafka's "no committed offset"


def _committed(bootstrap: str) -> list[int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
    try:
        return [
            tp.offset
            for tp in c.committed([TopicPartition(TOPIC, p) for p in range(2)], timeout=10)
        ]
    finally:
        c.close()


def _offset_records(broker: EmbeddedBroker) -> list[tuple[OffsetCommitKey, bytes | None]]:
    """Every OffsetCommit record of GROUP in ``__consumer_offsets``, in log order."""
    b = broker.broker
    num = b.topics.get(OFFSETS_TOPIC_NAME)
    assert num is not None
    plog = b.topics.partition_log(OFFSETS_TOPIC_NAME, partition_for(GROUP, num.partitions))
    data = plog.read(plog.log_start_offset, 1 << 20).records
    out = []
    for _, records in iter_batches_with_records(data):
        for r in records:
            assert r.key is not None
            key = decode_key(r.key)
            if isinstance(key, OffsetCommitKey) and key.group == GROUP:
                out.append((key, r.value))
    return out


def test_empty_group_offsets_expire_with_tombstones_and_stay_gone(tmp_path: Path) -> None:
    clock = ManualClock(now_ms=int(time.time() * 1000))
    config = BROKER_CONFIG | {
        "offsets.retention.minutes": "1",
        "offsets.retention.check.interval.ms": "50",
    }
    with EmbeddedBroker(tmp_path / "data", config, clock=clock) as broker:
        bootstrap = broker.bootstrap_servers
        create_topic(bootstrap, TOPIC, 2)
        produce(bootstrap, TOPIC, [b"x"] * 10, 2)
        c = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": GROUP,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "session.timeout.ms": 6000,
            }
        )
        c.subscribe([TOPIC])
        got: list[bytes] = []

        def poll() -> None:
            msg = c.poll(0.05)
            if msg is not None and msg.error() is None:
                got.append(msg.value())

        wait_until(lambda: len(got) == 10, 30, "the records", poll)
        c.commit(asynchronous=False)
        c.close()  # leaves: the group is Empty from now
        assert _committed(bootstrap) == [5, 5]

        clock.advance(59_000)  # not yet: retention counts from when the group emptied
        wait_until(
            lambda: (
                broker.broker.groups.coordinator.next_deadline_ms() is not None
                and broker.broker.groups.coordinator.next_deadline_ms() > clock.now_ms()
            ),
            5,
            "an expiry check after the first advance",
        )
        assert _committed(bootstrap) == [5, 5]
        clock.advance(2_000)
        wait_until(
            lambda: broker.broker.groups.coordinator.group(GROUP) is None,
            10,
            "the group's offsets to expire",
        )
        assert _committed(bootstrap) == [OFFSET_INVALID, OFFSET_INVALID]
        records = _offset_records(broker)
        assert [(k.partition, v is None) for k, v in records[-2:]] == [(0, True), (1, True)]

        broker.restart()
        assert broker.broker.groups.coordinator.group(GROUP) is None
        assert _committed(broker.bootstrap_servers) == [OFFSET_INVALID, OFFSET_INVALID]
