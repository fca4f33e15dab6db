"""AlterPartitionReassignments / ListPartitionReassignments on one broker, against Kafka
and Riverbed (issue 16: kafka-go's TestClient*PartitionReassignments*).

With one broker nothing can move: replicas ``[node]`` is a no-op, every other list is
INVALID_REPLICA_ASSIGNMENT, cancelling finds NO_REASSIGNMENT_IN_PROGRESS, unknown topics
and partitions are UNKNOWN_TOPIC_OR_PARTITION, and no reassignment is ever listed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafka import TopicPartition
from kafka.admin import KafkaAdminClient


def test_reassignments_of_the_only_broker(server: Any, new_topic: Callable[..., str]) -> None:
    topic, other = new_topic(3), new_topic(2)
    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap_servers)
    try:
        node = admin.describe_cluster()["brokers"][0]["broker_id"]
        asked: dict[TopicPartition, list[int] | None] = {
            TopicPartition(topic, 0): [node],
            TopicPartition(topic, 1): [node + 1],
            TopicPartition(topic, 2): None,
            TopicPartition(topic, 5): [node],
            TopicPartition(other, 1): [node, node],  # an empty list: refused by the client
            TopicPartition(f"{topic}-missing", 0): [node],
        }
        answered = admin.alter_partition_reassignments(asked, timeout_ms=30_000)
        names = {
            (tp.topic, tp.partition): None if err is None else err.__name__
            for tp, err in answered.items()
        }
        assert names == {
            (topic, 0): None,
            (topic, 1): "InvalidReplicationAssignmentError",
            (topic, 2): "NoReassignmentInProgressError",
            (topic, 5): "UnknownTopicOrPartitionError",
            (other, 1): "InvalidReplicationAssignmentError",
            (f"{topic}-missing", 0): "UnknownTopicOrPartitionError",
        }
        assert admin.list_partition_reassignments(timeout_ms=30_000) == {}
        named = [TopicPartition(topic, 0), TopicPartition(f"{topic}-missing", 0)]
        assert admin.list_partition_reassignments(named, timeout_ms=30_000) == {}
    finally:
        admin.close()
