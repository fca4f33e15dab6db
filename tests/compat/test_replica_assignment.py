"""A deviation librdkafka's own test 0081 found (issue 16), checked against Kafka and Riverbed.

CreateTopics / CreatePartitions with an explicit replica assignment naming the only broker
are accepted; an unknown broker id is INVALID_REPLICA_ASSIGNMENT.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions
from kafka.admin import KafkaAdminClient
from kafka.admin import NewTopic as KafkaPythonNewTopic
from kafka.errors import InvalidReplicationAssignmentError

_names = itertools.count()


def _name(server: Any, what: str) -> str:
    return f"{what}-{type(server).__name__.lower()}-{next(_names)}"


def test_replica_assignment_of_the_only_broker(server: Any) -> None:
    bootstrap = server.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    node = admin.describe_cluster().result(30).nodes[0].id
    # confluent-kafka 2.16's NewTopic refuses an assignment on its own: kafka-python's.
    legacy = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        topic = _name(server, "assigned")
        legacy.create_topics(
            [KafkaPythonNewTopic(topic, -1, -1, replica_assignments={0: [node], 1: [node]})]
        )
        with pytest.raises(InvalidReplicationAssignmentError):
            legacy.create_topics(
                [
                    KafkaPythonNewTopic(
                        _name(server, "unknown-broker"), -1, -1, replica_assignments={0: [node + 1]}
                    )
                ]
            )
    finally:
        legacy.close()
    admin.create_partitions([NewPartitions(topic, 4, replica_assignment=[[node], [node]])])[
        topic
    ].result(30)
    bad = admin.create_partitions([NewPartitions(topic, 5, replica_assignment=[[node + 1]])])
    with pytest.raises(KafkaException) as refused:
        bad[topic].result(30)
    assert refused.value.args[0].code() == KafkaError.INVALID_REPLICA_ASSIGNMENT
    assert len(admin.list_topics(topic, timeout=30).topics[topic].partitions) == 4
