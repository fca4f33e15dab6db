"""Migration: MirrorMaker 2 copies a topic and a consumer group from Riverbed to Kafka.

Timeline (``orders``, 2 partitions, 1,000 records)::

    riverbed   produce 0..499 | billing reads 0..499, commits, stops | produce 500..999
    MM2        ----- replicates orders, offset syncs, checkpoints, group offsets ----->
    kafka      0..499 | billing's offsets == Riverbed's | 500..999 | billing (same group
               id, same topic name) continues there: reads exactly 500..999

No record is lost; duplicates could only come from a move before the group's last commit
was checkpointed (``emit.checkpoints.interval.seconds=1`` + ``sync.group.offsets.
interval.seconds=1``; see docs/scale-out.md), and this test waits for the translation, so
it expects none.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from riverbed.testing.embedded import EmbeddedBroker
from riverbed.testing.kafka_cluster import KafkaCluster
from riverbed.testing.mirror_maker import MirrorMaker2

from .cluster_checks import high_watermark, wait_until

# Full form only: with its own cluster start it would double the reduced (CI) form's ~3 min.
pytestmark = [pytest.mark.cluster, pytest.mark.full_only]
TOPIC, GROUP, HALF = "orders", "billing", 500


@pytest.fixture
def riverbed(tmp_path: Path) -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(tmp_path / "riverbed") as broker:
        yield broker


def _produce(bootstrap: str, numbers: range) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for n in numbers:
        producer.produce(TOPIC, key=str(n % 7).encode(), value=str(n).encode())
    assert producer.flush(60) == 0


def _consume(
    bootstrap: str, count: int, timeout_s: float, reset: str
) -> tuple[list[int], dict[int, int]]:
    """Read ``count`` records as group ``GROUP``, commit synchronously; values and offsets.

    ``reset`` is ``auto.offset.reset``: on Kafka ``latest``, so that a group offset MM2 did
    not translate would show as loss instead of being papered over by ``earliest``.
    """
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": GROUP,
            "enable.auto.commit": False,
            "auto.offset.reset": reset,
        }
    )
    consumer.subscribe([TOPIC])
    values: list[int] = []
    deadline = time.monotonic() + timeout_s
    try:
        while len(values) < count and time.monotonic() < deadline:
            for message in consumer.consume(100, timeout=0.5):
                assert message.error() is None, message.error()
                values.append(int(message.value()))
        consumer.commit(asynchronous=False)
        committed = consumer.committed([TopicPartition(TOPIC, p) for p in range(2)], timeout=30)
    finally:
        consumer.close()
    return values, {tp.partition: tp.offset for tp in committed}


def _group_offsets(bootstrap: str) -> dict[int, int]:
    from confluent_kafka import ConsumerGroupTopicPartitions

    admin = AdminClient({"bootstrap.servers": bootstrap})
    request = [ConsumerGroupTopicPartitions(GROUP, [TopicPartition(TOPIC, p) for p in range(2)])]
    try:
        result = admin.list_consumer_group_offsets(request)[GROUP].result(10)
    except Exception:
        return {}
    return {tp.partition: tp.offset for tp in result.topic_partitions if tp.offset >= 0}


def test_a_consumer_group_moves_from_riverbed_to_kafka_without_loss(
    riverbed: EmbeddedBroker, kafka_cluster: KafkaCluster
) -> None:
    source, target = riverbed.bootstrap_servers, kafka_cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": source})
    for future in admin.create_topics([NewTopic(TOPIC, 2, 1)]).values():
        future.result(30)
    with MirrorMaker2(source, target, topics=TOPIC, groups=GROUP) as mm2:

        def replicated(count: int) -> bool:
            mm2.check_running()
            try:
                return high_watermark(target, TOPIC) == count
            except Exception:
                return False  # the topic is not on the target yet

        # MM2 is running and caught up before the group commits, as in a real migration:
        # its offset syncs then track the group's position (see docs/scale-out.md).
        _produce(source, range(HALF))
        wait_until(lambda: replicated(HALF), 240, f"{HALF} records of {TOPIC} on Kafka", 1.0)
        first, on_riverbed = _consume(source, HALF, timeout_s=60, reset="earliest")
        assert sorted(first) == list(range(HALF))
        committed_at = time.monotonic()

        def translated() -> bool:
            mm2.check_running()
            return _group_offsets(target) == on_riverbed

        wait_until(translated, 120, f"group {GROUP}'s offsets {on_riverbed} on Kafka", 0.5)
        lag_s = time.monotonic() - committed_at
        # Producers keep writing to Riverbed until they move too; MM2 carries it over.
        _produce(source, range(HALF, 2 * HALF))
        wait_until(lambda: replicated(2 * HALF), 120, f"{2 * HALF} records on Kafka", 1.0)
    second, _ = _consume(target, HALF, timeout_s=90, reset="latest")
    assert sorted(first + second) == list(range(2 * HALF))  # nothing lost, nothing twice
    print(f"group offsets translated {lag_s:.1f} s after the commit on Riverbed")
